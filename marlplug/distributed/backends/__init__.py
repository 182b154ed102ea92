"""Where learners run: ``local`` worker processes (the default) or ``ray`` actors."""

from marlplug.distributed.backends.base import Backend, LearnerFailure, Task
from marlplug.distributed.backends.local import LocalBackend

__all__ = ["Backend", "LearnerFailure", "LocalBackend", "Task"]
