"""Benchmarks behind ``marlplug bench``: each compares implementations side by side and prints ratios.

One module per command: :mod:`~marlplug.bench.coding` (``bench coding``: the paper's coded-training
experiment; :mod:`~marlplug.bench.coded_rounds` measures its rounds; :mod:`~marlplug.bench.paper`
holds the paper's numbers, shipped in ``bench/data/``, and the comparison with them), :mod:`~marlplug.bench.decode` (``bench decode``),
:mod:`~marlplug.bench.envs`, :mod:`~marlplug.bench.loss` (its GEMM floor in
:mod:`~marlplug.bench.gemm_floor`), :mod:`~marlplug.bench.train`; and
:mod:`~marlplug.bench.parity` (coded vs centralized learning curves, ``python -m``; its runs'
configs in :mod:`~marlplug.bench.parity_config`, merged and drawn by
:mod:`~marlplug.bench.parity_results`). The commands are
registered lazily in :mod:`marlplug.cli.bench`.
"""
