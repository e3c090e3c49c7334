// SwiGLU of four inputs of a row, formed where a projection reads its input (gemv.wgsl's
// down projection, split.wgsl before the tensor cores): x_e = silu(g_e · gs_e) · (u_e ·
// us_e) from gu = [rows, k | k], which the module binds as `x` (vec4s), and
// [gate_scale | up_scale], bound as `scale`; k4 = k / 4.
fn swiglu4(row: u32, e: u32, k4: u32) -> vec4<f32> {
    let a = x[2u * row * k4 + e] * scale[e];
    let u = x[2u * row * k4 + k4 + e] * scale[k4 + e];
    return a * (1.0 / (1.0 + exp(-a))) * u;
}
