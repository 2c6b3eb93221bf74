#!/usr/bin/env bash
# Cross-checks qls's verdicts against rIC3, a hardware model checker (HWMCC'24 and '25 winner),
# on the same transition systems written as BTOR2 (`qls emit btor2`, docs/formats.md "BTOR2").
#
# For every corpus case: `qls emit btor2 --case DIR` writes the system with one `bad` per
# obligation, and `qls emit promela --case DIR --stats` gives the BFS's verdict per obligation
# (the same system and obligation order). rIC3 checks a model's bads as one property (any bad),
# so the script first asks it about the whole model: UNSAT proves every obligation unreachable at
# once; otherwise each `bad` is checked alone, in a copy of the model with the other `bad` lines
# removed. Each obligation is counted as agree, rIC3 only (qls undecided), qls only (rIC3
# unknown or out of time), or disagree; the script prints a table and exits 1 on a disagreement.
#
#   benchmarks/ric3_compare.sh                    # from the repository root
#   ONLY=REGEX TIME_LIMIT=20 benchmarks/ric3_compare.sh
#
# rIC3 is GPL-3.0 and is run as an external program only (never linked). It is installed here
# with `cargo install` into benchmarks/.ric3 (not on PATH, not in the workspace); its 1.5.2
# release needs a nightly Rust (`#![feature]` in its sources, in logicrs and in smtif-bitwuzla's
# build script; RIC3_TOOLCHAIN, nightly-2026-04-15 by default), clang (kissat's build), cmake
# (CaDiCaL's), and its Bitwuzla dependency builds with meson and ninja (installed with pip into a
# virtual environment beside it when missing), needs GMP >= 6.3 and MPFR >= 4.2.1, and downloads
# CaDiCaL and symfpu from GitHub. Where that is not so (Debian 12, no GitHub), build it as
# benchmarks/README.md "rIC3 on the emitted BTOR2" describes and pass RIC3=PATH.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
ONLY=${ONLY:-}
TIME_LIMIT=${TIME_LIMIT:-10}
RIC3_VERSION=${RIC3_VERSION:-1.5.2}
# The nightly rIC3 1.5.2 builds with: its logicrs 0.6.1 does not compile on nightly 2026-05-19.
RIC3_TOOLCHAIN=${RIC3_TOOLCHAIN:-nightly-2026-04-15}
RIC3_ROOT=${RIC3_ROOT:-$ROOT/benchmarks/.ric3}
# `cargo install` names the binary after the crate's `[[bin]]`: `rIC3`. RIC3=PATH runs a build
# made elsewhere (benchmarks/README.md, "rIC3 on the emitted BTOR2", says how it was built here).
RIC3=${RIC3:-$RIC3_ROOT/bin/rIC3}

if ! [ -x "$RIC3" ]; then
    echo "installing rIC3 $RIC3_VERSION into $RIC3_ROOT (nightly Rust, meson, ninja)…" >&2
    command -v rustup >/dev/null 2>&1 || { echo "rustup is needed for a nightly toolchain" >&2; exit 2; }
    command -v clang >/dev/null 2>&1 || { echo "clang is needed (rIC3's kissat builds with it): apt-get install clang" >&2; exit 2; }
    rustup toolchain list | grep -q "^$RIC3_TOOLCHAIN" || rustup toolchain install "$RIC3_TOOLCHAIN" --profile minimal >&2
    if ! command -v meson >/dev/null 2>&1 || ! command -v ninja >/dev/null 2>&1; then
        python3 -m venv "$RIC3_ROOT/venv" >&2
        "$RIC3_ROOT/venv/bin/pip" install -q meson ninja >&2
        export PATH="$RIC3_ROOT/venv/bin:$PATH"
    fi
    cargo +"$RIC3_TOOLCHAIN" install --locked --root "$RIC3_ROOT" rIC3 --version "$RIC3_VERSION" >&2
fi

echo "building qls (release)…" >&2
cargo build --release -q -p qls-cli --bin qls
QLS="${CARGO_TARGET_DIR:-$ROOT/target}/release/qls"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# ric3 MODEL: SAT (a bad is reachable), UNSAT (none is) or UNKNOWN (rIC3 gave up or ran out of
# time), with rIC3's single-thread IC3 engine (-e ic3; the portfolio starts 16 workers).
ric3() {
    local out
    out=$(cd "$WORK" && timeout $((TIME_LIMIT + 5)) "$RIC3" -e ic3 --time-limit "$TIME_LIMIT" "$1" 2>/dev/null | tail -1) || true
    case "$out" in
        SAT | UNSAT) echo "$out" ;;
        *) echo UNKNOWN ;;
    esac
}

