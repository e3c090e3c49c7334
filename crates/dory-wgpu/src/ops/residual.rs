//! The nGPT residual (`residual.wgsl`), alone or cutting the new h into the tensor-core
//! GEMM's parts.

use std::sync::Arc;

use super::row_batches;
use crate::kernels::KernelId;
use crate::record::{Bind, Recorder, Store};

params! {
    /// residual.wgsl's parameters.
    pub struct Params {
        d: u32,
        eps: f32,
        row0: u32,    // first row of this dispatch (grids hold at most 65535 rows)
        k16: u32,     // residual_split: width of a row of the parts (d rounded up to 16)
        lo: u32,      // residual_split: where the lo part starts in xa (halves)
    }
}

/// Where `record_split` puts the parts (matmul.rs lays them out): the kernel, the parts and
/// rows' 1/s, their width and where the lo parts start (halves).
pub struct Parts<'a> {
    pub kernel: KernelId,
    pub parts: &'a Arc<Store>,
    pub inv: &'a Arc<Store>,
    pub k16: usize,
    pub lo: u32,
}

pub fn record(rec: &mut Recorder, h: &Arc<Store>, o: &Arc<Store>, alpha: &Arc<Store>, d: usize, eps: f32, rows: usize) {
    let kernel = rec.dev().kernels.residual;
    let binds = [(0, Bind::Buf(h.clone())), (1, Bind::Buf(o.clone())), (2, Bind::Buf(alpha.clone()))];
    row_batches(rows, |row0, n| {
        rec.dispatch(kernel, &binds, &Params { d: d as u32, eps, row0, k16: 0, lo: 0 }, [n, 1, 1]);
    });
}

/// The residual of `rows` rows of h in place, each row also cut into `to`'s parts.
pub fn record_split(
    rec: &mut Recorder,
    (h, o, alpha): (&Arc<Store>, &Arc<Store>, &Arc<Store>),
    d: usize,
    eps: f32,
    rows: usize,
    to: Parts,
) {
    let binds = [
        (0, Bind::Buf(h.clone())),
        (1, Bind::Buf(o.clone())),
        (2, Bind::Buf(alpha.clone())),
        (3, Bind::Buf(to.parts.clone())),
        (4, Bind::Buf(to.inv.clone())),
    ];
    row_batches(rows, |row0, n| {
        let p = Params { d: d as u32, eps, row0, k16: to.k16 as u32, lo: to.lo };
        rec.dispatch(to.kernel, &binds, &p, [n, 1, 1]);
    });
}
