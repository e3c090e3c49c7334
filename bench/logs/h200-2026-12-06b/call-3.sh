#!/usr/bin/env bash
# 2026-12-06, tenth session, call 3. The O(1) layer's push and combine_sealed rewritten
# (706c7cb: a workgroup of 256 a query head, each stage's loads in flight at once; this binary also
# draws its measured repetitions' tokens apart from the warm-up's, 4202054) against
# call 2's binary (.wgpu-carry/dory-152020b, whose code is 152020b's: sealed steps run
# ahead) and 0165a0e (the last stop): the GPU tests; decode in O(1) mode (sealed) of
# dory-tiny under its rule and with all passes and of the larger config at depth 4096
# (and 32768, this binary and 152020b), two rounds interleaved; dory-tiny exact under
# its rule against 0165a0e (which no change here should move; call 2's runs differed by
# up to 8 %); then the GPU's time by kernel of dory-tiny's sealed decode. Built with
# `bench/wgpu_h200.sh build`; carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
fed=.wgpu-carry/dory-152020b
old=.wgpu-carry/dory-0165a0e
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
CI=true timeout 120 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/gpu-tests.log
grep -E "test result|panicked|FAILED" $o/a/gpu-tests.log | head -20
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
run() { # bin model depth attention exit prompt gen reps
    timeout 120 $1 bench --backend wgpu --model $2 --depth $3 --attention $4 --exit $5 --prompt $6 --gen $7 \
        --reps $8 --json 2>&1 | grep -v XDG_RUNTIME | tee -a $o/a/bench.jsonl | python3 -c "import json,sys
for l in sys.stdin:
    try: j = json.loads(l)
    except ValueError: print(l.rstrip()); continue
    print('$1 $2 depth $3 $4 exit $5 tg', [round(j['tg'][k], 1) for k in ('median', 'min', 'max')],
          'passes', round(j['passes_per_token'], 2), 'pp', [round(j['pp'][k]) for k in ('median', 'min', 'max')])" \
        | tee -a $o/a/summary.txt
}
for round in 1 2; do
    for bin in $dory $fed $old; do
        run $bin models/dory-tiny 0 o1 kl:0.05 512 128 3
        run $bin models/dory-tiny 0 o1 none 512 128 3
        run $bin $large 4096 o1 none 64 64 2
    done
    for bin in $dory $old; do run $bin models/dory-tiny 0 exact kl:0.05 512 128 3; done
done
for bin in $dory $fed; do run $bin $large 32768 o1 none 16 64 1; done
DORY_WGPU_PROFILE=1 timeout 40 $dory bench --backend wgpu --model models/dory-tiny --reps 1 --prompt 512 \
    --gen 128 --attention o1 --exit kl:0.05 2>&1 | grep -v XDG_RUNTIME | tee $o/a/profile_tiny_o1.txt | head -20
