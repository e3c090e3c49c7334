#!/usr/bin/env bash
# 2026-12-06, eleventh session, call 5: dory-tiny's decode under its rule (KL, τ 0.05: every
# pass's end a read-out, so only the loop's entry changed there) ran within its noise of
# 5e5226e in calls 1 and 4, either way: six more rounds, this binary and 5e5226e
# alternating (tg128 after pp512, exact and O(1)). Then where issue 9's figures stand with
# this binary (call-2.sh's list, without PyTorch, which call-2.sh keeps for an H200).
# Built with `bench/wgpu_h200.sh build 5e5226e`; carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b
source bench/device_setup.sh
old=.wgpu-carry/dory-5e5226e
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
run() { # label bin model depth attention exit prompt gen reps
    timeout 120 $2 bench --backend wgpu --model $3 --depth $4 --attention $5 --exit $6 --prompt $7 --gen $8 \
        --reps $9 --json 2>&1 | grep -v XDG_RUNTIME | sed "s/^/$1 /" | tee -a $o/a/bench.jsonl \
        | python3 -c "import json,sys
for l in sys.stdin:
    k, _, j = l.partition(' ')
    try: j = json.loads(j)
    except ValueError: print(l.rstrip()); continue
    print(k, '$3 depth $4 $5 exit $6 tg', [round(j['tg'][x], 1) for x in ('median', 'min', 'max')],
          'passes', round(j['passes_per_token'], 2), 'pp', [round(j['pp'][x]) for x in ('median', 'min', 'max')])" \
        | tee -a $o/a/summary.txt
}
for round in 1 2 3 4 5 6; do
    for v in "new $dory" "old $old"; do
        set -- $v
        run $1 $2 models/dory-tiny 0 exact kl:0.05 512 128 3
        run $1 $2 models/dory-tiny 0 o1 kl:0.05 512 128 3
    done
done
cp $o/a/summary.txt $o/a/rule.txt
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
: > $o/a/summary.txt
mv $o/a/bench.jsonl $o/a/rule.jsonl
run now $dory $large 0 exact none 512 64 3
run now $dory $large 4096 exact none 512 64 2
run now $dory $large 4096 o1 none 16 64 2
run now $dory $large 32768 o1 none 16 64 1
run now $dory models/dory-tiny 0 exact kl:0.05 512 128 3
run now $dory models/dory-tiny 0 exact none 512 128 3
run now $dory models/dory-tiny 0 o1 kl:0.05 512 128 3
run now $dory models/dory-tiny 0 o1 none 512 128 3
run now $dory $large 32768 exact none 512 64 1
