#!/usr/bin/env bash
# The Python tests (python/tests) against the installed wheel, never the source tree: builds the
# wheel (scripts/wheel.sh, the dev profile unless QLS_WHEEL_PROFILE=release), installs it into a
# fresh virtual environment whose PATH has no cargo, installs the pinned test requirements there,
# runs the tests (a skipped test fails the run), then proves the shop with that environment's
# `qls` (the gate must pass).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
bash scripts/wheel.sh "${QLS_WHEEL_PROFILE:-dev}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q --disable-pip-version-check target/wheels/qls-*.whl \
    -r scripts/requirements-test.txt
# The environment's PATH: its own bin and the system's folders; no cargo, no rustc.
clean="$tmp/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
if PATH="$clean" command -v cargo >/dev/null || PATH="$clean" command -v rustc >/dev/null; then
    echo "test-python.sh: cargo or rustc is on the clean PATH ($clean)" >&2
    exit 1
fi
# Z3 comes from the wheel (bundled by the repair), not from the system.
native="$(echo "$tmp"/venv/lib/python3*/site-packages/qls/_native*.so)"
if ! ldd "$native" | grep 'libz3' | grep -q "$tmp/venv"; then
    echo "test-python.sh: the wheel's native module does not load its own Z3:" >&2
    ldd "$native" >&2
    exit 1
fi
# From an empty folder, so nothing of the source tree is importable.
cd "$tmp"
PATH="$clean" python -m pytest -p no:cacheprovider -rs -q "$root/python/tests"
cd "$root"
PATH="$clean" qls verify examples/shop/agent.yaml
