"""Soft actor-critic: ``isac`` (:mod:`~marlplug.algorithms.sac.isac`, local critics) and ``masac``
(:mod:`~marlplug.algorithms.sac.masac`, joint critics); :mod:`~marlplug.algorithms.sac.options` their
hyperparameters, :mod:`~marlplug.algorithms.sac.program` the per-agent update (its losses;
:mod:`~marlplug.algorithms.sac.steps` the optimizer steps after them),
:mod:`~marlplug.algorithms.sac.tanh_normal` the squashed Gaussian policy."""
