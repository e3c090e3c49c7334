#!/usr/bin/env bash
# 2026-12-06, eleventh session, call 6: under dory-tiny's rule (every pass's end a
# read-out, so no pass is closed by the next one's projection there) this stop's binary ran
# 2.5 % (exact) to 6 % (O(1)) under 5e5226e in calls 1, 4 and 5, while with all passes it
# ran 1.6-2.8 % over it. What is it: this binary (the one-dispatch entry, a pass closed by
# the next projection, two more bindings on every gemv.wgsl dispatch), the same with the
# entry apart (DORY_WGPU_FUSE without "enter"), f6db730 (the entry alone, the bindings as
# before), 5e5226e; four rounds interleaved, tg128 after pp512, exact and O(1), under the
# rule, then with all passes. The GPU tests first (the second test device now leaves the
# entry apart). Built with `bench/wgpu_h200.sh build f6db730` after `build 5e5226e`;
# carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/gpu-tests.log
grep -E "test result|panicked|FAILED" $o/a/gpu-tests.log | head -20
run() { # label bin attention exit [env...]
    local label=$1 bin=$2 att=$3 ex=$4
    shift 4
    env "$@" timeout 120 $bin bench --backend wgpu --model models/dory-tiny --attention $att --exit $ex --prompt 512 \
        --gen 128 --reps 3 --json 2>&1 | grep -v XDG_RUNTIME | sed "s/^/$label /" | tee -a $o/a/bench.jsonl \
        | python3 -c "import json,sys
for l in sys.stdin:
    k, _, j = l.partition(' ')
    try: j = json.loads(j)
    except ValueError: print(l.rstrip()); continue
    print(k, '$att exit $ex tg', [round(j['tg'][x], 1) for x in ('median', 'min', 'max')],
          'passes', round(j['passes_per_token'], 2))" | tee -a $o/a/summary.txt
}
for ex in kl:0.05 none; do
    for round in 1 2 3 4; do
        for v in "new .wgpu-carry/dory" "no-enter .wgpu-carry/dory DORY_WGPU_FUSE=prep,residual,split,combine,edge" \
            "f6db730 .wgpu-carry/dory-f6db730" "old .wgpu-carry/dory-5e5226e"; do
            set -- $v
            run $1 $2 exact $ex ${3:-}
            run $1 $2 o1 $ex ${3:-}
        done
    done
done
