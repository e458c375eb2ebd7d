"""``python -m warpspeed.measure run|launch ...`` (MODEL.md §9); see
:mod:`warpspeed.measure.cli`."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
