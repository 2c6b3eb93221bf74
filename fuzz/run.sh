#!/bin/sh
# Usage: ./run.sh <target> [seconds]  — one fuzzer, one job, nice 5 (the machine is shared).
set -e
t=$1; secs=${2:-600}
dict=$t
case $t in colang1|colang2) dict=colang;; esac
cd "$(dirname "$0")"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$(pwd)/../target}
mkdir -p logs artifacts/$t
RUSTC_BOOTSTRAP=1 nice -n 5 cargo fuzz run "$t" -- \
  -max_total_time="$secs" -jobs=1 -workers=1 -timeout=10 -rss_limit_mb=2048 \
  -dict=dict/$dict.dict -print_final_stats=1 -artifact_prefix=artifacts/$t/ \
  > logs/$t.out 2>&1 || true
[ -f fuzz-0.log ] && mv fuzz-0.log logs/$t.log || true
