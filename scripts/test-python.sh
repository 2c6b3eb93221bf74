#!/usr/bin/env bash
# The Python tests (python/tests) against the installed wheel, never the source tree: builds the
# wheel (scripts/wheel.sh, the dev profile unless QLS_WHEEL_PROFILE=release), installs it into a
# fresh virtual environment whose PATH has no cargo, installs the pinned test requirements there,
# runs the tests (a skipped test fails the run), then proves the shop with that environment's
# `qls` (the gate must pass). CrewAI's tests (test_crewai.py, test_provenance_crewai.py) run in a
# second fresh environment with the wheel and scripts/requirements-test-crewai.txt (crewai's pins
# exclude the main set's mcp and google-adk).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
bash scripts/wheel.sh "${QLS_WHEEL_PROFILE:-dev}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q --disable-pip-version-check target/wheels/qls-*.whl \
    -r scripts/requirements-test.txt
python3 -m venv "$tmp/crewai"
"$tmp/crewai/bin/python" -m pip install -q --disable-pip-version-check target/wheels/qls-*.whl \
    -r scripts/requirements-test-crewai.txt
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
crewai_tests=("$root/python/tests/test_crewai.py" "$root/python/tests/test_provenance_crewai.py")
PATH="$clean" python -m pytest -p no:cacheprovider -rs -q "$root/python/tests" \
    "${crewai_tests[@]/#/--ignore=}"
PATH="$tmp/crewai/bin:${clean#*:}" CREWAI_DISABLE_TELEMETRY=true OTEL_SDK_DISABLED=true \
    python -m pytest -p no:cacheprovider -rs -q "${crewai_tests[@]}"
cd "$root"
PATH="$clean" qls verify examples/shop/agent.yaml
