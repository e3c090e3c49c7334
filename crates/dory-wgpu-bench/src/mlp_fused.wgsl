// A decoded row's MLP (m = SwiGLU(gate|up · x), then out = down · m; f16 weights in rows,
// GROUPS workgroups of 8 subgroups, one row of W to a subgroup at a time) run two ways, to
// measure what a kernel of several stages in one dispatch could gain over a dispatch a stage:
// FUSED = 0: one stage a dispatch (STAGE 0 or 1), as the engine runs them;
// FUSED = 1: both stages in one dispatch, the workgroups meeting between them through a
//            counter (grid_sync.wgsl's barrier), each subgroup's first pieces of its first
//            down row loaded before it waits.
// Not the engine's kernels (those read W in tiles, with the residual fused): a pair of
// plain kernels against the same pair fused.

override GROUPS: u32;
override FUSED: u32;
override STAGE: u32 = 0u;
// The model's shape: x of D, F gate and F up rows.
override D: u32 = 2048u;
override F: u32 = 5632u;

@group(0) @binding(0) var<storage, read> gu: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> down: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> m: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> count: array<atomic<u32>>;

// Pieces of 8 halves each lane has in flight.
const AHEAD: u32 = 8u;

// Piece p (8 weights) against 8 inputs from v (vec4s 2p and 2p + 1).
fn dot8(w: vec4<u32>, a: vec4<f32>, b: vec4<f32>) -> f32 {
    let lo = vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
    let hi = vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w));
    return dot(lo, a) + dot(hi, b);
}

// Row r of gate|up against x, this lane's share (lane, lane + 32, …), AHEAD pieces in flight.
fn gu_row(r: u32, lane: u32) -> f32 {
    let n = D / 8u;
    var acc = 0.0;
    for (var p0 = lane; p0 < n; p0 = p0 + 32u * AHEAD) {
        var w: array<vec4<u32>, 8>;
        for (var k = 0u; k < AHEAD; k = k + 1u) {
            w[k] = gu[r * n + min(p0 + 32u * k, n - 1u)];
        }
        for (var k = 0u; k < AHEAD; k = k + 1u) {
            let p = p0 + 32u * k;
            if (p < n) {
                acc += dot8(w[k], x[2u * p], x[2u * p + 1u]);
            }
        }
    }
    return subgroupAdd(acc);
}

// Row r of down against m, the first AHEAD pieces given (loaded early).
fn down_row(r: u32, lane: u32, first: array<vec4<u32>, 8>) -> f32 {
    let n = F / 8u;
    var acc = 0.0;
    var w = first;
    for (var p0 = lane; p0 < n; p0 = p0 + 32u * AHEAD) {
        if (p0 != lane) {
            for (var k = 0u; k < AHEAD; k = k + 1u) {
                w[k] = down[r * n + min(p0 + 32u * k, n - 1u)];
            }
        }
        for (var k = 0u; k < AHEAD; k = k + 1u) {
            let p = p0 + 32u * k;
            if (p < n) {
                acc += dot8(w[k], m[2u * p], m[2u * p + 1u]);
            }
        }
    }
    return subgroupAdd(acc);
}

fn first_pieces(r: u32, lane: u32) -> array<vec4<u32>, 8> {
    let n = F / 8u;
    var w: array<vec4<u32>, 8>;
    for (var k = 0u; k < AHEAD; k = k + 1u) {
        w[k] = down[min(r, D - 1u) * n + min(lane + 32u * k, n - 1u)];
    }
    return w;
}

fn gate_up_stage(sg: u32, lane: u32) {
    // Four rows of m (a vec4) to a subgroup at a time.
    for (var i = sg; i < F / 4u; i = i + 8u * GROUPS) {
        var v = vec4<f32>(0.0);
        for (var c = 0u; c < 4u; c = c + 1u) {
            let g = gu_row(4u * i + c, lane);
            let u = gu_row(F + 4u * i + c, lane);
            v[c] = g / (1.0 + exp(-g)) * u;
        }
        if (lane == 0u) {
            m[i] = v;
        }
    }
}

fn down_stage(sg: u32, lane: u32, first: array<vec4<u32>, 8>) {
    var w = first;
    for (var r = sg; r < D; r = r + 8u * GROUPS) {
        if (r != sg) {
            w = first_pieces(r, lane);
        }
        let s = down_row(r, lane, w);
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
        down_stage(sg, lane, first_pieces(sg, lane));
        return;
    }
    gate_up_stage(sg, lane);
    // The first down row's first pieces in flight while the workgroups meet.
    let first = first_pieces(sg, lane);
    storageBarrier();
    if (lid == 0u) {
        let end = (atomicAdd(&count[0], 1u) / GROUPS + 1u) * GROUPS;
        for (var polls = 0u; polls < (1u << 22u); polls = polls + 1u) {
            if (atomicLoad(&count[0]) >= end) {
                break;
            }
        }
    }
    storageBarrier();
    down_stage(sg, lane, first);
}
