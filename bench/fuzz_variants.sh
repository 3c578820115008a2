#!/usr/bin/env bash
# exec/s per CPU second of the kernel libFuzzer targets of several builds (or options), side by
# side: each target, each libFuzzer seed, every variant in turn, so a loaded machine slows all
# alike. Each run: RUNS execs from an empty corpus, -max_len=512 -len_control=0 (what `attest
# fuzz` passes), timed with /usr/bin/time (user + system seconds of the fuzzer process).
#
#   bash bench/fuzz_variants.sh RUNS SEEDS LABEL:BUILD_DIR[:OPTIONS] ...
#
# BUILD_DIR holds fuzz/fuzz_indexer and fuzz/fuzz_mla_decode; OPTIONS (no spaces) go to the
# fuzzer, e.g. base:build-fz: noentropic:build-fz:-entropic=0. Prints one line per run and one
# SUM line per target and variant (exec/s per CPU s, user and system s per run, the last run's
# cov and ft).
set -euo pipefail
runs=$1 seeds=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for t in indexer mla_decode; do
  for s in $(seq 1 "$seeds"); do
    for v in "$@"; do
      IFS=: read -r label dir opts <<<"$v"
      dir=$(cd "$dir" && pwd)
      rm -rf "$tmp/c"; mkdir "$tmp/c"
      # shellcheck disable=SC2086
      (cd "$tmp" && /usr/bin/time -f "%U %S" -o "$tmp/t" "$dir/fuzz/fuzz_$t" -runs="$runs" \
         -seed="$s" -max_len=512 -len_control=0 ${opts:-} c > "$tmp/log" 2>&1) || true
      ft=$(grep -oE 'ft: [0-9]+' "$tmp/log" | tail -1 | awk '{print $2}')
      cov=$(grep -oE 'cov: [0-9]+' "$tmp/log" | tail -1 | awk '{print $2}')
      echo "$t $label $s $(cat "$tmp/t") ${cov:-?} ${ft:-?}"
    done
  done
done | awk -v runs="$runs" '{k = $1 " " $2; u[k] += $4; sy[k] += $5; n[k]++; cov[k] = $6; ft[k] = $7; print}
  END {for (k in u) printf "SUM %s exec/s per CPU s %.0f (user %.2f sys %.2f per run) cov %s ft %s\n",
       k, runs * n[k] / (u[k] + sy[k]), u[k] / n[k], sy[k] / n[k], cov[k], ft[k]}'
