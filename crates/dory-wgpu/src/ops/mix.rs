//! The loop's edges (`mix.wgsl`).

use std::sync::Arc;

use bytemuck::{Pod, Zeroable};
use dory::backend::Mix;

use super::row_batches;
use crate::record::{Bind, Recorder, Store};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    mode: u32,
    d: u32,
    eps: f32,
    row0: u32,
}

/// The seed's mode number of each edge.
fn mode(mix: Mix) -> u32 {
    match mix {
        Mix::Enter => 0,
        Mix::Between => 1,
        Mix::Leave => 2,
        Mix::ReadOut => 3,
        Mix::Resume => 4,
    }
}

#[allow(clippy::too_many_arguments)]
pub fn record(
    rec: &mut Recorder,
    mix: Mix,
    h: &Arc<Store>,
    x: &Arc<Store>,
    s: &Arc<Store>,
    d: usize,
    eps: f32,
    rows: usize,
) {
    let kernel = rec.dev().kernels.mix;
    let binds = [(0, Bind::Buf(h.clone())), (1, Bind::Buf(x.clone())), (2, Bind::Buf(s.clone()))];
    row_batches(rows, |row0, n| {
        let p = Params { mode: mode(mix), d: d as u32, eps, row0 };
        rec.dispatch(kernel, &binds, &p, [n, 1, 1]);
    });
}
