#!/usr/bin/env bash
# 2026-12-05, seventh session, third call: the residual's norms from one walk of its loads
# (h, o and alpha together, ‖y‖² from the sums it expands into) and the exit test with four
# logits' loads in flight (0332471), against e458188 (the engine before them; its prefetch
# is off by default). Built with `bench/wgpu_h200.sh build`; carry .gl and .wgpu-carry.
# 1. the GPU tests;
# 2. the larger config's decode (tg64 after pp512, exact), three rounds at depth 0 and two
#    at 4096, the binaries interleaved;
# 3. dory-tiny's decode (tg128 after pp512, exact) under its rule and with all passes,
#    three rounds;
# 4. the GPU's time by kernel: the larger config's decode and dory-tiny's under its rule,
#    both binaries.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b
source bench/device_setup.sh
old=.wgpu-carry/dory-e458188
nvidia-smi --query-gpu=name --format=csv,noheader
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/wgpu_tests.log
grep -E "test result|panicked|FAILED" $o/a/wgpu_tests.log | head -20
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
run() { # bin model depth exit gen reps
    timeout 60 $1 bench --backend wgpu --model $2 --depth $3 --reps $6 --prompt 512 \
        --gen $5 --attention exact --exit $4 --json 2>&1 | grep -v XDG_RUNTIME \
        | python3 -c "import json,sys
for l in sys.stdin:
    try: j=json.loads(l)
    except ValueError: print(l.rstrip()); continue
    print('$1 $2 depth $3 exit $4', 'tg', round(j['tg']['median'],1), round(j['tg']['min'],1), round(j['tg']['max'],1), 'passes', round(j['passes_per_token'],2), 'pp', round(j['pp']['median']))" \
        | tee -a $o/b/decode.txt
}
for round in 1 2 3; do
    for bin in $dory $old; do run $bin $large 0 none 64 2; done
done
for round in 1 2; do
    for bin in $dory $old; do run $bin $large 4096 none 64 1; done
done
for round in 1 2 3; do
    for bin in $dory $old; do run $bin models/dory-tiny 0 kl:0.05 128 3; run $bin models/dory-tiny 0 none 128 3; done
done
for bin in $dory $old; do
    echo "== $bin large" >> $o/b/profiles.txt
    DORY_WGPU_PROFILE=1 timeout 60 $bin bench --backend wgpu --model $large --reps 1 --prompt 16 --gen 32 \
        --attention exact --exit none 2>&1 | grep -v XDG_RUNTIME | grep -A14 "GPU time" >> $o/b/profiles.txt
    echo "== $bin tiny, its rule" >> $o/b/profiles.txt
    DORY_WGPU_PROFILE=1 timeout 60 $bin bench --backend wgpu --model models/dory-tiny --reps 2 --prompt 16 --gen 128 \
        --attention exact --exit kl:0.05 2>&1 | grep -v XDG_RUNTIME | grep -A14 "GPU time" >> $o/b/profiles.txt
done
cat $o/b/profiles.txt
