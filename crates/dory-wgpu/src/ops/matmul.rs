//! Projections, out ← x · Wᵀ, by the number of rows: up to `GEMV_ROWS` through `gemv.wgsl`
//! (W read once per four rows; SwiGLU, or for one row the residual before the projection,
//! formed on the way in), or one row through
//! `gemv1.wgsl` when the options hold x in workgroup memory (where the residual before the
//! projection can be fused; slower on the H200, so not by default), more through
//! `gemm_coop.wgsl` on tensor cores where the device and the weights allow (after
//! `split.wgsl` has cut x into f16 parts), else `gemm.wgsl`. Optionally times a per-column
//! scale (the head). One dispatch per part of W.

use std::sync::Arc;

use dory::config::GROUP;
use dory::weights::Stored;

use crate::error::gpu_err;
use crate::kernels::{dtype_index, Coop};
use crate::model::{Matrix, Part};
use crate::ops::{residual, row_batches};
use crate::record::{groups_for, Bind, Binds, Recorder, Split, Store};
use smallvec::smallvec;

params! {
    /// The parameters of the projections of several rows (gemv.wgsl, gemm.wgsl).
    pub struct Params {
        k: u32,      // width of a row of x (a multiple of 4)
        g8: u32,     // groups of 8 weights in a stored row of W
        n: u32,      // width of a row of out
        row0: u32,   // first column of out this part covers
        rows_w: u32, // rows of this part of W
        xr0: u32,    // first row of x
        yr0: u32,    // first row of out
        rows: u32,   // rows of x and out
        eps: f32,    // the residual's (gemv.wgsl's RES)
        unshift: f32, // the sums times this: 2^-shift of a bf16 W held as f16 (model.rs), else 1
        tiled: u32,   // W in tiles (dtype.wgsl's piece)
        kv_heads: u32, // the attention's shape and chunks (gemv.wgsl's COMBINE)
        d: u32,
        chunks: u32,
    }
}

params! {
    /// gemv1.wgsl's parameters.
    pub struct RowParams {
        k: u32,      // width of x (a multiple of 4)
        g8: u32,     // groups of 8 weights in a stored row of W
        row0: u32,   // first column of out this part covers
        rows_w: u32, // rows of this part of W
        xr0: u32,    // the row of x (and of o, h_next) in its buffer
        eps: f32,
        unshift: f32, // the sums times this (matmul.wgsl)
        tiled: u32,   // W in tiles (dtype.wgsl's piece)
    }
}

/// Rows up to which the matrix-vector kernels run (reading W once per four rows beats a
/// 64-row tile that is mostly empty).
pub const GEMV_ROWS: usize = 8;

