//! x ← embed[ids] (`embed.wgsl`).

use super::row_batches;
use crate::kernels::dtype_index;
use crate::model::Matrix;
use crate::record::{groups_for, Bind, Recorder, Store};

params! {
    /// embed.wgsl's parameters.
    pub struct Params {
        d: u32,         // hidden
        dp: u32,        // stored row width (d padded to a multiple of 8)
        rows: u32,
        ids_at: u32,    // the ids' offset in `up`
        id0: u32,
        part_rows: u32,
        row0: u32,    // first row of this dispatch (grids hold at most 65535 rows)
    }
}

/// Returns where the ids were uploaded (`Recorder::token_at`).
pub fn record(rec: &mut Recorder, table: &Matrix, x: &std::sync::Arc<Store>, ids: &[u32]) -> u32 {
    let kernel = rec.dev().kernels.embed[dtype_index(table.dtype)];
    let ids_at = rec.upload(ids);
    for part in &table.parts {
        row_batches(ids.len(), |row0, rows| {
            let p = Params {
                d: table.k as u32,
                dp: 8 * table.g8 as u32,
                rows: ids.len() as u32,
                ids_at,
                id0: part.row0 as u32,
                part_rows: part.rows as u32,
                row0,
            };
            let binds = [(0, Bind::Buf(part.store.clone())), (1, Bind::Upload), (2, Bind::Buf(x.clone()))];
            rec.dispatch(kernel, &binds, &p, [groups_for(table.k, 256), rows, 1]);
        });
    }
    ids_at
}
