#!/usr/bin/env bash
# What a fresh machine of this kind lacks for the tests: the Z3 library and the Python packages
# the tests drive (scripts/requirements-test.txt). Idempotent: installs only what is missing.
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
