#!/usr/bin/env bash
# Run the whole test suite in .venv (created on first use) on SQLite, MariaDB
# and PostgreSQL. Unreachable database servers are skipped with a warning,
# unless CI=true, where they fail the run. Arguments go to pytest, e.g.
#   tools/test.sh -x tests/api/test_traits.py
#   PLACEMENT_TEST_BACKENDS=sqlite tools/test.sh
set -euo pipefail

cd "$(dirname "$0")/.."
. tools/venv.sh
ensure_venv

exec "$VENV/bin/python" -m pytest "$@"
