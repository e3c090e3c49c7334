#!/usr/bin/env bash
# The CPU backend's speed benchmark: random models of the benchmark config in every weight
# format (f32, f16, bf16, and q8_0 quantized from the bf16 one), prefill of a 512-token
# prompt (pp512) and decode (tg128), ROUNDS rounds of `dory bench`, each round running
# every binary on every format in turn, medians over the rounds. The machine drifts from
# minute to minute, so runs of what is compared are interleaved rather than back to back.
# Usage: bench/cpu_speed.sh [ROUNDS]      (writes bench/out/cpu_speed.jsonl)
#   BINARIES="old=path/to/dory new=target/release/dory"  compare builds (default: this one)
#   FORMATS="bf16 q8_0"                                  a subset of the formats
#   THREADS=2                                            --threads for every run
#   PEER=bench/out/llama/llama-bench                     llama.cpp in every round too, on
#                                                        bench/llama_peer.sh's models (of
#                                                        the benchmark config, pp512, tg128)
#   PEER_ARGS="--repack 0"                               more llama-bench options (its q8_0
#                                                        prompt with weights repacked crashed
#                                                        on the Xeon of 2026-12-04)
#   CONFIG=bench/wgpu-large.json PROMPT=16 GEN=32        another config's models (e.g. one
#                                                        whose weights outgrow the caches), the
#                                                        prompt's and the generation's tokens
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
if [ -z "${BINARIES:-}" ]; then
    cargo build --release -q -p dory-cli
    BINARIES="this=target/release/dory"
fi
formats=${FORMATS:-f32 f16 bf16 q8_0}
config=${CONFIG:-bench/configs-bench-cpu.json}
# The benchmark config's models keep their old names.
name=$([ "$config" = bench/configs-bench-cpu.json ] && echo bench-cpu || basename "$config" .json)
prompt=${PROMPT:-512}
gen=${GEN:-128}
threads=${THREADS:+--threads $THREADS}
# The newest binary writes the models (older ones cannot quantize).
maker=${BINARIES##*=}
mkdir -p bench/out
for f in $formats; do
    model=bench/out/$name-$f
    [ $f = q8_0 ] || [ -f $model/config.json ] || $maker init --config "$config" --seed 1 --dtype $f --out $model >/dev/null
done
if [[ " $formats " == *" q8_0 "* ]] && [ ! -f bench/out/$name-q8_0/config.json ]; then
    [ -f bench/out/$name-bf16/config.json ] || $maker init --config "$config" --seed 1 --dtype bf16 --out bench/out/$name-bf16 >/dev/null
    $maker quantize --model bench/out/$name-bf16 --out bench/out/$name-q8_0 >/dev/null
fi
out=bench/out/cpu_speed.jsonl
: > $out
# llama-bench on the peer model of a format, its medians and peak RSS in `dory bench`'s shape.
peer_run() {
    python3 - "$PEER" "$1" "${THREADS:-$(nproc)}" "${PEER_ARGS:-}" <<'PY'
import json, resource, statistics, subprocess, sys
peer, fmt, threads, more = sys.argv[1:]
model = f"{peer.rsplit('/', 1)[0]}/peer-{fmt}.gguf"
cmd = [peer, "-m", model, "-t", threads, "-p", "512", "-n", "128", "-r", "3", "-o", "jsonl", *more.split()]
lines = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()
tests = [json.loads(l) for l in lines if l.startswith("{")]
speed = lambda t: {"median": statistics.median(t["samples_ts"])}
pp = next(t for t in tests if t["n_prompt"] == 512)
tg = next(t for t in tests if t["n_gen"] == 128)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"backend": "cpu", "commit": pp["build_commit"][:8], "reps": 3,
                  "pp": speed(pp), "tg": speed(tg), "peak_rss_bytes": rss}))
PY
}
for r in $(seq "$rounds"); do
    for b in $BINARIES; do
        for f in $formats; do
            # An older binary may not read a format: its runs are left out, not fatal.
            # shellcheck disable=SC2086
            line=$(${b#*=} $threads bench --backend cpu --model bench/out/$name-$f --prompt $prompt --gen $gen --reps 3 \
                --exit none --json 2>/dev/null) || continue
            echo "{\"binary\": \"${b%%=*}\", \"format\": \"$f\", \"run\": $line}" >> $out
        done
    done
    for f in ${PEER:+$formats}; do
        # A run that fails (llama-bench crashed here once) is left out, as Dory's are.
        line=$(peer_run $f) || { echo "llama-bench failed on $f" >&2; continue; }
        echo "{\"binary\": \"llama.cpp\", \"format\": \"$f\", \"run\": $line}" >> $out
    done
done
python3 - "$out" "$prompt" "$gen" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
pp_name, tg_name = f"pp{sys.argv[2]} tok/s", f"tg{sys.argv[3]} tok/s"
print(f"{len(runs)} runs, {runs[0]['run']['reps']} reps each, {runs[0]['run']['backend']}")
print(f"{'binary':9} {'format':6} {'commit':8} {pp_name:>22} {tg_name:>22} {'peak RSS':>9} {'weights':>9}")
keys = list(dict.fromkeys((r["binary"], r["format"]) for r in runs))
for b, f in keys:
    rs = [r["run"] for r in runs if (r["binary"], r["format"]) == (b, f)]
    pp = [r["pp"]["median"] for r in rs]
    tg = [r["tg"]["median"] for r in rs]
    rss = max(r["peak_rss_bytes"] for r in rs) / 2**20
    held = rs[0].get("weight_bytes")
    held = f"{held / 2**20:.1f} MiB" if held else "n/a"
    d = lambda x: 1 if x < 100 else 0
    span = lambda xs: f"{statistics.median(xs):7.{d(min(xs))}f} ({min(xs):.{d(min(xs))}f}–{max(xs):.{d(min(xs))}f})"
    print(f"{b:9} {f:6} {rs[0]['commit']:8} {span(pp):>22} {span(tg):>22} {rss:6.0f} MiB {held:>9}")
PY