printf '%-52s %6s %6s %7s %6s %8s %9s %8s\n' case bads agree "rIC3 only" "qls only" disagree "qls reach" "ric3 ms"
total_agree=0 total_ric3=0 total_qls=0 total_dis=0 total_bads=0 cases=0
for dir in corpus/*/; do
    name=$(basename "$dir")
    if [ -n "$ONLY" ] && ! [[ "$name" =~ $ONLY ]]; then continue; fi
    [ -f "$dir/expected.json" ] || continue
    d="$WORK/$name"
    mkdir -p "$d"
    if ! "$QLS" emit btor2 --case "$dir" -o "$d/model.btor2" 2>"$d/emit.err"; then
        echo "$name: qls emit btor2 failed: $(head -1 "$d/emit.err")" >&2
        continue
    fi
    "$QLS" emit promela --case "$dir" -o "$d/model.pml" --stats >"$d/ours.txt"
    # qls's verdict per obligation K (1-based, the model's bad K-1).
    awk '$1 == "obligation" { print $4 }' "$d/ours.txt" >"$d/ours.verdicts"
    nbad=$(grep -c '^; bad ' "$d/model.btor2" || true)
    if [ "$nbad" -ne "$(wc -l <"$d/ours.verdicts")" ]; then
        echo "$name: $nbad bads but $(wc -l <"$d/ours.verdicts") obligations" >&2
        exit 1
    fi
    t0=$(date +%s%N)
    : >"$d/ric3.verdicts"
    whole=UNKNOWN
    [ "$nbad" -gt 0 ] && whole=$(ric3 "$d/model.btor2")
    for k in $(seq 0 $((nbad - 1))); do
        if [ "$whole" = UNSAT ]; then
            echo unreachable >>"$d/ric3.verdicts"
            continue
        fi
        # The model with bad k alone: every other `bad` line dropped (the `; bad k:` comment
        # precedes its line).
        awk -v k="$k" '
            /^; bad [0-9]+:/ { split($3, a, ":"); cur = a[1]; print; next }
            $2 == "bad" { if (cur == k) print; next }
            { print }' "$d/model.btor2" >"$d/bad$k.btor2"
        case $(ric3 "$d/bad$k.btor2") in
            SAT) echo reachable >>"$d/ric3.verdicts" ;;
            UNSAT) echo unreachable >>"$d/ric3.verdicts" ;;
            *) echo undecided >>"$d/ric3.verdicts" ;;
        esac
    done
    t1=$(date +%s%N)
    read -r agree ric3_only qls_only dis < <(paste "$d/ours.verdicts" "$d/ric3.verdicts" | awk '
        { q = $1; r = $2
          if (q != "undecided" && r != "undecided") { if (q == r) a++; else d++ }
          else if (q == "undecided" && r != "undecided") ro++
          else if (q != "undecided" && r == "undecided") qo++ }
        END { printf "%d %d %d %d\n", a, ro, qo, d }')
    if [ "$dis" -gt 0 ]; then
        paste "$d/ours.verdicts" "$d/ric3.verdicts" | awk -v n="$name" '$1 != $2 && $1 != "undecided" && $2 != "undecided" { printf "%s: obligation %d: qls %s, rIC3 %s\n", n, NR, $1, $2 }' >&2
    fi
    reach=$(grep -c '^reachable' "$d/ours.verdicts" || true)
    printf '%-52s %6s %6s %7s %6s %8s %9s %8s\n' "$name" "$nbad" "$agree" "$ric3_only" "$qls_only" "$dis" "$reach" $(((t1 - t0) / 1000000))
    total_bads=$((total_bads + nbad)) total_agree=$((total_agree + agree)) total_ric3=$((total_ric3 + ric3_only))
    total_qls=$((total_qls + qls_only)) total_dis=$((total_dis + dis)) cases=$((cases + 1))
done

echo
printf '%-52s %6s %6s %7s %6s %8s\n' "all ($cases cases)" "$total_bads" "$total_agree" "$total_ric3" "$total_qls" "$total_dis"
echo "qls: the BFS's verdict per obligation (qls emit promela --stats, full state budget);"
echo "rIC3 $RIC3_VERSION: -e ic3 --time-limit $TIME_LIMIT per model (the whole model first; each bad alone unless it was UNSAT)."
if [ "$total_dis" -ne 0 ]; then
    echo "DISAGREEMENT: qls and rIC3 differ on $total_dis obligations (see above)" >&2
    exit 1
fi
echo "no disagreement"
