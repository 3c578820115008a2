#!/usr/bin/env bash
# `attest fuzz --engine libfuzzer` (issue 10): time to first finding from an empty corpus for
# every shipped host mutant (the top-k family's through fuzz_topk), exec/s per target, semantic classes reached in T seconds with and
# without the structure-aware mutator and counters, and T seconds on every correct host
# candidate (nothing may be found).
#
#   bash bench/fuzz_engine.sh [ATTEST] [SEEDS] [JOBS] [T] [PARTS]
#
# ATTEST: an attest binary of a fuzz build (default build-fuzz/attest; a gcc build works with
# ATTEST_FUZZER_DIR=build-fuzz/fuzz); SEEDS: searches per mutant (default 3); JOBS: libFuzzer
# processes (default 1); T: seconds per correct-candidate run (default 60); PARTS: any of
# "ttff rate classes controls" (default all four). Prints markdown tables. TTFF_ARGS: more
# options for the ttff searches (TTFF_ARGS=--no-structure: libFuzzer's byte mutations alone).
# KERNEL=topk (or indexer, mla-decode): the ttff and controls parts for that family alone.
#
# classes: each kernel target alone (the fuzz_<target> binaries of ATTEST_FUZZER_DIR, or
# fuzz/ beside ATTEST), T seconds from an empty corpus, libFuzzer seed 1, with and without the
# structure-aware mutator and counters (ATTEST_FUZZ_STRUCTURE=0): semantic classes reached by
# the 100th, 1,000th and 10,000th exec and in all T seconds (ATTEST_FUZZ_CLASSES records the
# exec that first reached each), and the classes only one of the two reached.
set -euo pipefail
attest=${1:-build-fuzz/attest}
seeds=${2:-3}
jobs=${3:-1}
secs=${4:-60}
parts=${5:-ttff rate classes controls}
fuzzdir=$(cd "${ATTEST_FUZZER_DIR:-$(dirname "$attest")/fuzz}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fuzzer_args() { # kernel -> --fuzzer PATH when ATTEST_FUZZER_DIR is set
  if [ -n "${ATTEST_FUZZER_DIR:-}" ]; then
    case $1 in indexer) echo "--fuzzer $ATTEST_FUZZER_DIR/fuzz_indexer" ;;
               topk) echo "--fuzzer $ATTEST_FUZZER_DIR/fuzz_topk" ;;
               *) echo "--fuzzer $ATTEST_FUZZER_DIR/fuzz_mla_decode" ;; esac
  fi
}

median_max() { # numbers on stdin -> "median max"
  sort -g | awk '{v[NR]=$1} END {m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2;
                                printf "%s %s\n", m, v[NR]}'
}

# one run: kernel candidate extra-args... -> the summary line on stdout, exit status in $tmp/rc
fuzz() {
  local kernel=$1 cand=$2; shift 2
  rm -rf "$tmp/f"; mkdir -p "$tmp/f"
  # shellcheck disable=SC2046
  "$attest" fuzz --engine libfuzzer $(fuzzer_args "$kernel") --candidate "$cand" --jobs "$jobs" \
      --findings "$tmp/f" --out "$tmp/f/r.h5" --quiet "$@" > "$tmp/out" 2>&1 && rc=0 || rc=$?
  echo "$rc" > "$tmp/rc"
  cat "$tmp/out"
}

if [[ " $parts " == *" ttff "* ]]; then
  echo "| mutant | median s | max s | median execs | max execs | verdict | saved case fails the same way |"
  echo "|---|---|---|---|---|---|---|"
  # mutant-mla-int32-offsets fails only on pools past 2^31 bytes: inputs whose knobs set bits 3
  # and 4 (fuzz/inputs_internal.h). ONLY="m1 m2": those mutants alone.
  "$attest" list | awk -v k="${KERNEL:-}" -v only=" ${ONLY:-} " '$1 ~ /^mutant-/ && $3 == "host" &&
                        $2 != "pipeline" && (k == "" || $2 == k) &&
                        (only == "  " || index(only, " " $1 " ")) {print $1, $2}' |
  while read -r m kernel; do
    : > "$tmp/t"; : > "$tmp/n"; verdict=""; same=yes
    for s in $(seq 1 "$seeds"); do
      # shellcheck disable=SC2086
      out=$(fuzz "$kernel" "$m" --time 120 --seed "$s" --timeout 1 --max-tries 200 ${TTFF_ARGS:-})
      line=$(grep -E '^time to first finding' <<<"$out" || true)
      if [ -z "$line" ]; then echo "| $m | none in 120 s (seed $s) | | | | | |"; continue 2; fi
      sed -E 's/.*: ([0-9.]+) s \(([0-9]+) execs\).*/\1/' <<<"$line" >> "$tmp/t"
      sed -E 's/.*: ([0-9.]+) s \(([0-9]+) execs\).*/\2/' <<<"$line" >> "$tmp/n"
      verdict=$(grep -oE '^finding 1: [A-Z_]+' <<<"$out" | awk '{print $3}' | tail -1)
      grep -q '(fails the same way)' <<<"$out" || same=no
    done
    read -r tm tx < <(median_max < "$tmp/t")
    read -r nm nx < <(median_max < "$tmp/n")
    echo "| $m | $tm | $tx | $nm | $nx | $verdict | $same |"
  done
  echo
