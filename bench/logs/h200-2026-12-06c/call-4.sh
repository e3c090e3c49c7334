#!/usr/bin/env bash
# 2026-12-06, eleventh session, call 4: this stop's binary (the loop's entry with the
# embedding, a pass closed by the next pass's first projection; the head's close taken out
# again after call 3) against 5e5226e (the last stop): the GPU tests, then three rounds
# interleaved: dory-tiny's decode (tg128 after pp512) exact and in O(1) mode (its
# default), with all passes and under its rule, and the larger config's at depth 0 (tg64
# after 16 tokens); the host's time by phase under dory-tiny's rule; `dory generate` on the
# shipped model, 500 tokens. Built with `bench/wgpu_h200.sh build 5e5226e`; carry .gl and
# .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
old=.wgpu-carry/dory-5e5226e
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/gpu-tests.log
grep -E "test result|panicked|FAILED" $o/a/gpu-tests.log | head -20
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
run() { # label bin model depth attention exit prompt gen reps
    timeout 120 $2 bench --backend wgpu --model $3 --depth $4 --attention $5 --exit $6 --prompt $7 --gen $8 \
        --reps $9 --json 2>&1 | grep -v XDG_RUNTIME | sed "s/^/$1 /" | tee -a $o/a/bench.jsonl \
        | python3 -c "import json,sys
for l in sys.stdin:
    k, _, j = l.partition(' ')
    try: j = json.loads(j)
    except ValueError: print(l.rstrip()); continue
    print(k, '$3 depth $4 $5 exit $6 tg', [round(j['tg'][x], 1) for x in ('median', 'min', 'max')],
          'passes', round(j['passes_per_token'], 2))" | tee -a $o/a/summary.txt
}
for round in 1 2 3; do
    for v in "new $dory" "old $old"; do
        set -- $v
        run $1 $2 models/dory-tiny 0 exact none 512 128 3
        run $1 $2 models/dory-tiny 0 o1 none 512 128 3
        run $1 $2 models/dory-tiny 0 exact kl:0.05 512 128 3
        run $1 $2 models/dory-tiny 0 o1 kl:0.05 512 128 3
        run $1 $2 $large 0 exact none 16 64 2
    done
done
for bin in $dory $old; do
    echo "== $bin" >> $o/a/host.txt
    DORY_WGPU_PROFILE=host timeout 60 $bin bench --backend wgpu --model models/dory-tiny --prompt 512 --gen 128 \
        --reps 2 --exit kl:0.05 --attention exact 2>&1 | grep -v XDG_RUNTIME >> $o/a/host.txt
done
MODEL=models/dory-tiny BINARIES="new=$dory old=$old" TOKENS=500 ARGS="--backend wgpu" OUT=$o/a \
    timeout 120 bash bench/generate_speed.sh 2 2>&1 | grep -v XDG_RUNTIME | tail -6
