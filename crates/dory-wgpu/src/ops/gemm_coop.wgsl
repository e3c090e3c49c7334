// out[yr0 + r, row0 + j] ← Σ_i x[r, i] · W[j, i] for many rows on the tensor cores
// (cooperative matrices, 16 × 16 × 16, f16 in, f32 accumulated), x as split.wgsl leaves it:
// each row times a power of two s_r, in two f16 parts hi + lo that keep ~22 bits of it, so
// that spec §8's bounds hold as with f32 operands. Both parts meet the same weights in the
// same accumulator (lo is not rescaled: s_r puts the row's largest value near 2¹³, so lo
// stays in f16's range), and the epilogue multiplies by 1/s_r. W is f16 as stored.
//
// Every operand is loaded straight from its buffer (no staging through workgroup memory: a
// subgroup's fragments are reused across its tiles, and the workgroup's subgroups that
// share columns of W meet them in the cache; a kernel that staged 32 inputs at a time in
// workgroup memory, double-buffered, ran 3–13× slower on the H200; one that copied each
// stage of fragments there by cooperative loads and stores, the next stage's loads in
// flight while it multiplied the last, 2.1–3.3× slower, 088412d's `gemm_staged`: fragments
// load from workgroup memory at 3/4 of the products' rate, but staging them, a store and a
// barrier a step, halves it: bench/logs/h200-2026-12-03i, `peak_steps.wgsl`). A workgroup of
// WM × WN subgroups of 32 computes a (32 WM) × (64 WN) tile of out, each subgroup a
// 32 × 64 block as 2 × 4 accumulators (`gemm_coop`; UNROLL = 2 loads two slices of 16
// inputs before multiplying either). (A 64 × 64 block a subgroup, `gemm_tall`, reused each
// fragment more but halved the blocks; with W in tiles it lost on every product of both
// models: bench/logs/h200-2026-12-02e/call-5.)
//
// With GLU (`gemm_glu`, `gemm_sliced_glu`) W is gate|up and a block's four tiles of columns
// are the gate's and the up's of 32 columns of m in turn, so that the epilogue forms m =
// SwiGLU and cuts it into the down projection's parts in place of writing out.
//
// Where the blocks are too few to fill the card, `gemm_sliced` gives each 32 × 64 block a
// workgroup of SLICES subgroups, each a slice of the inputs, whose sums meet in a buffer of
// the block's own (`join_slices`): a lone subgroup's chain of loads and products is what a
// small product waits on. (Joined in workgroup memory, 8 KiB a slice, slices lost on the
// larger config's products of 512 blocks, which through the buffer they take 1.4–1.5×
// faster, bench/logs/h200-2026-12-03h/call-4: likely the L1 that the workgroup memory
// takes from the fragments' loads, since the unsliced blocks' sums, through the buffer
// too, ran 1.13× slower than through their 1 KiB of workgroup memory, call-6.)
//
// Both functions run the same steps (ops/gemm_steps.wgsl), pasted into each by the module
// assembler, since every way of sharing them in WGSL lost: folded into gemm_coop_tile, the
// slice's set-up slowed the unsliced blocks by 3.5–7 % on the H200 (149–154 µs against 144
// for the larger config's products, bench/logs/h200-2026-12-02f/call-6 … call-8); one
// function running the loop for both, its way out chosen by an argument, ran the larger
// config's pp512 2.6× slower (bench/logs/h200-2026-12-03g/call-4).
//
// Reads beyond the operands' edges are meant: x's split buffer has rows for whole tiles and
// rows of k16 (k rounded up to 16, zero-filled; laid out in 16 × 16 tiles, see load_a), and
// W is held in whole tiles of 16 × 16 (model.rs), so that a tile's loads stay inside their
// buffers; what they add lands in rows and columns that are not written, or meets zeros.
//
// naga 30 cannot hold cooperative matrices in arrays, nor store a `var` read in place:
// hence named accumulators and fragments, stored as the arguments of a function. (In
// structs, a step's fragments through the loop or the sums on the way out, the H200 ran the
// larger config's pp512 3–4 % slower: bench/logs/h200-2026-12-03g/call-1 … call-3.)

