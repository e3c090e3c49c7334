//! Rotation, unit norm, the query scale and the cache write (`prep.wgsl`).

use std::sync::Arc;

use dory::cache::Rows;

use super::attend::{Prep, Slots};
use super::row_batches;
use crate::record::{Bind, Recorder, Store};

params! {
    /// prep.wgsl's parameters.
    pub struct Params {
        rows: u32,
        pos0: u32,
        heads: u32,
        kv_heads: u32,
        d: u32,
        width: u32,   // a row of qkvg: H·d + K·d + K·d + H·d
        sinks: u32,   // the cache's slots: p < sinks → p; else sinks + (p mod cap), or p when cap = 0
        cap: u32,
        rope_at: u32, // the step's RoPE table in `up` ([rows, d]: d/2 cosines, d/2 sines)
        rotate: u32,  // 0: no rotation (a full layer with rope_full = false)
        sample: u32,  // 0: no query store
        eps: f32,
        row0: u32,    // first row of this dispatch (grids hold at most 65535 rows)
    }
}

/// The buffers prep reads and writes.
#[derive(Clone, Copy)]
pub struct PrepBufs<'a> {
    pub qkvg: &'a Arc<Store>,
    pub q_scale: &'a Arc<Store>,
    pub q: &'a Arc<Store>,
    pub k: &'a Arc<Store>,
    pub v: &'a Arc<Store>,
    /// The query store (a stand-in buffer when `sample` is 0).
    pub qs: &'a Arc<Store>,
    /// Where the queries' f16 parts go for attend_coop.wgsl (`parts_len`), when it runs.
    pub parts: Option<&'a Arc<Store>>,
}

/// Bytes of the queries' parts and their scales for `rows` rows (attend_coop.wgsl's
/// layout: rows rounded up to its blocks of 16).
pub fn parts_len(c: &dory::Config, rows: usize) -> usize {
    let queries = c.heads * rows.next_multiple_of(16);
    4 * queries * (c.head_dim + 1)
}

/// Prepares the rows `at` (attend does it itself for a single row).
pub fn record(rec: &mut Recorder, c: &dory::Config, b: PrepBufs, slots: Slots, at: Rows, prep: Prep) {
    let Prep { rope_at, sample } = prep;
    let kernels = &rec.dev().kernels;
    let (kernel, parts) = match (b.parts, kernels.attend_coop) {
        (Some(parts), Some(k)) => (k.prep, parts.clone()),
        _ => (kernels.prep, rec.none().clone()),
    };
    let binds = [
        (0, Bind::Buf(b.qkvg.clone())),
        (1, Bind::Upload),
        (2, Bind::Buf(b.q_scale.clone())),
        (3, Bind::Buf(b.q.clone())),
        (4, Bind::Buf(b.k.clone())),
        (5, Bind::Buf(b.v.clone())),
        (6, Bind::Buf(b.qs.clone())),
        (7, Bind::Buf(parts)),
    ];
    row_batches(at.rows, |row0, n| {
        let p = Params {
            rows: at.rows as u32,
            pos0: at.pos0 as u32,
            heads: c.heads as u32,
            kv_heads: c.kv_heads as u32,
            d: c.head_dim as u32,
            width: c.qkvg_width() as u32,
            sinks: slots.sinks,
            cap: slots.cap,
            rope_at: rope_at.unwrap_or(0),
            rotate: u32::from(rope_at.is_some()),
            sample: sample as u32,
            eps: c.eps,
            row0,
        };
        rec.dispatch(kernel, &binds, &p, [(c.heads + c.kv_heads) as u32, n, 1]);
    });
}
