"""Small networks run fastest, and most predictably on a shared machine, on one torch thread."""

from tests.torch_threads import one_torch_thread

__all__ = ["one_torch_thread"]  # an autouse fixture: importing it applies it to this folder
