//! A projection's weights pulled into the L2 cache while a short dispatch runs
//! (`prefetch.wgsl`). A decoded row's projections stream their weights from the device's
//! memory, each after a barrier, while the residuals and the attention between them wait
//! on latency with the memory idle. The prefetch is recorded right after such a dispatch
//! and binds only the weights (read-only, as every projection binds them) and a sink no
//! other dispatch of its command buffer binds, so no barrier separates the two and they
//! run side by side; the barrier before the projection waits for both.

use std::sync::Arc;

use crate::record::{groups_for, Bind, Recorder, Store};

params! {
    /// prefetch.wgsl's parameters: two ranges of 32-byte sectors, and the value the loads'
    /// xor is stored at.
    pub struct Params {
        at0: u32,
        len0: u32,
        at1: u32,
        len1: u32,
        never: u32,
    }
}

/// Bytes of a sector, what the L2 fetches at a time.
const SECTOR: u64 = 32;

/// The most workgroups a prefetch takes (two an SM of the H200's 132 keep enough loads in
/// flight to fill its memory's bandwidth).
const MOST_GROUPS: u32 = 264;

/// Where the last dispatch recorded waits on latency (a residual, an edge, the attention or
/// its join), the first `Options::prefetch` bytes of `w` (a projection's part about to be
/// recorded) pulled into the L2 beside it; with `halves`, as much of each half (gate|up,
/// whose workgroups read a gate row and its up row together). Nothing where the option is
/// off or the dispatch before streams memory itself.
pub fn before(rec: &mut Recorder, w: &Arc<Store>, halves: bool) {
    let budget = rec.dev().kernels.options.prefetch as u64;
    if budget == 0 || !rec.last_waits_on_latency() {
        return;
    }
    let ranges = if halves {
        let half = w.bytes / 2 / SECTOR;
        let len = half.min(budget / 2 / SECTOR);
        [(0, len), (half, len)]
    } else {
        [(0, (w.bytes / SECTOR).min(budget / SECTOR)), (0, 0)]
    };
    let total = ranges[0].1 + ranges[1].1;
    if total == 0 {
        return;
    }
    let p = Params {
        at0: ranges[0].0 as u32,
        len0: ranges[0].1 as u32,
        at1: ranges[1].0 as u32,
        len1: ranges[1].1 as u32,
        never: 0x9e37_79b9,
    };
    let groups = groups_for(total as usize, 8 * 256).min(MOST_GROUPS);
    let sink = rec.sink();
    let kernel = rec.dev().kernels.prefetch;
    rec.dispatch(kernel, &[(0, Bind::Buf(w.clone())), (1, Bind::Buf(sink))], &p, [groups, 1, 1]);
}
