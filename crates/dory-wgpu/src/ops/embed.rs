//! x ← embed[ids] (`embed.wgsl`), the ids from the host or a greedy decoder's own token,
//! and for one row the loop's entry with it.

use std::sync::Arc;

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
        ids_at: u32,    // the ids' offset in `up` (greedy: the logits', and where its token goes)
        id0: u32,
        part_rows: u32,
        row0: u32,    // first row of this dispatch (grids hold at most 65535 rows)
        eps: f32,     // enter: N's
    }
}

/// Where `enter` takes its row's token.
pub enum Token<'a> {
    /// Word `at` of the uploads (an upload, or a held step's token, written at release).
    Uploaded { at: u32 },
    /// argmax(logits[..n]), left at logits[n] as a u32.
    Greedy { logits: &'a Arc<Store>, n: usize },
}

/// Whether `enter` runs on `table` (`Options::fuse_enter`): not where it is cut into parts,
/// whose row and its norm would span dispatches.
pub fn enters(rec: &Recorder, table: &Matrix) -> bool {
    rec.dev().kernels.options.fuse_enter && table.parts.len() == 1
}

/// x ← embed[token]; s ← x; h ← N(s + x) for one row, in one dispatch, where `enters`.
pub fn enter(rec: &mut Recorder, table: &Matrix, [h, x, s]: [&Arc<Store>; 3], token: Token, eps: f32) {
    let part = &table.parts[0];
    let dt = dtype_index(table.dtype);
    let kernels = &rec.dev().kernels;
    // The ids are read as `up` (binding 1), the logits as `logits` (3).
    let (kernel, src, ids_at) = match token {
        Token::Uploaded { at } => (kernels.enter[dt], (1, Bind::Upload), at),
        Token::Greedy { logits, n } => (kernels.greedy_enter[dt], (3, Bind::Buf(logits.clone())), n as u32),
    };
    let p = Params {
        d: table.k as u32,
        dp: 8 * table.g8 as u32,
        rows: 1,
        ids_at,
        id0: 0,
        part_rows: part.rows as u32,
        row0: 0,
        eps,
    };
    let binds = [
        (0, Bind::Buf(part.store.clone())),
        src,
        (2, Bind::Buf(x.clone())),
        (4, Bind::Buf(h.clone())),
        (5, Bind::Buf(s.clone())),
    ];
    rec.dispatch(kernel, &binds, &p, [1, 1, 1]);
}

/// x ← embed[ids]. Returns where the ids were uploaded (`Recorder::token_at`).
pub fn record(rec: &mut Recorder, table: &Matrix, x: &Arc<Store>, ids: &[u32]) -> u32 {
    let ids_at = rec.upload(ids);
    rows(rec, table, x, (Bind::Upload, ids_at), ids.len());
    ids_at
}

/// x ← embed[argmax(logits[..n])] for one row, on the device: `greedy` writes the token at
/// logits[n], where the embedding reads it.
pub fn greedy(rec: &mut Recorder, table: &Matrix, x: &Arc<Store>, logits: &Arc<Store>, n: usize) {
    let p = Params { d: 0, dp: 0, rows: 1, ids_at: n as u32, id0: 0, part_rows: 0, row0: 0, eps: 0.0 };
    rec.dispatch(rec.dev().kernels.greedy, &[(3, Bind::Buf(logits.clone()))], &p, [1, 1, 1]);
    rows(rec, table, x, (Bind::Buf(logits.clone()), n as u32), 1);
}

/// x ← embed[ids] for `count` rows, the ids at word `at` of `src`.
fn rows(rec: &mut Recorder, table: &Matrix, x: &Arc<Store>, (src, ids_at): (Bind, u32), count: usize) {
    let kernel = rec.dev().kernels.embed[dtype_index(table.dtype)];
    for part in &table.parts {
        row_batches(count, |row0, rows| {
            let p = Params {
                d: table.k as u32,
                dp: 8 * table.g8 as u32,
                rows: count as u32,
                ids_at,
                id0: part.row0 as u32,
                part_rows: part.rows as u32,
                row0,
                eps: 0.0,
            };
            let binds = [(0, Bind::Buf(part.store.clone())), (1, src.clone()), (2, Bind::Buf(x.clone()))];
            rec.dispatch(kernel, &binds, &p, [groups_for(table.k, 256), rows, 1]);
        });
    }
}
