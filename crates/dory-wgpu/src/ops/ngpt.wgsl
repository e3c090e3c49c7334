// The nGPT residual (spec §4) of one row, shared by residual.wgsl and the projections'
// prologues (gemv.wgsl, gemv1.wgsl): y = N(h) + alpha ⊙ (N(o) − N(h)), read through the
// including module's res_h(base, e) and res_o(base, e) (vec4 e of the row at `base`),
// written through res_put(base, e, y); returns (1/‖h‖, 1/‖o‖, 1/‖y‖), the last the final N,
// which the caller applies where it is cheapest. The module binds `alpha`. Every
// invocation of the workgroup (256) must call it.

// y at one vec4 of the row, from h, o, alpha there and the factors 1/‖h‖, 1/‖o‖.
fn residual_y(h: vec4<f32>, o: vec4<f32>, a: vec4<f32>, ih: f32, io: f32) -> vec4<f32> {
    let nh = h * ih;
    return nh + a * (o * io - nh);
}

fn residual_row(base: u32, n: u32, lid: u32, eps: f32) -> vec3<f32> {
    var sq = vec2<f32>(0.0);
    for (var e = lid; e < n; e = e + 256u) {
        let a = res_h(base, e);
        let b = res_o(base, e);
        sq += vec2<f32>(dot(a, a), dot(b, b));
    }
    let sums = seg_sum4(vec4<f32>(sq, 0.0, 0.0), lid, 256u);
    let ih = 1.0 / sqrt(sums.x + eps);
    let io = 1.0 / sqrt(sums.y + eps);
    var t = 0.0;
    for (var e = lid; e < n; e = e + 256u) {
        let y = residual_y(res_h(base, e), res_o(base, e), alpha[e], ih, io);
        res_put(base, e, y);
        t += dot(y, y);
    }
    return vec3<f32>(ih, io, 1.0 / sqrt(seg_sum(t, lid, 256u) + eps));
}
