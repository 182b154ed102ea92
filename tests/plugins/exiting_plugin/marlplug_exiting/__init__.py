"""A plugin that ends the process when imported, as a badly written release might."""

import sys

sys.exit(3)