fi

if [[ " $parts " == *" rate "* ]]; then
  echo "| target (candidate) | mutator | exec/s | judged | cov | ft | semantic classes | findings |"
  echo "|---|---|---|---|---|---|---|---|"
  for pair in indexer:cpu-indexer mla-decode:cpu-mla-decode; do
    kernel=${pair%%:*} cand=${pair#*:}
    for mode in structure bytes; do
      extra=(); [ "$mode" = bytes ] && extra=(--no-structure)
      out=$(fuzz "$kernel" "$cand" --time "$secs" --seed 1 "${extra[@]}")
      s=$(grep -E '^attest fuzz: [0-9]+ execs' <<<"$out" || echo "?")
      rate=$(sed -nE 's/.*\(([0-9]+) exec\/s.*/\1/p' <<<"$s")
      judged=$(sed -nE 's/.*execs \(([0-9]+) judged\).*/\1/p' <<<"$s")
      cov=$(sed -nE 's/.*, cov ([0-9]+),.*/\1/p' <<<"$s")
      ft=$(sed -nE 's/.*, ft ([0-9]+),.*/\1/p' <<<"$s")
      cls=$(sed -nE 's/.*semantic classes ([0-9]+\/[0-9]+).*/\1/p' <<<"$s")
      nf=$(sed -nE 's/.*, ([0-9]+) findings?$/\1/p' <<<"$s")
      label=$([ "$mode" = structure ] && echo "structure-aware + counters" || echo "libFuzzer bytes only")
      echo "| $kernel ($cand) | $label | $rate | $judged | $cov | $ft | $cls | $nf |"
    done
  done
  echo
fi

if [[ " $parts " == *" classes "* ]]; then
  echo "| target | mutator | execs in ${secs} s | classes by exec 100 | 1,000 | 10,000 | in ${secs} s | reached by this mode only |"
  echo "|---|---|---|---|---|---|---|---|"
  for t in indexer mla_decode; do
    for mode in 1 0; do
      rm -rf "$tmp/corpus"; mkdir -p "$tmp/corpus"
      (cd "$tmp" && ATTEST_FUZZ_CLASSES="$tmp/classes-$t-$mode" ATTEST_FUZZ_STRUCTURE=$mode \
        "$fuzzdir/fuzz_$t" -max_total_time="$secs" -seed=1 -max_len=512 -len_control=0 \
        "$tmp/corpus" > "$tmp/log" 2>&1) || true
      execs=$(grep -oE '^Done [0-9]+ runs' "$tmp/log" | awk '{print $2}')
      by() { awk -v n="$1" '$2 <= n' "$tmp/classes-$t-$mode" | wc -l; }
      echo "$t $mode $execs $(by 100) $(by 1000) $(by 10000) $(wc -l < "$tmp/classes-$t-$mode")" >> "$tmp/cls"
    done
    for mode in 1 0; do
      other=$((1 - mode))
      only=$(comm -23 <(awk '{print $1}' "$tmp/classes-$t-$mode" | sort) \
                      <(awk '{print $1}' "$tmp/classes-$t-$other" | sort) | paste -sd, -)
      read -r _ _ execs b1 b2 b3 all < <(grep "^$t $mode " "$tmp/cls")
      label=$([ "$mode" = 1 ] && echo "structure-aware + counters" || echo "libFuzzer bytes only")
      echo "| $t | $label | $execs | $b1 | $b2 | $b3 | $all | ${only:--} |"
    done
  done
  echo
fi

if [[ " $parts " == *" controls "* ]]; then
  echo "| correct candidate | seconds | execs | findings | exit |"
  echo "|---|---|---|---|---|"
  "$attest" list | awk -v k="${KERNEL:-}" '$1 ~ /^cpu-/ && $3 == "host" && (k == "" || $2 == k) && $1 != "cpu-mla-decode-bf16pv" {print $1, $2}' |
  while read -r c kernel; do
    out=$(fuzz "$kernel" "$c" --time "$secs" --seed 1)
    s=$(grep -E '^attest fuzz: [0-9]+ execs' <<<"$out" || echo "?")
    execs=$(sed -nE 's/^attest fuzz: ([0-9]+) execs.*/\1/p' <<<"$s")
    nf=$(sed -nE 's/.*, ([0-9]+) findings?$/\1/p' <<<"$s")
    echo "| $c | $secs | $execs | $nf | $(cat "$tmp/rc") |"
    if [ "$(cat "$tmp/rc")" != 0 ]; then grep -E '^(finding|  )' <<<"$out" | head -8 | sed 's/^/    /'; fi
  done
fi
