#!/usr/bin/env bash
# 2026-12-06, twelfth session, call 3: this stop's binary (combine.wgsl's one walk, the
# argmax's loads in flight; attend.wgsl as at the last stop). The GPU tests; then a decoded
# row's attention cut into fewer workgroups at depth 4096 (exact: 73 chunks of one tile of
# 64 keys, 292 workgroups, more than two an SM) and 32768 (O(1)), interleaved with the last
# stop's binary, two rounds: chunks of two tiles (DORY_WGPU_ATTEND_PER=129: 37), tiles of
# 128 keys (DORY_WGPU_ATTEND_LANES=2: 68 chunks), both (37 of one tile); then where issue
# 9's figures stand (bench/logs/h200-2026-12-06c/call-2.sh's runs), and PyTorch compile +
# graph beside it. Built with `bench/wgpu_h200.sh build` (and 9a78359's binary, kept from
# calls 1-2); carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/gpu-tests.log
grep -E "test result|panicked|FAILED" $o/a/gpu-tests.log | head -20
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
sweep() { # label binary depth attention [env...]
    local label=$1 bin=$2 depth=$3 att=$4
    shift 4
    env "$@" timeout 120 $bin bench --backend wgpu --model $large --depth $depth --attention $att --exit none \
        --prompt 16 --gen 64 --reps 1 --json 2>&1 | grep -v XDG_RUNTIME | sed "s/^/$label /" \
        | tee -a $o/a/sweep.jsonl | python3 -c "import json,sys
for l in sys.stdin:
    k, _, j = l.partition(' ')
    try: j = json.loads(j)
    except ValueError: print(l.rstrip()); continue
    print(k, 'depth $depth $att tg', [round(j['tg'][x], 1) for x in ('median', 'min', 'max')])" | tee -a $o/a/sweep.txt
}
for round in 1 2; do
    for depth in "4096 exact" "32768 o1"; do
        set -- $depth
        sweep defaults $dory $1 $2
        sweep per-129 $dory $1 $2 DORY_WGPU_ATTEND_PER=129
        sweep lanes-2 $dory $1 $2 DORY_WGPU_ATTEND_LANES=2
        sweep lanes-2+per-128 $dory $1 $2 DORY_WGPU_ATTEND_LANES=2 DORY_WGPU_ATTEND_PER=128
        sweep old .wgpu-carry/dory-9a78359 $1 $2
    done
done
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
