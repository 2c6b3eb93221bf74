#!/usr/bin/env bash
# The cost of tasks (issue 51 item 2, docs/tasks.md "What tasks cost"): the three corpus cases
# with the most BFS states, each proved with and without its tasks, under each engine setting
# (both, bfs, bmc), the two runs of a pair one after the other (with, without, with, without …)
# so a drift in the machine's speed falls on both. Prints, per case and engine, the BFS states
# (the proof's, and the tasks' summed) and each run's user+sys CPU and wall seconds (GNU time).
#
#   benchmarks/tasks_cost.sh                # from the repository root; QLS=path/to/qls, RUNS=5
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
QLS=${QLS:-target/debug/qls}
RUNS=${RUNS:-5}
C=corpus
T=docs/tasks-cost

graph_case() {
    local d="$C/$1"
    echo "verify --graph $d/graph.json --catalogue $d/tools.catalogue.yaml --settings $d/agent.yaml --session-steps 1 --step-limit 10 --format json"
}

# name | with tasks | without
pairs=(
    "undo-of-unconfirmed-write|$(graph_case regression-undo-of-unconfirmed-write-fires) --tasks $T/undo-write.yaml|$(graph_case regression-undo-of-unconfirmed-write-fires)"
    "rollback-of-unconfirmed-write|$(graph_case regression-rollback-of-unconfirmed-write-fires) --tasks $T/undo-write.yaml|$(graph_case regression-rollback-of-unconfirmed-write-fires)"
    "tasks-banking|verify $C/tasks-banking/agent.yaml --session-steps 2 --format json|verify $C/agentdojo-banking/agent.yaml --session-steps 2 --format json"
)

states() {
    # shellcheck disable=SC2086
    "$QLS" $1 | python3 -c 'import json,sys; d=json.load(sys.stdin); s = d["states"]; print("-" if s is None else s, sum(t["states"] for t in d.get("tasks", [])))'
}

timed() {
    # shellcheck disable=SC2086
    /usr/bin/time -f "%U %S %e" "$QLS" $1 2>&1 >/dev/null | tail -1 | awk '{printf "%.3f %.3f", $1 + $2, $3}'
}

echo "case engine | states without | states with (proof, tasks) | cpu s without | cpu s with | wall s without | wall s with"
for p in "${pairs[@]}"; do
    IFS='|' read -r name with without <<<"$p"
    for engine in both bfs bmc; do
        a="$with --engine $engine"
        b="$without --engine $engine"
        sa=$(states "$a" || true)
        sb=$(states "$b" || true)
        ca=() cb=() wa=() wb=()
        for _ in $(seq "$RUNS"); do
            read -r c w <<<"$(timed "$a")"; ca+=("$c"); wa+=("$w")
            read -r c w <<<"$(timed "$b")"; cb+=("$c"); wb+=("$w")
        done
        echo "$name $engine | ${sb% *} | $sa | ${cb[*]} | ${ca[*]} | ${wb[*]} | ${wa[*]}"
    done
done
