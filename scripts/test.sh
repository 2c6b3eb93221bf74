#!/usr/bin/env bash
# The README's second command: installs what a fresh machine of this kind lacks (the Z3 library,
# the Python packages the tests drive), then runs every test — Rust and Python.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! { [ -f /usr/include/z3.h ] && ldconfig -p | grep -q libz3; }; then
  echo "installing libz3-dev"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq libz3-dev
fi
if [ -s scripts/requirements-test.txt ]; then
  python3 -m pip install -q --disable-pip-version-check -r scripts/requirements-test.txt
fi
cargo --version
cargo test --workspace
if [ -d python/tests ]; then
  cargo build -q -p prover --bin qls
  QLS_BIN="$PWD/target/debug/qls" python3 -m pytest -q python/tests
fi
