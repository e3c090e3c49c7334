// The nGPT residual (ngpt.wgsl) formed on the way in to a one-row projection (gemv.wgsl's
// RES, gemv1.wgsl's PRO 1), its bindings, reads and `residual_row`: h is the row bound as
// `x` (vec4s), o and alpha are bound beside it, and workgroup 0 writes the new hidden state
// into `h_next`. Each module puts y where it holds its x (its own `res_put`) and reads its
// res_x.

@group(0) @binding(4) var<storage, read> o: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> alpha: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> h_next: array<vec4<f32>>;

fn res_h(base: u32, e: u32) -> vec4<f32> {
    return x[base + e];
}

fn res_o(base: u32, e: u32) -> vec4<f32> {
    return o[base + e];
}

// residual_norms, with y put through the module's res_put (unnormalised). Unfenced: the
// caller's barrier after y is written to workgroup memory (the projection reads it) comes
// before its next reduction.
fn residual_row(base: u32, n: u32, lid: u32, eps: f32) -> vec3<f32> {
    let f = residual_factors(residual_sums(base, n, lid, false), eps);
    for (var e = lid; e < n; e = e + 256u) {
        res_put(base, e, residual_y(res_h(base, e), res_o(base, e), alpha[e], f.x, f.y));
    }
    return f;
}
