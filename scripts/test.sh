#!/usr/bin/env bash
# The whole test suite: set-up (skipped when .venv is current, see setup.sh), lint, type check,
# tests. The README's test command; extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
ruff check .
ruff format --check .  # the code blocks of the Markdown docs too
mypy
# The layer contracts in pyproject.toml ([tool.importlinter]): no back-arrow between packages.
lint-imports
python -m pytest -q -p no:cacheprovider "$@"
