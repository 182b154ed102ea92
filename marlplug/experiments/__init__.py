"""Experiments over seeds and configurations: ``marlplug sweep`` plans and runs them
(:mod:`~marlplug.experiments.plan`, :mod:`~marlplug.experiments.sweep`) into a results file
(:mod:`~marlplug.experiments.results`); ``marlplug compare`` aggregates them with intervals
(:mod:`~marlplug.experiments.statistics`, :mod:`~marlplug.experiments.compare`)."""
