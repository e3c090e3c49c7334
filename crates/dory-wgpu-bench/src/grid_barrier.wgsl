// A barrier across a dispatch's GROUPS workgroups (all resident), in memory: one invocation
// of each adds to the counter `count[0]` and polls it until every workgroup has, between two
// storage barriers; every invocation of every workgroup must call it. A wait gives up after
// 2²² polls, so that workgroups that are not all resident make a probe slow (and wrong),
// not hung. Appended to the probes that use it (lib.rs), which declare GROUPS and `count`.

fn grid_barrier(lid: u32) {
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
