# Sourced by the tools/ scripts: make sure $VENV (default .venv) has the
# project and its test and lint requirements installed, in editable mode.
# Installs again only when pyproject.toml changed.

ensure_venv() {
    PYTHON=${PYTHON:-python3}
    VENV=${VENV:-.venv}
    local stamp="$VENV/.placement-installed"
    local wanted
    wanted=$(cksum < pyproject.toml)

    if [ ! -x "$VENV/bin/python" ]; then
        echo "Creating $VENV" >&2
        "$PYTHON" -m venv "$VENV"
    fi
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
        echo "Installing the project into $VENV" >&2
        "$VENV/bin/python" -m pip install --quiet -e '.[test,lint]'
        echo "$wanted" > "$stamp"
    fi
}
