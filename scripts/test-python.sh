#!/usr/bin/env bash
# The Python exporter's tests (python/tests), run against the debug `qls` binary.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q -p prover --bin qls
QLS_BIN="$PWD/target/debug/qls" python3 -m pytest -q python/tests
