// The O(1) full layer's device side (spec §6). A sealed layer's landmark state lives in
// one buffer `lm`, laid out as `Landmarks` (nystrom.rs) in this order, m landmarks:
//   keys [K, m, d] · queries [H, m, d] · mu [H, m, m] · shift [H, m] · far_max [H, m] ·
//   far_mass [H, m] · far_values [H, m, d]
// (far_max holds −1e30, not −∞, while the far span is empty: exp then gives 0, never NaN).
//
// `push` absorbs the position leaving the window into every (query head, landmark)'s far
// statistics, rescaling to the new maximum as an online softmax does; `combine_sealed`
// joins attend.wgsl's chunks over the near set with the far part.

// The parameters `p`: o1.rs's `Params` (kernels.rs declares their `struct P`).

@group(0) @binding(0) var<storage, read> kc: array<f32>;
@group(0) @binding(1) var<storage, read> vc: array<f32>;
@group(0) @binding(2) var<storage, read_write> lm: array<f32>;

// combine_sealed: qkvg, gate_scale and z are attention.wgsl's.
@group(0) @binding(6) var<storage, read> part: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> q: array<f32>;

const WG: u32 = 64u;

struct Layout {
    keys: u32,
    queries: u32,
    mu: u32,
    shift: u32,
    far_max: u32,
    far_mass: u32,
    far_values: u32,
}

fn offsets() -> Layout {
    let heads = GROUP * p.kv_heads;
    let keys = 0u;
    let queries = keys + p.kv_heads * p.m * p.d;
    let mu = queries + heads * p.m * p.d;
    let shift = mu + heads * p.m * p.m;
    let far_max = shift + heads * p.m;
    let far_mass = far_max + heads * p.m;
    let far_values = far_mass + heads * p.m;
    return Layout(keys, queries, mu, shift, far_max, far_mass, far_values);
}

var<workgroup> fac: array<vec2<f32>, 32>; // push: per landmark, (old factor, new factor)

// One workgroup per query head a.
@compute @workgroup_size(64)
fn push(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let a = wid.x;
    let c = a / GROUP;
    let d = p.d;
    let kd = p.kv_heads * d;
    let at = offsets();
    let kb = p.slot * kd + c * d;
    if (lid < p.m) {
        let i = a * p.m + lid;
        var x = 0.0;
        for (var e = 0u; e < d; e = e + 1u) {
            x += lm[at.queries + i * d + e] * kc[kb + e];
        }
        x = x * p.scale;
        let old_max = lm[at.far_max + i];
        let top = max(old_max, x);
        let f = vec2<f32>(exp(old_max - top), exp(x - top));
        lm[at.far_max + i] = top;
        lm[at.far_mass + i] = lm[at.far_mass + i] * f.x + f.y;
        fac[lid] = f;
    }
    workgroupBarrier();
    for (var e = lid; e < d; e = e + WG) {
        let v = vc[kb + e];
        for (var b = 0u; b < p.m; b = b + 1u) {
            let t = at.far_values + (a * p.m + b) * d + e;
            lm[t] = lm[t] * fac[b].x + fac[b].y * v;
        }
    }
}

var<workgroup> f_sh: array<f32, 128>;   // [4 heads, m]: landmark scores, then gains
var<workgroup> off_sh: array<f32, 128>; // [4 heads, m]: fmax + far_max − shift
var<workgroup> c_sh: array<f32, 4>;     // per head: the common exponent C
var<workgroup> far_sh: array<f32, 4>;   // per head: the far mass

// The far part of KV head c's four heads (spec §6's attend), when the far span is not
// empty: C = max(the near maximum `top`, fmax + off_b) and the far mass, with the gains
// g_b left in f_sh for the value sums. Every invocation must call it.
struct Far {
    cexp: vec4<f32>,
    mass: vec4<f32>,
}

