#!/usr/bin/env bash
# Set up (skipped when .venv is current, see setup.sh) and train: by default the packaged
# marlplug/configs/spread_vmas.yaml, cooperative navigation with 3 agents on VMAS, the best
# evaluation per minute marlplug has measured on a 2-core machine (evaluated on mpe).
# A config file as the first argument trains that instead, e.g. the mpe route:
#   bash scripts/train.sh marlplug/configs/default.yaml
# Other arguments go to `marlplug train`, e.g. `bash scripts/train.sh --set train.updates=5`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
config=marlplug/configs/spread_vmas.yaml
if [[ $# -gt 0 && $1 != -* ]]; then
    config=$1
    shift
fi
marlplug train "$config" "$@"