/// What x is, and what binding 3 and up hold.
#[derive(Clone, Copy)]
pub enum Input<'a> {
    Plain,
    /// A scale per output column (the head).
    Scaled(&'a Arc<Store>),
    /// x is gu = [rows, k | k]; the gate and up scales, for SwiGLU on the way in.
    Swiglu(&'a Arc<Store>),
    /// x is h; the projection's input is the nGPT residual of h and `o`, which is also
    /// written to `h_next`: one row (`residual_fuses`; `h_next` is not x), or on the tensor
    /// cores (`residual_splits`), where the residual's own kernel writes h in place (`h_next`
    /// is x) and cuts its parts for the GEMM.
    Residual {
        o: &'a Arc<Store>,
        alpha: &'a Arc<Store>,
        h_next: &'a Arc<Store>,
        eps: f32,
    },
    /// x is h; the projection's input is the next pass's h (`edge_fuses`: one row): the
    /// nGPT residual h' of h and `o` that closes a pass, then the Between edge, s = N(h')
    /// and N(s + x) with the token's x `edge_x`. Workgroup 0 writes that h to `h_next`, s
    /// to `s`.
    Edge {
        o: &'a Arc<Store>,
        alpha: &'a Arc<Store>,
        h_next: &'a Arc<Store>,
        eps: f32,
        edge_x: &'a Arc<Store>,
        s: &'a Arc<Store>,
    },
    /// x is the partials of the rows' attention in `chunks` chunks (attend.rs), joined and
    /// gated on the way in (`combine_fuses`); the rows of `qkvg` hold the gates.
    Combine {
        qkvg: &'a Arc<Store>,
        gate_scale: &'a Arc<Store>,
        kv_heads: usize,
        d: usize,
        chunks: usize,
    },
}

/// Whether `record` takes `input` for `rows` rows of `w` in one dispatch per part (and the
/// split before the tensor cores): SwiGLU up to GEMV_ROWS rows or on the tensor cores, the
/// residual for one row when the options fuse it.
pub fn fuses(rec: &Recorder, w: &Matrix, rows: usize, input: Input) -> bool {
    match input {
        Input::Plain | Input::Scaled(_) => true,
        Input::Swiglu(_) => rows <= GEMV_ROWS || coop_kernels(rec, w, rows).is_some(),
        Input::Residual { .. } => residual_fuses(rec, w, rows) || residual_splits(rec, w, rows),
        Input::Edge { .. } => edge_fuses(rec, w, rows),
        Input::Combine { kv_heads, d, chunks, .. } => combine_fuses(rec, w, rows, (kv_heads, d), chunks),
    }
}

/// Whether the residual before a projection of `rows` rows of `w` on the tensor cores cuts
/// x's parts for it (residual.wgsl's `residual_split`: one dispatch fewer).
pub fn residual_splits(rec: &Recorder, w: &Matrix, rows: usize) -> bool {
    // q8_0's copy of x is two wide ([x | x]), which only split.wgsl writes.
    rec.dev().kernels.options.fuse_split && coop_kernels(rec, w, rows).is_some() && w.dtype != Stored::I8
}

/// Widths of x up to which the few-row kernel forms the residual on the way in
/// (`Options::residual_max_k`, by default). Every workgroup repeats the residual's
/// reductions, which the residual's own dispatch, a stage of the token's chain, costs more
/// than: on the H200 dory-tiny's 384 decoded at 819 tok/s against 751 apart (2026-12-02).
/// The larger config's 2048 lost while each workgroup walked h and o twice (223 against
/// 249) and tied with y in workgroup memory (2026-12-03); with the residual's loads in one
/// walk it gains (bench/logs/h200-2026-12-05f/call-4, call-5: 328.6 against 314.9 tok/s at
/// depth 0 on an H100, 307.8 against 292.8 at 4096; 350.4 against 342.4 on an H200).
pub const RESIDUAL_MAX_K: usize = 2048;

/// The floats of x gemv.wgsl forms in workgroup memory (RES_K4 vec4s).
const X_SHARED_MAX: usize = 1024;

/// Whether the residual before a projection of `rows` rows of `w` is done by it.
pub fn residual_fuses(rec: &Recorder, w: &Matrix, rows: usize) -> bool {
    let o = &rec.dev().kernels.options;
    rows == 1 && o.fuse_residual && (takes_gemv1(rec, w, rows) || w.k <= o.residual_max_k)
}

/// Whether a pass's closing residual and the edge after it are formed by the next pass's
/// first projection, of `rows` rows of `w` (gemv.wgsl's EDGE, whose loads of x hold rows of
/// up to 2,048). Not by the head: every one of its workgroups would form them, which cost
/// more than the edge's own dispatch (bench/logs/h200-2026-12-06c/call-3: on an H100 the
/// larger config's last head took 84.0 µs a dispatch against 57.4 + 15.1).
pub fn edge_fuses(rec: &Recorder, w: &Matrix, rows: usize) -> bool {
    let o = &rec.dev().kernels.options;
    rows == 1 && o.fuse_edge && w.k <= o.residual_max_k.min(2048) && !takes_gemv1(rec, w, rows)
}

/// The most bytes of partials a decoded row's out projection joins on the way in
/// (`Options::combine_bytes`): each of its workgroups reads them all, where `combine` reads
/// them once. dory-tiny's sliding layers leave 12.8 KB (2 KV heads, 8 chunks of 48 dims),
/// its full layer ~600 keys deep 30 KB; the larger config at 4k 566 KB.
pub const COMBINE_BYTES: usize = 32 << 10;

/// Whether the projection of `rows` rows of `w` (the out projection) joins the attention's
/// `chunks` chunks of partials on the way in, for `kv_heads` KV heads of `d` dims: one row
/// in gemv.wgsl's prologue, where every workgroup reads them all (at most
/// `Options::combine_bytes`), or a prompt's rows on the tensor cores, in split.wgsl's,
/// where each row's workgroup reads its own.
pub fn combine_fuses(rec: &Recorder, w: &Matrix, rows: usize, (kv_heads, d): (usize, usize), chunks: usize) -> bool {
    let q_width = GROUP * kv_heads * d;
    // Per (KV head, chunk): the GROUP heads' maxima, sums and d value sums, a vec4 each.
    let part = 16 * kv_heads * chunks * (2 + d);
    let options = rec.dev().kernels.options;
    if w.k != q_width || options.combine_bytes == 0 {
        return false;
    }
    if coop_kernels(rec, w, rows).is_some() {
        return q_width <= SPLIT_X_MAX;
    }
    rows == 1 && !takes_gemv1(rec, w, rows) && q_width <= X_SHARED_MAX && part <= options.combine_bytes
}

/// The floats of x split.wgsl joins in workgroup memory (x_sh).
const SPLIT_X_MAX: usize = 2048;

/// The kernels' kv_heads, d and chunks: the attention's for `Input::Combine`, else zeros.
fn join_shape(input: Input) -> [u32; 3] {
    match input {
        Input::Combine { kv_heads, d, chunks, .. } => [kv_heads, d, chunks].map(|n| n as u32),
        _ => [0; 3],
    }
}

/// Whether a single row of `w` takes the one-row kernel (`gemv1.wgsl`, where x fits its
/// workgroup memory and the options hold x there) rather than the few-row one.
pub fn takes_gemv1(rec: &Recorder, w: &Matrix, rows: usize) -> bool {
    rows == 1 && row_fits(rec, w)
}

/// Whether one row of x fits gemv1's workgroup memory.
fn row_fits(rec: &Recorder, w: &Matrix) -> bool {
    2 * w.g8 <= rec.dev().kernels.options.gemv1.xs as usize
}

/// The kernel `record` runs for these rows, with its shape, in words (for benchmarks).
pub fn kernel_name(rec: &Recorder, w: &Matrix, rows: usize, input: Input) -> String {
    let k = &rec.dev().kernels;
    let o = k.options;
    let pro = ["", " + residual", " + SwiGLU", " + the attention's chunks joined"][prologue(input)];
    if takes_gemv1(rec, w, rows) {
        let name = k.get_spec(k.gemv1[0][0]).name;
        return format!("{name}{pro} (rw {}, unroll {})", o.gemv1.rw, o.gemv1.unroll);
    }
    match coop_kernels(rec, w, rows) {
        _ if rows <= GEMV_ROWS => format!("gemv{pro}"),
        Some(_) => {
            let (wm, wn) = o.coop_tile;
            // As `tensor_cores` chooses, by its first part.
            let part = &w.parts[0];
            match slices(rec, coop_k16(w), rows, part.rows) {
                1 => format!("gemm_coop ({wm}×{wn} subgroups, unroll {})", o.coop_unroll),
                n => format!("gemm_coop ({n} slices, unroll {})", o.coop_unroll),
            }
        }
        None => "gemm".into(),
    }
}

/// The prologue that forms x for `input` (gemv1's PRO, which has the first three).
fn prologue(input: Input) -> usize {
    match input {
        Input::Plain | Input::Scaled(_) => 0,
        Input::Residual { .. } => 1,
        Input::Swiglu(_) => 2,
        // `edge_fuses` and `combine_fuses` keep these from gemv1.
        Input::Combine { .. } | Input::Edge { .. } => 3,
    }
}

/// The tensor-core GEMM's kernels, when they take these rows of `w`.
fn coop_kernels(rec: &Recorder, w: &Matrix, rows: usize) -> Option<Coop> {
    rec.dev().kernels.gemm_coop.filter(|_| w.coop && rows > GEMV_ROWS)
}

/// The slices `gemm_coop` cuts the `k16` inputs of a product of `rows` rows and `n` columns
/// into (blocks of 32 × 64; one block a subgroup unless the tile is 1 × 1).
fn slices(rec: &Recorder, k16: usize, rows: usize, n: usize) -> u32 {
    let o = rec.dev().kernels.options;
    if o.coop_tile != (1, 1) {
        return 1;
    }
    o.coop_slicing.slices(rows.div_ceil(32) * n.div_ceil(64), k16)
}

/// out[r, ..n] ← x[xr0 + r, ..k] · Wᵀ for r < rows, x formed as `input` says (which
/// `fuses` must allow).
pub fn record(rec: &mut Recorder, w: &Matrix, x: &Arc<Store>, xr0: usize, out: &Arc<Store>, rows: usize, input: Input) {
    debug_assert!(fuses(rec, w, rows, input));
    if takes_gemv1(rec, w, rows) {
        return row(rec, w, x, xr0, out, input);
    }
    if let Some(coop) = coop_kernels(rec, w, rows) {
        return tensor_cores(rec, coop, w, (x, xr0), out, rows, input);
    }
    let dev = rec.dev().clone();
    let kernels = &dev.kernels;
    let dt = dtype_index(w.dtype);
    // Every matrix-vector variant binds 3 (the plain one to x, which it never reads), and
    // 4–6 (the residual's; x and a stand-in where it is not formed).
    let plain = [kernels.gemm[dt], kernels.gemm_scaled[dt]];
    // The matrix-vector kernels: [one band a workgroup, or several (`band_share`)][one
    // row, up to four]; only those that form x from the residual have banded variants.
    let (gemm, gemv, third) = match input {
        Input::Plain => (plain[0], [kernels.gemv[dt]; 2], x),
        Input::Scaled(s) => (plain[1], [kernels.gemv_scaled[dt]; 2], s),
        Input::Swiglu(s) => (plain[0], [kernels.gemv_swiglu[dt]; 2], s),
        // One row (`fuses`): the second kernel of a pair is never taken.
        Input::Residual { .. } => (plain[0], kernels.gemv_residual.map(|k| [k[dt][0]; 2]), x),
        Input::Combine { .. } => (plain[0], [[kernels.gemv_combine[dt]; 2]; 2], x),
        Input::Edge { .. } => (plain[0], kernels.gemv_edge.expect("edge_fuses: its kernels").map(|k| [k[dt]; 2]), x),
    };
    let (res, eps) = residual_binds(rec, x, input);
    let [kv_heads, d, chunks] = join_shape(input);
    for part in &w.parts {
        let mut binds: Binds = smallvec![
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
            eps,
            unshift: w.unshift(),
            tiled: w.tiled.into(),
            kv_heads,
            d,
            chunks,
        };
        if rows > GEMV_ROWS {
            // The plain tiled kernel has no binding 3.
            if matches!(input, Input::Plain) {
                binds.truncate(3);
            }
            rec.dispatch(gemm, &binds, &p(0, rows), [groups_for(part.rows, 64), groups_for(rows, 64), 1]);
            continue;
        }
        binds.extend(res.iter().cloned());
        // Four rows at a time; a single row has its own variant.
        let bands = part.rows.div_ceil(8);
        let each = band_share(rec, bands, input);
        let gemv = gemv[usize::from(each > 1)];
        let mut r = 0;
        while r < rows {
            let n = (rows - r).min(4);
            rec.dispatch(gemv[usize::from(n > 1)], &binds, &p(r, n), [groups_for(bands, each), 1, 1]);
            r += n;
        }
    }
}

params! {
    /// split.wgsl's parameters.
    pub struct SplitParams {
        k: u32,   // width of a row of x (a multiple of 4)
        k16: u32, // width of a row of the parts (k rounded up to 16)
        xr0: u32, // first row of x
        lo: u32,  // where the lo part starts in xa (halves)
        row0: u32, // first row of this dispatch (grids hold at most 65535 rows)
        copies: u32, // copies of the row side by side, each k16 wide (2 for q8_0's [hi | lo])
        kv_heads: u32, // COMBINE = 1: the attention's shape and chunks
        d: u32,
        chunks: u32,
    }
}

params! {
    /// q8_tiles.wgsl's parameters.
    pub struct Q8TileParams {
        g8: u32,     // pieces of 8 weights in a stored q8_0 row
        k16: u32,    // the width of the copy's hi half (k rounded up to 16)
        j0: u32,     // the slice's first row in the part
        rows_w: u32, // rows of the part
        scale: f32,  // 2^q8_shift
    }
}

params! {
    /// gemm_coop.wgsl's parameters.
    pub struct CoopParams {
        k16: u32,    // width of a row of x's parts and of W (k rounded up to 16)
        n: u32,      // width of a row of out
        row0: u32,   // first column of out this part covers
        rows_w: u32, // rows of this part of W
        yr0: u32,    // first row of out
        rows: u32,   // rows of x and out
        lo: u32,     // where x's lo part starts in xa (halves)
        unshift: f32, // the sums times this (matmul.wgsl)
        m_lo: u32,   // GLU: where m's lo part starts in mparts (halves)
        m_scale: f32, // GLU: m's parts are m times this
    }
}

/// x's rows cut into f16 parts (`split_x`), then the product on the tensor cores, one
/// dispatch per part of W, times the scale per column for `Input::Scaled`. A q8_0 W is
/// copied in f16 first, a slice of rows at a time, each row [hi | lo] against x cut twice
/// side by side (`q8_tiles`).
fn tensor_cores(
    rec: &mut Recorder,
    coop: Coop,
    w: &Matrix,
    x: (&Arc<Store>, usize),
    out: &Arc<Store>,
    rows: usize,
    input: Input,
) {
    let Some(x_parts) = split_x(rec, coop, w, x, rows, input) else {
        return;
    };
    let k16 = coop_k16(w);
    let copies = k16 / w.k.next_multiple_of(16);
    let scale = match input {
        Input::Scaled(s) => Some(s),
        _ => None,
    };
    let product = Product { coop, n: w.n, k16, x: &x_parts, out, rows, scale, glu: None };
    for part in &w.parts {
        if copies == 1 {
            product.record(rec, &part.store, part.row0, part.rows, w.unshift());
            continue;
        }
        let slice = q8_slice(k16, rec.dev().kernels.options.q8_copy_bytes);
        for j0 in (0..part.rows).step_by(slice) {
            let n = slice.min(part.rows - j0);
            let copy = match q8_tiles(rec, w, part, j0, n) {
                Ok(c) => c,
                Err(e) => return rec.fail(e),
            };
            product.record(rec, &copy, part.row0 + j0, n, 2f32.powi(-w.q8_shift));
        }
    }
}

/// Rows cut into f16 parts for the tensor cores (parts.wgsl): the parts, their rows'
/// inverse scales, and where the lo part starts (halves).
struct Parts {
    parts: Arc<Store>,
    inv: Arc<Store>,
    lo: u32,
}

/// Room for `rows` rows of `k16` inputs' parts (as many rows as the GEMM's tiles read) in
/// `which` pair of the split buffers.
fn parts_buffers(rec: &mut Recorder, which: Split, rows: usize, k16: usize) -> Option<Parts> {
    let (wm, _) = rec.dev().kernels.options.coop_tile;
    let halves = rows.next_multiple_of(32 * wm as usize) * k16;
    match rec.split_buffers(which, 4 * halves as u64, 4 * rows as u64) {
        Ok((parts, inv)) => Some(Parts { parts, inv, lo: halves as u32 }),
        Err(e) => {
            rec.fail(e);
            None
        }
    }
}

/// x's `rows` rows from xr0 on, formed as `input` says, cut into parts for a product of
/// `w` on the tensor cores (`cut`; twice side by side for q8_0).
fn split_x(
    rec: &mut Recorder,
    coop: Coop,
    w: &Matrix,
    x: (&Arc<Store>, usize),
    rows: usize,
    input: Input,
) -> Option<Parts> {
    let k16 = coop_k16(w);
    let copies = k16 / w.k.next_multiple_of(16);
    let to = parts_buffers(rec, Split::X, rows, k16)?;
    let layout = residual::Parts { kernel: coop.residual_split, parts: &to.parts, inv: &to.inv, k16, lo: to.lo };
    cut(rec, coop, w.k, x, rows, input, (layout, copies as u32));
    Some(to)
}

/// Whether `mlp` takes `rows` rows of `gate_up` and `down` (where the model bounds m:
/// model.rs's `glu_scale`): both on the tensor cores in f16 (not q8_0's copies), one part
/// each, m's columns whole tiles.
pub fn glu_parts(rec: &Recorder, (gate_up, down): (&Matrix, &Matrix), rows: usize) -> bool {
    let f = gate_up.n / 2;
    let on_tensor_cores = [gate_up, down]
        .iter()
        .all(|w| coop_kernels(rec, w, rows).is_some() && w.dtype != Stored::I8 && w.parts.len() == 1);
    rec.dev().kernels.options.fuse_glu && on_tensor_cores && f % 16 == 0 && down.k == f
}

/// out ← down · m for `rows` rows of x formed as `input` says (`glu_parts` must allow), m =
/// silu(g ⊙ gate_scale) ⊙ (u ⊙ up_scale) of [g | u] = x · gate_upᵀ with `scales` [gate_scale
/// | up_scale]: gate|up's epilogue cuts m into down's parts, each row times `m_scale`
/// (gemm_coop.wgsl's GLU), which spares split.wgsl's SwiGLU its dispatch and gate|up its
/// f32 output.
pub fn mlp(
    rec: &mut Recorder,
    (gate_up, down): (&Matrix, &Matrix),
    x: &Arc<Store>,
    out: &Arc<Store>,
    rows: usize,
    input: Input,
    (scales, m_scale): (&Arc<Store>, f32),
) {
    debug_assert!(glu_parts(rec, (gate_up, down), rows));
    let Some(coop) = coop_kernels(rec, gate_up, rows) else {
        return rec.fail(gpu_err("gate|up with SwiGLU on the way out, off the tensor cores"));
    };
    let Some(x_parts) = split_x(rec, coop, gate_up, (x, 0), rows, input) else {
        return;
    };
    let Some(m) = parts_buffers(rec, Split::Glu, rows, down.k) else {
        return;
    };
    let glu = Some(Glu { m: &m, scale: m_scale });
    let (k16, part) = (coop_k16(gate_up), &gate_up.parts[0]);
    let product = Product { coop, n: gate_up.n, k16, x: &x_parts, out, rows, scale: Some(scales), glu };
    product.record(rec, &part.store, part.row0, part.rows, gate_up.unshift());
    let part = &down.parts[0];
    let product = Product { coop, n: down.n, k16: down.k, x: &m, out, rows, scale: None, glu: None };
    product.record(rec, &part.store, part.row0, part.rows, down.unshift());
}

/// The inputs of a product of `w` on the tensor cores: k rounded up to 16, twice for q8_0
/// (its copy's rows are [hi | lo]).
fn coop_k16(w: &Matrix) -> usize {
    let copies = if w.dtype == Stored::I8 { 2 } else { 1 };
    copies * w.k.next_multiple_of(16)
}

/// Rows of a q8_0 matrix copied at once for the tensor cores, whose copy is `k16` halves
/// a row: whole blocks of 64 rows, within `bytes` (`Options::q8_copy_bytes`) but one.
fn q8_slice(k16: usize, bytes: usize) -> usize {
    (bytes / (2 * k16)).max(64) / 64 * 64
}

/// Rows j0 … j0 + rows − 1 of `part` of the q8_0 matrix `w` copied in f16 for the tensor
/// cores (q8_tiles.wgsl), whole bands of 16 (rows past the part zeros): the recorder's
/// scratch, which holds that copy until the next.
pub fn q8_tiles(rec: &mut Recorder, w: &Matrix, part: &Part, j0: usize, rows: usize) -> dory::Result<Arc<Store>> {
    let k16 = w.k.next_multiple_of(16);
    let bands = rows.div_ceil(16);
    let copy = rec.q8_copy_buffer((bands * 16 * 2 * k16 * 2) as u64)?;
    let kernel = rec.dev().kernels.q8_tiles.ok_or_else(|| gpu_err("q8_0 on the tensor cores without q8_tiles"))?;
    let p = Q8TileParams {
        g8: w.g8 as u32,
        k16: k16 as u32,
        j0: j0 as u32,
        rows_w: part.rows as u32,
        scale: 2f32.powi(w.q8_shift),
    };
    let binds = [(0, Bind::Buf(part.store.clone())), (1, Bind::Buf(copy.clone()))];
    rec.dispatch(kernel, &binds, &p, [groups_for(2 * k16, 256), bands as u32, 1]);
    Ok(copy)
}

/// One product on the tensor cores of x's parts, as `tensor_cores` cut them, and W's
/// parts or copies.
struct Product<'a> {
    coop: Coop,
    n: usize,
    k16: usize,
    x: &'a Parts,
    out: &'a Arc<Store>,
    rows: usize,
    /// A scale per column (with `glu`, [gate_scale | up_scale]).
    scale: Option<&'a Arc<Store>>,
    /// gate|up, whose epilogue cuts m into these parts (`mlp`) in place of writing `out`.
    glu: Option<Glu<'a>>,
}

