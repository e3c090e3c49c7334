#!/usr/bin/env bash
# 2026-12-05, sixth session, fifth call: where the engine's host time goes, by library, if
# the machine has perf (it has none: this machine's Debian perf, with every library it links,
# ld.so and libc among them, carried as .wgpu-carry/perf.tgz): the engine's binary (wgpu and the engine, stripped) against the
# NVIDIA driver's libraries, in dory-tiny's decode under its rule. Calls 1-3's probe put a
# dispatch at 0.7-1.75 µs of finishing; the engine's cost ~3.8. The engine profiled is
# .wgpu-carry/dory-syms: this session's build with line tables (its kernels are c5cc0ea's;
# only CPU adapters differ), its debug sections stripped so that it keeps its symbols.
# Call 4's profile was mostly the driver compiling the kernels at start (libnvidia-gpucomp
# 53 %, libnvidia-glvkspirv 28 %): here 1,000 tokens a repetition, recorded from 1 s on (a first try from 7 s on found the run over: the driver had cached the kernels).
# carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
tar -C /tmp -xzf .wgpu-carry/perf.tgz
perf() { /tmp/perf/ld-linux-x86-64.so.2 --library-path /tmp/perf /tmp/perf/perf "$@"; }
cat /proc/sys/kernel/perf_event_paranoid
perf --version
perf record -D 1000 -F 4999 -o $o/a/perf.data -- .wgpu-carry/dory-syms bench --backend wgpu --model models/dory-tiny --reps 5 \
    --prompt 16 --gen 1000 --attention exact --exit kl:0.05 2>&1 | grep -v XDG_RUNTIME | tail -4
perf report -i $o/a/perf.data --sort comm,dso --stdio 2>/dev/null | grep -v "^#" | grep -v "^$" | head -30 | tee $o/a/by_dso.txt
perf report -i $o/a/perf.data --sort dso,sym --stdio 2>/dev/null | grep -v "^#" | grep -v "^$" | head -60 > $o/a/by_sym.txt
rm -f $o/a/perf.data
