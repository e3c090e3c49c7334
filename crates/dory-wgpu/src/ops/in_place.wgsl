// The nGPT residual (ngpt.wgsl) run in place on the hidden state, and its reads:
// residual.wgsl and mix.wgsl, which bind `h` and `o` under those names (and each its
// res_x).

// h ← N(y) over the row at `base`; every invocation of the workgroup (256) must call it.
// Each invocation writes the part of the row it read, and may read it back after.
fn residual_in_place(base: u32, n: u32, lid: u32, eps: f32) {
    let f = residual_norms(base, n, lid, eps);
    for (var e = lid; e < n; e = e + 256u) {
        h[base + e] = residual_y(h[base + e], o[base + e], alpha[e], f.x, f.y) * f.z;
    }
}

fn res_h(base: u32, e: u32) -> vec4<f32> {
    return h[base + e];
}

fn res_o(base: u32, e: u32) -> vec4<f32> {
    return o[base + e];
}
