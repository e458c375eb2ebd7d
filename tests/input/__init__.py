"""warpspeed/input: kernel descriptions, index expressions, triples
and the front-end contract."""
