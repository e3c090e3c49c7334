// The loop's edges (spec §4–§5, the seed's mix modes), one workgroup per row. x is the
// token's input, s the state between passes, h the hidden state; N(v) = v / √(Σv² + ε).
//   0 enter:    s ← x; h ← N(s + x)        1 between: s ← N(h); h ← N(s + x)
//   2 leave:    h ← N(h)                   3 read-out: s ← N(h); h ← s
//   4 resume:   h ← N(s + x)
// `residual_mix` first closes the pass with the nGPT residual (residual.wgsl's, ngpt.wgsl):
// h ← N(N(h) + alpha ⊙ (N(o) − N(h))), then the edge, in one dispatch (between passes, in
// one reduction: ngpt.wgsl's close_factors).

// The parameters `p`: mix.rs's `Params` (kernels.rs declares their `struct P`).

@group(0) @binding(0) var<storage, read_write> h: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> s: array<vec4<f32>>;
// residual_mix only: the sub-layer output and the residual's alpha.
@group(0) @binding(3) var<storage, read> o: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> alpha: array<vec4<f32>>;

const WG: u32 = 256u;

fn inv_norm(sq: f32, lid: u32) -> f32 {
    return 1.0 / sqrt(seg_sum(sq, lid, WG) + p.eps);
}

// h ← N(s + x) over the row at `base`.
fn enter_from_state(base: u32, n: u32, lid: u32) {
    var sq = 0.0;
    for (var e = lid; e < n; e = e + WG) {
        let y = s[base + e] + x[base + e];
        h[base + e] = y;
        sq += dot(y, y);
    }
    let r = inv_norm(sq, lid);
    for (var e = lid; e < n; e = e + WG) {
        h[base + e] = h[base + e] * r;
    }
}

@compute @workgroup_size(256)
fn mix(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let n = p.d / 4u;
    mix_row((wid.x + p.row0) * n, n, lid);
}

// The token's input, which joins the residual's sums where the edge between passes follows
// it (ngpt.wgsl's close_factors).
fn res_x(base: u32, e: u32) -> vec4<f32> {
    if (p.mode == 1u) {
        return x[base + e];
    }
    return vec4<f32>(0.0);
}

@compute @workgroup_size(256)
fn residual_mix(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let n = p.d / 4u;
    let base = (wid.x + p.row0) * n;
    if (p.mode == 1u) {
        // Between passes: both norms from the residual's one reduction, one walk after it.
        let f = close_factors(residual_sums(base, n, lid, false), p.eps);
        for (var e = lid; e < n; e = e + WG) {
            let sv = residual_y(h[base + e], o[base + e], alpha[e], f.x, f.y) * f.z;
            s[base + e] = sv;
            h[base + e] = (sv + x[base + e]) * f.w;
        }
        return;
    }
    residual_in_place(base, n, lid, p.eps);
    mix_row(base, n, lid);
}

// The edge p.mode over the row at `base`.
fn mix_row(base: u32, n: u32, lid: u32) {
    if (p.mode == 0u) {
        for (var e = lid; e < n; e = e + WG) {
            s[base + e] = x[base + e];
        }
        enter_from_state(base, n, lid);
        return;
    }
    if (p.mode == 4u) {
        enter_from_state(base, n, lid);
        return;
    }
    var sq = 0.0;
    for (var e = lid; e < n; e = e + WG) {
        let v = h[base + e];
        sq += dot(v, v);
    }
    let r = inv_norm(sq, lid);
    for (var e = lid; e < n; e = e + WG) {
        let u = h[base + e] * r;
        h[base + e] = u;
        if (p.mode != 2u) {
            s[base + e] = u;
        }
    }
    if (p.mode == 1u) {
        enter_from_state(base, n, lid);
    }
}
