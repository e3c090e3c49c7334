// gemv.wgsl's hooks in the plain projections: no down projection in the same dispatch,
// gate|up's SwiGLU written to out, nothing before the prologue.

fn mlp_down() -> bool {
    return false;
}

fn mlp_x(at: u32) -> vec4<f32> {
    return vec4<f32>(0.0);
}

fn mlp_w8(g: u32) -> W8 {
    return W8(vec4<f32>(0.0), vec4<f32>(0.0));
}

// Whether x is formed already (never: each workgroup forms its own).
fn mlp_prologue(lid: u32) -> bool {
    return false;
}

fn glu_put(at: u32, v: f32) {
    out[p.yr0 * p.n + at] = v;
}