/// Where gate|up's epilogue cuts m, each row times `scale`.
#[derive(Clone, Copy)]
struct Glu<'a> {
    m: &'a Parts,
    scale: f32,
}

impl Product<'_> {
    /// out's columns row0 … row0 + rows_w − 1 from `w` (rows_w rows in tiles), its sums
    /// times `unshift`.
    fn record(&self, rec: &mut Recorder, w: &Arc<Store>, row0: usize, rows_w: usize, unshift: f32) {
        let (wm, wn) = rec.dev().kernels.options.coop_tile;
        let n = slices(rec, self.k16, self.rows, rows_w);
        let kernels = match n {
            1 => self.coop.gemm,
            n => self.coop.sliced[usize::from(n == 4)],
        };
        let kernel = kernels[if self.glu.is_some() { 2 } else { usize::from(self.scale.is_some()) }];
        // The plain kernel binds 4 too (to the row scales, which it reads as 3).
        let mut binds: Binds = smallvec![
            (0, Bind::Buf(w.clone())),
            (1, Bind::Buf(self.x.parts.clone())),
            (3, Bind::Buf(self.x.inv.clone())),
            (4, Bind::Buf(self.scale.unwrap_or(&self.x.inv).clone())),
        ];
        match self.glu {
            Some(g) => binds.extend([(6, Bind::Buf(g.m.parts.clone())), (7, Bind::Buf(g.m.inv.clone()))]),
            None => binds.push((2, Bind::Buf(self.out.clone()))),
        }
        if n > 1 {
            // Each block's slices' sums: 2048 floats a slice.
            let blocks = rows_w.div_ceil(64) * self.rows.div_ceil(32);
            match rec.join_buffer((blocks * n as usize * 2048 * 4) as u64) {
                Ok(b) => binds.push((5, Bind::Buf(b))),
                Err(e) => return rec.fail(e),
            }
        }
        let p = CoopParams {
            k16: self.k16 as u32,
            n: self.n as u32,
            row0: row0 as u32,
            rows_w: rows_w as u32,
            yr0: 0,
            rows: self.rows as u32,
            lo: self.x.lo,
            unshift,
            m_lo: self.glu.map_or(0, |g| g.m.lo),
            m_scale: self.glu.map_or(0.0, |g| g.scale),
        };
        let groups = [groups_for(rows_w, 64 * wn as usize), groups_for(self.rows, 32 * wm as usize), 1];
        rec.dispatch(kernel, &binds, &p, groups);
    }
}

