//! The O(1) full layer's push and sealed combine (`o1.wgsl`), and its landmark buffer.

use std::sync::Arc;

use dory::nystrom::Landmarks;

use super::attend::{self, AttendBufs};
use crate::device::GpuDevice;
use crate::record::{Bind, Binds, Recorder, Store};
use smallvec::smallvec;

params! {
    /// o1.wgsl's parameters.
    pub struct Params {
        kv_heads: u32,
        d: u32,
        m: u32,
        slot: u32,    // push: the leaving position's slot
        chunks: u32,  // combine_sealed: chunks of the near set
        far: u32,     // combine_sealed: 1 when the far span is not empty
        rect: u32,
        scale: f32,   // λ
    }
}

/// The value o1.wgsl keeps for an empty far span's maximum: exp of it less any score is
/// 0, where −∞ could give NaN.
const EMPTY_MAX: f32 = -1.0e30;

/// A sealed layer's landmark state on the device: the buffer `upload` fills, and its
/// landmarks' count and shape.
pub struct Sealed {
    pub store: Arc<Store>,
    pub m: usize,
    pub rect: bool,
}

/// The landmark state in o1.wgsl's order.
pub fn upload(dev: &GpuDevice, lm: &Landmarks) -> dory::Result<Arc<Store>> {
    let far_max: Vec<f32> = lm.far_max.iter().map(|&x| if x.is_finite() { x } else { EMPTY_MAX }).collect();
    let all: Vec<f32> = [&lm.keys, &lm.queries, &lm.mu, &lm.shift, &far_max, &lm.far_mass, &lm.far_values]
        .into_iter()
        .flat_map(|v| v.iter().copied())
        .collect();
    Store::with_data(dev, bytemuck::cast_slice(&all), "landmarks")
}

fn params(c: &dory::Config, m: usize) -> Params {
    Params {
        kv_heads: c.kv_heads as u32,
        d: c.head_dim as u32,
        m: m as u32,
        slot: 0,
        chunks: 0,
        far: 0,
        rect: 0,
        scale: c.attn_scale,
    }
}

/// Absorbs the position in `slot` into the far statistics.
pub fn push(rec: &mut Recorder, c: &dory::Config, k: &Arc<Store>, v: &Arc<Store>, lm: &Sealed, slot: usize) {
    let kernel = rec.dev().kernels.push;
    let binds = [(0, Bind::Buf(k.clone())), (1, Bind::Buf(v.clone())), (2, Bind::Buf(lm.store.clone()))];
    let p = Params { slot: slot as u32, ..params(c, lm.m) };
    rec.dispatch(kernel, &binds, &p, [c.heads as u32, 1, 1]);
}

/// Joins the near set's chunks, which attend left in `b.part`, with the far part of `lm`
/// (when `far`), into `b.z`.
pub fn combine(rec: &mut Recorder, c: &dory::Config, b: &AttendBufs, lm: &Sealed, chunks: usize, far: bool) {
    let kernel = rec.dev().kernels.combine_sealed;
    let mut binds: Binds = smallvec![(2, Bind::Buf(lm.store.clone())), (7, Bind::Buf(b.prep.q.clone()))];
    binds.extend(attend::join_binds(b));
    let p = Params { chunks: chunks as u32, far: u32::from(far), rect: u32::from(lm.rect), ..params(c, lm.m) };
    rec.dispatch(kernel, &binds, &p, [c.heads as u32, 1, 1]);
}
