//! Attention over the cache (`attend.wgsl`), split over chunks of keys when one row's
//! keys would leave the GPU idle, then joined (`combine.wgsl`).

use std::sync::Arc;

use bytemuck::{Pod, Zeroable};
use dory::cache::{Keys, Rows};

use super::row_batches;
use crate::record::{Bind, Recorder, Store};

/// Where positions sit in a cache and which ones a row sees, as attend.wgsl reads them.
#[derive(Clone, Copy, Debug)]
pub struct Slots {
    pub sinks: u32,
    pub cap: u32,
    pub window: u32,
}

impl Slots {
    pub fn of(keys: &Keys) -> Slots {
        match keys {
            Keys::Ring(r) => Slots { sinks: 0, cap: r.cap as u32, window: r.window as u32 },
            Keys::Full { .. } => Slots { sinks: 0, cap: 0, window: 0 },
            Keys::Sealed(n) => Slots { sinks: n.sinks as u32, cap: n.window as u32, window: n.window as u32 },
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    rows: u32,
    pos0: u32,
    kv_heads: u32,
    d: u32,
    width: u32,
    sinks: u32,
    cap: u32,
    window: u32,
    per: u32,
    chunks: u32,
    direct: u32,
    row0: u32,
    scale: f32,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct CombineParams {
    kv_heads: u32,
    d: u32,
    width: u32,
    chunks: u32,
    row0: u32,
}

/// How a step's keys are cut: `per` positions to a chunk, `chunks` chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    pub per: usize,
    pub chunks: usize,
}

/// Workgroups that keep a large GPU busy; fewer chunks when rows already give them.
const TARGET_GROUPS: usize = 512;
/// Fewer keys per chunk than a tile of the kernel would waste it.
const MIN_PER: usize = 64;

/// The chunks of a step whose rows see at most `most` positions.
pub fn split(most: usize, rows: usize, kv_heads: usize) -> Split {
    let want = TARGET_GROUPS.div_ceil(rows * kv_heads).max(1);
    let chunks = want.min(most.div_ceil(MIN_PER)).max(1);
    let per = most.div_ceil(chunks);
    Split { per, chunks: most.div_ceil(per) }
}

/// Floats of `part` a split needs.
pub fn part_len(split: Split, rows: usize, kv_heads: usize, d: usize) -> usize {
    4 * rows * kv_heads * split.chunks * (2 + d)
}

/// The buffers attend reads and writes.
pub struct AttendBufs<'a> {
    pub q: &'a Arc<Store>,
    pub k: &'a Arc<Store>,
    pub v: &'a Arc<Store>,
    pub qkvg: &'a Arc<Store>,
    pub gate_scale: &'a Arc<Store>,
    pub z: &'a Arc<Store>,
    pub part: &'a Arc<Store>,
}

/// Attention of the rows `at`; with `direct` false (a sealed layer) every split leaves
/// partials for the caller's combine.
#[allow(clippy::too_many_arguments)]
pub fn record(rec: &mut Recorder, c: &dory::Config, b: &AttendBufs, slots: Slots, at: Rows, split: Split, join: bool) {
    let kernels = &rec.dev().kernels;
    let (attend, combine) = (kernels.attend, kernels.combine);
    let direct = join && split.chunks == 1;
    let binds = [
        (0, Bind::Buf(b.q.clone())),
        (1, Bind::Buf(b.k.clone())),
        (2, Bind::Buf(b.v.clone())),
        (3, Bind::Buf(b.qkvg.clone())),
        (4, Bind::Buf(b.gate_scale.clone())),
        (5, Bind::Buf(b.z.clone())),
        (6, Bind::Buf(b.part.clone())),
    ];
    let kv = c.kv_heads;
    row_batches(at.rows, |row0, n| {
        let p = Params {
            rows: at.rows as u32,
            pos0: at.pos0 as u32,
            kv_heads: kv as u32,
            d: c.head_dim as u32,
            width: c.qkvg_width() as u32,
            sinks: slots.sinks,
            cap: slots.cap,
            window: slots.window,
            per: split.per as u32,
            chunks: split.chunks as u32,
            direct: u32::from(direct),
            row0,
            scale: c.attn_scale,
        };
        rec.dispatch(attend, &binds, &p, [split.chunks as u32, kv as u32, n]);
    });
    if direct || !join {
        return;
    }
    let binds = [
        (0, Bind::Buf(b.part.clone())),
        (1, Bind::Buf(b.qkvg.clone())),
        (2, Bind::Buf(b.gate_scale.clone())),
        (3, Bind::Buf(b.z.clone())),
    ];
    row_batches(at.rows, |row0, n| {
        let p = CombineParams {
            kv_heads: kv as u32,
            d: c.head_dim as u32,
            width: c.qkvg_width() as u32,
            chunks: split.chunks as u32,
            row0,
        };
        rec.dispatch(combine, &binds, &p, [kv as u32, n, 1]);
    });
}
