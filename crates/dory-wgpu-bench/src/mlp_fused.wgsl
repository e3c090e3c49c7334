// A decoded row's MLP (m = SwiGLU(gate|up · x), then out = down · m; f16 weights in rows,
// GROUPS workgroups of 8 subgroups, one row of W to a subgroup at a time) run two ways, to
// measure what a kernel of several stages in one dispatch could gain over a dispatch a stage:
// FUSED = 0: one stage a dispatch (STAGE 0 or 1), as the engine runs them;
// FUSED = 1: both stages in one dispatch, the workgroups meeting between them through a
//            counter (grid_barrier.wgsl), each subgroup's first half of its first
//            down row loaded before it waits.
// The shape is fixed (D = 2048, F = 5632): a lane's pieces are named for it.
// Not the engine's kernels (those read W in tiles, with the residual fused): a pair of
// plain kernels against the same pair fused.

override GROUPS: u32;
override FUSED: u32;
override STAGE: u32 = 0u;
// FUSED = 1 with STAGED = 1: after the barrier each workgroup copies m into workgroup
// memory once and its down rows read it there, as a persistent kernel whose m is coherent
// (and so not cached in the SM's L1) would have to.
override STAGED: u32 = 0u;
// The model's shape: x of D, F gate and F up rows.
const D: u32 = 2048u;
const F: u32 = 5632u;

@group(0) @binding(0) var<storage, read> gu: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> down: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> m: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> count: array<atomic<u32>>;

// Piece p (8 weights) against 8 inputs from v (vec4s 2p and 2p + 1).
fn dot8(w: vec4<u32>, a: vec4<f32>, b: vec4<f32>) -> f32 {
    let lo = vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
    let hi = vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w));
    return dot(lo, a) + dot(hi, b);
}

fn dx(w: vec4<u32>, p: u32) -> f32 {
    return dot8(w, x[2u * p], x[2u * p + 1u]);
}

var<workgroup> m_sh: array<vec4<f32>, 1408>; // F / 4

fn m_at(i: u32) -> vec4<f32> {
    if (STAGED == 1u) {
        return m_sh[i];
    }
    return m[i];
}

fn dm(w: vec4<u32>, p: u32) -> f32 {
    return dot8(w, m_at(2u * p), m_at(2u * p + 1u));
}

// Gate row i and up row i against x (D = 2048: 8 pieces a lane each), all 16 of a lane's
// pieces in flight at once (named: an array indexed in a loop went to memory on the H200).
fn glu_out(i: u32, lane: u32) -> f32 {
    let n = D / 8u;
    let g = i * n + lane;
    let u = (F + i) * n + lane;
    let g0 = gu[g];
    let g1 = gu[g + 32u];
    let g2 = gu[g + 64u];
    let g3 = gu[g + 96u];
    let g4 = gu[g + 128u];
    let g5 = gu[g + 160u];
    let g6 = gu[g + 192u];
    let g7 = gu[g + 224u];
    let u0 = gu[u];
    let u1 = gu[u + 32u];
    let u2 = gu[u + 64u];
    let u3 = gu[u + 96u];
    let u4 = gu[u + 128u];
    let u5 = gu[u + 160u];
    let u6 = gu[u + 192u];
    let u7 = gu[u + 224u];
    let a = dx(g0, lane) + dx(g1, lane + 32u) + dx(g2, lane + 64u) + dx(g3, lane + 96u)
        + dx(g4, lane + 128u) + dx(g5, lane + 160u) + dx(g6, lane + 192u) + dx(g7, lane + 224u);
    let b = dx(u0, lane) + dx(u1, lane + 32u) + dx(u2, lane + 64u) + dx(u3, lane + 96u)
        + dx(u4, lane + 128u) + dx(u5, lane + 160u) + dx(u6, lane + 192u) + dx(u7, lane + 224u);
    let gs = subgroupAdd(a);
    let us = subgroupAdd(b);
    return gs / (1.0 + exp(-gs)) * us;
}

// Half a down row (F = 5632: 11 of a lane's 22 pieces), its pieces from p0 on.
struct Half {
    w0: vec4<u32>,
    w1: vec4<u32>,
    w2: vec4<u32>,
    w3: vec4<u32>,
    w4: vec4<u32>,
    w5: vec4<u32>,
    w6: vec4<u32>,
    w7: vec4<u32>,
    w8: vec4<u32>,
    w9: vec4<u32>,
    w10: vec4<u32>,
}

fn half_row(r: u32, p0: u32) -> Half {
    let at = min(r, D - 1u) * (F / 8u) + p0;
    return Half(down[at], down[at + 32u], down[at + 64u], down[at + 96u], down[at + 128u], down[at + 160u],
        down[at + 192u], down[at + 224u], down[at + 256u], down[at + 288u], down[at + 320u]);
}

fn half_dot(h: Half, p0: u32) -> f32 {
    return dm(h.w0, p0) + dm(h.w1, p0 + 32u) + dm(h.w2, p0 + 64u) + dm(h.w3, p0 + 96u) + dm(h.w4, p0 + 128u)
        + dm(h.w5, p0 + 160u) + dm(h.w6, p0 + 192u) + dm(h.w7, p0 + 224u) + dm(h.w8, p0 + 256u)
        + dm(h.w9, p0 + 288u) + dm(h.w10, p0 + 320u);
}

fn gate_up_stage(sg: u32, lane: u32) {
    for (var i = sg; i < F; i = i + 8u * GROUPS) {
        let v = glu_out(i, lane);
        if (lane == 0u) {
            m[i / 4u][i % 4u] = v;
        }
    }
}

// Down's rows, the first one's first half given (loaded early).
fn down_stage(sg: u32, lane: u32, first: Half) {
    var h = first;
    for (var r = sg; r < D; r = r + 8u * GROUPS) {
        if (r != sg) {
            h = half_row(r, lane);
        }
        let second = half_row(r, lane + 352u);
        let s = subgroupAdd(half_dot(h, lane) + half_dot(second, lane + 352u));
        if (lane == 0u) {
            out[r] = s;
        }
    }
}

@compute @workgroup_size(256)
fn peak(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let sg = wid.x * 8u + lid / 32u;
    let lane = lid % 32u;
    if (FUSED == 0u && STAGE == 0u) {
        gate_up_stage(sg, lane);
        return;
    }
    if (FUSED == 0u) {
        down_stage(sg, lane, half_row(sg, lane));
        return;
    }
    gate_up_stage(sg, lane);
    // The first down row's first half in flight while the workgroups meet.
    let first = half_row(sg, lane);
    grid_barrier(lid);
    if (STAGED == 1u) {
        for (var i = lid; i < F / 4u; i = i + 256u) {
            m_sh[i] = m[i];
        }
        workgroupBarrier();
    }
    down_stage(sg, lane, first);
}
