#!/usr/bin/env bash
# Create the virtualenvs that tests/integration drives as black boxes:
#   .venv-keystone  a real Keystone (and gunicorn to serve it)
#   .venv-osc       the openstack CLI with the osc-placement plugin
#   .venv-upstream  upstream openstack-placement (placement-manage,
#                   placement-status, its WSGI app) with gunicorn and the
#                   MySQL and PostgreSQL drivers: the adoption tests
#                   (tests/db/test_migrations.py) and the swap back to
#                   upstream (tests/integration/test_swap_back.py)
# Each lives apart from .venv because their pins may clash with ours. A venv
# is reinstalled only when its requirement list below changes (a stamp file
# records it), so running this again is cheap. Each install is bounded by
# INTEGRATION_VENV_TIMEOUT seconds (default 600) and prints its duration.
# PLACEMENT_INTEGRATION_VENVS=DIR puts the venvs in DIR instead of the checkout
# (tests/integration reads the same variable).
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENVS_DIR=${PLACEMENT_INTEGRATION_VENVS:-$PWD}
TIMEOUT=${INTEGRATION_VENV_TIMEOUT:-600}

KEYSTONE_REQUIREMENTS=(keystone==30.0.0 gunicorn==27.0.1)
OSC_REQUIREMENTS=(python-openstackclient==10.5.0 osc-placement==4.9.1)
# Upstream itself requires neither a DB driver nor a WSGI server.
UPSTREAM_REQUIREMENTS=(openstack-placement==16.0.0 gunicorn==27.0.1
                       PyMySQL==1.2.4 psycopg2-binary==2.9.13)

# The stamp is written last: tests/integration treats a venv without it as
# missing.
ensure_integration_venv() {
    local venv=$1 smoke_test=$2
    shift 2
    local stamp="$venv/.integration-installed"
    local wanted="$*"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
        echo "$venv: up to date ($wanted)" >&2
        return 0
    fi
    local started=$SECONDS output
    echo "$venv: installing $wanted" >&2
    rm -rf "$venv"
    "$PYTHON" -m venv "$venv"
    timeout "$TIMEOUT" "$venv/bin/python" -m pip install --quiet --quiet \
        --disable-pip-version-check "$@"
    if ! output=$("$venv/bin/$smoke_test" --version 2>&1); then
        echo "$venv: $smoke_test --version failed:" >&2
        echo "$output" >&2
        return 1
    fi
    echo "$wanted" > "$stamp"
    echo "$venv: installed in $((SECONDS - started))s" >&2
}

started=$SECONDS
ensure_integration_venv "$VENVS_DIR/.venv-keystone" keystone-manage \
    "${KEYSTONE_REQUIREMENTS[@]}"
ensure_integration_venv "$VENVS_DIR/.venv-osc" openstack \
    "${OSC_REQUIREMENTS[@]}"
ensure_integration_venv "$VENVS_DIR/.venv-upstream" placement-manage \
    "${UPSTREAM_REQUIREMENTS[@]}"
echo "integration venvs ready in $((SECONDS - started))s" >&2
