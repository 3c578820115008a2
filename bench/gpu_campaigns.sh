#!/bin/bash
# The time-capped GPU campaigns of docs/device-runs.md: each campaign is 16 processes at once,
# each running up to five chunks of `attest run ... --cases 1250 --seed S --quiet` (distinct
# seeds) until its cap; prints the cases that finished and their verdicts, summed.
#   bash bench/gpu_campaigns.sh ATTEST [TMPDIR]
# Environment: ONLY="name ..." runs only the named campaigns; SEED_OFFSET=N adds N to every base
# seed (a top-up run draws cases no earlier run drew); CAP_SCALE=F multiplies every time cap.
# At most 16 x 5 x 1250 = 100,000 cases per campaign.
set -u
A=${1:?usage: gpu_campaigns.sh ATTEST [TMPDIR]}
T=$(mktemp -d "${2:-${TMPDIR:-/tmp}}/gpu_campaigns.XXXXXX")
trap 'rm -rf "$T"' EXIT
camp() {  # name base-seed seconds flags...
    local name=$1 base=$(($2 + ${SEED_OFFSET:-0})) secs=$3 t0=$SECONDS
    shift 3
    if [ -n "${ONLY:-}" ] && ! [[ " $ONLY " == *" $name "* ]]; then return 0; fi
    secs=$(awk -v s="$secs" -v f="${CAP_SCALE:-1}" 'BEGIN { printf "%d", s * f }')
    for p in $(seq 0 15); do
        (
            end=$((SECONDS + secs))
            for k in 0 1 2 3 4; do
                [ $SECONDS -lt $end ] || break
                "$A" run "$@" --cases 1250 --seed $((base + p * 10 + k)) --quiet > "$T/$name.$p.$k" 2>&1
                echo "rc=$?" >> "$T/$name.$p.$k"
            done
        ) &
    done
    wait
    cat "$T/$name".* | awk -v n="$name" -v s=$((SECONDS - t0)) '
        /^  verdicts:/ { sub(/^  verdicts: /, ""); m = split($0, a, /, /)
                         for (i = 1; i <= m; i++) { split(a[i], b, " "); v[b[1]] += b[2]; tot += b[2] } }
        /^rc=/ { runs++; if ($0 != "rc=0") bad++ }
        END { printf "%s: %d cases in %d s, %d chunks (%d exit!=0):", n, tot, s, runs, bad
              for (k in v) printf " %s %d", k, v[k]; printf "\n" }'
    # A failing case prints "#N VERDICT ..." then its seed and replay lines.
    grep -h -A2 "^#[0-9]* [A-Z]" "$T/$name".* | head -9
}
camp paged-default 100000 30 --candidate cuda-indexer-paged
camp mma-default 200000 30 --candidate cuda-indexer-paged-mma
camp mla-default 300000 55 --candidate cuda-mla-decode
camp paged-prod 400000 35 --candidate cuda-indexer-paged --production
camp mma-prod 500000 25 --candidate cuda-indexer-paged-mma --production
camp mla-prod 600000 35 --candidate cuda-mla-decode --production
# The tensor-core decode computes K/V and P in bf16; its mma.sync pass 1 takes mla-v4 alone.
BF16="$(dirname "$0")/../policies/bf16-tensor-core.json"
camp mla-mma-default 700000 60 --candidate cuda-mla-decode-mma --layout mla-v4 --policy "$BF16"
camp mla-mma-prod 800000 40 --candidate cuda-mla-decode-mma --layout mla-v4 --policy "$BF16" --production
camp mla-mma-v32-default 900000 40 --candidate cuda-mla-decode-mma --layout mla-v32 --policy "$BF16"
camp mla-mma-v32-prod 1100000 40 --candidate cuda-mla-decode-mma --layout mla-v32 --policy "$BF16" --production
camp mla-mma-sync-default 1000000 30 --candidate cuda-mla-decode-mma-sync --layout mla-v4 --policy "$BF16"
# The warp-specialized pass 1 is mla-v4's alone (mla-v32 runs the kernel above).
camp mla-ws-default 1400000 60 --candidate cuda-mla-decode-mma-ws --layout mla-v4 --policy "$BF16"
camp mla-ws-prod 1500000 40 --candidate cuda-mla-decode-mma-ws --layout mla-v4 --policy "$BF16" --production
# The fp8 x fp8 indexer accumulates in Hopper's fp8 MMA format (docs/gpu.md).
camp fp8-default 1200000 30 --candidate cuda-indexer-paged-fp8 --policy "$BF16"
camp fp8-prod 1300000 35 --candidate cuda-indexer-paged-fp8 --policy "$BF16" --production
