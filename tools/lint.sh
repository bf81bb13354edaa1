#!/usr/bin/env bash
# Lint and type checks, in .venv (created on first use): ruff (pyflakes,
# pycodestyle, bugbear, import order) on every Python file, and mypy on
# the whole placement package (pyproject.toml's [tool.ruff] and
# [tool.mypy]).
set -euo pipefail

cd "$(dirname "$0")/.."
. tools/venv.sh
ensure_venv

"$VENV/bin/ruff" check placement alembic tests tools
"$VENV/bin/mypy"
