"""warpspeed/validation: metrics, refits, calibration, data sheets,
regression kernels and the measured sets."""
