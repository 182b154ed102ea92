"""A training run's files: its folder and config.yaml, checkpoints, metrics, rounds log, progress, summary,
non-finite checks and plots; used by :mod:`marlplug.train`, never importing it."""
