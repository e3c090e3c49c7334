#!/usr/bin/env bash
# The O(1) attention's benchmarks on the CPU, on the shipped model:
#  quality — `dory ppl --decode` of held-out text at 2k, 4k and 16k tokens, exact vs O(1)
#            with landmarks 8/16/32 and rect on/off;
#  scale   — decode tokens/s, cache bytes and memory while generating 64 tokens after a
#            context of 1k, 4k and 16k, exact vs O(1).
# Usage: bench/o1_cpu.sh [quality|scale|all]   (writes bench/out/o1_quality.txt and
# bench/out/o1_scale.jsonl). Quality does not depend on the machine's load; scale does:
# run it on a quiet machine. LANDMARKS (default "8 16 32"), RECT ("true false"), LENGTHS
# ("2048 4096 16384") and THREADS (default: every core) narrow the quality sweep; each
# line of the quality file ends with the run's wall time.
set -euo pipefail
what=${1:-all}
cd "$(dirname "$0")/.."
cargo build --release -q -p dory-cli
dory=target/release/dory
mkdir -p bench/out
text=bench/out/heldout.txt
[ -f $text ] || python bench/heldout.py $text
q=bench/out/o1_quality.txt
threads=${THREADS:+--threads $THREADS}
timed() {  # the command's output line, then its wall time
    local t0=$SECONDS out
    out=$("$@")
    echo "$out | $((SECONDS - t0)) s"
}
[ "$what" = scale ] || : > $q
[ "$what" = scale ] || for n in ${LENGTHS:-2048 4096 16384}; do
    echo "== $n tokens, exact" | tee -a $q
    timed $dory ppl $text --backend cpu $threads --exit none --decode --tokens $n --attention exact | tee -a $q
    for m in ${LANDMARKS:-8 16 32}; do
        for rect in ${RECT:-true false}; do
            echo "== $n tokens, o1 landmarks=$m rect=$rect" | tee -a $q
            timed $dory ppl $text --backend cpu $threads --exit none --decode --tokens $n --attention o1 \
                --o1 landmarks=$m,rect=$rect | tee -a $q
        done
    done
done
s=bench/out/o1_scale.jsonl
[ "$what" = quality ] || : > $s
[ "$what" = quality ] || for depth in 1024 4096 16384; do
    for mode in exact o1; do
        $dory bench --backend cpu --depth $depth --prompt 1 --gen 64 --reps 3 --attention $mode --exit none --json | tee -a $s
    done
done
