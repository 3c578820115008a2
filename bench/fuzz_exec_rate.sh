#!/usr/bin/env bash
# Exec/s per CPU second of the kernel fuzz targets, two builds side by side:
#   bench/fuzz_exec_rate.sh BEFORE_DIR AFTER_DIR [RUNS] [SEEDS] [TARGETS]
# BEFORE_DIR and AFTER_DIR hold fuzz_indexer and fuzz_mla_decode (say copies of
# build/fuzz-engine/fuzz or build-fuzz/fuzz from two trees). For each target and seed the two
# builds run alternately, each `-runs=RUNS -seed=I -max_len=512 -len_control=0` from its own
# empty corpus directory; the CPU time is user + system of the process (/usr/bin/time), so the
# figure does not depend on how loaded the machine is as much as wall-clock exec/s does.
# Prints a markdown table: exec/s per CPU second (total over the seeds) and the system share.
set -euo pipefail
before=${1:?before dir}
after=${2:?after dir}
runs=${3:-20000}
seeds=${4:-3}
targets=${5:-indexer mla_decode}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs one build once; appends "user sys" to $work/<label>-<target>.
one() {
  local dir=$1 label=$2 target=$3 seed=$4
  local corpus=$work/corpus-$label-$target-$seed
  rm -rf "$corpus" && mkdir -p "$corpus"
  /usr/bin/time -f "%U %S" -o "$work/t" "$dir/fuzz_$target" -runs="$runs" -seed="$seed" \
    -max_len=512 -len_control=0 -print_final_stats=0 "$corpus" >/dev/null 2>&1 || {
    echo "fuzz_$target ($label) failed on seed $seed" >&2
    exit 1
  }
  cat "$work/t" >>"$work/$label-$target"
}

for target in $targets; do
  for seed in $(seq 1 "$seeds"); do
    one "$before" before "$target" "$seed"
    one "$after" after "$target" "$seed"
  done
done

echo "| target | before: exec/s per CPU s (system share) | after: exec/s per CPU s (system share) |"
echo "|---|---|---|"
for target in $targets; do
  row="| fuzz_$target"
  for label in before after; do
    row+=$(awk -v n=$((runs * seeds)) '{u += $1; s += $2} END {
      printf(" | %d (%.0f%%)", n / (u + s), 100 * s / (u + s)) }' "$work/$label-$target")
  done
  echo "$row |"
done
