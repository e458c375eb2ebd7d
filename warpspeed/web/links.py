"""Links whose numbers no field can take (``/?block=`` and 5000 digits):
cut before Panel reads them.

Panel turns every query value made of digits into a Python ``int`` when a
session starts and whenever the browser reports its address; Python refuses
integers of more than 4300 digits, so such a link ended in HTTP 500 and a
traceback. No field of the form reads a number of more than
:data:`warpspeed.input.triples.MAX_DIGITS` digits, so the server answers
such a link with a redirect (303) to the same link with those numbers cut
to that many digits and ``...``: the page opens and the field says, in one
line, that its value is not a number it takes. Needs Tornado (Panel's
server); :func:`warpspeed.web.serve` installs the rule.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from tornado.httputil import HTTPServerRequest
from tornado.routing import Matcher, Rule
from tornado.web import Application, RequestHandler

from ..input.triples import MAX_DIGITS

_INTEGER = re.compile(r"-?[0-9]+")


def shortened(query: str) -> str | None:
    """``query`` with every value that is an integer of more than
    :data:`MAX_DIGITS` digits cut to them and ``...``; None when it has no
    such value."""
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    cut = [(k, f"{v[:MAX_DIGITS + v.startswith('-')]}..."
            if _INTEGER.fullmatch(v) and len(v.lstrip("-")) > MAX_DIGITS else v)
           for k, v in pairs]
    return None if cut == pairs else urllib.parse.urlencode(cut)


class _Overlong(Matcher):
    """Requests whose query has a number no field takes."""

    def match(self, request: HTTPServerRequest) -> dict[str, Any] | None:
        return {} if request.query and shortened(request.query) is not None else None


class _Shorten(RequestHandler):
    """Redirect to the link with its overlong numbers cut."""

    def get(self) -> None:
        self.redirect(f"{self.request.path}?{shortened(self.request.query)}", status=303)


def add_rules(app: Application) -> None:
    """Route requests with overlong numbers to the redirect before the page
    (Tornado tries the rules added here before the application's own)."""
    app.add_handlers(r".*", [Rule(_Overlong(), _Shorten)])


__all__ = ["add_rules", "shortened"]
