#!/usr/bin/env bash
# 2026-12-05, seventh session, eighth call: call 7's slow prompt again, each buffer's
# allocation and each submission timed on the host (the debug build, not committed), to
# tell a host stall in the allocator from the GPU.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/b
source bench/device_setup.sh
nvidia-smi --query-gpu=name --format=csv,noheader
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
for setting in "2048 0 5" "2048 4096 2"; do
    set -- $setting
    log=$o/b/k$1-depth$2.log
    DORY_DEBUG_MISSES=1 DORY_WGPU_RESIDUAL_K=$1 timeout 90 .wgpu-carry/dory-debug bench --backend wgpu --model $large \
        --depth $2 --reps $3 --prompt 512 --gen 64 --attention exact --exit none 2> $log >/dev/null
    echo "== residual_k $1 depth $2"
    awk '/^RESET$/{r++} /PP START/{inpp=1; a=0; s=0; next}
         /PP END/{printf "rep %d: pp %s ms; allocating %.2f ms, submitting %.2f ms\n", r, $3, a/1000, s/1000; inpp=0; next}
         inpp && /^ALLOC/{a += $(NF-1)} inpp && /^SEND/{s += $(NF-1)}' $log
done
