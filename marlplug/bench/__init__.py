"""Benchmarks behind ``marlplug bench``: each compares side by side and prints ratios."""
