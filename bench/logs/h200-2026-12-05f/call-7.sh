#!/usr/bin/env bash
# 2026-12-05, seventh session, seventh call: which repetition's pp512 runs slow after 64
# decoded tokens with the larger config's residual fused (calls 4-6: one of three reps at
# ~17.5k tok/s against ~22k, the single rep at depth 4096 7,290 against 7,990), and what
# happens in it. A debug build of 4a65375 (not committed: DORY_DEBUG_MISSES prints each
# bind group made, each buffer allocated, each submission and each prompt's time), carried
# as .wgpu-carry/dory-debug.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/b
source bench/device_setup.sh
nvidia-smi --query-gpu=name --format=csv,noheader
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
for setting in "2048 0 4" "1024 0 4" "2048 4096 2"; do
    set -- $setting
    log=$o/b/k$1-depth$2.log
    DORY_DEBUG_MISSES=1 DORY_WGPU_RESIDUAL_K=$1 timeout 90 .wgpu-carry/dory-debug bench --backend wgpu --model $large \
        --depth $2 --reps $3 --prompt 512 --gen 64 --attention exact --exit none 2> $log >/dev/null
    echo "== residual_k $1 depth $2"
    awk '/^RESET$/{r++; inr=1; a=0; next} /^RESET END/{inr=0; ra=a; next} /PP START/{inpp=1; m=0; s=0; a=0; next}
         /PP END/{printf "rep %d: pp %s ms, in it %d bind groups made, %d submissions, %d buffers allocated (reset: %d)\n", r, $3, m, s, a, ra; inpp=0; next}
         /^MISS/{m++} /^SEND/{s++} /^ALLOC/{a++}' $log
done