/// x's `rows` rows of `k` from xr0 on cut into f16 parts where `layout` says (`copies` of
/// each row side by side): by the residual's own kernel for `Input::Residual` (one copy),
/// else by split.wgsl, which forms the input first where it is SwiGLU's or the attention's
/// chunks joined.
fn cut(
    rec: &mut Recorder,
    coop: Coop,
    k: usize,
    (x, xr0): (&Arc<Store>, usize),
    rows: usize,
    input: Input,
    (layout, copies): (residual::Parts, u32),
) {
    if let Input::Residual { o: attended, alpha, h_next, eps } = input {
        debug_assert!(Arc::ptr_eq(x, h_next) && xr0 == 0, "the residual's split writes h in place");
        return residual::record_split(rec, (x, attended, alpha), k, eps, rows, layout);
    }
    let (split, third, fourth) = match input {
        Input::Swiglu(s) => (coop.split_swiglu, s, x),
        Input::Combine { qkvg, gate_scale, .. } => (coop.split_combine, gate_scale, qkvg),
        _ => (coop.split, x, x),
    };
    let [kv_heads, d, chunks] = join_shape(input);
    let binds = [
        (0, Bind::Buf(x.clone())),
        (1, Bind::Buf(layout.parts.clone())),
        (2, Bind::Buf(layout.inv.clone())),
        (3, Bind::Buf(third.clone())),
        (4, Bind::Buf(fourth.clone())),
    ];
    let (k16, lo) = (layout.k16 as u32 / copies, layout.lo);
    row_batches(rows, |row0, n| {
        let p = SplitParams { k: k as u32, k16, xr0: xr0 as u32, lo, row0, copies, kv_heads, d, chunks };
        rec.dispatch(split, &binds, &p, [n, 1, 1]);
    });
}

