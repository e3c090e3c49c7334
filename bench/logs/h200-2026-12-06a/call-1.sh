#!/usr/bin/env bash
# 2026-12-06, ninth session: the eighth session's planned first call (written then, run by no machine),
# now run: `dory bench`'s repetitions with their caches' storage kept
# (Session::clear, acfbf05) against 7b918f8 (each repetition's caches made anew), and where
# issue 9 stands on whichever card comes. Built with
# `bench/wgpu_h200.sh build`; carry .gl and .wgpu-carry.
# 1. the GPU tests (Session::clear's among them);
# 2. the larger config, exact: pp512 + tg64 at depth 0 (5 reps) and 4096 (3 reps), both
#    binaries interleaved, two rounds; depth 32768, 1 rep, this binary;
# 3. dory-tiny: pp512 + tg128 under its rule and with all passes, both binaries;
# 4. PyTorch compile + graph on the larger config at depth 0 (bench/wgpu_torch.py).
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b
source bench/device_setup.sh
old=.wgpu-carry/dory-7b918f8
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/wgpu_tests.log
grep -E "test result|panicked|FAILED" $o/a/wgpu_tests.log | head -20
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
run() { # bin model depth exit gen reps
    timeout 90 $1 bench --backend wgpu --model $2 --depth $3 --reps $6 --prompt 512 \
        --gen $5 --attention exact --exit $4 --json 2>&1 | grep -v XDG_RUNTIME | tee -a $o/b/bench.jsonl \
        | python3 -c "import json,sys
for l in sys.stdin:
    try: j=json.loads(l)
    except ValueError: print(l.rstrip()); continue
    print('$1 $2 depth $3 exit $4', 'tg', round(j['tg']['median'],1), round(j['tg']['min'],1), round(j['tg']['max'],1), 'passes', round(j['passes_per_token'],2), 'pp', round(j['pp']['median']), round(j['pp']['min']), round(j['pp']['max']))" \
        | tee -a $o/b/summary.txt
}
for round in 1 2; do
    for bin in $dory $old; do run $bin $large 0 none 64 5; run $bin $large 4096 none 64 3; done
done
run $dory $large 32768 none 64 1
for round in 1 2; do
    for bin in $dory $old; do run $bin models/dory-tiny 0 kl:0.05 128 3; run $bin models/dory-tiny 0 none 128 3; done
done
timeout 150 python3 bench/wgpu_torch.py bench/wgpu-large.json --depth 0 --tokens 64 2>&1 | tail -5 | tee $o/b/torch.txt
