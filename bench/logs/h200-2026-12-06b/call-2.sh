#!/usr/bin/env bash
# 2026-12-06, tenth session, call 2. Decoded steps recorded ahead of their tokens after the
# seal (O(1) mode: the shipped model's default attention, sealed from position 388 on; the
# larger config's from 772), where before each sealed step was recorded only after the
# last one's read, the device idle meanwhile. This binary against 0165a0e (the last stop),
# two rounds interleaved: dory-tiny's pp512 + tg128 in its default (O(1)) mode under its
# rule and with all passes, and exact under its rule (no change expected); the larger
# config's decode at depths 4096 and 32768 in O(1) mode (sealed), and at 4096 exact; a
# later segment's rows after the seal (fed row by row, spec §6; now each run ahead on the
# next row's token): pp64 after depth 4096 (larger) and pp128 after depth 512 (dory-tiny);
# then `dory generate` on the shipped model, 500 tokens (sealed from 388), greedy and sampled.
# Built with `bench/wgpu_h200.sh build 0165a0e`; carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
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
    for bin in $dory $old; do
        run $bin models/dory-tiny 0 o1 kl:0.05 512 128 3
        run $bin models/dory-tiny 0 o1 none 512 128 3
        run $bin models/dory-tiny 0 exact kl:0.05 512 128 3
        run $bin $large 4096 o1 none 64 64 2
        run $bin $large 32768 o1 none 16 64 1
        run $bin models/dory-tiny 512 o1 none 128 128 3
    done
done
for bin in $dory $old; do run $bin $large 4096 exact none 16 64 2; done
MODEL=models/dory-tiny BINARIES="new=$dory old=$old" TOKENS=500 ARGS="--backend wgpu" OUT=$o/a \
    timeout 150 bash bench/generate_speed.sh 2 2>&1 | grep -v XDG_RUNTIME | tail -12
