#!/usr/bin/env bash
# 2026-12-06, eleventh session, call 8, on the H200 that calls 7 and 2 had: this binary
# (call 7's) against 5e5226e, two rounds interleaved: the larger config's decode at depth 0
# (tg64 after 16 tokens), dory-tiny's (tg128 after pp512) exact with all passes and in its
# default mode under its rule. Carry .gl and .wgpu-carry (with dory-5e5226e).
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
large=/tmp/wgpu-large
[ -f $large/config.json ] || timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
run() { # label bin model depth attention exit prompt gen reps
    timeout 100 $2 bench --backend wgpu --model $3 --depth $4 --attention $5 --exit $6 --prompt $7 --gen $8 \
        --reps $9 --json 2>&1 | grep -v XDG_RUNTIME | sed "s/^/$1 /" | tee -a $o/a/bench.jsonl | python3 -c "import json,sys
for l in sys.stdin:
    k, _, j = l.partition(' ')
    try: j = json.loads(j)
    except ValueError: print(l.rstrip()); continue
    print(k, '$3 $5 exit $6 tg', [round(j['tg'][x], 1) for x in ('median', 'min', 'max')])" | tee -a $o/a/summary.txt
}
for round in 1 2; do
    for v in "new .wgpu-carry/dory" "old .wgpu-carry/dory-5e5226e"; do
        set -- $v
        run $1 $2 $large 0 exact none 16 64 2
        run $1 $2 models/dory-tiny 0 exact none 512 128 3
        run $1 $2 models/dory-tiny 0 o1 kl:0.05 512 128 3
    done
done
