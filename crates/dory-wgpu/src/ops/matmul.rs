//! Projections (`gemv.wgsl` for one to four rows, `gemm.wgsl` for more): out ← x · Wᵀ,
//! optionally times a per-column scale (the head). One dispatch per part of W.

use std::sync::Arc;

use bytemuck::{Pod, Zeroable};

use crate::kernels::dtype_index;
use crate::model::Matrix;
use crate::record::{groups_for, Bind, Recorder, Store};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    k: u32,
    g8: u32,
    n: u32,
    row0: u32,
    rows_w: u32,
    xr0: u32,
    yr0: u32,
    rows: u32,
}

/// Rows up to which the matrix-vector kernel runs (reading W once per four rows beats a
/// 64-row tile that is mostly empty).
pub const GEMV_ROWS: usize = 8;

/// out[r, ..n] ← x[xr0 + r, ..k] · Wᵀ (⊙ scale), r < rows.
pub fn record(
    rec: &mut Recorder,
    w: &Matrix,
    x: &Arc<Store>,
    xr0: usize,
    out: &Arc<Store>,
    rows: usize,
    scale: Option<&Arc<Store>>,
) {
    let dev = rec.dev().clone();
    let kernels = &dev.kernels;
    let dt = dtype_index(w.dtype);
    for part in &w.parts {
        let mut binds =
            vec![(0, Bind::Buf(part.store.clone())), (1, Bind::Buf(x.clone())), (2, Bind::Buf(out.clone()))];
        if let Some(s) = scale {
            binds.push((3, Bind::Buf(s.clone())));
        }
        let p = |r: usize, n: usize| Params {
            k: w.k as u32,
            g8: w.g8 as u32,
            n: w.n as u32,
            row0: part.row0 as u32,
            rows_w: part.rows as u32,
            xr0: (xr0 + r) as u32,
            yr0: r as u32,
            rows: n as u32,
        };
        if rows > GEMV_ROWS {
            let kernel = if scale.is_some() { kernels.gemm_scaled[dt] } else { kernels.gemm[dt] };
            rec.dispatch(kernel, &binds, &p(0, rows), [groups_for(part.rows, 64), groups_for(rows, 64), 1]);
            continue;
        }
        // Four rows at a time; a single row has its own variant.
        let mut r = 0;
        while r < rows {
            let n = (rows - r).min(4);
            let variant = usize::from(n > 1);
            let kernel = if scale.is_some() { kernels.gemv_scaled[dt][variant] } else { kernels.gemv[dt][variant] };
            rec.dispatch(kernel, &binds, &p(r, n), [groups_for(part.rows, 8), 1, 1]);
            r += n;
        }
    }
}
