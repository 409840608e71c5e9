# Sourced by tools/run-tests and tools/sandbox: make (or reuse) the
# project's virtualenv with every runtime and test requirement installed.
# VENV overrides where it lives (default: .venv in the checkout).
VENV=${VENV:-$PWD/.venv}
PYTHON=${PYTHON:-python3}
stamp="$VENV/.requirements-stamp"
want=$(cat requirements.txt test-requirements.txt setup.cfg | sha1sum)
have=$(cat "$stamp" 2>/dev/null || true)
if [ ! -x "$VENV/bin/python" ] || [ "$have" != "$want" ]; then
    echo "Preparing $VENV (the first run installs nova and placement)" >&2
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip setuptools wheel >&2
    "$VENV/bin/python" -m pip install -q -r requirements.txt \
        -r test-requirements.txt >&2
    "$VENV/bin/python" -m pip install -q --no-deps -e . >&2
    echo "$want" > "$stamp"
fi
export PATH="$VENV/bin:$PATH"
