#!/usr/bin/env bash
# 2026-12-06, ninth session: written, not run (the device time ran out); run in the tenth
# session by bench/logs/h200-2026-12-06b/call-1.sh (its output there, under b/), with the
# binary of 0165a0e (d1540b1's code) plus an opt-in kernel's change. This stop's binary (the caches' spare buffers, kept from rings)
# against ee4a49f where call 2 did not look: the larger config at depth 0 (pp512 + tg64, 5
# reps; its decode's first step relayouts the rings, now with nothing to copy) and
# dory-tiny under its rule and with all passes (pp512 + tg128, 3 reps), two rounds
# interleaved. Built with `bench/wgpu_h200.sh build`; carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/b
source bench/device_setup.sh
old=.wgpu-carry/dory-ee4a49f
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
run() { # bin model exit gen reps
    timeout 90 $1 bench --backend wgpu --model $2 --reps $5 --prompt 512 --gen $4 --attention exact \
        --exit $3 --json 2>&1 | grep -v XDG_RUNTIME | tee -a $o/b/bench.jsonl | python3 -c "import json,sys
for l in sys.stdin:
    try: j = json.loads(l)
    except ValueError: print(l.rstrip()); continue
    print('$1 $2 exit $3 tg', [round(j['tg'][k], 1) for k in ('median', 'min', 'max')], 'passes', round(j['passes_per_token'], 2),
          'pp', [round(j['pp'][k]) for k in ('median', 'min', 'max')], 'cache', j['cache_bytes'])" | tee -a $o/b/summary.txt
}
for round in 1 2; do
    for bin in $dory $old; do
        run $bin $large none 64 5
        run $bin models/dory-tiny kl:0.05 128 3
        run $bin models/dory-tiny none 128 3
    done
done
