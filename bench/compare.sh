#!/usr/bin/env bash
# Before/after in one run (issue 10): builds an older revision and the working tree with the same
# flags and the same bench sources, then measures both side by side, alternating, so a loaded
# machine slows both alike. Ratios within one run are what count.
#
#   bash bench/compare.sh [--old REV] [--dir DIR] [--reps N] [--fuzz-seconds S] [PART...]
#
# REV: the "before" commit (default origin/main). DIR: where the two builds go (default
# /tmp/attest-compare; kept, so a second run rebuilds only what changed). PARTs (default all):
#   refs      bench_references: a digest of every reference output and bound of generated cases
#             (must be equal: the faster references compute the same bits) and ms per call
#   campaign  `attest campaign --quiet` (the main job): cases/s
#   fuzz      the libFuzzer kernel targets, clang, with and without ASan+UBSan: exec/s over
#             S seconds (default 20) from an empty corpus (libFuzzer's own figure)
#   generate  bench_generate: default-bounds generation, cases/s and the digest of the bytes
# The bench sources (bench/*.c, bench/CMakeLists.txt) of the working tree are copied into the old
# revision's tree, so both sides run the same measuring code. Prints markdown tables and the load
# average before and after.
set -euo pipefail
old=origin/main
dir=/tmp/attest-compare
reps=5
fuzz_s=20
parts=()
while [ $# -gt 0 ]; do
  case "$1" in
    --old) old=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --fuzz-seconds) fuzz_s=$2; shift 2 ;;
    -h|--help) sed -n 2,20p "$0"; exit 0 ;;
    -*) echo "compare.sh: unknown option $1" >&2; exit 2 ;;
    *) parts+=("$1"); shift ;;
  esac
