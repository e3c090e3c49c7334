// What a barrier across a dispatch's workgroups costs when they meet through a counter in
// memory, as a kernel that ran a whole decoding step (or a layer-pass) in one dispatch
// would have its workgroups meet between its stages instead of between dispatches: GROUPS
// workgroups (few enough to be resident at once), ITERS rounds of a device-scope barrier,
// one invocation of each adding to the counter and waiting until every workgroup has.
// A wait gives up after 2²² polls, so that workgroups that are not all resident make the
// probe slow, not hung.

override ITERS: u32;
override GROUPS: u32;

@group(0) @binding(0) var<storage, read_write> count: array<atomic<u32>>;

@compute @workgroup_size(256)
fn peak(@builtin(local_invocation_index) lid: u32) {
    for (var i = 0u; i < ITERS; i = i + 1u) {
        storageBarrier();
        if (lid == 0u) {
            // The counter only grows (across rounds and runs): this round ends at the next
            // multiple of GROUPS.
            let end = (atomicAdd(&count[0], 1u) / GROUPS + 1u) * GROUPS;
            for (var polls = 0u; polls < (1u << 22u); polls = polls + 1u) {
                if (atomicLoad(&count[0]) >= end) {
                    break;
                }
            }
        }
        storageBarrier();
    }
}