enable f16;
enable wgpu_cooperative_matrix;

override WM: u32 = 2u;
override WN: u32 = 2u;
// Slices of 16 inputs loaded before they are multiplied (gemm_coop). (Declared before
// c_sh: naga 30's override processing fails on an override declared after a type sized by
// others.)
override UNROLL: u32 = 1u;
// Subgroups sharing a block in `gemm_sliced` (each a slice of the inputs).
override SLICES: u32 = 2u;
// 1: gate|up with SwiGLU formed on the way out (`gemm_glu`, `gemm_sliced_glu`).
override GLU: u32 = 0u;

// The parameters `p`: matmul.rs's `CoopParams` (kernels.rs declares their `struct P`).

@group(0) @binding(0) var<storage, read> w: array<f16>;
@group(0) @binding(1) var<storage, read> xa: array<f16>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read> xinv: array<f32>;
@group(0) @binding(4) var<storage, read> scale: array<f32>;

// A 16 × 16 tile per subgroup on its way out (and, first, the tile of zeros the
// accumulators start from: a matrix declared without a value came out as garbage on the
// H200's driver).
// (GLU: two, a gate tile and its up tile.)
var<workgroup> c_sh: array<f32, 256u * (1u + GLU) * WM * WN>;

// `gemm_sliced`: the tile of zeros its accumulators start from.
var<workgroup> s_sh: array<f32, 256>;
// `gemm_sliced`: every slice's block of sums, block by block ([block][SLICES][2048]).
@group(0) @binding(5) var<storage, read_write> sums: array<f32>;

// GLU: m = silu(g ⊙ gate_scale) ⊙ (u ⊙ up_scale) of [g | u] = x · Wᵀ cut into the down
// projection's parts as split.wgsl would (parts.wgsl's layout, two halves to a u32, the lo
// part from half p.m_lo on), each row times p.m_scale, a power of two that keeps |m| within
// 2¹² by a bound on every m the weights allow (model.rs's `glu_scale`), so that the parts
// need no maximum of the row; `minv` takes its inverse for each row.
@group(0) @binding(6) var<storage, read_write> mparts: array<u32>;
@group(0) @binding(7) var<storage, read_write> minv: array<f32>;

alias FragA = coop_mat16x16<f16, A>;
alias FragB = coop_mat16x16<f16, B>;
alias Acc = coop_mat16x16<f32, C>;

// c + hi · b + lo · b
fn mma2(hi: FragA, lo: FragA, b: FragB, c: Acc) -> Acc {
    return coopMultiplyAdd(lo, b, coopMultiplyAdd(hi, b, c));
}

// Where the band of 16 rows of W from j on starts (W in tiles: model.rs's `Matrix::tiled`):
// a band wholly past the part's last row reads the first instead (what it computes is not
// written); the last band is filled with rows of zeros.
fn w_at(j: u32) -> u32 {
    return select(j, 0u, j >= p.rows_w) * p.k16;
}

// An accumulator of zeros (through c_sh; every invocation of the workgroup calls it).
fn zero_acc(lid: u32) -> Acc {
    for (var e = lid; e < 256u; e = e + 32u * WM * WN) {
        c_sh[e] = 0.0;
    }
    workgroupBarrier();
    let zero = coopLoad<Acc>(&c_sh[0], 16u);
    workgroupBarrier();
    return zero;
}

// Writes the 16 × 16 tile t at (r0, j0) of out through the subgroup's slice of c_sh,
// within bounds, times 1/s of its row and, when `scaled`, the column's scale.
fn emit(t: Acc, sg: u32, lane: u32, r0: u32, j0: u32, scaled: bool) {
    let at = sg * 256u;
    let stride = 16u;
    coopStoreT(t, &c_sh[at], stride);
    workgroupBarrier();
    for (var i = 0u; i < 8u; i = i + 1u) {
        let e = lane + 32u * i;
        let r = r0 + e / 16u;
        let j = j0 + e % 16u;
        if (r < p.rows && j < p.rows_w) {
            var v = c_sh[at + e] * (xinv[r] * p.unshift);
            if (scaled) {
                v = v * scale[p.row0 + j];
            }
            out[(p.yr0 + r) * p.n + p.row0 + j] = v;
        }
    }
    workgroupBarrier();
}

