#!/usr/bin/env bash
# The GPU benchmark and test run, for the lent H200 (or any machine with a GPU).
#
#   bench/wgpu_h200.sh build   here: release binaries (dory, dory-wgpu-kernels, dory-wgpu-regs) and the GPU
#                              test binary, stripped and gzipped, into .wgpu-carry/; the Vulkan
#                              loader's .deb into .gl/ (both ignored; carry them)
#   bench/wgpu_h200.sh run     there, from the repository root: the GPU tests (CI=true:
#                              no adapter is a failure; again with 2 × 2 subgroups a GEMM workgroup), the floors and kernel timings
#                              (dory-wgpu-kernels), `dory bench --backend wgpu` at depths
#                              0, 4k and 32k (exact and O(1)) for models/dory-tiny and a
#                              random model of bench/wgpu-large.json (f16), and the
#                              PyTorch reference (bench/wgpu_torch.py, its best: compiled
#                              layers in a CUDA graph). Writes $OUT (or bench/out)
#                              wgpu_*.jsonl and logs; prints a table last.
#   bench/wgpu_h200.sh run quick   the GPU tests, the kernels in their default shapes, then
#                              decode and prefill of dory-tiny at depth 0 (all passes, and
#                              under its config's exit rule) and of the larger
#                              model at depths 0 and 4k, each other carried dory-REV and this
#                              binary again at depth 0 (an A/B), and PyTorch at depth 0
#   bench/wgpu_h200.sh run kernels the GPU tests and every kernel shape (dory-wgpu-kernels),
#                              then what quick runs
#   bench/wgpu_h200.sh build REV   also the `dory` binary of commit REV, as .wgpu-carry/dory-REV
#                              (gzipped here, unpacked there; for `run ab`, or `run sweep`
#                              with bin:.wgpu-carry/dory-REV: the two binaries in one call)
#   bench/wgpu_h200.sh build REV PATCH   the same with PATCH applied to REV (a measuring knob
#                              never merged), as .wgpu-carry/dory-REV-NAME (NAME: PATCH's
#                              file name without .patch)
#   bench/wgpu_h200.sh run ab  the GPU tests (also with the plain GEMM), then the larger
#                              model's decode and prompt under each DORY_WGPU_* switch
#                              (AB_SWITCHES; by default the residual's fusion and the
#                              submission size),
#                              dory-tiny's decode under the same, the host's time by
#                              phase and the GPU's by kernel (decode, and the prompt
#                              also on the plain GEMM), every kernel shape (f16), then
#                              PyTorch; PLAIN=0 leaves out the plain GEMM, PROMPT_PROFILES=0
#                              the prompt's profiles, FLOORS=quick all but the default shapes;
#                              dory-tiny's decode under each binary (TINY_AB=0: not) and its
#                              GPU profiles, decode and prompt (TINY_PROFILES=0: not)
#   bench/wgpu_h200.sh run host  the GPU tests, then the host's time by phase in decode of
#                              both models, under the defaults and each of AB_SWITCHES
#   bench/wgpu_h200.sh run coop  the GPU tests on each tensor-core kernel (COOP_TESTS), every
#                              GEMM shape at 256 and 512 rows, and the larger model's
#                              prompt under each of PROMPTS (kernel, chunk, depth)
#   bench/wgpu_h200.sh run sweep  decode of dory-tiny (after pp512) and of the
#                              larger model (SWEEP_DEPTHS, default 0 and 4k) under each of
#                              SWEEP's settings ("defaults" among them for none,
#                              bin:PATH another binary, bin:PATH,NAME=VALUE it under an
#                              assignment; A=1+B=2 both); SWEEP_TESTS=1 the GPU tests first (also with
#                              2 × 2 GEMM subgroups),
#                              SWEEP_PROFILE="MODEL,WHAT,DEPTH …" the GPU's time by kernel
#                              (tiny|large, prompt|decode; a bare DEPTH: the larger prompt),
#                              SWEEP_TESTS_ALSO="NAME=VALUE …" the tests again under each,
#                              SWEEP_KERNELS=1 both models' projections timed alone
#   bench/wgpu_h200.sh run floors  the floors of both models alone (no tests)
set -uo pipefail
cd "$(dirname "$0")/.."
carry=.wgpu-carry

