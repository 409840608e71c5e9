# Sourced by tools/run-tests, tools/sandbox and .ci/run: make (or reuse)
# the project's virtualenv with every runtime and test requirement
# installed (those of the unit, functional and scenario suites), within
# the same upper constraints as tox (tox.ini's TOX_CONSTRAINTS_FILE, whose
# default is the newest release's file in tools/release-envs/constraints),
# so that CI tests what tox tests. As in tox's functional env, the pins
# below the services' own floors are raised to them (tools/constraints.py;
# the file used is $VENV_CONSTRAINTS). VENV overrides where it lives
# (default: .venv in the checkout).
VENV=${VENV:-$PWD/.venv}
PYTHON=${PYTHON:-python3}
CONSTRAINTS=${TOX_CONSTRAINTS_FILE:-tools/release-envs/constraints/2026.2.txt}
VENV_CONSTRAINTS=$VENV/constraints.txt
requirements=(requirements.txt test-requirements.txt
    functional-requirements.txt)
stamp="$VENV/.requirements-stamp"
want=$(cat "${requirements[@]}" "$CONSTRAINTS" tools/constraints.py \
    setup.cfg pyproject.toml | sha1sum)
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
    "$VENV/bin/python" tools/constraints.py "$CONSTRAINTS" \
        "${requirements[@]}" --output "$VENV_CONSTRAINTS"
    venv_pip install -q -c "$VENV_CONSTRAINTS" "${requirements[@]/#/-r}"
    venv_pip install -q --no-deps -e .
    echo "$want" > "$stamp"
fi
export PATH="$VENV/bin:$PATH"
