#!/usr/bin/env bash
# 2026-12-05, seventh session, fifth call: why the larger config's pp512 ran ~10 % slower
# with its decoded rows' residual fused (DORY_WGPU_RESIDUAL_K=2048, call 4) when a prompt
# of 512 rows takes none of the fused kernels. The same binary as call 4 (413abfb).
# 1. pp512 alone (--gen 1) and after 64 decoded tokens, both settings, two rounds;
# 2. the GPU's time by kernel and the host's by phase in pp512 + tg1, both settings.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/b
source bench/device_setup.sh
nvidia-smi --query-gpu=name --format=csv,noheader
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
run() { # k gen reps
    DORY_WGPU_RESIDUAL_K=$1 timeout 60 $dory bench --backend wgpu --model $large --reps $3 --prompt 512 \
        --gen $2 --attention exact --exit none --json 2>&1 | grep -v XDG_RUNTIME \
        | python3 -c "import json,sys
for l in sys.stdin:
    try: j=json.loads(l)
    except ValueError: print(l.rstrip()); continue
    print('residual_k $1 gen $2', 'pp', round(j['pp']['median']), round(j['pp']['min']), round(j['pp']['max']), 'tg', round(j['tg']['median'],1))" \
        | tee -a $o/b/pp.txt
}
for round in 1 2; do for k in 1024 2048; do run $k 1 3; run $k 64 3; done; done
for k in 1024 2048; do
    echo "== residual_k $k" >> $o/b/profiles.txt
    DORY_WGPU_RESIDUAL_K=$k DORY_WGPU_PROFILE=1 timeout 60 $dory bench --backend wgpu --model $large --reps 2 --prompt 512 \
        --gen 1 --attention exact --exit none 2>&1 | grep -v XDG_RUNTIME | grep -A14 "GPU time" >> $o/b/profiles.txt
    DORY_WGPU_RESIDUAL_K=$k DORY_WGPU_PROFILE=host timeout 60 $dory bench --backend wgpu --model $large --reps 2 --prompt 512 \
        --gen 1 --attention exact --exit none 2>&1 | grep -v XDG_RUNTIME | grep -A14 "host time" >> $o/b/profiles.txt
done
cat $o/b/profiles.txt
