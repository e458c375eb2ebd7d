"""warpspeed/measure: the measurement harness, tune, and nvcc's register
counts."""
