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
