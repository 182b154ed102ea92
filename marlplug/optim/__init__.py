"""Per-agent optimization over stacked weights: gradient norms, clipping and Adam."""