/// One row through gemv1.wgsl.
fn row(rec: &mut Recorder, w: &Matrix, x: &Arc<Store>, xr0: usize, out: &Arc<Store>, input: Input) {
    let dev = rec.dev().clone();
    let kernels = &dev.kernels;
    let dt = dtype_index(w.dtype);
    let none = rec.none().clone();
    let plain = |s: &Arc<Store>| Bind::Buf(s.clone());
    // Unused bindings hold x (read-only) or a stand-in (read-write).
    let (scale, o, alpha, h_next, eps) = match input {
        // `combine_fuses` keeps the attention's join from gemv1.
        Input::Plain | Input::Combine { .. } => (x, x, x, &none, 0.0),
        Input::Scaled(s) | Input::Swiglu(s) => (s, x, x, &none, 0.0),
        Input::Residual { o, alpha, h_next, eps } => (x, o, alpha, h_next, eps),
        Input::Edge { .. } => unreachable!("edge_fuses keeps the edge from gemv1"),
    };
    let kernel = match input {
        Input::Scaled(_) => kernels.gemv1_scaled[dt],
        _ => kernels.gemv1[dt][prologue(input)],
    };
    let per_group = 8 * kernels.options.gemv1.rw as usize;
    for part in &w.parts {
        let binds = [
            (0, plain(&part.store)),
            (1, plain(x)),
            (2, plain(out)),
            (3, plain(scale)),
            (4, plain(o)),
            (5, plain(alpha)),
            (6, plain(h_next)),
        ];
        let p = RowParams {
            k: w.k as u32,
            g8: w.g8 as u32,
            row0: part.row0 as u32,
            rows_w: part.rows as u32,
            xr0: xr0 as u32,
            eps,
            unshift: w.unshift(),
            tiled: w.tiled.into(),
        };
        rec.dispatch(kernel, &binds, &p, [groups_for(part.rows, per_group), 1, 1]);
    }
}

