// out[r, row0 + j] ← Σ_i x[xr0 + r, i] · W[j, i] for many rows on the tensor cores
// (cooperative matrices, 16 × 16 × 16, f16 in, f32 accumulated). A workgroup of WM × WN
// subgroups of 32 computes a (32 WM) × (32 WN) tile of out, each subgroup a 32 × 32 block
// as four 16 × 16 accumulators; i advances in slices of 32 staged through workgroup
// memory. x is rounded to f16; with SPLIT = 2 what the rounding left, times 2¹¹ (so that it
// stays in f16's normal range), is a second f16 operand with its own accumulators, added
// at the end times 2⁻¹¹: the product then keeps ~22 bits of x, and spec §8's bounds hold
// as with f32 operands. The weights are f16 as stored, or bf16 widened to f16 (the model
// checks that they fit). `gemm_coop_scaled` multiplies column j by scale[row0 + j]. Needs
// subgroups of exactly 32; x must lie within f16's range (|x| < 65504). The parameters and
// bindings are matmul.wgsl's.
//
// naga 30 cannot hold cooperative matrices in arrays, nor store a `var` read in place:
// hence named accumulators, and stores through `let` copies.

enable f16;
enable wgpu_cooperative_matrix;

override WM: u32 = 2u;
override WN: u32 = 2u;
override SPLIT: u32 = 2u;

const BK: u32 = 32u;
// Staged rows are SA halves apart (BK + 8: 80 bytes, so that the 16 rows a fragment load
// reads start in different banks).
const SA: u32 = 40u;

var<workgroup> a_hi: array<f16, 32u * WM * SA>;                     // [32 WM, SA]: x, rounded
var<workgroup> a_lo: array<f16, 32u * WM * SA * (SPLIT - 1u) + 1u>; // what the rounding left
var<workgroup> b_sh: array<f16, 32u * WN * SA>;                     // [32 WN, SA]: W's rows (B column-major)
var<workgroup> c_sh: array<f32, 256u * WM * WN>;                    // a 16 × 16 tile per subgroup, on the way out
var<workgroup> zero_sh: array<f32, 256>;                             // a 16 × 16 tile of zeros

// The remainder's scale: 2¹¹.
const LO: f32 = 2048.0;

// Two 16-bit weights of one word as f16 (exact for f16; bf16 within f16's range).
fn halves(u: u32) -> vec2<f16> {
    return vec2<f16>(pair16(u));
}

fn stage(lid: u32, m0: u32, n0: u32, k0: u32) {
    let threads = 32u * WM * WN;
    let bm = 32u * WM;
    let bn = 32u * WN;
    // x: bm rows × 32 values, as pieces of 4.
    for (var e = lid; e < bm * 8u; e = e + threads) {
        let m = e / 8u;
        let kq = e % 8u;
        var v = vec4<f32>(0.0);
        if (m0 + m < p.rows && k0 + 4u * kq < p.k) {
            v = x[(p.xr0 + m0 + m) * (p.k / 4u) + k0 / 4u + kq];
        }
        let hi = vec4<f16>(v);
        let at = m * SA + 4u * kq;
        for (var c = 0u; c < 4u; c = c + 1u) {
            a_hi[at + c] = hi[c];
            if (SPLIT == 2u) {
                a_lo[at + c] = f16((v[c] - f32(hi[c])) * LO);
            }
        }
    }
    // W: bn rows × 32 weights, as pieces of 8.
    for (var e = lid; e < bn * 4u; e = e + threads) {
        let n = e / 4u;
        let q = e % 4u;
        let g = k0 / 8u + q;
        var u = vec4<u32>(0u);
        if (n0 + n < p.rows_w && g < p.g8) {
            u = w[(n0 + n) * p.g8 + g];
        }
        let at = n * SA + 8u * q;
        for (var c = 0u; c < 4u; c = c + 1u) {
            let h = halves(u[c]);
            b_sh[at + 2u * c] = h.x;
            b_sh[at + 2u * c + 1u] = h.y;
        }
    }
}

