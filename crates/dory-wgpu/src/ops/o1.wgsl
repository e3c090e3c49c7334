// The O(1) full layer's device side (spec §6). A sealed layer's landmark state lives in
// one buffer `lm`, laid out as `Landmarks` (nystrom.rs) in this order, m landmarks:
//   keys [K, m, d] · queries [H, m, d] · mu [H, m, m] · shift [H, m] · far_max [H, m] ·
//   far_mass [H, m] · far_values [H, m, d]
// (far_max holds −1e30, not −∞, while the far span is empty: exp then gives 0, never NaN).
//
// `push` absorbs the position leaving the window into every (query head, landmark)'s far
// statistics, rescaling to the new maximum as an online softmax does; `combine_sealed`
// joins attend.wgsl's chunks over the near set (as combine.wgsl, through chunks.wgsl) with
// the far part.

// The parameters `p`: o1.rs's `Params` (kernels.rs declares their `struct P`).

@group(0) @binding(0) var<storage, read> kc: array<f32>;
@group(0) @binding(1) var<storage, read> vc: array<f32>;
@group(0) @binding(2) var<storage, read_write> lm: array<f32>;

// combine_sealed: qkvg, gate_scale and z are attention.wgsl's.
@group(0) @binding(6) var<storage, read> part: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> q: array<f32>;

// Invocations of a workgroup, and of a landmark's run (m ≤ 32: WG / 32).
const WG: u32 = 256u;
const RUN: u32 = 8u;

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

// Landmark i's score λ x · k of query head a's landmark query x (k: the key at kb), by
// its run of RUN invocations (i = lid / RUN; 0 past m), the dims cut between them, so that
// every landmark's loads are in flight at once. Every invocation must call it.
fn landmark_score(lid: u32, xa: u32, kb: u32) -> f32 {
    let i = lid / RUN;
    var x = 0.0;
    if (i < p.m) {
        let row = xa + i * p.d;
        for (var e = lid % RUN; e < p.d; e = e + RUN) {
            x += lm[row + e] * kc[kb + e];
        }
    }
    return seg_sum(x, lid, RUN) * p.scale;
}

// One workgroup per query head a.
@compute @workgroup_size(256)
fn push(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let a = wid.x;
    let c = a / GROUP;
    let d = p.d;
    let m = p.m;
    let at = offsets();
    let kb = p.slot * p.kv_heads * d + c * d;
    let x = landmark_score(lid, at.queries + a * m * d, kb);
    let i = lid / RUN;
    if (i < m && lid % RUN == 0u) {
        let j = a * m + i;
        let old_max = lm[at.far_max + j];
        let top = max(old_max, x);
        let f = vec2<f32>(exp(old_max - top), exp(x - top));
        lm[at.far_max + j] = top;
        lm[at.far_mass + j] = lm[at.far_mass + j] * f.x + f.y;
        fac[i] = f;
    }
    workgroupBarrier();
    for (var t = lid; t < m * d; t = t + WG) {
        let b = t / d;
        let e = t % d;
        let at_v = at.far_values + (a * m + b) * d + e;
        lm[at_v] = lm[at_v] * fac[b].x + fac[b].y * vc[kb + e];
    }
}

var<workgroup> w_sh: array<f32, 32>;   // per landmark: e^{f_i − fmax}, then the gain g_b
var<workgroup> u_sh: array<f32, 256>;  // the gains' partial sums [8 groups][32 landmarks]
var<workgroup> v_sh: array<f32, 256>;  // the value sums' groups [groups][d]

