#!/usr/bin/env bash
# Cross-checks the BFS engine against SPIN on the same transition systems.
#
# For every system: `qls emit promela` writes the model twice (with one assertion per obligation,
# and without assertions), SPIN's pan searches each breadth-first without partial-order reduction
# (-DBFS -DNOREDUCE -DSAFETY), and `qls emit promela --stats` gives our BFS's figures. The script
# prints a table and exits 1 when a state count or an obligation's verdict differs.
#
# `spin -o2` keeps write-only variables in the state vector: by default SPIN hides a variable that
# is assigned but never read, which merges states our BFS keeps apart. The exact comparison uses
# -o2; the column `pan dflt` shows SPIN's default count on the model without assertions.
#
#   benchmarks/spin_compare.sh            # from the repository root
#   REPEAT=5 benchmarks/spin_compare.sh   # timing runs per engine (the fastest is reported)
#
# Needs gcc; installs spin with apt-get when it is missing.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
REPEAT=${REPEAT:-5}
JOBS=${JOBS:-1}
# ONLY=REGEX: only the systems whose name matches. QLS_BEFORE=PATH: an earlier qls binary, timed
# on the same systems in the same run (column "before ms").
ONLY=${ONLY:-}
QLS_BEFORE=${QLS_BEFORE:-}

