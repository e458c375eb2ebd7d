"""Test configuration: keep pystencils/lbmpy disk caches in a fresh temporary
directory so that runs are reproducible and never read a stale cache."""

import os
import tempfile

_CACHE = tempfile.mkdtemp(prefix="warpspeed-test-cache-")
os.environ.setdefault("PYSTENCILS_CACHE_DIR", _CACHE)
os.environ.setdefault("XDG_CACHE_HOME", _CACHE)
os.environ.setdefault("MPLBACKEND", "Agg")
