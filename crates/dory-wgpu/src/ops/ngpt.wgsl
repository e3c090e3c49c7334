// The nGPT residual (spec §4) of one row, shared by residual.wgsl, mix.wgsl and the
// projections' prologues (gemv.wgsl, gemv1.wgsl): y = N(h) + alpha ⊙ (N(o) − N(h)), read
// through the including module's res_h(base, e), res_o(base, e) and res_x(base, e) (vec4 e
// of the row at `base`); `residual_norms` returns (1/‖h‖, 1/‖o‖, 1/‖y‖), the last the final
// N, which the caller applies where it is cheapest. The module binds `alpha`. Every
// invocation of the workgroup (256) must call it.

// y at one vec4 of the row, from h, o, alpha there and the factors 1/‖h‖, 1/‖o‖.
fn residual_y(h: vec4<f32>, o: vec4<f32>, a: vec4<f32>, ih: f32, io: f32) -> vec4<f32> {
    let nh = h * ih;
    return nh + a * (o * io - nh);
}

// The factors 1/‖h‖, 1/‖o‖ and 1/‖y‖ of the row at `base` (residual_sums, then
// residual_factors); the reduction is fenced, so that the caller may reduce again at once.
fn residual_norms(base: u32, n: u32, lid: u32, eps: f32) -> vec3<f32> {
    return residual_factors(residual_sums(base, n, lid, true), eps);
}

// The sums the residual's factors come from, from one walk of its loads (h, o and alpha
// together) and one reduction after it: a = (Σh², Σo², Σ((1 − α)h)², Σ(αo)²), b.x =
// Σ(1 − α)α h o. ‖y‖² is formed from the sums it expands into, y = (1 − α) ⊙ h/‖h‖ +
// α ⊙ o/‖o‖ giving ‖y‖² = Σ((1 − α)h)²/‖h‖² + 2 Σ(1 − α)α h o/(‖h‖‖o‖) + Σ(αo)²/‖o‖², so
// that no load waits on a reduction (a second walk over y had loaded alpha, and reduced
// again, after the first reduction). b.yzw = (Σ(1 − α)h·x, Σαo·x, Σx²) for the module's
// res_x, the token's input where the loop's edge follows the residual (gemv.wgsl's EDGE;
// zero elsewhere), so that ‖N(y) + x‖ needs no reduction of its own. Unfenced, the
// reduction leaves its workgroup memory to be read by others until the caller's next
// barrier: the caller must pass one before it reduces again.
fn residual_sums(base: u32, n: u32, lid: u32, fenced: bool) -> Pair {
    var sq = vec4<f32>(0.0);
    var more = vec4<f32>(0.0);
    for (var e = lid; e < n; e = e + 256u) {
        let a = res_h(base, e);
        let b = res_o(base, e);
        let xv = res_x(base, e);
        let al = alpha[e];
        let u = (1.0 - al) * a;
        let v = al * b;
        sq += vec4<f32>(dot(a, a), dot(b, b), dot(u, u), dot(v, v));
        more += vec4<f32>(dot(u, v), dot(u, xv), dot(v, xv), dot(xv, xv));
    }
    return seg_sum_pair(sq, more, lid, 256u, fenced);
}

// The residual that closes a pass and the loop's edge after it (spec §4; mix.wgsl's mode
// 1): h' = N(y), s ← N(h'), h ← N(s + x), from residual_sums' with x the token's input:
// (1/‖h‖, 1/‖o‖, c, 1/‖s + x‖), s = y · c. With h' = y · f.z (f.z = 1/√(‖y‖² + ε)), q =
// Σh'² = ‖y‖²/(‖y‖² + ε) = 1 − ε f.z², so s = N(h') = y · c with c = f.z/√(q + ε), ‖s‖² =
// q/(q + ε), and ‖s + x‖² = ‖s‖² + 2c y·x + Σx², y·x from the sums kept of x: one
// reduction for both norms.
fn close_factors(sums: Pair, eps: f32) -> vec4<f32> {
    let f = residual_factors(sums, eps);
    let q = 1.0 - eps * f.z * f.z;
    let c = f.z / sqrt(q + eps);
    let yx = sums.b.y * f.x + sums.b.z * f.y;
    let sx = q / (q + eps) + 2.0 * c * yx + sums.b.w;
    return vec4<f32>(f.xy, c, 1.0 / sqrt(max(sx, 0.0) + eps));
}

// (1/‖h‖, 1/‖o‖, 1/‖y‖) from residual_sums'.
fn residual_factors(sums: Pair, eps: f32) -> vec3<f32> {
    let s = sums.a;
    let ih = 1.0 / sqrt(s.x + eps);
    let io = 1.0 / sqrt(s.y + eps);
    let yy = s.z * ih * ih + 2.0 * sums.b.x * ih * io + s.w * io * io;
    return vec3<f32>(ih, io, 1.0 / sqrt(max(yy, 0.0) + eps));
}
