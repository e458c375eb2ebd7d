"""The project around the package: README, MODEL.md and the other documents, CI
scripts, notebooks and packaging."""
