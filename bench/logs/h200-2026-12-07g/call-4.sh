#!/usr/bin/env bash
# Twenty-fourth session, call 4: dory-tiny's decode under its exit rule (tg128 after pp512,
# kl:0.05, 3 repetitions) with the last stop's binary (f2cbae0, dory-base) and this stop's,
# two rounds interleaved, since call 1's figure (2,250.6) fell below the twenty-first
# session's (2,668.1) though no decode kernel changed; and with all passes.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
base=.wgpu-carry/dory-base
for round in 1 2; do
    bench_run base-kl $base models/dory-tiny 0 exact kl:0.05 512 128 3 120
    bench_run new-kl $dory models/dory-tiny 0 exact kl:0.05 512 128 3 120
done
bench_run base-all $base models/dory-tiny 0 exact none 512 128 3 120
bench_run new-all $dory models/dory-tiny 0 exact none 512 128 3 120
