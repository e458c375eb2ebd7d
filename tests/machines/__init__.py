"""The machine files (warpspeed/machine.py, tomlfile.py, machines/): loading,
format versions, ``machines new`` and the AMD GPUs."""
