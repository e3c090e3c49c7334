# Sourced from the repository root on the device machine, by bench/wgpu_h200.sh and the
# call scripts under bench/logs: the carried binaries unpacked, the Vulkan loader installed
# (the device README's recipe), the NVIDIA driver named where those machines keep it (the
# README's fallback), and DORY_REPO set so that the test binary finds the fixtures and the
# shipped model in this copy (not at the path it was built at). Leaves `dory` naming the
# engine's binary.
for f in .wgpu-carry/*.gz; do [ -e "$f" ] && gunzip -f "$f" && chmod +x "${f%.gz}"; done
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f $icd ] && export VK_DRIVER_FILES=$icd
export DORY_REPO=$PWD
dory=.wgpu-carry/dory

# For the call scripts under bench/logs: one `dory bench` of the wgpu backend, its JSON
# lines appended to $OUT/a/bench.jsonl under `label` and its decode (median, min, max),
# passes and prompt to $OUT/a/summary.txt. Arguments: label binary model depth attention
# exit prompt gen reps timeout; DORY_WGPU_* come from the caller's environment.
bench_run() {
    local label=$1 bin=$2 m=$3 depth=$4 att=$5 exit=$6 pr=$7 gen=$8 reps=$9 limit=${10}
    mkdir -p $OUT/a
    timeout $limit $bin bench --backend wgpu --model $m --depth $depth --attention $att --exit $exit \
        --prompt $pr --gen $gen --reps $reps --json 2>&1 | grep -v XDG_RUNTIME | sed "s/^/$label /" \
        | tee -a $OUT/a/bench.jsonl | python3 -c "import json,sys
for l in sys.stdin:
    k, _, j = l.partition(' ')
    try: j = json.loads(j)
    except ValueError: print(l.rstrip()); continue
    print(k, '$m depth $depth $att exit $exit tg', [round(j['tg'][x], 1) for x in ('median', 'min', 'max')],
          'passes', round(j['passes_per_token'], 2), 'pp', [round(j['pp'][x]) for x in ('median', 'min', 'max')])" \
        | tee -a $OUT/a/summary.txt
}

# bench_run with no exit rule: label binary model depth attention prompt gen reps.
bench_tg() {
    bench_run "$1" "$2" "$3" "$4" "$5" none "$6" "$7" "$8" 120
}

# bench_run of the engine's binary, for issue 9's figures: model depth attention exit
# prompt gen reps.
fig() {
    bench_run fig $dory "$@" 150
}

# Issue 9's figures with the engine's binary, in order of need so that a call cut short keeps
# the most: the larger config's pp512 + tg64 at depth 0, dory-tiny's pp512 + tg128 (all
# passes and its exit rule), the larger config at 4096 (exact), the PyTorch peer, the larger
# config at depth 0 again and at 32768 (O(1)).
figures() {
    large_model
    fig $large 0 exact none 512 64 2
    fig models/dory-tiny 0 exact none 512 128 3
    fig models/dory-tiny 0 exact kl:0.05 512 128 3
    fig $large 4096 exact none 512 64 1
    timeout 150 python3 bench/wgpu_torch.py bench/wgpu-large.json --depth 0 --tokens 64 2>&1 | tail -3 | tee $OUT/a/torch.txt
    fig $large 0 exact none 512 64 2
    fig $large 32768 o1 none 512 64 1
}

# bench_tg at depth 0, exact, after pp512, one rep, with one variable set for this run
# alone: label binary model gen [VAR VALUE].
bench_knob() {
    (
        [ -z "${5:-}" ] || export "$5=$6"
        bench_tg "$1" "$2" "$3" 0 exact 512 "$4" 1
    )
}

# Each kernel named dispatched with no workgroups (DORY_WGPU_EMPTY) and twice in a row
# (DORY_WGPU_TWICE), the baseline first and last, with a binary that has the measuring knobs
# (bench/logs/h200-2026-12-07/measure-3*.patch): binary model gen kernel….
empty_twice() {
    local bin=$1 m=$2 gen=$3
    shift 3
    bench_knob none $bin $m $gen
    for k in "$@"; do
        bench_knob empty-$k $bin $m $gen DORY_WGPU_EMPTY $k
        bench_knob twice-$k $bin $m $gen DORY_WGPU_TWICE $k
    done
    bench_knob none $bin $m $gen
}

# For the call scripts: the card named, and the larger config's random model made at $large.
large_model() {
    mkdir -p $OUT/a
    nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
    large=/tmp/wgpu-large
    # Made once a machine (figures after call_start asks again).
    [ -f $large/config.json ] || timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
}

# For the call scripts: large_model, after the GPU tests of the carried test binary (the
# log in $OUT/a/gpu-tests.log, its summary printed).
call_start() {
    mkdir -p $OUT/a
    CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $OUT/a/gpu-tests.log
    grep -E "test result|panicked|FAILED" $OUT/a/gpu-tests.log | head -20
    large_model
}

# For the call scripts: the GPU time by kernel (DORY_WGPU_PROFILE) of the larger config's
# decode at depth 0 under `label` with binary `bin`, appended to $OUT/a/profile.txt; a third
# argument sets DORY_WGPU_PROFILE (by default 1: each dispatch timed alone).
profile_large() {
    local label=$1 bin=$2 mode=${3:-1}
    echo "== $label ($mode)" >> $OUT/a/profile.txt
    DORY_WGPU_PROFILE=$mode timeout 120 $bin bench --backend wgpu --model $large --depth 0 \
        --attention exact --exit none --prompt 16 --gen 32 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
}