if [ "${1:-}" = build ]; then
    set -e
    target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
    mkdir -p $carry
    if [ -n "${2:-}" ]; then
        # Another commit's binary, built first in a worktree of its own but in this target
        # folder (its dependencies built once; this commit's binaries, built next, win).
        name=$2${3:+-$(basename "$3" .patch)}
        old=/tmp/dory-build-$name
        if [ ! -d $old ]; then
            git worktree add -q --detach $old "$2"
            [ -z "${3:-}" ] || git -C $old apply "$(realpath "$3")"
        fi
        # Cargo judges the shared artifacts by time: the other tree's sources made newer.
        (cd $old && find crates -name '*.rs' -o -name '*.wgsl' | xargs touch \
            && DORY_COMMIT=$2 CARGO_TARGET_DIR=$target cargo build --release --locked -p dory-cli)
        # Stripped and compressed: the two binaries and the tree must fit one carry (64 MiB).
        cp "$target/release/dory" $carry/dory-$name
        strip $carry/dory-$name
        gzip -f $carry/dory-$name
        # And this tree's sources made newer than what was just built from the other.
        find crates -name '*.rs' -o -name '*.wgsl' | xargs touch
    fi
    # The commit the binaries report (`dory bench`'s records), whatever tree they run beside.
    DORY_COMMIT=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates || echo +) \
        cargo build --release --locked -p dory-cli -p dory-wgpu-bench
    test_bin=$(cargo test --release --locked -p dory-wgpu --test gpu --no-run --message-format=json 2>/dev/null \
        | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "gpu" and m.get("executable"):
        print(m["executable"])')
    cp "$target/release/dory" "$target/release/dory-wgpu-kernels" "$target/release/dory-wgpu-regs" $carry/
    cp "$test_bin" $carry/gpu-tests
    strip $carry/dory $carry/dory-wgpu-kernels $carry/dory-wgpu-regs $carry/gpu-tests
    # Compressed too (unpacked there): with the tree and two other commits' binaries they
    # must fit one carry of 64 MiB.
    gzip -f $carry/dory $carry/dory-wgpu-kernels $carry/dory-wgpu-regs $carry/gpu-tests
    # The loader and glvnd: NVIDIA's Vulkan driver lives in libGLX_nvidia, which needs
    # libGLdispatch (libglvnd0); with the loader alone it does not load and wgpu sees no
    # adapter (seen on the H200).
    need=(libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
    if [ "$(ls .gl/*.deb 2>/dev/null | wc -l)" -lt ${#need[@]} ]; then
        o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/wgpu-amd64'
        mkdir -p .gl /tmp/wgpu-amd64/partial
        apt-get $o update -qq && (cd .gl && apt-get $o download "${need[@]}")
    fi
    du -sh $carry .gl
    exit 0
fi
[ "${1:-}" = run ] || { echo "usage: $0 build|run [quick|kernels|ab|host|coop|sweep|floors]" >&2; exit 2; }
quick=$([ -n "${2:-}" ] && echo 1 || echo 0)
all_shapes=$([ "${2:-}" = kernels ] || [ "${2:-}" = ab ] && echo 1 || echo 0)
ab=$([ "${2:-}" = ab ] && echo 1 || echo 0)
# `run ab` with SWITCHES=0: the binaries against each other, then every depth as `run` does.
((ab)) && [ "${SWITCHES:-1}" = 0 ] && quick=0

out=${OUT:-bench/out}
mkdir -p "$out"
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
# No adapter: say why and stop, rather than spend the call on failures.
if ! $dory info --backend wgpu --model models/dory-tiny | grep '^backend'; then
    echo "no wgpu adapter; the Vulkan driver files and what the NVIDIA one needs:"
    ls /usr/local/nvidia/share/vulkan/icd.d /etc/vulkan/icd.d /usr/share/vulkan/icd.d 2>&1
    lib=$(ldconfig -p | awk '/libGLX_nvidia.so.0/ {print $NF; exit}')
    [ -n "$lib" ] && ldd "$lib" | grep "not found"
    VK_LOADER_DEBUG=error,warn $dory info --backend wgpu --model models/dory-tiny 2>&1 | tail -20
    exit 1
fi

# A device call has a hard time limit: every step has its own timeout, the most important
# come first, and a step starts only if BUDGET seconds (default 500) are not yet spent.
budget=${BUDGET:-500}
room() { [ $SECONDS -lt $((budget - $1)) ] || { echo "(skipped: $2, time budget spent)"; false; }; }

if [ "${2:-}" = sweep ]; then
    # One setting at a time (SWEEP: assignments, "defaults" for none, bin:PATH for another
    # binary, bin:PATH,NAME=VALUE for it under an assignment): dory-tiny's decode after
    # pp512, the larger model's at each of SWEEP_DEPTHS (default 0 and 4k), SWEEP_ARGS added
    # to each; the attention column names the setting.
    # SWEEP_TESTS=1: the GPU tests first; SWEEP_PROFILE="MODEL,WHAT,DEPTH …" (or a bare
    # DEPTH: the larger model's prompt there): also the GPU's time by kernel under each
    # setting.
    if [ "${SWEEP_TESTS:-0}" = 1 ]; then
        CI=true timeout 150 $carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME | tee "$out/wgpu_tests.log" | tail -12
        # The GEMM's workgroups of 2 × 2 subgroups (the default is one).
        echo "== GPU tests with DORY_WGPU_COOP_TILE=2,2"
        CI=true DORY_WGPU_COOP_TILE=2,2 timeout 60 $carry/gpu-tests --test-threads 4 2>&1 \
            | grep -v XDG_RUNTIME | tee "$out/wgpu_tests_tile.log" | grep -E "test result|panicked"
        # SWEEP_TESTS_ALSO="NAME=VALUE …": the tests again under each assignment.
        for a in ${SWEEP_TESTS_ALSO:-}; do
            echo "== GPU tests with $a"
            CI=true env "$a" timeout 60 $carry/gpu-tests --test-threads 4 2>&1 \
                | grep -v XDG_RUNTIME | tee -a "$out/wgpu_tests_also.log" | grep -E "test result|panicked"
        done
    fi
    large=/tmp/wgpu-large
    [ -f $large/config.json ] || timeout 120 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
    for sw in ${SWEEP:?SWEEP=\"NAME=VALUE …\"}; do
        # The binary and the environment assignments (none for defaults, or for another
        # binary unless it names them: bin:PATH,NAME=VALUE; several joined by '+').
        bin=$dory
        set_env=$([ "$sw" = defaults ] || echo "$sw")
        case $sw in bin:*)
            spec=${sw#bin:}
            bin=${spec%%,*}
            set_env=$([ "$spec" = "$bin" ] || echo "${spec#*,}")
            ;;
        esac
        # Each profile: MODEL,WHAT,DEPTH (MODEL tiny or large, WHAT prompt or decode); a bare
        # depth is the larger model's prompt there. All in one file: a device call returns
        # at most 8.
        for prof in ${SWEEP_PROFILE:-}; do
            case $prof in *,*) ;; *) prof=large,prompt,$prof ;; esac
            IFS=, read -r pm pw pd <<< "$prof"
            room 60 "$sw profile $prof" || break
            model=$([ "$pm" = tiny ] && echo models/dory-tiny || echo $large)
            shape=$([ "$pw" = decode ] && echo "--prompt 1 --gen $([ "$pm" = tiny ] && echo 128 || echo 32)" \
                || echo "--prompt 512 --gen 0")
            echo "== $sw: $prof" >> "$out/profile_sweep.txt"
            env ${set_env//+/ } DORY_WGPU_PROFILE=1 timeout 60 $bin bench --backend wgpu --model $model --depth $pd \
                --reps 1 $shape --exit none ${SWEEP_ARGS:-} 2>&1 | grep -v XDG_RUNTIME >> "$out/profile_sweep.txt"
        done
        # SWEEP_KERNELS=1: both models' projections timed alone (default shapes).
        if [ "${SWEEP_KERNELS:-0}" = 1 ] && room 60 "$sw kernels"; then
            echo "== $sw" >> "$out/kernels_sweep.txt"
            for m in $large models/dory-tiny; do
                env ${set_env//+/ } timeout 60 $carry/dory-wgpu-kernels --model $m --dtypes f16 --quick 2>&1 \
                    >>"$out/wgpu_floors.jsonl" | grep -v XDG_RUNTIME >> "$out/kernels_sweep.txt"
            done
        fi
        runs=("models/dory-tiny 0 3 128")
        for depth in ${SWEEP_DEPTHS:-0 4096}; do runs+=("$large $depth $((depth ? 1 : 2)) 32"); done
        for m in "${runs[@]}"; do
            set -- $m
            room 60 "$sw $1 depth $2" || break 2
            env ${set_env//+/ } timeout 60 $bin bench --backend wgpu --model $1 --depth $2 --reps $3 --prompt 512 \
                --gen $4 --exit none ${SWEEP_ARGS:-} --json | sed "s#\"attention\":\"[a-z0-9]*\"#\"attention\":\"$sw\"#" \
                | tee -a "$out/wgpu_sweep.jsonl"
        done
    done
    exit 0
fi
if [ "${2:-}" = floors ]; then
    # The floors alone, both models (no tests: the kernels binary's probes only).
    large=/tmp/wgpu-large
    [ -f $large/config.json ] || timeout 120 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
    for m in $large models/dory-tiny; do
        room 100 "floors of $m" || break
        timeout 100 $carry/dory-wgpu-kernels --model $m --dtypes f16 --quick 2>&1 >>"$out/wgpu_floors.jsonl" \
            | grep -v XDG_RUNTIME | tee -a "$out/wgpu_kernels.txt"
    done
    exit 0
fi
echo "== GPU tests"
CI=true timeout $((quick ? 90 : 150)) $carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME | tee "$out/wgpu_tests.log" | tail -15
# The GEMM's workgroups of 2 × 2 subgroups (the default is one).
echo "== GPU tests with DORY_WGPU_COOP_TILE=2,2"
CI=true DORY_WGPU_COOP_TILE=2,2 timeout 60 $carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME \
    | tee "$out/wgpu_tests_tile.log" | grep -E "test result|panicked"
if ((ab)) && [ "${PLAIN:-1}" = 1 ]; then
    echo "== GPU tests with the plain GEMM (DORY_WGPU_COOP=0)"
    CI=true DORY_WGPU_COOP=0 timeout 60 $carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME \
        | tee "$out/wgpu_tests_plain.log" | tail -15
fi

large=/tmp/wgpu-large
if [ "${2:-}" = host ]; then
    # The host's time by phase alone, decode of both models (after the GPU tests).
    [ -f $large/config.json ] || timeout 120 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
    for m in models/dory-tiny $large; do
        for sw in defaults ${AB_SWITCHES:-}; do
            env $([ "$sw" = defaults ] || echo "$sw") DORY_WGPU_PROFILE=host timeout 30 $dory bench --backend wgpu \
                --model $m --depth 0 --reps 2 --prompt 1 --gen 128 --exit none 2>&1 | grep -v XDG_RUNTIME \
                | sed "s|^model |[$sw] model |" | tee -a "$out/profile_host.txt"
        done
    done
    exit 0
fi
if [ "${2:-}" = coop ]; then
    # The tensor-core GEMMs alone: after the GPU tests, the same under each of COOP_TESTS
    # (settings joined by '+'), every GEMM shape of the larger model's projections at the
    # default chunk's rows and 512 (dory-wgpu-kernels --gemm), and its pp512 under each of
    # PROMPTS: KERNEL@CHUNK[@DEPTH], KERNEL plain or coop.
    for t in ${COOP_TESTS:-DORY_WGPU_COOP_TILE=2,2 DORY_WGPU_COOP_TILE=2,1}; do
        echo "== GPU tests, $t"
        env ${t//+/ } CI=true timeout 60 $carry/gpu-tests --test-threads 4 2>&1 \
            | grep -v XDG_RUNTIME | tee "$out/wgpu_tests_${t//[^A-Za-z0-9_]/_}.log" | grep -E "relative|test result|panicked"
    done
    [ -f $large/config.json ] || timeout 120 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
    room 150 "GEMM shapes" && timeout 120 $carry/dory-wgpu-kernels --model $large --dtypes f16 --gemm 2>&1 \
        >>"$out/wgpu_floors.jsonl" | grep -v XDG_RUNTIME | tee -a "$out/wgpu_kernels.txt"
    for run in ${PROMPTS:-plain@256 coop@256 coop@512 coop@1024}; do
        IFS=@ read -r kernel chunk depth <<<"$run"
        room 45 "prompt $run" || break
        coop=$([ $kernel = plain ] && echo 0 || echo 1)
        DORY_WGPU_COOP=$coop timeout 45 $dory bench --backend wgpu --model $large \
            --attention exact --depth ${depth:-0} --chunk $chunk --reps 3 --prompt 512 --gen 0 --exit none --json \
            | sed "s/\"attention\":\"[a-z0-9]*\"/\"attention\":\"$run\"/" | tee -a "$out/wgpu_bench.jsonl"
    done
    exit 0
fi
echo "== dory bench --backend wgpu"
bench=$out/wgpu_bench.jsonl
: > "$bench"
: > "$out/wgpu_floors.jsonl"
: > "$out/wgpu_torch.jsonl"
run() { # model attention depth reps gen timeout
    room "$6" "$1 $2 depth $3" || return 0
    timeout "$6" $dory bench --backend wgpu --model "$1" --attention "$2" --depth "$3" --reps "$4" \
        --prompt 512 --gen "$5" --exit none --json | tee -a "$bench"
}
floors() { # model dtypes timeout [--quick]; FLOORS=none: not
    [ "${FLOORS:-}" = none ] && return 0
    room "$3" "kernels of $1" || return 0
    echo "== kernels: $1"
    timeout "$3" $carry/dory-wgpu-kernels --model "$1" --dtypes "$2" ${4:-} 2>&1 >>"$out/wgpu_floors.jsonl" \
        | grep -v XDG_RUNTIME | tee -a "$out/wgpu_kernels.txt"
}
room 150 "the larger model" && { [ -f $large/config.json ] || timeout 120 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null; }
if ((all_shapes && !ab)); then
    floors $large f16,bf16 240
elif ((!ab)); then
    floors $large f16 60 --quick
fi
((ab)) || floors models/dory-tiny bf16 60 --quick
run models/dory-tiny exact 0 3 128 45
# The shipped model as its users run it: under its config's exit rule, not all its passes.
room 45 "dory-tiny under its exit rule" && timeout 45 $dory bench --backend wgpu --model models/dory-tiny \
    --attention exact --depth 0 --reps 3 --prompt 512 --gen 128 --json \
    | sed 's/"attention":"[a-z0-9]*"/"attention":"exact, its exit rule"/' | tee -a "$bench"
((quick)) || run models/dory-tiny o1 4096 2 128 60
if ((ab)) && [ -f $large/config.json ]; then
    # One switch at a time against the defaults, tagged in the attention column.
    ab_run() { # tag env...
        local tag=$1; shift
        room 40 "$tag" || return 0
        env "$@" timeout 40 $dory bench --backend wgpu --model $large --depth 0 --reps 1 --prompt 512 --gen 32 \
            --exit none --json | sed "s/\"attention\":\"[a-z0-9]*\"/\"attention\":\"$tag\"/" | tee -a "$bench"
    }
    # This binary and the others carried (dory-*) at each depth of AB_DEPTHS (default 0).
    for depth in ${AB_DEPTHS:-0}; do
        for other in $dory $carry/dory-*; do
            [ "$other" = $carry/dory-wgpu-kernels ] && continue
            room 40 "$other at depth $depth" || break
            tag=$([ "$other" = $dory ] && echo defaults || echo "${other##*/}")
            timeout 40 "$other" bench --backend wgpu --model $large --depth $depth --reps 1 --prompt 512 --gen 32 \
                --exit none --json | sed "s/\"attention\":\"[a-z0-9]*\"/\"attention\":\"$tag\"/" | tee -a "$bench"
        done
    done
    # dory-tiny's decode after a one-token prompt under each binary (TINY_AB=0: not).
    for other in $dory $carry/dory-*; do
        [ "$other" = $carry/dory-wgpu-kernels ] || [ "${TINY_AB:-1}" = 0 ] && continue
        room 30 "dory-tiny, $other" || break
        tag=$([ "$other" = $dory ] && echo defaults || echo "${other##*/}")
        timeout 30 "$other" bench --backend wgpu --model models/dory-tiny --depth 0 --reps 3 --prompt 1 --gen 128 \
            --exit none --json | sed "s/\"attention\":\"[a-z0-9]*\"/\"attention\":\"tiny $tag\"/" | tee -a "$bench"
    done
    # SWITCHES=0: the other binaries and the profiles only. AB_SWITCHES: the switches, each
    # an assignment, tried one at a time on the larger model and on dory-tiny.
    switches=${AB_SWITCHES:-DORY_WGPU_FUSE=prep DORY_WGPU_BATCH=16 DORY_WGPU_BATCH=32}
    if [ "${SWITCHES:-1}" = 1 ]; then
        for sw in $switches; do ab_run "$sw" "$sw"; done
        # dory-tiny's decode, where the host's time per dispatch is the bound.
        for sw in defaults $switches; do
            room 30 "dory-tiny $sw" || break
            env $([ "$sw" = defaults ] || echo "$sw") timeout 30 $dory bench --backend wgpu --model models/dory-tiny --depth 0 --reps 3 --prompt 512 \
                --gen 128 --exit none --json | sed "s/\"attention\":\"[a-z0-9]*\"/\"attention\":\"$sw\"/" | tee -a "$bench"
        done
    fi
    if room 40 "the host profiles"; then
        # The host's time split by phase (no timestamps: the submissions run as always).
        for m in models/dory-tiny $large; do
            DORY_WGPU_PROFILE=host timeout 20 $dory bench --backend wgpu --model $m --depth 0 --reps 1 --prompt 1 \
                --gen 64 --exit none 2>&1 | grep -v XDG_RUNTIME | tee -a "$out/profile_host.txt"
        done
    fi
    if [ "${TINY_PROFILES:-1}" = 1 ] && room 60 "dory-tiny's profiles"; then
        # The GPU's time by kernel for dory-tiny: decode alone, then a prompt of 512.
        DORY_WGPU_PROFILE=1 timeout 30 $dory bench --backend wgpu --model models/dory-tiny --depth 0 --reps 1 \
            --prompt 1 --gen 128 --exit none 2>&1 | grep -v XDG_RUNTIME | tee "$out/profile_tiny_decode.txt"
        DORY_WGPU_PROFILE=1 timeout 30 $dory bench --backend wgpu --model models/dory-tiny --depth 0 --reps 2 \
            --prompt 512 --gen 0 --exit none 2>&1 | grep -v XDG_RUNTIME | tee "$out/profile_tiny_prompt.txt"
    fi
    if room 60 "the profiles"; then
        # Decode alone (a one-token prompt), then a prompt of 512.
        DORY_WGPU_PROFILE=1 timeout 30 $dory bench --backend wgpu --model $large --depth 0 --reps 1 --prompt 1 \
            --gen 32 --exit none 2>&1 | grep -v XDG_RUNTIME | tee "$out/profile_large_decode.txt"
        if [ "${PROMPT_PROFILES:-1}" = 1 ]; then
            DORY_WGPU_PROFILE=1 timeout 30 $dory bench --backend wgpu --model $large --depth 0 --reps 1 --prompt 512 \
                --gen 0 --exit none 2>&1 | grep -v XDG_RUNTIME | tee "$out/profile_large_prompt.txt"
            DORY_WGPU_COOP=0 DORY_WGPU_PROFILE=1 timeout 30 $dory bench --backend wgpu --model $large --depth 0 --reps 1 \
                --prompt 512 --gen 0 --exit none 2>&1 | grep -v XDG_RUNTIME | tee "$out/profile_large_prompt_plain.txt"
        fi
    fi
    # FLOORS=quick: the kernels in their default shapes only.
    if [ "${SWITCHES:-1}" = 1 ]; then
        if [ "${FLOORS:-all}" = quick ]; then floors $large f16 60 --quick; else floors $large f16 120; fi
    fi
fi
if [ -f $large/config.json ]; then
    ((ab)) || run $large exact 0 2 64 90
    run $large exact 4096 1 64 90
    # The prompt on the plain GEMM, for the tensor cores' gain.
    if [ "${PLAIN:-1}" = 1 ] && room 60 "the larger model on the plain GEMM"; then
        DORY_WGPU_COOP=0 timeout 60 $dory bench --backend wgpu --model $large --attention exact --depth 0 --reps 1 \
            --prompt 512 --gen 0 --exit none --json | sed 's/"attention":"exact"/"attention":"exact, plain GEMM"/' | tee -a "$bench"
    fi
fi
if ((quick)) && ((!ab)) && [ -f $large/config.json ]; then
    # Each other binary carried (build REV), then this one again: both models at depth 0,
    # an A/B within the call.
    for other in $carry/dory-*; do
        [ -x "$other" ] && [ "$other" != $carry/dory-wgpu-kernels ] || continue
        for b in "$other" $dory; do
            tag=$([ "$b" = $dory ] && echo "exact, again" || echo "exact, ${b##*/}")
            for m in models/dory-tiny $large; do
                room 40 "$tag on $m" || break 3
                timeout 40 $b bench --backend wgpu --model $m --attention exact --depth 0 --reps 2 --prompt 512 \
                    --gen $([ $m = $large ] && echo 64 || echo 128) --exit none --json \
                    | sed "s/\"attention\":\"exact\"/\"attention\":\"$tag\"/" | tee -a "$bench"
            done
        done
    done
fi
if room 150 "the PyTorch reference"; then
    echo "== PyTorch reference"
    timeout 150 python3 bench/wgpu_torch.py bench/wgpu-large.json --depth 0 --tokens 64 | tee -a "$out/wgpu_torch.jsonl"
fi
# A quick run stops here.
if ((!quick)); then
    run models/dory-tiny exact 32768 1 64 80
    if [ -f $large/config.json ]; then
        run $large o1 32768 1 64 120
        run $large exact 32768 1 64 120
        room 60 "the PyTorch reference at 32k" && timeout 60 python3 bench/wgpu_torch.py bench/wgpu-large.json --depth 32768 --tokens 64 | tee -a "$out/wgpu_torch.jsonl"
    fi
fi

python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
rows = [json.loads(l) for l in open(f"{out}/wgpu_bench.jsonl") if l.startswith("{")]
floors = [json.loads(l) for l in open(f"{out}/wgpu_floors.jsonl") if l.startswith("{")]
floors = {f["model"]["dir"]: f for f in floors if "model" in f}
print(f"\n{'model':<22}{'attention':<24}{'depth':>7}{'pp512 tok/s':>14}{'tg tok/s':>12}")
for r in rows:
    tg = r["tg"]["median"] if r.get("tg") else float("nan")
    print(f"{r['model'][-20:]:<22}{r['attention'][:24]:<24}{r['depth']:>7}{r['pp']['median']:>14.0f}{tg:>12.1f}")
for m, f in floors.items():
    x = f["model"]
    print(f"floors {m[-20:]}: {x['weight_bytes_per_token']/1e9:.3f} GB/token at {f['copy_bytes_per_s']/1e12:.2f} TB/s → "
          f"{x['bandwidth_floor_s']*1e6:.0f} µs; {x['dispatches_per_token']} dispatches × "
          f"{max(f['dispatch_gpu_s'], f['dispatch_cpu_s'])*1e6:.2f} µs → {x['dispatch_floor_s']*1e6:.0f} µs; "
          f"floor (sum) {x['floor_tokens_per_s']:.0f} tok/s")
    # The chain of the token's stages, each only streaming its bytes (decode_chain).
    for c in f.get("chain", []):
        one = f"; one dispatch {1 / c['one_dispatch_264_s']:.0f}" if c.get("one_dispatch_264_s") else ""
        print(f"  chain at {c['keys']} keys, {c['stages']} stages: a dispatch a stage {1 / c['dispatches_s']:.0f} tok/s{one}")
for l in open(f"{out}/wgpu_torch.jsonl"):
    if l.startswith("{"):
        t = json.loads(l)
        print(f"torch {t['mode']:<11} depth {t['depth']:>6}: {t['tg_tokens_per_s']:.1f} tok/s")
PY
