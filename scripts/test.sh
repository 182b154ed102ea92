#!/usr/bin/env bash
# The whole test suite: set-up (skipped when .venv is current, see setup.sh), lint, type check,
# the docs site's build, tests. The README's test command; extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
ruff check .
ruff format --check .  # the code blocks of the Markdown docs too
mypy
# The layer contracts in pyproject.toml ([tool.importlinter]): no back-arrow between packages.
lint-imports
# The docs site (mkdocs.yml), built into a scratch folder: a broken link or anchor, a page missing from
# the navigation, an API reference that does not resolve or a docstring the parser rejects fails it.
site_dir=$(mktemp -d)
trap 'rm -rf "$site_dir"' EXIT
NO_MKDOCS_2_WARNING=1 mkdocs build --strict --quiet --site-dir "$site_dir"
python -m pytest -q -p no:cacheprovider "$@"
