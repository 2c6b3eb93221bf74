#!/usr/bin/env bash
# Certificates on the whole corpus (SPEC §5, issue 54 item 3): `qls corpus --certificates` writes
# every case's certificates, `qls certify` re-checks each case's with cvc5, and the table says per
# case how many unreachable verdicts got a certificate, how many cvc5 accepted, and which have none
# (with the reason the index gives). Usage:
#   benchmarks/certify_corpus.sh [OUT_DIR]        (QLS: the binary, default target/release/qls;
#                                                   QLS_PYTHON: a Python with `cvc5`)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-target/certify-corpus}"
qls="${QLS:-target/release/qls}"
[ -x "$qls" ] || cargo build --release -p qls-cli
py="${QLS_PYTHON:-python3}"
"$py" -c "import cvc5" 2>/dev/null || { echo "install cvc5 for $py (pip install cvc5==1.4.2)" >&2; exit 2; }
rm -rf "$out" "$out.why.txt"
plain0=$(date +%s.%N)
"$qls" corpus corpus > /dev/null || true
start=$(date +%s.%N)
"$qls" corpus corpus --certificates "$out" > "$out.corpus.txt" || true
mid=$(date +%s.%N)
printf '| case | certificates | accepted | rejected | without |\n|---|---|---|---|---|\n' > "$out.table.md"
total_w=0; total_a=0; total_r=0; total_n=0
for d in "$out"/*/; do
  case=$(basename "$d")
  log=$("$qls" certify "$d" --python "$py" || true)
  a=$(grep -c '^accepted' <<<"$log" || true)
  r=$(grep -c '^REJECTED' <<<"$log" || true)
  n=$(grep -c '^none' <<<"$log" || true)
  w=$((a + r))
  total_w=$((total_w + w)); total_a=$((total_a + a)); total_r=$((total_r + r)); total_n=$((total_n + n))
  if [ "$r" -gt 0 ] || [ "$n" -gt 0 ]; then
    printf '| %s | %d | %d | %d | %d |\n' "$case" "$w" "$a" "$r" "$n" >> "$out.table.md"
    grep -E '^(REJECTED|none)' <<<"$log" | sed "s/^/    $case: /" >> "$out.why.txt"
  fi
done
end=$(date +%s.%N)
printf '| **all %d cases** | %d | %d | %d | %d |\n' "$(ls -d "$out"/*/ | wc -l)" \
  "$total_w" "$total_a" "$total_r" "$total_n" >> "$out.table.md"
cat "$out.table.md"
[ -f "$out.why.txt" ] && cat "$out.why.txt"
printf 'corpus without certificates: %.0f s; with them: %.0f s; certify (cvc5): %.0f s\n' \
  "$(echo "$start - $plain0" | bc)" "$(echo "$mid - $start" | bc)" "$(echo "$end - $mid" | bc)"
