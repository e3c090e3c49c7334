//! Copies by shader (`copy.wgsl`): runs of floats, and cache slots listed as moves.

use std::sync::Arc;

use super::MAX_GROUPS;
use crate::record::{groups_for, Bind, Recorder, Store};

params! {
    /// copy.wgsl's parameters.
    pub struct Params {
        len: u32,      // floats to copy (copy), or floats per slot (copy_slots)
        src_at: u32,
        dst_at: u32,
        moves_at: u32, // copy_slots: the pairs' offset in `up`
        moves: u32,    // copy_slots: how many pairs
        span: u32,     // invocations along x of the grid (for grids taller than one row)
    }
}

/// dst[dst_at..][..len] ← src[src_at..][..len], in floats.
pub fn run(rec: &mut Recorder, dst: &Arc<Store>, dst_at: usize, src: &Arc<Store>, src_at: usize, len: usize) {
    if len == 0 {
        return;
    }
    let kernel = rec.dev().kernels.copy;
    let [x, y] = grid(len);
    let p =
        Params { len: len as u32, src_at: src_at as u32, dst_at: dst_at as u32, moves_at: 0, moves: 0, span: 256 * x };
    rec.dispatch(kernel, &[(0, Bind::Buf(src.clone())), (1, Bind::Buf(dst.clone()))], &p, [x, y, 1]);
}

/// dst[..len] ← src[..len] in vec4s, 16 bytes per invocation: the copy the kernel
/// benchmarks (crate `dory-wgpu-bench`) measure the device's bandwidth with.
pub fn run4(rec: &mut Recorder, dst: &Arc<Store>, src: &Arc<Store>, len: usize) {
    let kernel = rec.dev().kernels.copy4;
    let [x, y] = grid(len);
    let p = Params { len: len as u32, src_at: 0, dst_at: 0, moves_at: 0, moves: 0, span: 256 * x };
    rec.dispatch(kernel, &[(3, Bind::Buf(src.clone())), (4, Bind::Buf(dst.clone()))], &p, [x, y, 1]);
}

/// The grid of a copy of `len` items, 256 to a workgroup: [x, y] workgroups with x at
/// most MAX_GROUPS (item i at gid.y · 256x + gid.x).
fn grid(len: usize) -> [u32; 2] {
    let groups = groups_for(len, 256);
    let x = groups.min(MAX_GROUPS as u32);
    [x, groups.div_ceil(x)]
}

/// dst slot `to` ← src slot `from` for each move, slots of `width` floats.
pub fn slots(rec: &mut Recorder, dst: &Arc<Store>, src: &Arc<Store>, moves: &[(usize, usize)], width: usize) {
    let kernel = rec.dev().kernels.copy_slots;
    for batch in moves.chunks(MAX_GROUPS) {
        let words: Vec<u32> = batch.iter().flat_map(|&(a, b)| [a as u32, b as u32]).collect();
        let moves_at = rec.upload(&words);
        let p = Params { len: width as u32, src_at: 0, dst_at: 0, moves_at, moves: batch.len() as u32, span: 0 };
        let binds = [(0, Bind::Buf(src.clone())), (1, Bind::Buf(dst.clone())), (2, Bind::Upload)];
        rec.dispatch(kernel, &binds, &p, [groups_for(width, 256), batch.len() as u32, 1]);
    }
}
