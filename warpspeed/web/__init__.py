"""Stage 9, the web calculator: ``warpspeed serve`` starts a local Panel app that
predicts, explains and ranks a kernel typed into a form or picked from
``stencils/``.

Modules: :mod:`~warpspeed.web.parser` (the whitelist parser of index
expressions), :mod:`~warpspeed.web.state` (form values to kernel,
machine, prediction and advice, without Panel), :mod:`~warpspeed.web.machines`
(shipped and uploaded machines), :mod:`~warpspeed.web.explore`
(the layer-condition sweep and the bounded ranking),
:mod:`~warpspeed.web.views` (HTML, charts and tables),
:mod:`~warpspeed.web.links` (links whose numbers Panel cannot read) and
:mod:`~warpspeed.web.app` (the Panel page); below them all,
:mod:`~warpspeed.web.form` (the form's fields) and
:mod:`~warpspeed.web.errors` (the errors, re-exported here). Panel is an
optional extra (``pip install 'warpspeed[web]'``); this package imports it
only in :func:`serve` and :mod:`~warpspeed.web.app`.
"""

from __future__ import annotations

import socket
import sys

from ..errors import WarpspeedError
from .errors import FieldError, MissingExtraError


def serve(port: int = 5006, host: str = "127.0.0.1") -> int:
    """Serve the calculator on ``host:port`` until interrupted (port 0: any
    free port). Prints the address first. Browsers may connect only from
    pages of the same address (the websocket origin check)."""
    try:
        import panel  # noqa: F401
    except ImportError:
        raise MissingExtraError(
            "the web calculator needs Panel: pip install 'warpspeed[web]'"
        ) from None
    from panel.io.server import get_server

    from .app import create_app
    from .links import add_rules

    try:
        if port == 0:  # pick a free port now: the origin check needs the real one
            with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
                sock.bind((host, 0))
                port = int(sock.getsockname()[1])
        wildcard = host in ("", "0.0.0.0", "::")
        shown = "127.0.0.1" if wildcard else f"[{host}]" if ":" in host else host
        origins = "*" if wildcard else [f"{host}:{port}", f"localhost:{port}",
                                        f"127.0.0.1:{port}"]
        server = get_server({"/": create_app}, port=port, address=host or None, show=False,
                            start=False, title="warpspeed", verbose=False,
                            websocket_origin=origins)
        add_rules(server._tornado)  # links Panel cannot read: .links
    except OSError as exc:
        raise WarpspeedError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    print(f"warpspeed web calculator: http://{shown}:{port}/ (Ctrl-C stops it)", flush=True)
    server.start()
    try:
        server.io_loop.start()
    except KeyboardInterrupt:
        print("warpspeed: stopped", file=sys.stderr)
    return 0


__all__ = ["FieldError", "MissingExtraError", "serve"]
