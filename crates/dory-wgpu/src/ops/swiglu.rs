//! SwiGLU (`swiglu.wgsl`).

use std::sync::Arc;

use super::row_batches;
use crate::model::LayerWeights;
use crate::record::{groups_for, Bind, Recorder, Store};

params! {
    /// swiglu.wgsl's parameters.
    pub struct Params {
        f: u32,
        rows: u32,
        row0: u32,    // first row of this dispatch (grids hold at most 65535 rows)
    }
}

pub fn record(rec: &mut Recorder, l: &LayerWeights, m: &Arc<Store>, gu: &Arc<Store>, f: usize, rows: usize) {
    let kernel = rec.dev().kernels.swiglu;
    let binds = [(0, Bind::Buf(gu.clone())), (1, Bind::Buf(l.mlp_scales.clone())), (2, Bind::Buf(m.clone()))];
    row_batches(rows, |row0, n| {
        let p = Params { f: f as u32, rows: rows as u32, row0 };
        rec.dispatch(kernel, &binds, &p, [groups_for(f, 256), n, 1]);
    });
}
