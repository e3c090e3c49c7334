// What a barrier across a dispatch's workgroups costs when they meet through a counter in
// memory (grid_barrier.wgsl), as a kernel that ran a whole decoding step (or a layer-pass)
// in one dispatch would have its workgroups meet between its stages instead of between
// dispatches: GROUPS workgroups (few enough to be resident at once), ITERS rounds.

override ITERS: u32;
override GROUPS: u32;

@group(0) @binding(0) var<storage, read_write> count: array<atomic<u32>>;

@compute @workgroup_size(256)
fn peak(@builtin(local_invocation_index) lid: u32) {
    for (var i = 0u; i < ITERS; i = i + 1u) {
        grid_barrier(lid);
    }
}
