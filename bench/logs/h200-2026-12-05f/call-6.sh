#!/usr/bin/env bash
# 2026-12-05, seventh session, sixth call: where issue 9 stands with this stop's engine
# (4a65375: the residual's loads in one walk, the larger config's residual formed by the
# projection after it, the exit test's loads at once, the host's argmax and hash) against
# e458188 (the last stop's kernels; its prefetch off). Built with `bench/wgpu_h200.sh
# build`; carry .gl and .wgpu-carry.
# 1. the GPU tests (the default, fused residual at 2,048 among them);
# 2. the larger config: decode (tg64) and pp512 at depth 0 and 4096, exact, both binaries
#    interleaved, two rounds;
# 3. dory-tiny: tg128 after pp512 under its rule and with all passes, two rounds;
# 4. PyTorch compile + graph on the larger config at depth 0 (bench/wgpu_torch.py).
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
        --gen $5 --attention exact --exit $4 --json 2>&1 | grep -v XDG_RUNTIME | tee -a $o/b/bench.jsonl \
        | python3 -c "import json,sys
for l in sys.stdin:
    try: j=json.loads(l)
    except ValueError: print(l.rstrip()); continue
    print('$1 $2 depth $3 exit $4', 'tg', round(j['tg']['median'],1), round(j['tg']['min'],1), round(j['tg']['max'],1), 'passes', round(j['passes_per_token'],2), 'pp', round(j['pp']['median']), round(j['pp']['min']), round(j['pp']['max']))" \
        | tee -a $o/b/summary.txt
}
for round in 1 2; do
    for bin in $dory $old; do run $bin $large 0 none 64 3; run $bin $large 4096 none 64 1; done
done
for round in 1 2; do
    for bin in $dory $old; do run $bin models/dory-tiny 0 kl:0.05 128 3; run $bin models/dory-tiny 0 none 128 3; done
done
timeout 150 python3 bench/wgpu_torch.py bench/wgpu-large.json --depth 0 --tokens 64 2>&1 | tail -5 | tee $o/b/torch.txt