if ! command -v spin >/dev/null 2>&1; then
    echo "spin not found: installing it with apt-get" >&2
    if [ "$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi
    $SUDO apt-get update -qq >&2
    $SUDO apt-get install -y -qq spin >&2
fi
command -v gcc >/dev/null 2>&1 || { echo "gcc is needed to compile pan" >&2; exit 2; }

echo "building qls (release)…" >&2
cargo build --release -q -p qls-cli --bin qls
QLS="${CARGO_TARGET_DIR:-$ROOT/target}/release/qls"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# name | qls arguments selecting the system
SYSTEMS=(
    "shop 1x8|examples/shop/agent.yaml --session-steps 1 --step-limit 8"
    "shop 2x12|examples/shop/agent.yaml --session-steps 2 --step-limit 12"
    "handoff graph|--graph examples/handoff/graph.json --catalogue examples/handoff/tools.catalogue.yaml --settings examples/handoff/agent.yaml"
    "qg001-fires|--case corpus/qg001-fires"
    "qg003-fires|--case corpus/qg003-fires"
    "qg003-per-agent-history|--case corpus/qg003-per-agent-history"
    "qg010-clean|--case corpus/qg010-clean"
    "qg012-fires|--case corpus/qg012-fires"
    "sheet-seed003|--case corpus/sheet-seed003"
    "taubench-retail|--case corpus/taubench-retail"
    "agentdojo-workspace|--case corpus/agentdojo-workspace"
    "langgraph-customer-support|--case corpus/langgraph-customer-support"
    "shop 8x16 (scaled)|examples/shop/agent.yaml --session-steps 8 --step-limit 16"
    "agentdojo-travel 6x16 (scaled)|--case corpus/agentdojo-travel --session-steps 6 --step-limit 16"
    "agentdojo-banking 6x12 (scaled)|--case corpus/agentdojo-banking --session-steps 6 --step-limit 12"
    "taubench-retail 6x12 (scaled)|--case corpus/taubench-retail --session-steps 6 --step-limit 12"
    "shop 64x16 (large)|examples/shop/agent.yaml --session-steps 64 --step-limit 16"
    "agentdojo-banking 60x12 (large)|--case corpus/agentdojo-banking --session-steps 60 --step-limit 12"
    "agentdojo-travel 50x16 (large)|--case corpus/agentdojo-travel --session-steps 50 --step-limit 16"
    "banking-two-desks 5x12 (large)|benchmarks/fixtures/banking-two-desks/agent.yaml --session-steps 5 --step-limit 12"
    "banking-two-desks 4x16 (large)|benchmarks/fixtures/banking-two-desks/agent.yaml --session-steps 4 --step-limit 16"
    "shop 128x16 (large)|examples/shop/agent.yaml --session-steps 128 --step-limit 16"
    # Systems with batches (SPEC §3 Batches): calls that stay at the node without a step, so
    # runs have no length bound; both searches cover the whole finite state space. The corpus's
    # `-clean` twins are the same graphs without the batch mark.
    "batch-irreversible-then-compensable-fires|--case corpus/batch-irreversible-then-compensable-fires"
    "batch-irreversible-then-compensable-clean|--case corpus/batch-irreversible-then-compensable-clean"
    "batch-third-call-breaks-at-most-fires|--case corpus/batch-third-call-breaks-at-most-fires"
    "batch-third-call-breaks-at-most-clean|--case corpus/batch-third-call-breaks-at-most-clean"
    "batch-untrusted-read-then-persistent-write-fires|--case corpus/batch-untrusted-read-then-persistent-write-fires"
    "batch-untrusted-read-then-persistent-write-clean|--case corpus/batch-untrusted-read-then-persistent-write-clean"
    "langgraph-json-swarm (batch)|--case corpus/langgraph-json-swarm"
    "banking-two-desks-batch 3x12|benchmarks/fixtures/banking-two-desks-batch/agent.yaml"
    "banking-two-desks-batch 4x16 (large)|benchmarks/fixtures/banking-two-desks-batch/agent.yaml --session-steps 4 --step-limit 16"
)

now_ns() { date +%s%N; }

# compile DIR MODEL [SPIN OPTIONS]: spin -a and gcc in DIR
compile() {
    (cd "$1" && spin ${3:-} -a "$2" >spin.log 2>&1 && gcc -O2 -DBFS -DNOREDUCE -DSAFETY -o pan pan.c 2>gcc.log) || {
        echo "compiling $1/$2 failed:" >&2
        cat "$1/spin.log" "$1/gcc.log" >&2 2>/dev/null || true
        return 1
    }
}

stored() { sed -n 's/^ *\([0-9][0-9]*\) states, stored.*/\1/p' "$1" | head -1; }

printf '%-32s %8s %8s %8s %5s %8s %6s %6s %10s %10s %10s %9s %12s %12s %7s %12s %8s\n' \
    system ours pan pan+asr equal "pan dflt" oblig. equal "before ms" "ours ms" "pan ms" "pan s(rep)" "ours st/s" "pan st/s" ratio "pan rate" "vs rate"
failed=0
i=0
for entry in "${SYSTEMS[@]}"; do
    i=$((i + 1))
    name=${entry%%|*}
    if [ -n "$ONLY" ] && ! [[ "$name" =~ $ONLY ]]; then continue; fi
    read -r -a args <<<"${entry#*|}"
    dir="$WORK/$i"
    mkdir -p "$dir/plain" "$dir/asserts" "$dir/default"
    # Our figures: full state count (best of REPEAT explorations) and every obligation's verdict.
    "$QLS" emit promela "${args[@]}" -o "$dir/asserts/model.pml" --stats --jobs "$JOBS" --repeat "$REPEAT" >"$dir/ours.txt"
    "$QLS" emit promela "${args[@]}" --no-assertions -o "$dir/plain/model.pml"
    ours=$(sed -n 's/^states=//p' "$dir/ours.txt")
    ours_ms=$(sed -n 's/^ms=//p' "$dir/ours.txt")
    before_ms=-
    if [ -n "$QLS_BEFORE" ]; then
        before_ms=$("$QLS_BEFORE" emit promela "${args[@]}" -o "$dir/before.pml" --stats --jobs "$JOBS" --repeat "$REPEAT" | sed -n 's/^ms=//p')
    fi
    # pan's search depth: the one the model's header gives (far above the steps with batches,
    # whose calls take commands that count no step), with a margin.
    pan_depth=$(sed -n 's/^pan_depth=//p' "$dir/ours.txt")
    maxdepth=$((pan_depth * 2 + 100))
    # Hash table sized to the state count (2^w slots, at least 2^10), the same for both models.
    w=10
    while [ $((1 << w)) -lt $((ours * 2)) ]; do w=$((w + 1)); done

    cp "$dir/plain/model.pml" "$dir/default/model.pml"
    compile "$dir/plain" model.pml -o2
    compile "$dir/asserts" model.pml -o2
    compile "$dir/default" model.pml
    (cd "$dir/default" && ./pan -m"$maxdepth" -w"$w" >pan.out 2>&1) || true
    pan_dflt=$(stored "$dir/default/pan.out")

    # Plain model: state count and time (fastest of REPEAT runs of ./pan; compilation excluded).
    best_ns=
    for _ in $(seq "$REPEAT"); do
        t0=$(now_ns)
        (cd "$dir/plain" && ./pan -m"$maxdepth" -w"$w" >pan.out 2>&1)
        t1=$(now_ns)
        d=$((t1 - t0))
        if [ -z "$best_ns" ] || [ "$d" -lt "$best_ns" ]; then best_ns=$d; fi
    done
    pan=$(stored "$dir/plain/pan.out")
    pan_rep=$(sed -n 's/^pan: elapsed time \([0-9.e+-]*\) seconds.*/\1/p' "$dir/plain/pan.out" | head -1)
    pan_rate=$(sed -n 's/^pan: rate *\([0-9.e+-]*\) states\/second.*/\1/p' "$dir/plain/pan.out" | head -1)
    if grep -q "max search depth too small" "$dir/plain/pan.out"; then
        echo "$name: pan's depth limit $maxdepth is too small" >&2
        failed=1
    fi
    if grep -qE "errors: [1-9]" "$dir/plain/pan.out"; then
        echo "$name: pan reports errors on the model without assertions:" >&2
        grep -E "^pan:" "$dir/plain/pan.out" >&2 || true
        failed=1
    fi

    # Assertion model: one search without stopping at errors (-c0); the violated assertions name
    # their obligations (`obligation==K`).
    (cd "$dir/asserts" && ./pan -c0 -m"$maxdepth" -w"$w" >pan.out 2>&1) || true
    pan_asr=$(stored "$dir/asserts/pan.out")
    grep -o 'obligation==[0-9]*' "$dir/asserts/pan.out" | sed 's/obligation==//' | sort -n | uniq >"$dir/pan_reach.txt" || true
    awk '$1 == "obligation" && $4 == "reachable" { print $2 }' "$dir/ours.txt" | sort -n >"$dir/our_reach.txt"
    nobl=$(grep -c '^obligation ' "$dir/ours.txt" || true)
    if grep -q 'undecided$' "$dir/ours.txt"; then
        echo "$name: our BFS left an obligation undecided" >&2
        failed=1
    fi

    if [ "$ours" = "$pan" ] && [ "$ours" = "$pan_asr" ]; then st_eq=yes; else st_eq=NO; failed=1; fi
    if cmp -s "$dir/our_reach.txt" "$dir/pan_reach.txt"; then v_eq=yes; else
        v_eq=NO
        failed=1
        echo "$name: verdicts differ (obligations reachable: ours [$(tr '\n' ' ' <"$dir/our_reach.txt")], pan [$(tr '\n' ' ' <"$dir/pan_reach.txt")])" >&2
    fi
    nreach=$(wc -l <"$dir/our_reach.txt")

    pan_ms=$(awk -v n="$best_ns" 'BEGIN { printf "%.3f", n / 1e6 }')
    read -r ours_sps pan_sps ratio rate_ratio < <(awk -v s="$ours" -v a="$ours_ms" -v b="$pan_ms" -v pr="${pan_rate:-0}" 'BEGIN {
        oa = (a > 0) ? s / (a / 1000) : 0; ob = (b > 0) ? s / (b / 1000) : 0;
        r = (a > 0) ? b / a : 0;
        rr = (pr > 0) ? oa / pr : 0;
        printf "%.0f %.0f %.1f %.2f\n", oa, ob, r, rr }')
    if [ -z "${pan_rate:-}" ]; then rate_ratio=-; pan_rate=-; else rate_ratio="${rate_ratio}x"; fi
    printf '%-32s %8s %8s %8s %5s %8s %6s %6s %10s %10s %10s %9s %12s %12s %7s %12s %8s\n' \
        "$name" "$ours" "$pan" "$pan_asr" "$st_eq" "$pan_dflt" "$nreach/$nobl" "$v_eq" "$before_ms" "$ours_ms" "$pan_ms" "${pan_rep:-?}" "$ours_sps" "$pan_sps" "${ratio}x" "$pan_rate" "$rate_ratio"
done

echo
echo "ours: qls BFS, full state space, $JOBS thread(s), in-process time, best of $REPEAT (excludes loading and lowering)."
echo "pan: SPIN $(spin -V 2>/dev/null | sed -n 's/^Spin Version \([^ ]*\).*/\1/p') (spin -o2 -a; gcc -O2 -DBFS -DNOREDUCE -DSAFETY), states stored on the model without assertions;"
echo "  pan ms: wall time of ./pan on that model, best of $REPEAT (excludes spin -a and gcc); pan s(rep): pan's own elapsed time."
echo "pan+asr: states stored by pan -c0 on the model with assertions; oblig.: obligations reachable / obligations (ours, equal to pan's when 'equal')."
echo "pan dflt: states stored with SPIN's default options (write-only variables hidden), not compared."
echo "ratio: pan ms / ours ms (above 1: our BFS is faster)."
echo "pan rate: the states/second pan reports itself (its search alone, start-up excluded); vs rate: ours st/s / pan rate."
echo "before ms: \$QLS_BEFORE's time on the same system in this run (- when not given)."
if [ "$failed" -ne 0 ]; then
    echo "MISMATCH: a state count or a verdict differs (see above)" >&2
    exit 1
fi
echo "all state counts and verdicts equal"
