#!/usr/bin/env bash
# llama.cpp on this machine, as the CPU benchmark's peer: builds `llama-bench` from the
# llama.cpp sources that PyPI's llama-cpp-python 0.3.36 bundles (checked by its sha256;
# native instruction set, OpenMP), and writes the peer model (bench/llama_peer.py) in every
# format. Then `PEER=bench/out/llama/llama-bench bench/cpu_speed.sh` runs it in every round
# beside Dory. Needs a C/C++ compiler; cmake, ninja, numpy, pyyaml come from PyPI into a venv.
# Takes about 10 minutes on 2 cores. Usage: bench/llama_peer.sh
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.3.36
sha=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
url=https://files.pythonhosted.org/packages/ec/e9/e7de2b0463ea3ffbf0ede6cb21b58c1258a8f6521aae45ca773a59fe7cf3/llama_cpp_python-$version.tar.gz
dir=bench/out/llama
mkdir -p $dir
if [ ! -x $dir/venv/bin/cmake ] || ! $dir/venv/bin/python -c "import yaml" 2>/dev/null; then
    python3 -m venv $dir/venv
    $dir/venv/bin/pip install -q cmake==4.4.5 ninja==1.13.2 numpy==2.4.6 pyyaml==6.0.4
fi
tarball=$dir/llama_cpp_python-$version.tar.gz
[ -f "$tarball" ] || curl -sSfL -o "$tarball" "$url"
echo "$sha  $tarball" | sha256sum -c --quiet
src=$dir/llama_cpp_python-$version/vendor/llama.cpp
[ -d $src ] || tar xzf "$tarball" -C $dir
if [ ! -x $dir/llama-bench ]; then
    PATH=$PWD/$dir/venv/bin:$PATH cmake -S $src -B $src/build -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_SERVER=OFF -DBUILD_SHARED_LIBS=OFF >/dev/null
    PATH=$PWD/$dir/venv/bin:$PATH cmake --build $src/build --target llama-bench
    cp $src/build/bin/llama-bench $dir/llama-bench
fi
for f in f32 f16 bf16 q8_0; do
    [ -f $dir/peer-$f.gguf ] || PYTHONPATH=$src/gguf-py $dir/venv/bin/python bench/llama_peer.py $f $dir/peer-$f.gguf
done
$dir/llama-bench --version 2>&1 | head -2
