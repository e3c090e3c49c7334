#!/usr/bin/env bash
# The wgpu backend's benchmark and GPU test run, for the lent H200 (or any machine with a GPU).
#
#   bench/wgpu_h200.sh build   here: release binaries (dory, dory-wgpu-floors) and the GPU
#                              test binary, stripped, into .wgpu-carry/; the Vulkan
#                              loader's .deb into .gl/ (both ignored; carry them)
#   bench/wgpu_h200.sh run     there, from the repository root: the GPU tests (CI=true:
#                              no adapter is a failure), the floors, `dory bench --backend
#                              wgpu` at depths 0, 4k and 32k (exact and O(1)) for
#                              models/dory-tiny and a random model of bench/wgpu-large.json
#                              (f16), and the PyTorch reference (bench/wgpu_torch.py).
#                              Writes $OUT (or bench/out) wgpu_*.jsonl and logs; prints a
#                              table last.
#   bench/wgpu_h200.sh run quick   the GPU tests, then decode and prefill of dory-tiny at
#                              depth 0 and of the larger model at depths 0 and 4k only
#                              (a short device call)
set -uo pipefail
cd "$(dirname "$0")/.."
carry=.wgpu-carry

if [ "${1:-}" = build ]; then
    set -e
    cargo build --release --locked -p dory-cli -p dory-wgpu
    test_bin=$(cargo test --release --locked -p dory-wgpu --test gpu --no-run --message-format=json 2>/dev/null \
        | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "gpu" and m.get("executable"):
        print(m["executable"])')
    target=${CARGO_TARGET_DIR:-target}
    mkdir -p $carry
    cp "$target/release/dory" "$target/release/dory-wgpu-floors" $carry/
    cp "$test_bin" $carry/gpu-tests
    strip $carry/*
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
[ "${1:-}" = run ] || { echo "usage: $0 build|run [quick]" >&2; exit 2; }
quick=$([ "${2:-}" = quick ] && echo 1 || echo 0)

out=${OUT:-bench/out}
mkdir -p "$out"
# The Vulkan loader (the device README's recipe), and the path the test binary was
# built at, where it looks for the fixtures and the shipped model.
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
# Where the NVIDIA machines keep their Vulkan driver (the device README's fallback).
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f $icd ] && export VK_DRIVER_FILES=$icd
if [ ! -e /work/main ]; then mkdir -p /work && ln -s "$PWD" /work/main; fi
dory=$carry/dory
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

echo "== GPU tests"
CI=true timeout $((quick ? 90 : 150)) $carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME | tee "$out/wgpu_tests.log" | tail -15

large=/tmp/wgpu-large
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
floors() {
    room 30 "floors of $1" || return 0
    timeout 30 $carry/dory-wgpu-floors --model "$1" | tee -a "$out/wgpu_floors.jsonl"
}
floors models/dory-tiny
run models/dory-tiny exact 0 3 128 45
((quick)) || run models/dory-tiny o1 4096 2 128 60
room 150 "the larger model" && timeout 120 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
if [ -f $large/config.json ]; then
    ((quick)) || floors $large
    run $large exact 0 2 64 90
    run $large exact 4096 1 64 90
fi
# A quick run stops here.
if ((!quick)); then
    if room 60 "the PyTorch reference"; then
        echo "== PyTorch reference"
        timeout 60 python3 bench/wgpu_torch.py bench/wgpu-large.json --depth 0 --tokens 64 | tee -a "$out/wgpu_torch.jsonl"
    fi
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
floors = {json.loads(l)["model"]["dir"]: json.loads(l) for l in open(f"{out}/wgpu_floors.jsonl") if l.startswith("{")}
print(f"\n{'model':<22}{'attention':<10}{'depth':>7}{'pp512 tok/s':>14}{'tg tok/s':>12}")
for r in rows:
    tg = r["tg"]["median"] if r.get("tg") else float("nan")
    print(f"{r['model'][-20:]:<22}{r['attention']:<10}{r['depth']:>7}{r['pp']['median']:>14.0f}{tg:>12.1f}")
for m, f in floors.items():
    x = f["model"]
    print(f"floors {m[-20:]}: {x['weight_bytes_per_token']/1e9:.3f} GB/token at {f['copy_bytes_per_s']/1e12:.2f} TB/s → "
          f"{x['bandwidth_floor_s']*1e6:.0f} µs; {x['dispatches_per_token']} dispatches × {f['dispatch_s']*1e6:.2f} µs → "
          f"{x['dispatch_floor_s']*1e6:.0f} µs; floor {x['floor_tokens_per_s']:.0f} tok/s, 2× {x['within_2x_tokens_per_s']:.0f}")
for l in open(f"{out}/wgpu_torch.jsonl"):
    if l.startswith("{"):
        t = json.loads(l)
        print(f"torch {t['mode']:<11} depth {t['depth']:>6}: {t['tg_tokens_per_s']:.1f} tok/s")
PY
