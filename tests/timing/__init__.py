"""warpspeed/timing: the timing models, memory concurrency and
streams, and a model's registration."""
