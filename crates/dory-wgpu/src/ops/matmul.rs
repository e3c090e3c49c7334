//! Projections (`gemv.wgsl` for one to four rows, `gemm.wgsl` for more): out ← x · Wᵀ,
//! optionally times a per-column scale (the head), or with SwiGLU formed from x on the way
//! in (the down projection of a few rows). One dispatch per part of W.

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
    let input = match scale {
        Some(s) => Input::Scaled(s),
        None => Input::Plain,
    };
    project(rec, w, x, xr0, out, rows, input);
}

/// out[r, ..n] ← SwiGLU(gu[r]) · Wᵀ for r < rows ≤ GEMV_ROWS, gu = [rows, k | k] and
/// `scales` = [gate_scale | up_scale]: the down projection without SwiGLU's own pass.
pub fn record_swiglu(
    rec: &mut Recorder,
    w: &Matrix,
    gu: &Arc<Store>,
    out: &Arc<Store>,
    rows: usize,
    scales: &Arc<Store>,
) {
    debug_assert!(rows <= GEMV_ROWS, "the fused SwiGLU is a matrix-vector kernel");
    project(rec, w, gu, 0, out, rows, Input::Swiglu(scales));
}

/// What binding 3 holds and which kernels read it.
enum Input<'a> {
    Plain,
    /// A scale per output column.
    Scaled(&'a Arc<Store>),
    /// x is gu; the gate and up scales, for SwiGLU on the way in (matrix-vector only).
    Swiglu(&'a Arc<Store>),
}

fn project(rec: &mut Recorder, w: &Matrix, x: &Arc<Store>, xr0: usize, out: &Arc<Store>, rows: usize, input: Input) {
    let dev = rec.dev().clone();
    let kernels = &dev.kernels;
    let dt = dtype_index(w.dtype);
    // Every matrix-vector variant binds 3 (the plain one to x, which it never reads); the
    // plain matrix-matrix kernel has no binding 3.
    let (gemm, gemv, third) = match input {
        Input::Plain => (Some(kernels.gemm[dt]), &kernels.gemv[dt], x),
        Input::Scaled(s) => (Some(kernels.gemm_scaled[dt]), &kernels.gemv_scaled[dt], s),
        Input::Swiglu(s) => (None, &kernels.gemv_swiglu[dt], s),
    };
    for part in &w.parts {
        let mut binds = vec![
            (0, Bind::Buf(part.store.clone())),
            (1, Bind::Buf(x.clone())),
            (2, Bind::Buf(out.clone())),
            (3, Bind::Buf(third.clone())),
        ];
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
            let kernel = gemm.expect("record_swiglu is for at most GEMV_ROWS rows");
            if matches!(input, Input::Plain) {
                binds.truncate(3);
            }
            rec.dispatch(kernel, &binds, &p(0, rows), [groups_for(part.rows, 64), groups_for(rows, 64), 1]);
            continue;
        }
        // Four rows at a time; a single row has its own variant.
        let mut r = 0;
        while r < rows {
            let n = (rows - r).min(4);
            rec.dispatch(gemv[usize::from(n > 1)], &binds, &p(r, n), [groups_for(part.rows, 8), 1, 1]);
            r += n;
        }
    }
}
