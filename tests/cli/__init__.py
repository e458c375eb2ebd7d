"""The ``warpspeed`` command (warpspeed/cli*.py) end to end, in a subprocess."""
