//! Each op's dispatch, beside its WGSL: the parameters as the shader's `P` declares them
//! (in order, 4-byte fields), the buffers it binds, and its grid.

pub mod attend;
pub mod copy;
pub mod embed;
pub mod matmul;
pub mod mix;
pub mod o1;
pub mod prep;
pub mod residual;
pub mod swiglu;

/// The most workgroups along one axis of a grid (WebGPU's minimum, which every adapter
/// gives): rows beyond it go into further dispatches.
pub const MAX_GROUPS: usize = 65535;

/// Calls `f(row0, rows)` over `rows` in batches a grid axis can hold.
pub fn row_batches(rows: usize, mut f: impl FnMut(u32, u32)) {
    let mut row0 = 0;
    while row0 < rows {
        let n = MAX_GROUPS.min(rows - row0);
        f(row0 as u32, n as u32);
        row0 += n;
    }
}
