"""warpspeed/reports: advice, tables, figures and the width of the
command line's output."""
