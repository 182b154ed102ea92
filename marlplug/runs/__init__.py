"""A training run's files: its folder, checkpoints, metrics, progress, summary and plots."""
