#!/usr/bin/env bash
# The H200 run of external candidates (docs/device-runs.md): the Triton and PyTorch indexers through the
# bridge, their broken variants, and the bridge's per-case cost on that host.
# Usage: bash bench/device_external.sh ATTEST_BINARY PYTHON_DIR OUT_DIR
# (PYTHON_DIR holds attest_candidate/ and examples/; every step's output goes to OUT_DIR/log).
set -u
ATTEST=$1 PY=$2 OUT=$3
export ATTEST_PYTHON_DIR=$PY CI=1 PYTHONDONTWRITEBYTECODE=1
EX=$PY/examples
log() { echo "+ $*" | tee -a "$OUT/log"; }
step() { # step SECONDS command...: bounded, output kept
  local s=$1; shift
  log "$@"
  local t0=$(date +%s.%N)
  timeout "$s" "$@" >"$OUT/step.txt" 2>&1
  local rc=$?
  tail -n 14 "$OUT/step.txt" | tee -a "$OUT/log"
  echo "  (exit $rc, $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s wall)" | tee -a "$OUT/log"
}
nvidia-smi -L | tee -a "$OUT/log"
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name())' 2>&1 | tee -a "$OUT/log"
step 150 "$ATTEST" run --kernel indexer --candidate "py:$EX/triton_indexer.py:indexer" --cases 2000 --seed 1 --timeout 120 --max-failures 5 --out "$OUT/triton.h5"
step 60 "$ATTEST" run --kernel indexer --candidate "py:$EX/triton_indexer.py:indexer_scale_shift" --cases 100 --seed 1 --timeout 120
step 60 "$ATTEST" run --kernel indexer --candidate "py:$EX/triton_indexer.py:indexer_frees_pages" --cases 100 --seed 1 --timeout 120
step 120 "$ATTEST" run --kernel indexer --candidate "py:$EX/torch_indexer.py:indexer" --cases 2000 --seed 1 --timeout 120 --max-failures 5 --out "$OUT/torch.h5"
step 60 python3 "$PY/../bench/bench_external.py" --attest "$ATTEST" --reps 2
step 60 "$ATTEST" run --kernel indexer --candidate "py:$EX/triton_indexer.py:indexer" --cases 30 --seed 2 --production --timeout 120
