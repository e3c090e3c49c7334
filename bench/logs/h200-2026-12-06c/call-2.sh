#!/usr/bin/env bash
# 2026-12-06, eleventh session, call 2: where issue 9's figures stand with this stop's
# binary, as bench/logs/h200-2026-12-06b/call-4.sh measured them (the larger config's pp512
# + tg64 at depths 0 (3 reps), 4096 (2) and 32768 (1) exact, and its decode in O(1) mode
# (sealed) at 4096 and 32768; dory-tiny's pp512 + tg128 (3 reps) exact and in O(1) mode,
# under its rule and with all passes), then PyTorch compile + graph beside it (call-5.sh's:
# decode at depth 0 and 32768). Carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
run() { # model depth attention exit prompt gen reps
    timeout 100 $dory bench --backend wgpu --model $1 --depth $2 --attention $3 --exit $4 --prompt $5 --gen $6 \
        --reps $7 --json 2>&1 | grep -v XDG_RUNTIME | tee -a $o/a/bench.jsonl | python3 -c "import json,sys
for l in sys.stdin:
    try: j = json.loads(l)
    except ValueError: print(l.rstrip()); continue
    print('$1 depth $2 $3 exit $4 tg', [round(j['tg'][k], 1) for k in ('median', 'min', 'max')],
          'passes', round(j['passes_per_token'], 2), 'pp', [round(j['pp'][k]) for k in ('median', 'min', 'max')])" \
        | tee -a $o/a/summary.txt
}
run $large 0 exact none 512 64 3
run $large 4096 exact none 512 64 2
run $large 4096 o1 none 16 64 2
run $large 32768 o1 none 16 64 1
run models/dory-tiny 0 exact kl:0.05 512 128 3
run models/dory-tiny 0 exact none 512 128 3
run models/dory-tiny 0 o1 kl:0.05 512 128 3
run models/dory-tiny 0 o1 none 512 128 3
run $large 32768 exact none 512 64 1
for depth in 0 32768; do
    timeout 150 python3 bench/wgpu_torch.py bench/wgpu-large.json --depth $depth --tokens 64 2>&1 | tail -3 \
        | tee -a $o/a/torch.txt
done
