// out[r, row0 + j] ← Σ_i x[xr0 + r, i] · W[j, i] for many rows: each workgroup computes a
// 64 × 64 tile of out (64 rows of x, 64 rows of W), walking i in slices of 16 that it
// stages through workgroup memory; each invocation holds a 4 × 4 block of the tile.
// `gemm_scaled` multiplies column j by scale[row0 + j]. The parameters are
// matmul.rs's `Params`, the bindings matmul.wgsl's.

const BM: u32 = 64u;
const BN: u32 = 64u;
const BK: u32 = 16u;

// Slices of the tile, i-major: xt[kk][m] at xt[kk * BM/4 + m/4][m % 4], likewise wt.
var<workgroup> xt: array<vec4<f32>, 256>;
var<workgroup> wt: array<vec4<f32>, 256>;

// x[xr0 + m, i … i + 3], zero past the rows or k.
fn x4(m: u32, i: u32) -> vec4<f32> {
    if (m < p.rows && i < p.k) {
        return x[(p.xr0 + m) * (p.k / 4u) + i / 4u];
    }
    return vec4<f32>(0.0);
}

// Weights 8g … 8g + 7 of row n of W, zero past the rows or the row.
fn w8(n: u32, g: u32) -> W8 {
    if (n < p.rows_w && g < p.g8) {
        return load8(piece(n, g, p.g8, p.tiled != 0u));
    }
    return W8(vec4<f32>(0.0), vec4<f32>(0.0));
}

fn stage(lid: u32, m0: u32, n0: u32, k0: u32) {
    // x: 64 rows × 16 values, one 4-value piece per invocation.
    let m = lid / 4u;
    let kq = lid % 4u;
    let v = x4(m0 + m, k0 + 4u * kq);
    for (var c = 0u; c < 4u; c = c + 1u) {
        xt[(4u * kq + c) * (BM / 4u) + m / 4u][m % 4u] = v[c];
    }
    // W: 64 rows × 16 weights, 8 per invocation in the first 128.
    if (lid < 128u) {
        let n = lid / 2u;
        let half = lid % 2u;
        let u = w8(n0 + n, k0 / 8u + half);
        for (var c = 0u; c < 4u; c = c + 1u) {
            wt[(8u * half + c) * (BN / 4u) + n / 4u][n % 4u] = u.lo[c];
            wt[(8u * half + 4u + c) * (BN / 4u) + n / 4u][n % 4u] = u.hi[c];
        }
    }
}

fn gemm_tile(lid: u32, wid: vec3<u32>) -> array<vec4<f32>, 4> {
    let m0 = wid.y * BM;
    let n0 = wid.x * BN;
    let tm = lid / 16u;
    let tn = lid % 16u;
    var acc: array<vec4<f32>, 4>;
    for (var k0 = 0u; k0 < p.k; k0 = k0 + BK) {
        stage(lid, m0, n0, k0);
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk = kk + 1u) {
            let a = xt[kk * (BM / 4u) + tm];
            let b = wt[kk * (BN / 4u) + tn];
            acc[0] += a.x * b;
            acc[1] += a.y * b;
            acc[2] += a.z * b;
            acc[3] += a.w * b;
        }
        workgroupBarrier();
    }
    return acc;
}

// One column-scale factor per column of the invocation's block: ones, or `scale`.
fn store(lid: u32, wid: vec3<u32>, acc: array<vec4<f32>, 4>, colscale: vec4<f32>) {
    let tm = lid / 16u;
    let tn = lid % 16u;
    for (var i = 0u; i < 4u; i = i + 1u) {
        let r = wid.y * BM + 4u * tm + i;
        for (var c = 0u; c < 4u; c = c + 1u) {
            let j = wid.x * BN + 4u * tn + c;
            if (r < p.rows && j < p.rows_w) {
                out[(p.yr0 + r) * p.n + p.row0 + j] = acc[i][c] * colscale[c] * p.unshift;
            }
        }
    }
}

@compute @workgroup_size(256)
fn gemm(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    store(lid, wid, gemm_tile(lid, wid), vec4<f32>(1.0));
}

@compute @workgroup_size(256)
fn gemm_scaled(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let acc = gemm_tile(lid, wid);
    var s = vec4<f32>(0.0);
    for (var c = 0u; c < 4u; c = c + 1u) {
        let j = wid.x * BN + 4u * (lid % 16u) + c;
        if (j < p.rows_w) {
            s[c] = scale_at(p.row0 + j);
        }
    }
    store(lid, wid, acc, s);
}
