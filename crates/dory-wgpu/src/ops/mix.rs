//! The loop's edges (`mix.wgsl`), after a pass's last residual or alone.

use std::sync::Arc;

use dory::backend::Mix;

use super::row_batches;
use crate::record::{Bind, Binds, Recorder, Store};
use smallvec::smallvec;

params! {
    /// mix.wgsl's parameters.
    pub struct Params {
        mode: u32,
        d: u32,
        eps: f32,
        row0: u32,    // first row of this dispatch (grids hold at most 65535 rows)
    }
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

/// The edge `mix` over `rows` rows of (h, x, s), after the residual of h with (o, alpha)
/// where `residual` gives them (one dispatch either way).
pub fn record(
    rec: &mut Recorder,
    mix: Mix,
    [h, x, s]: [&Arc<Store>; 3],
    residual: Option<(&Arc<Store>, &Arc<Store>)>,
    (d, eps): (usize, f32),
    rows: usize,
) {
    let kernels = &rec.dev().kernels;
    let mut binds: Binds = smallvec![(0, Bind::Buf(h.clone())), (1, Bind::Buf(x.clone())), (2, Bind::Buf(s.clone()))];
    let kernel = match residual {
        Some((o, alpha)) => {
            binds.extend([(3, Bind::Buf(o.clone())), (4, Bind::Buf(alpha.clone()))]);
            kernels.residual_mix
        }
        None => kernels.mix,
    };
    row_batches(rows, |row0, n| {
        let p = Params { mode: mode(mix), d: d as u32, eps, row0 };
        rec.dispatch(kernel, &binds, &p, [n, 1, 1]);
    });
}
