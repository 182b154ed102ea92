"""The results pages' table builders, one module per page under docs/results/ (coding.md's are
in tests/test_results_coding.py); tests/test_results_pages.py checks every page against them."""
