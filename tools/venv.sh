# Sourced by tools/run-tests and tools/sandbox: make (or reuse) the
# project's virtualenv with every runtime and test requirement installed.
# VENV overrides where it lives (default: .venv in the checkout).
VENV=${VENV:-$PWD/.venv}
PYTHON=${PYTHON:-python3}
stamp="$VENV/.requirements-stamp"
want=$(cat requirements.txt test-requirements.txt setup.cfg pyproject.toml |
    sha1sum)
have=$(cat "$stamp" 2>/dev/null || true)

# pip, without the one warning a machine's pip configuration can repeat
# for every package: a find-links or index location that does not exist
# ("WARNING: Location 'file:///...' is ignored: it is neither a file nor
# a directory."). Everything else pip says, and its exit code, is kept.
venv_pip() {
    local err rc=0 ignored
    ignored="^WARNING: Location 'file://[^']*' is ignored: "
    ignored+="it is neither a file nor a directory\.\$"
    err=$(mktemp)
    "$VENV/bin/python" -m pip "$@" >&2 2>"$err" || rc=$?
    grep -v -e "$ignored" "$err" >&2 || true
    rm -f "$err"
    return "$rc"
}

if [ ! -x "$VENV/bin/python" ] || [ "$have" != "$want" ]; then
    echo "Preparing $VENV (the first run installs nova and placement)" >&2
    "$PYTHON" -m venv "$VENV"
    venv_pip install -q --upgrade pip setuptools wheel
    venv_pip install -q -r requirements.txt -r test-requirements.txt
    venv_pip install -q --no-deps -e .
    echo "$want" > "$stamp"
fi
export PATH="$VENV/bin:$PATH"
