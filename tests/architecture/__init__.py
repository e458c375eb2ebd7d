"""The package's architecture rules, read from its source: the layering of the
stages, the maps (folder lists, MODEL.md's code map, the module-to-test
index), no dead code, short functions, the pystencils front end's
signatures, and GPU families as the only place that names a vendor."""
