#!/usr/bin/env bash
# The false-alarm benchmark: every correct candidate (the built-in kernels, their other-order
# controls and the example plugin) over generated cases in three shape regimes, under a policy.
# Any failing verdict is a false alarm: the script prints a table and exits 1. Runs get a 600 s
# time limit, so a loaded machine cannot turn a slow case into a TIMEOUT verdict.
#
#   bash bench/false_alarms.sh [--cases N] [--production-cases N] [--jobs J] [--seed S]
#                              [--policy FILE] [--attest PATH] [--plugin PATH.so] [--out DIR]
#                              [--regimes default,production,heads128]
#
# Defaults: 2000 cases per candidate and regime (200 for --production), one job per core,
# seed 1, the embedded default policy, build/attest. Shapes: the default generator bounds,
# --production (V4/V3.2 production shapes), and --max-heads 128.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
only=default,production,heads128 cases=2000 prod_cases=200 jobs=$(nproc 2>/dev/null || echo 2) seed=1 policy="" out=""
attest="$here/build/attest" plugin="$here/build/plugins/libattest_plugin_example.so"
while [ $# -gt 0 ]; do
  case "$1" in
    --cases) cases=$2; shift 2 ;;
    --production-cases) prod_cases=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --policy) policy=$2; shift 2 ;;
    --attest) attest=$2; shift 2 ;;
    --plugin) plugin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --regimes) only=$2; shift 2 ;;
    *) echo "false_alarms.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$attest" ] || { echo "false_alarms.sh: $attest is not an executable (build first)" >&2; exit 2; }
if [ -z "$out" ]; then out=$(mktemp -d "${TMPDIR:-/tmp}/attest-false-alarms.XXXXXX"); fi
mkdir -p "$out"

indexer=(cpu-indexer cpu-indexer-heads-reversed cpu-indexer-pairwise cpu-indexer-fma cpu-indexer-scale-first)
[ -f "$plugin" ] && indexer+=("$plugin:example-indexer")
decode=(cpu-mla-decode cpu-mla-decode-tile16 cpu-mla-decode-tile256 cpu-mla-decode-reverse-merge cpu-mla-decode-exp2)
regimes=("default::$cases" "production:--production:$prod_cases" "heads128:--max-heads 128:$cases")

total=0 failing=0 n=0
printf '%-34s %-11s %-10s %8s %8s %8s %8s\n' candidate kernel shapes cases failing vacuous seconds
run_one() {
  local kernel=$1 cand=$2 regime=$3 flags=$4 count=$5
  n=$((n + 1))
  local file="$out/r$n.h5" log="$out/r$n.log" t0 t1 rc=0
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$attest" run --kernel "$kernel" --candidate "$cand" --cases "$count" --seed "$seed" $flags \
    --reruns 1 --timeout 600 --jobs "$jobs" --quiet --out "$file" ${policy:+--policy "$policy"} >"$log" 2>&1 || rc=$?
  t1=$(date +%s.%N)
  local ok fails vac
  ok=$(sed -n 's/^attest: \([0-9]*\) cases.*/\1/p' "$log" | head -1)
  fails=$(sed -n 's/^  failures: \([0-9]*\).*/\1/p' "$log" | head -1)
  vac=$(sed -n 's/.*vacuous: \([0-9]*\).*/\1/p' "$log" | head -1)
  if [ "$rc" -gt 1 ] || [ -z "$ok" ]; then
    echo "false_alarms.sh: $cand ($regime) did not run: $(tail -1 "$log")" >&2
    exit 2
  fi
  total=$((total + ok)); failing=$((failing + ${fails:-0}))
  printf '%-34s %-11s %-10s %8s %8s %8s %8.1f\n' "$(basename "$cand")" "$kernel" "$regime" \
    "$ok" "${fails:-0}" "${vac:-0}" "$(awk "BEGIN{print $t1 - $t0}")"
  [ "${fails:-0}" -eq 0 ] || grep -E "^ +#|replay" "$log" | head -6
}
for r in "${regimes[@]}"; do
  IFS=: read -r regime flags count <<<"$r"
  case ",$only," in *",$regime,"*) ;; *) continue ;; esac
  for c in "${indexer[@]}"; do run_one indexer "$c" "$regime" "$flags" "$count"; done
  for c in "${decode[@]}"; do run_one mla-decode "$c" "$regime" "$flags" "$count"; done
  # FlashMLA's formats, under the policy written for them (not the float32 default).
  saved=$policy
  policy="$here/policies/bf16-tensor-core.json"
  run_one mla-decode cpu-mla-decode-bf16pv "$regime" "$flags" "$count"
  policy=$saved
done
echo "false alarms: $failing failing of $total cases (seed $seed, policy ${policy:-default}); results in $out"
[ "$failing" -eq 0 ]