// The subgroup's 32 × 64 block at (r0, j0) of out, tile by tile.
fn emit_block(
    t00: Acc, t01: Acc, t02: Acc, t03: Acc, t10: Acc, t11: Acc, t12: Acc, t13: Acc,
    sg: u32, lane: u32, r0: u32, j0: u32, scaled: bool,
) {
    emit(t00, sg, lane, r0, j0, scaled);
    emit(t01, sg, lane, r0, j0 + 16u, scaled);
    emit(t02, sg, lane, r0, j0 + 32u, scaled);
    emit(t03, sg, lane, r0, j0 + 48u, scaled);
    emit(t10, sg, lane, r0 + 16u, j0, scaled);
    emit(t11, sg, lane, r0 + 16u, j0 + 16u, scaled);
    emit(t12, sg, lane, r0 + 16u, j0 + 32u, scaled);
    emit(t13, sg, lane, r0 + 16u, j0 + 48u, scaled);
}

// The 16 × 16 tile of x's parts whose 16 rows start at `rows` (r0 · k16) and whose inputs
// start at k: split.wgsl lays x out tile by tile, each tile's 256 halves in a row, so that a
// fragment is one run of 512 bytes (rows of 32 bytes k16 apart spread it over 16 lines).
fn load_a(rows: u32, k: u32) -> FragA {
    let stride = 16u;
    return coopLoadT<FragA>(&xa[rows + 16u * k], stride);
}

// Where the bands of the four 16-column tiles from j0 on start (w_at); with GLU, of the
// gate's and the up's tiles of the 32 columns of m from j0 / 2 on, in turn (W is [gate |
// up], f = p.rows_w / 2 rows each, whole bands: matmul.rs's `glu_parts`).
fn w_bands(j0: u32) -> vec4<u32> {
    if (GLU == 1u) {
        let j = j0 / 2u;
        let f = p.rows_w / 2u;
        return vec4<u32>(w_at(j), w_at(f + j), w_at(j + 16u), w_at(f + j + 16u));
    }
    return vec4<u32>(w_at(j0), w_at(j0 + 16u), w_at(j0 + 32u), w_at(j0 + 48u));
}

// The 16 × 16 tile of W whose band starts at `band` (w_at) and whose inputs start at k:
// one run of 512 bytes, each row of W (a column of the fragment) 16 halves.
fn load_b(band: u32, k: u32) -> FragB {
    let stride = 16u;
    return coopLoad<FragB>(&w[band + 16u * k], stride);
}

fn gemm_coop_tile(lid: u32, wid: vec3<u32>, scaled: bool) {
    let sg = lid / 32u;
    let lane = lid % 32u;
    // This subgroup's 32 × 64 block of out.
    let r0 = wid.y * 32u * WM + 32u * (sg / WN);
    let j0 = wid.x * 64u * WN + 64u * (sg % WN);
    let zero = zero_acc(lid);
    // paste: gemm_steps.wgsl, $k0 = 0u, $end = p.k16
    emit_block(c00, c01, c02, c03, c10, c11, c12, c13, sg, lane, r0, j0, scaled);
}

// out[r, j] ← sum times 1/s of row r and, when `scaled`, column j's scale, within bounds.
fn put(sum: f32, r: u32, j: u32, scaled: bool) {
    if (r < p.rows && j < p.rows_w) {
        var v = sum * (xinv[r] * p.unshift);
        if (scaled) {
            v = v * scale[p.row0 + j];
        }
        out[(p.yr0 + r) * p.n + p.row0 + j] = v;
    }
}

// Tile i (of eight) of a slice's block into `sums` from `at`.
fn stash(t: Acc, at: u32, slice: u32, i: u32) {
    let to = at + slice * 2048u + 256u * i;
    let stride = 16u;
    coopStoreT(t, &sums[to], stride);
}

