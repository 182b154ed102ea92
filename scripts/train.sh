#!/usr/bin/env bash
# Set up (skipped when .venv is current, see setup.sh) and train the default config: cooperative
# navigation with 3 agents.
# Extra arguments go to `marlplug train`, e.g. `bash scripts/train.sh --set train.updates=5`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
marlplug train "$@"