done
[ ${#parts[@]} -gt 0 ] || parts=(refs generate campaign fuzz)
root=$(git rev-parse --show-toplevel)
rev=$(git -C "$root" rev-parse --short "$old")
mkdir -p "$dir"
src_old="$dir/src-old"
if [ ! -d "$src_old" ] || [ "$(git -C "$src_old" rev-parse --short HEAD 2>/dev/null)" != "$rev" ]; then
  rm -rf "$src_old"
  git -C "$root" worktree prune
  git -C "$root" worktree add --detach "$src_old" "$rev" >/dev/null
fi
cp "$root"/bench/*.c "$root"/bench/CMakeLists.txt "$src_old/bench/"
# Names the bench sources use that older revisions spelled differently.
if ! grep -q attest_ref_topk_row_skip_neg_inf "$src_old/references/include/attest/reference.h"; then
  sed -i 's/attest_ref_topk_row_skip_neg_inf/attest_ref_topk_row/g' "$src_old/bench/bench_references.c"
fi

want() { local p; for p in "${parts[@]}"; do [ "$p" = "$1" ] && return 0; done; return 1; }

# build SIDE KIND TARGET...: SIDE old|new, KIND rel (gcc) | fuzz (clang, ASan+UBSan) | fuzz-nosan
build() {
  local side=$1 kind=$2; shift 2
  local src=$root; [ "$side" = old ] && src=$src_old
  local b="$dir/$side-$kind" flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTEST_CUDA=OFF)
  case "$kind" in
    rel) flags+=(-DATTEST_FUZZ=OFF) ;;
    fuzz) flags+=(-DCMAKE_C_COMPILER=clang -DATTEST_FUZZ=ON -DATTEST_SANITIZE=address,undefined) ;;
    fuzz-nosan) flags+=(-DCMAKE_C_COMPILER=clang -DATTEST_FUZZ=ON -DATTEST_SANITIZE=) ;;
  esac
  [ -f "$b/CMakeCache.txt" ] || cmake -S "$src" -B "$b" "${flags[@]}" >/dev/null
  cmake --build "$b" -j2 --target "$@" >"$b.log" 2>&1 || { tail -20 "$b.log" >&2; exit 1; }
}

echo "before: $rev ($(git -C "$root" log -1 --format=%s "$rev" | cut -c1-70))"
echo "after:  working tree at $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- . ':!bench' || echo ' + changes')"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo

if want refs || want generate || want campaign; then
  for s in old new; do build "$s" rel attest bench_references bench_generate; done
fi

if want refs; then
  echo "## references (median of $reps calls, thread CPU ms; old and new alternate row by row)"
  d_old=$("$dir/old-rel/bench/bench_references" --digest 200 | tail -n +2)
  d_new=$("$dir/new-rel/bench/bench_references" --digest 200 | tail -n +2)
  if [ "$d_old" = "$d_new" ]; then echo "digest of outputs and bounds: identical"; else
    echo "digest of outputs and bounds: DIFFERENT (also when the generator's draws changed between"
    echo "the two revisions, as they did in issue 10's item 4: then compare with a later --old)"
    paste <(echo "$d_old") <(echo "$d_new"); fi
  echo
  echo "| what | shape | before ms | after ms | speed-up |"
  echo "|---|---|---|---|---|"
  for r in $(seq 1 8); do # the shapes of bench_references.c, in its order; the kernels' rows too
    a=$("$dir/old-rel/bench/bench_references" --kernels --reps "$reps" --only "$r" | grep '^| [a-z]' | tail -n +2)
    b=$("$dir/new-rel/bench/bench_references" --kernels --reps "$reps" --only "$r" | grep '^| [a-z]' | tail -n +2)
    paste -d'\n' <(echo "$a") <(echo "$b") | awk -F'|' 'NR % 2 == 1 {what = $2; shape = $3; t = $4 + 0}
      NR % 2 == 0 {gsub(/ +$/, "", what); gsub(/ +$/, "", shape)
        printf "|%s |%s | %.2f | %.2f | %.2fx |\n", what, shape, t, $4, t / $4}'
  done
  if python3 -c 'import numpy' 2>/dev/null; then
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
      python3 "$root/bench/reference_floor.py"
  fi
  echo
fi

if want generate; then
  echo "## generation (bench_generate --generation-only --cases 300)"
  for s in old new; do
    echo "$s:"; "$dir/$s-rel/bench/bench_generate" --generation-only --cases 300 | sed 's/^/  /'
  done
  echo
fi

if want campaign; then
  echo "## default campaign (attest campaign --quiet, 3000 cases; best of 3, alternating)"
  echo "(wall: elapsed; CPU: user + system seconds of attest and its workers, what the cases cost"
  echo "on cores of their own)"
  echo "| side | best wall s | cases/s wall | best CPU s | cases/s CPU |"
  echo "|---|---|---|---|---|"
  tmp=$(mktemp -d)
  for s in old new; do echo "1e9 1e9" > "$tmp/$s"; done
  for i in 1 2 3; do
    for s in old new; do
      rc=0
      /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$dir/$s-rel/attest" campaign --quiet \
        --out "$tmp/c-$s.h5" --force >/dev/null 2>"$tmp/err" || rc=$?
      if [ "$rc" -gt 1 ]; then echo "$s: attest campaign failed: $(head -1 "$tmp/err")" >&2; exit 1; fi
      read -r bw bc < "$tmp/$s"
      awk -v bw="$bw" -v bc="$bc" '{w = $1; c = $2 + $3; print (w < bw ? w : bw), (c < bc ? c : bc)}' \
        "$tmp/time" > "$tmp/$s.n"
      mv "$tmp/$s.n" "$tmp/$s"
    done
  done
  for s in old new; do
    awk -v s="$s" '{printf "| %s | %.2f | %.0f | %.2f | %.0f |\n", s, $1, 3000 / $1, $2, 3000 / $2}' "$tmp/$s"
  done
  rm -rf "$tmp"
  echo
fi

if want fuzz; then
  for s in old new; do
    build "$s" fuzz fuzz_mla_decode fuzz_indexer
    build "$s" fuzz-nosan fuzz_mla_decode fuzz_indexer
  done
  echo "## libFuzzer kernel targets (exec/s libFuzzer reports after -max_total_time=$fuzz_s from an empty corpus, -seed=1)"
  echo "(wall: libFuzzer's exec/s; CPU: runs per second of the fuzzer's own CPU time, what one core"
  echo "gives when the machine is not shared)"
  echo "| target | build | before exec/s wall | after exec/s wall | before exec/s CPU | after exec/s CPU |"
  echo "|---|---|---|---|---|---|"
  tmp=$(mktemp -d)
  for t in mla_decode indexer; do
    for k in fuzz-nosan fuzz; do
      line="| $t | $([ "$k" = fuzz ] && echo ASan+UBSan || echo no sanitizer) |"
      cpu_cols=""
      for s in old new; do
        rm -rf "$tmp/corpus" && mkdir -p "$tmp/corpus"
        (cd "$tmp" && ATTEST_FUZZ_ARTIFACTS="$tmp" /usr/bin/time -f "%U %S" -o "$tmp/cpu" \
           "$dir/$s-$k/fuzz/fuzz_$t" -seed=1 -max_total_time="$fuzz_s" \
           -max_len=512 -len_control=0 corpus >"$tmp/log" 2>&1) || true
        rate=$(grep -oE 'exec/s: [0-9]+' "$tmp/log" | tail -1 | grep -oE '[0-9]+' || echo "?")
        runs=$(grep -oE '^Done [0-9]+ runs' "$tmp/log" | grep -oE '[0-9]+' | tail -1 || true)
        if [ -z "$runs" ]; then
          rate="$rate (stopped: $(grep -m1 -oE '(ERROR|==[0-9]+==).*' "$tmp/log" | cut -c1-60))"
          cpu="?"
        else
          cpu=$(awk -v n="$runs" '{printf "%.0f", n / ($1 + $2)}' "$tmp/cpu")
        fi
        line="$line $rate |"
        cpu_cols="$cpu_cols $cpu |"
      done
      echo "$line$cpu_cols"
    done
  done
  rm -rf "$tmp"
  echo
fi
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
