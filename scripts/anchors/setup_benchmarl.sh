#!/usr/bin/env bash
# BenchMARL 1.5.2's own virtualenv, the anchor of docs/results/benchmarl.md: never a dependency of
# marlplug, never installed beside it. Usage: bash scripts/anchors/setup_benchmarl.sh [VENV]
# (default /work/anchors/benchmarl). torch is pinned to the CPU wheel marlplug uses, because
# BenchMARL's torchvision requirement otherwise resolves to the newest torch, a multi-GB CUDA build.
set -euo pipefail
venv=${1:-/work/anchors/benchmarl}
python3.11 -m venv "$venv"
"$venv/bin/pip" install -q torch==2.13.0
constraints=$(mktemp)
trap 'rm -f "$constraints"' EXIT
echo "torch==2.13.0" > "$constraints"
"$venv/bin/pip" install -q -c "$constraints" benchmarl==1.5.2 torchrl==0.11.0 "tensordict>=0.11,<0.12" vmas==1.5.2
"$venv/bin/python" -c "import benchmarl, torchrl; print('BenchMARL', benchmarl.__version__, 'torchrl', torchrl.__version__)"
