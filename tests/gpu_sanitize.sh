#!/usr/bin/env bash
# GPU test (label gpu): `attest run --sanitize` on the paged indexer, the MLA decodes and their
# broken variants.
# The correct kernel is clean under memcheck, racecheck and initcheck; the racy variant is a
# SANITIZER verdict under racecheck, the uninitialized-read one under initcheck, and the
# campaign goes on after each report. Exits 77 without compute-sanitizer or a usable device.
# Usage: gpu_sanitize.sh ATTEST_BINARY
set -u
attest=$1
find_cs() {
  if [ -n "${ATTEST_COMPUTE_SANITIZER:-}" ]; then echo "$ATTEST_COMPUTE_SANITIZER"; return; fi
  command -v compute-sanitizer || { [ -x /usr/local/cuda/bin/compute-sanitizer ] && echo /usr/local/cuda/bin/compute-sanitizer; }
}
cs=$(find_cs) || true
if [ -z "$cs" ]; then echo "skipped: no compute-sanitizer"; exit 77; fi
export ATTEST_COMPUTE_SANITIZER=$cs
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TMPDIR=$work

# run EXPECTED_RC TOOL CANDIDATE CASES [FLAGS...]: prints the summary; fails on another exit
# status.
run() {
  local want=$1 tool=$2 cand=$3 cases=$4
  shift 4
  "$attest" run --candidate "$cand" --sanitize "$tool" --cases "$cases" --seed 5 --quiet \
    --timeout 120 "$@" >"$work/out" 2>&1
  local rc=$?
  if grep -q "no usable device" "$work/out"; then echo "skipped: no usable device"; exit 77; fi
  echo "== $cand under $tool: exit $rc"
  grep -E "verdicts:|SANITIZER|compute-sanitizer:" "$work/out" | head -4
  if [ "$rc" != "$want" ]; then
    echo "FAIL: expected exit $want"; cat "$work/out"
    for f in "$work"/attest-sanitize-*/*; do echo "--- $f"; head -20 "$f"; done
    exit 1
  fi
  rm -rf "$work"/attest-sanitize-*
}

run 0 memcheck cuda-indexer-paged 40
run 0 racecheck cuda-indexer-paged 10
run 0 initcheck cuda-indexer-paged 20
run 1 racecheck mutant-cuda-indexer-paged-race 10
grep -q "verdicts:.*SANITIZER" "$work/out" || { echo "FAIL: no SANITIZER verdict"; exit 1; }
run 1 initcheck mutant-cuda-indexer-paged-uninit 10
grep -q "verdicts:.*SANITIZER" "$work/out" || { echo "FAIL: no SANITIZER verdict"; exit 1; }
grep -q "Uninitialized" "$work/out" || { echo "FAIL: the report's lines are missing"; exit 1; }
run 0 memcheck cuda-indexer-paged-noclean 20
run 0 racecheck cuda-indexer-paged-noclean 5
run 0 memcheck cuda-mla-decode 30
run 1 racecheck mutant-cuda-mla-decode-merge-race 10
grep -q "verdicts:.*SANITIZER" "$work/out" || { echo "FAIL: no SANITIZER verdict"; exit 1; }
bf16="$(dirname "$0")/../policies/bf16-tensor-core.json"
run 0 memcheck cuda-indexer-paged-fp8-noclean 20 --policy "$bf16"
run 0 racecheck cuda-indexer-paged-fp8-noclean 5 --policy "$bf16"
run 0 memcheck cuda-mla-decode-mma 10 --layout mla-v4 --policy "$bf16"
run 0 memcheck cuda-mla-decode-mma 10 --layout mla-v32 --policy "$bf16"
run 0 racecheck cuda-mla-decode-mma 3 --layout mla-v4 --policy "$bf16"
run 1 racecheck mutant-cuda-mla-decode-mma-merge-race 3 --layout mla-v4 --policy "$bf16"
grep -q "verdicts:.*SANITIZER" "$work/out" || { echo "FAIL: no SANITIZER verdict"; exit 1; }
run 0 memcheck cuda-mla-decode-mma-fused 10 --layout mla-v4 --policy "$bf16"
run 0 racecheck cuda-mla-decode-mma-fused 3 --layout mla-v4 --policy "$bf16"
run 1 racecheck mutant-cuda-mla-decode-mma-fused-race 3 --layout mla-v4 --policy "$bf16"
grep -q "verdicts:.*SANITIZER" "$work/out" || { echo "FAIL: no SANITIZER verdict"; exit 1; }
run 0 racecheck cuda-mla-decode-mma-ws 3 --layout mla-v4 --policy "$bf16"
run 1 racecheck mutant-cuda-mla-decode-mma-ws-no-full-wait 2 --layout mla-v4 --policy "$bf16"
grep -q "verdicts:.*SANITIZER" "$work/out" || { echo "FAIL: no SANITIZER verdict"; exit 1; }
echo "PASS"
