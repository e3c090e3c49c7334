// What the subgroup reductions assume, checked on the device: every invocation reports
// the lanes of its subgroup and the first local index among them. The reductions hold
// when subgroups are runs of consecutive local indices of one power-of-two length.

@group(0) @binding(0) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(256)
fn probe(@builtin(local_invocation_index) lid: u32) {
    out[2u * lid] = subgroupAdd(1u);
    out[2u * lid + 1u] = subgroupBroadcastFirst(lid);
}