// Writes one 16 × 16 tile at (r0, j0) of the workgroup's block, t (+ u / LO under
// SPLIT = 2), through the subgroup's slice of c_sh, within bounds, times the column scale
// when `scaled`.
fn emit(t: coop_mat16x16<f32, C>, u: coop_mat16x16<f32, C>, sg: u32, lane: u32, r0: u32, j0: u32, scaled: bool) {
    let at = sg * 256u;
    let stride = 16u;
    // Each lane's 8 values of the tile, then of the remainder's tile, through one slice.
    var v: array<f32, 8>;
    coopStoreT(t, &c_sh[at], stride);
    workgroupBarrier();
    for (var i = 0u; i < 8u; i = i + 1u) {
        v[i] = c_sh[at + lane + 32u * i];
    }
    workgroupBarrier();
    if (SPLIT == 2u) {
        coopStoreT(u, &c_sh[at], stride);
        workgroupBarrier();
        for (var i = 0u; i < 8u; i = i + 1u) {
            v[i] += c_sh[at + lane + 32u * i] * (1.0 / LO);
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < 8u; i = i + 1u) {
        let e = lane + 32u * i;
        let r = r0 + e / 16u;
        let j = j0 + e % 16u;
        if (r < p.rows && j < p.rows_w) {
            var x = v[i];
            if (scaled) {
                x = x * scale_at(p.row0 + j);
            }
            out[(p.yr0 + r) * p.n + p.row0 + j] = x;
        }
    }
}

fn gemm_coop_tile(lid: u32, wid: vec3<u32>, scaled: bool) {
    let sg = lid / 32u;
    let lane = lid % 32u;
    let m0 = wid.y * 32u * WM;
    let n0 = wid.x * 32u * WN;
    // This subgroup's 32 × 32 block within the workgroup's tile.
    let sm = 32u * (sg / WN);
    let sn = 32u * (sg % WN);
    // Accumulators start from a tile of zeros loaded from workgroup memory (a matrix
    // declared without a value came out as garbage on the H200's driver).
    for (var e = lid; e < 256u; e = e + 32u * WM * WN) {
        zero_sh[e] = 0.0;
    }
    workgroupBarrier();
    let zero = coopLoad<coop_mat16x16<f32, C>>(&zero_sh[0], 16u);
    var c00 = zero;
    var c01 = zero;
    var c10 = zero;
    var c11 = zero;
    // The remainder's products (SPLIT = 2).
    var d00 = zero;
    var d01 = zero;
    var d10 = zero;
    var d11 = zero;
    for (var k0 = 0u; k0 < p.k; k0 = k0 + BK) {
        stage(lid, m0, n0, k0);
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk = kk + 16u) {
            let a0 = sm * SA + kk;
            let a1 = (sm + 16u) * SA + kk;
            let b0 = coopLoad<coop_mat16x16<f16, B>>(&b_sh[sn * SA + kk], SA);
            let b1 = coopLoad<coop_mat16x16<f16, B>>(&b_sh[(sn + 16u) * SA + kk], SA);
            let h0 = coopLoadT<coop_mat16x16<f16, A>>(&a_hi[a0], SA);
            let h1 = coopLoadT<coop_mat16x16<f16, A>>(&a_hi[a1], SA);
            c00 = coopMultiplyAdd(h0, b0, c00);
            c01 = coopMultiplyAdd(h0, b1, c01);
            c10 = coopMultiplyAdd(h1, b0, c10);
            c11 = coopMultiplyAdd(h1, b1, c11);
            if (SPLIT == 2u) {
                let l0 = coopLoadT<coop_mat16x16<f16, A>>(&a_lo[a0], SA);
                let l1 = coopLoadT<coop_mat16x16<f16, A>>(&a_lo[a1], SA);
                d00 = coopMultiplyAdd(l0, b0, d00);
                d01 = coopMultiplyAdd(l0, b1, d01);
                d10 = coopMultiplyAdd(l1, b0, d10);
                d11 = coopMultiplyAdd(l1, b1, d11);
            }
        }
        workgroupBarrier();
    }
    let r00 = c00;
    let r01 = c01;
    let r10 = c10;
    let r11 = c11;
    let s00 = d00;
    let s01 = d01;
    let s10 = d10;
    let s11 = d11;
    emit(r00, s00, sg, lane, m0 + sm, n0 + sn, scaled);
    emit(r01, s01, sg, lane, m0 + sm, n0 + sn + 16u, scaled);
    emit(r10, s10, sg, lane, m0 + sm + 16u, n0 + sn, scaled);
    emit(r11, s11, sg, lane, m0 + sm + 16u, n0 + sn + 16u, scaled);
}

@compute @workgroup_size(32 * WM * WN)
fn gemm_coop(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    gemm_coop_tile(lid, wid, false);
}

@compute @workgroup_size(32 * WM * WN)
fn gemm_coop_scaled(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    gemm_coop_tile(lid, wid, true);
}
