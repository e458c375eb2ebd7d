"""warpspeed/pystencils, the pystencils front end, and the shipped stencils/ it
generates: extraction, constructs, folding, the hook, registers and the
kernel corpora."""
