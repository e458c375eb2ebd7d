"""warpspeed's test suite (a package, so that tests import the kernel corpus
as ``tests.corpus``)."""