// The far part of query head a of KV head c (spec §6's attend), when the far span is not
// empty: C = max(the near maximum `top`, max_b fmax + off_b) and the far mass, with the
// gains g_b in w_sh for the value sums (0 where the mass is negative). The landmark scores
// f_i = λ q_a·k̃_{c,i}, then u_b = Σ_i e^{f_i − fmax} mu_a[i][b] (rectified), each stage's
// loads all in flight at once. Every invocation must call it.
fn far_part(lid: u32, a: u32, top: f32) -> vec2<f32> {
    let c = a / GROUP;
    let d = p.d;
    let m = p.m;
    let at = offsets();
    let i = lid / RUN;
    var f = 0.0;
    if (i < m) {
        let row = at.keys + (c * m + i) * d;
        for (var e = lid % RUN; e < d; e = e + RUN) {
            f += q[a * d + e] * lm[row + e];
        }
    }
    f = seg_sum(f, lid, RUN) * p.scale;
    let fmax = seg_max(select(-3.0e38, f, i < m), lid, WG);
    if (i < m && lid % RUN == 0u) {
        w_sh[i] = exp(f - fmax);
    }
    workgroupBarrier();
    // Landmark b = lid % 32's gain, over the landmarks i ≡ lid / 32 (mod 8).
    let b = lid % 32u;
    var u = 0.0;
    if (b < m) {
        for (var j = lid / 32u; j < m; j = j + 8u) {
            u += w_sh[j] * lm[at.mu + (a * m + j) * m + b];
        }
    }
    u_sh[lid] = u;
    workgroupBarrier();
    var off = -3.0e38;
    if (lid < m) {
        u = u_sh[lid];
        for (var g = 1u; g < 8u; g = g + 1u) {
            u += u_sh[g * 32u + lid];
        }
        if (p.rect != 0u) {
            u = max(u, 0.0);
        }
        off = fmax + lm[at.far_max + a * m + lid] - lm[at.shift + a * m + lid];
    }
    let cexp = max(top, seg_max(off, lid, WG));
    var gain = 0.0;
    if (lid < m) {
        gain = u * exp(off - cexp);
    }
    let mass = seg_sum(gain * select(0.0, lm[at.far_mass + a * m + min(lid, m - 1u)], lid < m), lid, WG);
    if (lid < m) {
        w_sh[lid] = select(gain, 0.0, mass < 0.0);
    }
    workgroupBarrier();
    return vec2<f32>(cexp, max(mass, 0.0));
}

// chunks.wgsl's hook.
fn join_part(at: u32) -> vec4<f32> {
    return part[at];
}

// Per group of d invocations: its run's near maximum and sum (query head h's).
var<workgroup> run_sh: array<vec2<f32>, 256>;

// One workgroup per query head (one row: a sealed layer decodes row by row): the near
// set's chunks, which attend.wgsl left in `part`, joined with the far part, into z. Each
// group of d invocations folds every groups-th chunk's maximum, sum and value sums in one
// walk (chunks.wgsl's online softmax, for the KV head's four query heads, of which this
// workgroup keeps head h's), so that no load waits on a reduction; the far part needs only
// the near maximum, and the groups' runs are rescaled to the joint one after it.
@compute @workgroup_size(256)
fn combine_sealed(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let a = wid.x;
    let c = a / GROUP;
    let h = a % GROUP;
    let d = p.d;
    let m = p.m;
    let at = offsets();
    let groups = WG / d;
    let g = lid / d;
    let dim = lid % d;
    var run = Joined(vec4<f32>(-3.0e38), vec4<f32>(0.0), vec4<f32>(0.0));
    if (g < groups) {
        let first = c * p.chunks * (2u + d);
        for (var ch = g; ch < p.chunks; ch = ch + 4u * groups) {
            run = join_four(run, first, ch, groups, p.chunks, d, dim);
        }
        if (dim == 0u) {
            run_sh[g] = vec2<f32>(run.top[h], run.sum[h]);
        }
    }
    workgroupBarrier();
    var top = -3.0e38;
    for (var i = 0u; i < groups; i = i + 1u) {
        top = max(top, run_sh[i].x);
    }
    var cf = vec2<f32>(top, 0.0);
    if (p.far != 0u) {
        cf = far_part(lid, a, top);
    }
    let cexp = cf.x;
    var near = 0.0;
    for (var i = 0u; i < groups; i = i + 1u) {
        near += run_sh[i].y * exp(run_sh[i].x - cexp);
    }
    let inv = 1.0 / max(cf.y + near, 1.0e-30);
    // Dim `dim` of the value sums: the group's chunks, and its landmarks ≡ g (mod groups).
    var acc = 0.0;
    if (g < groups) {
        acc = run.acc[h] * exp(run.top[h] - cexp);
        if (p.far != 0u) {
            for (var b = g; b < m; b = b + groups) {
                acc += w_sh[b] * lm[at.far_values + (a * m + b) * d + dim];
            }
        }
    }
    v_sh[lid] = acc;
    workgroupBarrier();
    if (lid < d) {
        for (var k = 1u; k < groups; k = k + 1u) {
            acc += v_sh[k * d + lid];
        }
        gate_one(0u, c, h, p.kv_heads, d, lid, acc * inv);
    }
}
