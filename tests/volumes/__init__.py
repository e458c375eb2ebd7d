"""warpspeed/volumes: launch, waves, sampling, L1, footprints,
capacity curves and the data volumes per level."""
