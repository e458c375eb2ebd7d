"""Links whose numbers no field takes (issue 46): Panel turned a query value
of more than 4300 digits into an int, which Python refuses, and the page
answered HTTP 500 with a traceback in the log. The server now redirects to
the link with such numbers cut, the page opens and the field says why."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tests.slow import slow
from warpspeed.input.triples import MAX_DIGITS, parse_triple

pytest.importorskip("panel", reason="the web extra is not installed")

from warpspeed.web.links import shortened  # noqa: E402  (needs Panel's Tornado)


def test_overlong_numbers_are_cut_and_nothing_else_changes():
    digits = "9" * 5000
    assert shortened(f"block={digits}&machine=A100") == (
        f"block={'9' * MAX_DIGITS}...&machine=A100")
    assert shortened(f"threads=-{digits}") == f"threads=-{'9' * MAX_DIGITS}..."
    assert shortened("block=256,1,1&threads=256&machine=A100") is None
    assert shortened(f"loads={digits},1,1") is None  # no number alone: the form's parser says


def test_the_field_error_of_a_cut_number_is_one_short_line():
    with pytest.raises(ValueError) as raised:
        parse_triple(f"{'9' * MAX_DIGITS}...", "block size")
    with pytest.raises(ValueError) as long_text:
        parse_triple("9" * 5000 + ",1,1", "block size")
    for message in (str(raised.value), str(long_text.value)):
        assert "\n" not in message and len(message) < 200, message


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@slow
def test_a_link_with_5000_digits_opens_the_page_without_a_traceback(tmp_path):
    """``warpspeed serve`` answers the link with a redirect to the cut link,
    which opens the page (HTTP 200); the log holds no traceback."""
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        server = subprocess.Popen([sys.executable, "-m", "warpspeed.cli", "serve", "--port", "0"],
                                  stdout=subprocess.PIPE, stderr=out, text=True)
    try:
        first = server.stdout.readline()  # "warpspeed web calculator: http://127.0.0.1:PORT/ ..."
        base = first.split()[3].rstrip("/")
        opener = urllib.request.build_opener(_NoRedirect)
        with pytest.raises(urllib.error.HTTPError) as redirect:
            opener.open(f"{base}/?block={'9' * 5000}&machine=A100", timeout=60)
        assert redirect.value.code == 303
        target = redirect.value.headers["Location"]
        assert target == f"/?block={'9' * MAX_DIGITS}...&machine=A100"
        with urllib.request.urlopen(base + target, timeout=60) as page:
            assert page.status == 200
        time.sleep(0.5)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert "Traceback" not in log.read_text()