// Every slice's block at (r0, j0) into its region of `sums` (the header says why not
// workgroup memory), whose start it returns once all are there.
fn stash_block(
    t00: Acc, t01: Acc, t02: Acc, t03: Acc, t10: Acc, t11: Acc, t12: Acc, t13: Acc,
    slice: u32, r0: u32, j0: u32,
) -> u32 {
    let at = ((r0 / 32u) * ((p.rows_w + 63u) / 64u) + j0 / 64u) * SLICES * 2048u;
    stash(t00, at, slice, 0u);
    stash(t01, at, slice, 1u);
    stash(t02, at, slice, 2u);
    stash(t03, at, slice, 3u);
    stash(t10, at, slice, 4u);
    stash(t11, at, slice, 5u);
    stash(t12, at, slice, 6u);
    stash(t13, at, slice, 7u);
    storageBarrier();
    workgroupBarrier();
    return at;
}

// Element e of the block whose slices' sums start at `at`, summed.
fn slices_sum(at: u32, e: u32) -> f32 {
    var sum = 0.0;
    for (var s = 0u; s < SLICES; s = s + 1u) {
        sum = sum + sums[at + 2048u * s + e];
    }
    return sum;
}

// The block at (r0, j0) as the sum of every slice's.
fn join_slices(
    t00: Acc, t01: Acc, t02: Acc, t03: Acc, t10: Acc, t11: Acc, t12: Acc, t13: Acc,
    slice: u32, lid: u32, r0: u32, j0: u32, scaled: bool,
) {
    let at = stash_block(t00, t01, t02, t03, t10, t11, t12, t13, slice, r0, j0);
    for (var e = lid; e < 2048u; e = e + 32u * SLICES) {
        let t = e / 256u;
        let i = e % 256u;
        put(slices_sum(at, e), r0 + 16u * (t / 4u) + i / 16u, j0 + 16u * (t % 4u) + i % 16u, scaled);
    }
}

// zero_acc for the sliced kernels, through s_sh (every invocation of the workgroup calls it).
fn zero_sliced(lid: u32) -> Acc {
    for (var e = lid; e < 256u; e = e + 32u * SLICES) {
        s_sh[e] = 0.0;
    }
    workgroupBarrier();
    let zero = coopLoad<Acc>(&s_sh[0], 16u);
    workgroupBarrier();
    return zero;
}

// gemm_coop_tile's block, its inputs cut into SLICES slices, one to a subgroup.
fn gemm_sliced_tile(lid: u32, wid: vec3<u32>, scaled: bool) {
    let slice = lid / 32u;
    let r0 = wid.y * 32u;
    let j0 = wid.x * 64u;
    let steps = p.k16 / 16u;
    let end = 16u * ((slice + 1u) * steps / SLICES);
    let zero = zero_sliced(lid);
    // paste: gemm_steps.wgsl, $k0 = 16u * (slice * steps / SLICES), $end = end
    join_slices(c00, c01, c02, c03, c10, c11, c12, c13, slice, lid, r0, j0, scaled);
}

@compute @workgroup_size(32 * WM * WN)
fn gemm_coop(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    gemm_coop_tile(lid, wid, false);
}

@compute @workgroup_size(32 * WM * WN)
fn gemm_coop_scaled(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    gemm_coop_tile(lid, wid, true);
}

@compute @workgroup_size(32 * SLICES)
fn gemm_sliced(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    gemm_sliced_tile(lid, wid, false);
}

@compute @workgroup_size(32 * SLICES)
fn gemm_sliced_scaled(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    gemm_sliced_tile(lid, wid, true);
}

