"""Test configuration: keep pystencils/lbmpy disk caches in a fresh temporary
directory so that runs are reproducible and never read a stale cache.

pystencils 2.1 reads ``PYSTENCILS_CACHE_DIR`` once, when ``pystencils.cache``
is imported (lbmpy's derivation cache is that joblib cache); without it the
cache goes to ``appdirs.user_cache_dir("pystencils")``, i.e. under
``XDG_CACHE_HOME``, which the CPU JIT's object cache also uses. Both are set
here, before any test module imports pystencils, and overwrite values from
the environment (``setdefault`` would let a user's stale cache in).
"""

import os
import tempfile

_CACHE = tempfile.mkdtemp(prefix="warpspeed-test-cache-")
os.environ["PYSTENCILS_CACHE_DIR"] = _CACHE
os.environ["XDG_CACHE_HOME"] = _CACHE
os.environ.setdefault("MPLBACKEND", "Agg")