/// Binding 4–8 of the few-row kernel, and the residual's eps: the residual's buffers for
/// `Input::Residual`, and the edge's for `Input::Edge`, the gates and their scale for
/// `Input::Combine`, else x and the stand-in.
fn residual_binds(rec: &Recorder, x: &Arc<Store>, input: Input) -> ([(u32, Bind); 5], f32) {
    let none = rec.none();
    let (o, alpha, h_next, eps, (xt, s)) = match input {
        Input::Residual { o, alpha, h_next, eps } => (o, alpha, h_next, eps, (x, none)),
        Input::Edge { o, alpha, h_next, eps, edge_x, s } => (o, alpha, h_next, eps, (edge_x, s)),
        Input::Combine { qkvg, gate_scale, .. } => (qkvg, gate_scale, none, 0.0, (x, none)),
        _ => (x, x, none, 0.0, (x, none)),
    };
    let binds = [(4, o), (5, alpha), (6, h_next), (7, xt), (8, s)].map(|(i, b)| (i, Bind::Buf(b.clone())));
    (binds, eps)
}

/// Whether `glu` takes `rows` rows of `gate_up`, with the residual formed on the way in
/// when `residual` (where it fuses and gemv1 does not take the row): one row of a matrix
/// in one part (the workgroups pair gate rows with up rows by index; in tiles, 8 rows to a
/// half band).
pub fn glu_fuses(rec: &Recorder, gate_up: &Matrix, rows: usize, residual: bool) -> bool {
    let x_ok = !residual || residual_fuses(rec, gate_up, rows) && !takes_gemv1(rec, gate_up, rows);
    // In tiles, a workgroup pairs 8 rows of gate with the same of up, each half a band.
    let bands = !gate_up.tiled || (gate_up.n / 2) % 8 == 0;
    x_ok && bands && rows == 1 && gate_up.parts.len() == 1
}