// GLU: m at (r, j) and (r, j + 1) (j even) from the gate's sums g and the up's u, cut into
// the down projection's parts, within bounds (m's f columns are whole tiles: matmul.rs).
fn put_m2(g: vec2<f32>, u: vec2<f32>, r: u32, j: u32) {
    let f = p.rows_w / 2u;
    if (r >= p.rows || j >= f) {
        return;
    }
    let inv = xinv[r] * p.unshift;
    let a = g * inv * vec2<f32>(scale[j], scale[j + 1u]);
    let b = u * inv * vec2<f32>(scale[f + j], scale[f + j + 1u]);
    let m = a / (1.0 + exp(-a)) * b * p.m_scale;
    let hi = hi11(vec4<f32>(m, 0.0, 0.0)).xy;
    // Halves of the tile (r / 16, j / 16), row r % 16 of it (parts.wgsl's put_parts).
    let at = (r / 16u) * f * 16u + (j / 16u) * 256u + (r % 16u) * 16u + j % 16u;
    mparts[at / 2u] = pack2x16float(hi);
    mparts[(p.m_lo + at) / 2u] = pack2x16float(m - hi);
}

// GLU: the 16 × 16 tile of m at (r0, j) from the gate's tile g and the up's u, through the
// subgroup's slice of c_sh.
fn emit_glu(g: Acc, u: Acc, sg: u32, lane: u32, r0: u32, j: u32) {
    let at = sg * 512u;
    let at_u = at + 256u;
    let stride = 16u;
    coopStoreT(g, &c_sh[at], stride);
    coopStoreT(u, &c_sh[at_u], stride);
    workgroupBarrier();
    for (var i = 0u; i < 4u; i = i + 1u) {
        let e = 2u * (lane + 32u * i);
        let gs = vec2<f32>(c_sh[at + e], c_sh[at + e + 1u]);
        let us = vec2<f32>(c_sh[at_u + e], c_sh[at_u + e + 1u]);
        put_m2(gs, us, r0 + e / 16u, j + e % 16u);
    }
    workgroupBarrier();
}

// GLU: each row's 1/m_scale, by the blocks of m's first columns (lid: the workgroup's).
fn put_minv(lid: u32, r0: u32, j0: u32) {
    if (j0 == 0u && lid < 32u && r0 + lid < p.rows) {
        minv[r0 + lid] = 1.0 / p.m_scale;
    }
}

@compute @workgroup_size(32 * WM * WN)
fn gemm_glu(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let sg = lid / 32u;
    let lane = lid % 32u;
    let r0 = wid.y * 32u * WM + 32u * (sg / WN);
    let j0 = wid.x * 64u * WN + 64u * (sg % WN);
    let zero = zero_acc(lid);
    // paste: gemm_steps.wgsl, $k0 = 0u, $end = p.k16
    let j = j0 / 2u;
    emit_glu(c00, c01, sg, lane, r0, j);
    emit_glu(c02, c03, sg, lane, r0, j + 16u);
    emit_glu(c10, c11, sg, lane, r0 + 16u, j);
    emit_glu(c12, c13, sg, lane, r0 + 16u, j + 16u);
    put_minv(lane, r0, j0);
}

@compute @workgroup_size(32 * SLICES)
fn gemm_sliced_glu(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let slice = lid / 32u;
    let r0 = wid.y * 32u;
    let j0 = wid.x * 64u;
    let steps = p.k16 / 16u;
    let end = 16u * ((slice + 1u) * steps / SLICES);
    let zero = zero_sliced(lid);
    // paste: gemm_steps.wgsl, $k0 = 16u * (slice * steps / SLICES), $end = end
    let at = stash_block(c00, c01, c02, c03, c10, c11, c12, c13, slice, r0, j0);
    // Pairs of columns of the block's four tiles of m: tile t is rows r0 + 16 (t / 2) on,
    // m's columns j0 / 2 + 16 (t % 2) on, from the gate's tile 4 (t / 2) + 2 (t % 2) of the
    // block's eight and the up's after it.
    for (var q = lid; q < 512u; q = q + 32u * SLICES) {
        let t = q / 128u;
        let e = 2u * (q % 128u);
        let g = at + 256u * (4u * (t / 2u) + 2u * (t % 2u)) + e;
        let gs = vec2<f32>(slices_sum(g, 0u), slices_sum(g, 1u));
        let us = vec2<f32>(slices_sum(g, 256u), slices_sum(g, 257u));
        put_m2(gs, us, r0 + 16u * (t / 2u) + e / 16u, j0 / 2u + 16u * (t % 2u) + e % 16u);
    }
    put_minv(lid, r0, j0);
}
