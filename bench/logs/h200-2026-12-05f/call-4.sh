#!/usr/bin/env bash
# 2026-12-05, seventh session, fourth call: the larger config's residual formed by the
# projection after it (DORY_WGPU_RESIDUAL_K=2048; the default, 1024, keeps its own
# dispatch) now that the residual's norms take one walk of its loads (0332471). Built
# with `bench/wgpu_h200.sh build`; carry .gl and .wgpu-carry.
# 1. the GPU tests, with DORY_WGPU_RESIDUAL_K=2048 (their widest row, 1,160, fused);
# 2. the larger config's decode (tg64 after pp512, exact), three rounds at depth 0 and two
#    at 4096, the settings interleaved;
# 3. the GPU's time by kernel, both settings.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b
source bench/device_setup.sh
nvidia-smi --query-gpu=name --format=csv,noheader
DORY_WGPU_RESIDUAL_K=2048 CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/wgpu_tests.log
grep -E "test result|panicked|FAILED" $o/a/wgpu_tests.log | head -20
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
run() { # k depth reps
    DORY_WGPU_RESIDUAL_K=$1 timeout 60 $dory bench --backend wgpu --model $large --depth $2 --reps $3 --prompt 512 \
        --gen 64 --attention exact --exit none --json 2>&1 | grep -v XDG_RUNTIME \
        | python3 -c "import json,sys
for l in sys.stdin:
    try: j=json.loads(l)
    except ValueError: print(l.rstrip()); continue
    print('residual_k $1 depth $2', 'tg', round(j['tg']['median'],1), round(j['tg']['min'],1), round(j['tg']['max'],1), 'pp', round(j['pp']['median']))" \
        | tee -a $o/b/decode.txt
}
for round in 1 2 3; do for k in 1024 2048; do run $k 0 2; done; done
for round in 1 2; do for k in 1024 2048; do run $k 4096 1; done; done
for k in 1024 2048; do
    echo "== residual_k $k" >> $o/b/profiles.txt
    DORY_WGPU_RESIDUAL_K=$k DORY_WGPU_PROFILE=1 timeout 60 $dory bench --backend wgpu --model $large --reps 1 --prompt 16 \
        --gen 32 --attention exact --exit none 2>&1 | grep -v XDG_RUNTIME | grep -A12 "GPU time" >> $o/b/profiles.txt
done
cat $o/b/profiles.txt
