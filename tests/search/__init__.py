"""warpspeed/search: ranking, pruning, ties and the worker processes."""
