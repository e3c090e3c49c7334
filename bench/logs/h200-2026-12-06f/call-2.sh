#!/usr/bin/env bash
# 2026-12-06, fourteenth session, call 2: two bands of W a workgroup by default where a
# projection forms x from the residual and has ≥ 512 bands, those kernels built apart from
# the one-band ones (dory-tiny's decode, which never shares bands, lost 1–2 % to the loop's
# pipeline constant in call 1); attend.wgsl with 8 loads in flight in its walks over keys
# and values (DORY_WGPU_ATTEND_AHEAD=8). The GPU tests; against 1e0b3f8 and with 8 loads
# ahead, one round at depths 0 and 4096; then issue 9's figures: the larger config's pp512
# + tg64 at depths 0, 4096 (exact) and 32768 (O(1)), dory-tiny's pp512 + tg128 (exact and
# O(1), all passes and its rule), dory-tiny with bands shared from 64 bands on. Cut to fit
# what device time was left (a first try was taken back mid-call). Built with
# `bench/wgpu_h200.sh build` (dory-1e0b3f8 carried); carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/gpu-tests.log
grep -E "test result|panicked|FAILED" $o/a/gpu-tests.log | head -20
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
for round in 1; do  # one round: the device time left
    for v in "base .wgpu-carry/dory-1e0b3f8" "new $dory"; do
        bench_tg $v $large 0 exact 16 64 2
        bench_tg $v models/dory-tiny 0 exact 512 128 3
    done
    DORY_WGPU_ATTEND_AHEAD=8 bench_tg ahead8 $dory $large 0 exact 16 64 2
done
for v in "base .wgpu-carry/dory-1e0b3f8" "new $dory"; do
    bench_tg $v $large 4096 exact 16 64 1
done
DORY_WGPU_ATTEND_AHEAD=8 bench_tg ahead8 $dory $large 4096 exact 16 64 1
DORY_WGPU_GEMV_BANDS=2,64 bench_tg tiny-bands-from-64 $dory models/dory-tiny 0 exact 512 128 3
fig() { # model depth attention exit prompt gen reps
    timeout 150 $dory bench --backend wgpu --model $1 --depth $2 --attention $3 --exit $4 --prompt $5 --gen $6 \
        --reps $7 --json 2>&1 | grep -v XDG_RUNTIME | tee -a $o/a/figures.jsonl | python3 -c "import json,sys
for l in sys.stdin:
    try: j = json.loads(l)
    except ValueError: print(l.rstrip()); continue
    print('$1 depth $2 $3 exit $4 tg', [round(j['tg'][k], 1) for k in ('median', 'min', 'max')],
          'passes', round(j['passes_per_token'], 2), 'pp', [round(j['pp'][k]) for k in ('median', 'min', 'max')])" \
        | tee -a $o/a/summary.txt
}
fig $large 0 exact none 512 64 2
fig $large 4096 exact none 512 64 1
fig $large 32768 o1 none 512 64 1
for att in exact o1; do
    for ex in none kl:0.05; do
        fig models/dory-tiny 0 $att $ex 512 128 3
    done
done