// The landmark scores f_i = λ q_a·k̃_{c,i} of KV head c's four heads, then into f_sh the
// gains u_b = Σ_i e^{f_i − fmax} mu_a[i][b] (rectified), and into off_sh each landmark's
// offset fmax + off_{a,b}. Every invocation must call it.
fn landmark_gains(lid: u32, c: u32) {
    let d = p.d;
    let m = p.m;
    let at = offsets();
    for (var idx = lid; idx < GROUP * m; idx = idx + WG) {
        let a = GROUP * c + idx / m;
        let i = idx % m;
        var s = 0.0;
        for (var e = 0u; e < d; e = e + 1u) {
            s += q[a * d + e] * lm[at.keys + (c * m + i) * d + e];
        }
        f_sh[idx] = s * p.scale;
    }
    workgroupBarrier();
    var u: array<f32, 2>;
    for (var t = 0u; t < 2u; t = t + 1u) {
        let idx = lid + t * WG;
        if (idx < GROUP * m) {
            let h = idx / m;
            let b = idx % m;
            let a = GROUP * c + h;
            var fmax = -3.0e38;
            for (var i = 0u; i < m; i = i + 1u) {
                fmax = max(fmax, f_sh[h * m + i]);
            }
            var g = 0.0;
            for (var i = 0u; i < m; i = i + 1u) {
                g += exp(f_sh[h * m + i] - fmax) * lm[at.mu + (a * m + i) * m + b];
            }
            if (p.rect != 0u) {
                g = max(g, 0.0);
            }
            u[t] = g;
            off_sh[idx] = fmax + lm[at.far_max + a * m + b] - lm[at.shift + a * m + b];
        }
    }
    workgroupBarrier();
    for (var t = 0u; t < 2u; t = t + 1u) {
        let idx = lid + t * WG;
        if (idx < GROUP * m) {
            f_sh[idx] = u[t];
        }
    }
    workgroupBarrier();
}

fn far_part(lid: u32, c: u32, top: vec4<f32>) -> Far {
    let m = p.m;
    let at = offsets();
    landmark_gains(lid, c);
    // Per head: C = max(near max, max_b off_b), the far mass, and the gains
    // g_b = u_b e^{off_b − C} (all 0 when the mass is negative; C is kept).
    if (lid < GROUP) {
        let h = lid;
        let a = GROUP * c + h;
        var cx = top[h];
        for (var b = 0u; b < m; b = b + 1u) {
            cx = max(cx, off_sh[h * m + b]);
        }
        var mass = 0.0;
        for (var b = 0u; b < m; b = b + 1u) {
            mass += f_sh[h * m + b] * exp(off_sh[h * m + b] - cx) * lm[at.far_mass + a * m + b];
        }
        c_sh[h] = cx;
        far_sh[h] = mass;
    }
    workgroupBarrier();
    for (var t = 0u; t < 2u; t = t + 1u) {
        let idx = lid + t * WG;
        if (idx < GROUP * m) {
            let h = idx / m;
            var g = f_sh[idx] * exp(off_sh[idx] - c_sh[h]);
            if (far_sh[h] < 0.0) {
                g = 0.0;
            }
            f_sh[idx] = g;
        }
    }
    workgroupBarrier();
    let cexp = vec4<f32>(c_sh[0], c_sh[1], c_sh[2], c_sh[3]);
    return Far(cexp, max(vec4<f32>(far_sh[0], far_sh[1], far_sh[2], far_sh[3]), vec4<f32>(0.0)));
}

// One workgroup per KV head (one row: a sealed layer decodes row by row).
@compute @workgroup_size(64)
fn combine_sealed(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let c = wid.x;
    let d = p.d;
    let m = p.m;
    let at = offsets();
    let first = c * p.chunks;
    var top = vec4<f32>(-3.0e38);
    for (var ch = 0u; ch < p.chunks; ch = ch + 1u) {
        top = max(top, part[(first + ch) * (2u + d)]);
    }
    var cexp = top;
    var far = vec4<f32>(0.0);
    if (p.far != 0u) {
        let f = far_part(lid, c, top);
        cexp = f.cexp;
        far = f.mass;
    }
    var sum = far;
    for (var ch = 0u; ch < p.chunks; ch = ch + 1u) {
        let o = (first + ch) * (2u + d);
        sum += part[o + 1u] * exp(part[o] - cexp);
    }
    let inv = 1.0 / max(sum, vec4<f32>(1.0e-30));
    for (var dim = lid; dim < d; dim = dim + WG) {
        var acc = vec4<f32>(0.0);
        for (var ch = 0u; ch < p.chunks; ch = ch + 1u) {
            let o = (first + ch) * (2u + d);
            acc += part[o + 2u + dim] * exp(part[o] - cexp);
        }
        for (var h = 0u; h < GROUP; h = h + 1u) {
            let a = GROUP * c + h;
            var zv = acc[h];
            if (p.far != 0u) {
                for (var b = 0u; b < m; b = b + 1u) {
                    zv += f_sh[h * m + b] * lm[at.far_values + (a * m + b) * d + dim];
                }
            }
            acc[h] = zv * inv[h];
        }
        gate_into_z(0u, c, p.kv_heads, d, dim, acc);
    }
}
