//! The nGPT residual (`residual.wgsl`).

use std::sync::Arc;

use bytemuck::{Pod, Zeroable};

use super::row_batches;
use crate::record::{Bind, Recorder, Store};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    d: u32,
    eps: f32,
    row0: u32,
}

pub fn record(rec: &mut Recorder, h: &Arc<Store>, o: &Arc<Store>, alpha: &Arc<Store>, d: usize, eps: f32, rows: usize) {
    let kernel = rec.dev().kernels.residual;
    let binds = [(0, Bind::Buf(h.clone())), (1, Bind::Buf(o.clone())), (2, Bind::Buf(alpha.clone()))];
    row_batches(rows, |row0, n| {
        rec.dispatch(kernel, &binds, &Params { d: d as u32, eps, row0 }, [n, 1, 1]);
    });
}
