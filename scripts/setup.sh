#!/usr/bin/env bash
# Creates .venv and installs marlplug, its test tools and every plugin under plugins/.
# The CPU wheel of torch goes in first so pip never resolves a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
. .venv/bin/activate
pip install -q --upgrade pip
pip install -q torch==2.13.0
pip install -q -e ".[test,ray,vmas,tensorboard]"
for plugin in plugins/*/; do
    pip install -q -e "$plugin"
done
