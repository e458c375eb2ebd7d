"""The scripts and data of fits/: analysis and device scripts, the L1 pipe
experiment and the shipped development data."""