/// m ← silu(g ⊙ gate_scale) ⊙ (u ⊙ up_scale) of [g | u] = x[0] · gate_upᵀ, formed where
/// each g meets its u, x formed as `input` says (`glu_fuses` must allow).
pub fn glu(rec: &mut Recorder, gate_up: &Matrix, x: &Arc<Store>, m: &Arc<Store>, scales: &Arc<Store>, input: Input) {
    let residual = matches!(input, Input::Residual { .. });
    debug_assert!(glu_fuses(rec, gate_up, 1, residual) && matches!(input, Input::Plain | Input::Residual { .. }));
    let kernels = &rec.dev().kernels;
    let dt = dtype_index(gate_up.dtype);
    let f = gate_up.n / 2;
    let bands = f.div_ceil(if gate_up.tiled { 8 } else { 4 });
    let each = band_share(rec, bands, input);
    let kernel = match input {
        Input::Residual { .. } => kernels.gemv_residual[usize::from(each > 1)][dt][1],
        _ => kernels.gemv_glu[dt],
    };
    let part = &gate_up.parts[0];
    let (res, eps) = residual_binds(rec, x, input);
    let mut binds: Binds = smallvec![
        (0, Bind::Buf(part.store.clone())),
        (1, Bind::Buf(x.clone())),
        (2, Bind::Buf(m.clone())),
        (3, Bind::Buf(scales.clone())),
    ];
    binds.extend(res);
    let p = Params {
        kv_heads: 0,
        d: 0,
        chunks: 0,
        k: gate_up.k as u32,
        g8: gate_up.g8 as u32,
        n: f as u32,
        row0: 0,
        rows_w: part.rows as u32,
        xr0: 0,
        yr0: 0,
        rows: 1,
        eps,
        unshift: gate_up.unshift(),
        tiled: gate_up.tiled.into(),
    };
    rec.dispatch(kernel, &binds, &p, [groups_for(bands, each), 1, 1]);
}

/// The bands of W each workgroup of gemv.wgsl takes over a projection of `bands` bands:
/// `Options::gemv_bands` where it forms x from the residual (the kernel then reads its
/// launch's size, and takes bands wid, wid + groups, …), else one.
fn band_share(rec: &Recorder, bands: usize, input: Input) -> usize {
    let formed = matches!(input, Input::Residual { .. } | Input::Edge { .. });
    let b = rec.dev().kernels.options.gemv_bands;
    if formed && bands >= b.from {
        b.per
    } else {
        1
    }
}

/// Bands enough to share among a GPU's SMs in twos (132 on the H100 and the H200): the
/// default `Bands::from`.
pub const MANY_BANDS: usize = 512;
