#!/usr/bin/env bash
# Creates .venv and installs marlplug, its test tools and every plugin under plugins/.
# The CPU wheel of torch goes in first, from PyTorch's CPU index, so pip never resolves the multi-GB
# CUDA build that a plain `torch` from PyPI is on Linux (TORCH_INDEX_URL picks another index).
#
# Skipped when .venv is current: a finished set-up writes a stamp (a hash of pyproject.toml,
# plugins/*/pyproject.toml, this script and the Python version) and the next call compares it.
# MARLPLUG_FORCE_SETUP=1 installs anyway (.ci/run sets it).
set -euo pipefail
cd "$(dirname "$0")/.."

stamp=.venv/.marlplug-setup-stamp
inputs_hash() {
    for file in pyproject.toml plugins/*/pyproject.toml scripts/setup.sh; do
        echo "== $file"
        cat "$file"
    done
    python3 --version
}
wanted=$(inputs_hash | sha256sum | cut -d' ' -f1)
force=${MARLPLUG_FORCE_SETUP:-}
force=${force//[[:space:]]/}
case "${force,,}" in
    1 | true | yes | on) force=1 ;;
    *) force=0 ;;
esac
if [[ $force == 0 && -x .venv/bin/python && -f $stamp && "$(cat "$stamp")" == "$wanted" ]]; then
    echo "set-up: .venv is current (pyproject files unchanged); MARLPLUG_FORCE_SETUP=1 reinstalls" >&2
    exit 0
fi

# pip stays quiet (-q); one line per step on stderr says what the next minutes are spent on.
step() { echo "set-up: $*" >&2; }

step "creating .venv"
python3 -m venv .venv
rm -f "$stamp" # a set-up that stops half-way must not look current
. .venv/bin/activate
step "upgrading pip"
pip install -q --upgrade pip
torch_index=${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}
step "installing torch 2.13.0 (CPU) from $torch_index (the largest download: minutes)"
pip install -q --retries 2 torch==2.13.0 --index-url "$torch_index"
extras=test,docs,ray,vmas,tensorboard,wandb,mlflow,stats,sisl,magent2,lbf,rware
step "installing marlplug with its extras ($extras)"
pip install -q -e ".[$extras]"
for plugin in plugins/*/; do
    step "installing plugin $(basename "$plugin")"
    pip install -q -e "$plugin"
done
echo "$wanted" >"$stamp"
step "done; activate the environment with: . .venv/bin/activate"
