"""A module that ends the process when imported, as a careless plugin might (for a test)."""

import sys

sys.exit(3)
