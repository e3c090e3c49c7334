#!/usr/bin/env bash
# 2026-12-05, seventh session, second call: a decoded row's next projection pulled into the
# L2 beside a dispatch that waits on latency (e458188, DORY_WGPU_PREFETCH=MIB; 0 is the
# engine as it was). Built with `bench/wgpu_h200.sh build`; carry .gl and .wgpu-carry.
# 1. the GPU tests with DORY_WGPU_PREFETCH=24 (every device of the tests prefetches);
# 2. the larger config's decode (tg64 after pp512, exact) at depth 0 with 0, 8, 16, 24 and
#    32 MiB, two rounds interleaved; then depth 4096 with 0 and 24;
# 3. dory-tiny (its weights fit the L2: the prefetch can only cost) with 0 and 16.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b
source bench/device_setup.sh
nvidia-smi --query-gpu=name --format=csv,noheader
DORY_WGPU_PREFETCH=24 CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/wgpu_tests.log
grep -E "test result|panicked|FAILED" $o/a/wgpu_tests.log | head -20
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
run() { # model depth mib gen reps
    DORY_WGPU_PREFETCH=$3 timeout 60 $dory bench --backend wgpu --model $1 --depth $2 --reps $5 --prompt 512 \
        --gen $4 --attention exact --exit none --json 2>&1 | grep -v XDG_RUNTIME \
        | python3 -c "import json,sys
for l in sys.stdin:
    try: j=json.loads(l)
    except ValueError: print(l.rstrip()); continue
    print('$1 depth $2 prefetch $3', 'tg', round(j['tg']['median'],1), round(j['tg']['min'],1), round(j['tg']['max'],1), 'pp', round(j['pp']['median']))" \
        | tee -a $o/b/decode.txt
}
for round in 1 2; do
    for mib in 0 8 16 24 32; do run $large 0 $mib 64 2; done
done
for round in 1 2; do
    for mib in 0 24; do run $large 4096 $mib 64 1; done
done
for round in 1 2; do
    for mib in 0 16; do run models/dory-tiny 0 $mib 128 3; done
done
