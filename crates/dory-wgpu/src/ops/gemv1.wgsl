// out[row0 + j] ← Σ_i x_i · W[j, i] for one row x (a decoded token): bound by reading W
// once, so W is read in 16-byte pieces with UNROLL × RW of them in flight per invocation.
// The workgroup first forms x in workgroup memory (the prologue PRO), then each run of 32
// invocations computes RW rows of W, sharing every x it reads between them:
//   PRO 0: x = x[xr0], as it is;
//   PRO 1: x = N(N(h) + alpha ⊙ (N(o) − N(h))), the nGPT residual (spec §4) of h = x[xr0]
//          and o: the residual that precedes this projection, done here rather than in a
//          dispatch of its own; workgroup 0 also writes the new h into `h_next`;
//   PRO 2: x = silu(g ⊙ gate_scale) ⊙ (u ⊙ up_scale) from gu = x[xr0] = [g | u], with the
//          scales in `scale` (the down projection).
// With SCALED = 1 column j is multiplied by scale[row0 + j] (the head). W is one part of a
// matrix (rows row0 … row0 + rows_w − 1), stored as dtype.wgsl says.

override RW: u32 = 2u;     // rows of W per 32 invocations: 1, 2 or 4
override UNROLL: u32 = 2u; // pieces of a row in flight per invocation: 1, 2 or 4
override PRO: u32 = 0u;
override XS: u32 = 2048u;  // vec4s of x the workgroup holds: at least 2 g8
override SCALED: u32 = 0u; // 1: column j times scale[row0 + j] (the head)

// The parameters `p`: matmul.rs's `RowParams` (kernels.rs declares their `struct P`).

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
// The head's column scale (SCALED), or SwiGLU's [gate_scale | up_scale] (PRO 2);
// bound to x where neither reads it.
@group(0) @binding(3) var<storage, read> scale: array<vec4<f32>>;
// Bindings 4–6 are ngpt_in.wgsl's, PRO 1 only (bound to x elsewhere): the sub-layer
// output, the residual's alpha, and where workgroup 0 writes the new hidden state.

const WG: u32 = 256u;
const LANES: u32 = 32u;

var<workgroup> x_sh: array<vec4<f32>, XS>;

// Forms x in x_sh (zero past k) and returns the factor the sums are multiplied by: the
// residual's final normalisation, which is cheaper on the sums than on x.
fn prologue(lid: u32, wid: u32) -> f32 {
    let k4 = p.k / 4u;
    let base = p.xr0 * k4;
    for (var e = k4 + lid; e < 2u * p.g8; e = e + WG) {
        x_sh[e] = vec4<f32>(0.0);
    }
    if (PRO == 0u) {
        for (var e = lid; e < k4; e = e + WG) {
            x_sh[e] = x[base + e];
        }
    } else if (PRO == 2u) {
        let gu = 2u * base;
        for (var e = lid; e < k4; e = e + WG) {
            let a = x[gu + e] * scale[e];
            x_sh[e] = a * (1.0 / (1.0 + exp(-a))) * (x[gu + k4 + e] * scale[k4 + e]);
        }
    } else {
        let r = residual_row(base, k4, lid, p.eps).z;
        if (wid == 0u) {
            for (var e = lid; e < k4; e = e + WG) {
                h_next[base + e] = x_sh[e] * r;
            }
        }
        workgroupBarrier();
        return r;
    }
    workgroupBarrier();
    return 1.0;
}

// The residual's writes (ngpt_in.wgsl's residual_row): y goes to x_sh.
fn res_put(base: u32, e: u32, y: vec4<f32>) {
    x_sh[e] = y;
}

// No input joins the residual here.
fn res_x(base: u32, e: u32) -> vec4<f32> {
    return vec4<f32>(0.0);
}

fn xs8(g: u32) -> W8 {
    return W8(x_sh[2u * g], x_sh[2u * g + 1u]);
}

struct Rows {
    j0: u32,         // the first of the RW rows this run of 32 computes
    sums: vec4<f32>, // row j0 + t in sums[t], complete in the run's first invocation
}

fn gemv1_rows(lid: u32, wid: vec3<u32>) -> Rows {
    let factor = prologue(lid, wid.x);
    let j0 = (wid.x * (WG / LANES) + lid / LANES) * RW;
    let lane = lid % LANES;
    var acc = vec4<f32>(0.0);
    // Rows past the part are read as its last row and never written.
    var row: array<u32, 4>;
    for (var t = 0u; t < RW; t = t + 1u) {
        row[t] = min(j0 + t, p.rows_w - 1u);
    }
    let tiled = p.tiled != 0u;
    var g = lane;
    for (; g + (UNROLL - 1u) * LANES < p.g8; g = g + UNROLL * LANES) {
        for (var u = 0u; u < UNROLL; u = u + 1u) {
            let xg = xs8(g + u * LANES);
            for (var t = 0u; t < RW; t = t + 1u) {
                acc[t] += dot8(load8(piece(row[t], g + u * LANES, p.g8, tiled)), xg);
            }
        }
    }
    for (; g < p.g8; g = g + LANES) {
        let xg = xs8(g);
        for (var t = 0u; t < RW; t = t + 1u) {
            acc[t] += dot8(load8(piece(row[t], g, p.g8, tiled)), xg);
        }
    }
    return Rows(j0, seg_sum4(acc, lid, LANES) * (factor * p.unshift));
}

@compute @workgroup_size(256)
fn gemv1(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let rows = gemv1_rows(lid, wid);
    if (lid % LANES == 0u) {
        for (var t = 0u; t < RW; t = t + 1u) {
            let j = rows.j0 + t;
            if (j < p.rows_w) {
                let i = p.row0 + j;
                var v = rows.sums[t];
                if (SCALED == 1u) {
                    v = v * scale[i / 4u][i % 4u];
                }
                out[i] = v;
            }
        }
    }
}
