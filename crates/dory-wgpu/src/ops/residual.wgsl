// The nGPT residual (spec §4): h ← N(N(h) + alpha ⊙ (N(o) − N(h))), one workgroup per row;
// `residual_split` also cuts the new h into f16 parts for the tensor-core GEMM that reads
// it next (parts.wgsl), which spares that GEMM its split.

// The parameters `p`: residual.rs's `Params` (kernels.rs declares their `struct P`).

@group(0) @binding(0) var<storage, read_write> h: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> o: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> alpha: array<vec4<f32>>;
// residual_split: the parts and the rows' 1/s.
@group(0) @binding(3) var<storage, read_write> xa: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read_write> xinv: array<f32>;

// No input joins the residual here.
fn res_x(base: u32, e: u32) -> vec4<f32> {
    return vec4<f32>(0.0);
}

@compute @workgroup_size(256)
fn residual(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let n = p.d / 4u;
    residual_in_place((wid.x + p.row0) * n, n, lid, p.eps);
}

@compute @workgroup_size(256)
fn residual_split(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let n = p.d / 4u;
    let row = wid.x + p.row0;
    let base = row * n;
    let f = residual_norms(base, n, lid, p.eps);
    // The new h is a unit row, every |y_i| ≤ 1, so its parts take the fixed scale of a unit
    // row (parts.wgsl) and need no maximum: each value is cut as it is written.
    let s = ldexp(1.0, 13 - UNIT_EXP);
    for (var i = lid; i < p.k16 / 4u; i = i + 256u) {
        var v = vec4<f32>(0.0);
        if (i < n) {
            let y = residual_y(h[base + i], o[base + i], alpha[i], f.x, f.y) * f.z;
            h[base + i] = y;
            v = y * s;
        }
        put_parts(row, i, v, p.k16, p.lo);
    }
    if (lid == 0u) {
        put_inverse(row, UNIT_EXP);
    }
}
