#!/usr/bin/env bash
# The Python guard bench side by side in one run: this branch's wheel and main's (or any older
# wheel: guard_bench.py drives a guard from before issues 57 and 58 through its own API), each
# installed in its own virtual environment, run back to back on the same machine.
#
#   bash benchmarks/python/run_guard_bench.sh NEW_VENV OLD_VENV [decide|races|threads ...]
set -euo pipefail
new="$1"; old="$2"; shift 2
here="$(cd "$(dirname "$0")" && pwd)"
snapshots="$(mktemp -d)"
trap 'rm -rf "$snapshots"' EXIT
if [ $# -eq 0 ]; then set -- decide races threads; fi
for what in "$@"; do
    for venv in "$new" "$old"; do
        if [ "$what" = decide ]; then
            "$venv/bin/python" "$here/guard_bench.py" decide "$snapshots"
        else
            "$venv/bin/python" "$here/guard_bench.py" "$what"
        fi
        echo
    done
done
