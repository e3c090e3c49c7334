// The chunks of attend.wgsl joined (the split-key softmax): for each of the four query
// heads of a KV head, M = max of the chunks' maxima, Σ = Σ l e^{m − M}, out = Σ acc e^{m − M}
// / Σ, then the gate: z ← out ⊙ σ(yg ⊙ gate_scale). One workgroup per (KV head, row, slice
// of `slice` dims): a decoded row deep in its context has up to a few hundred chunks, and
// a workgroup per KV head alone would walk them in a long chain of loads on a few of the
// GPU's cores. It sits on a decoded token's chain, so every load of its first round (the
// gates, a chunk's maximum and sum an invocation, four chunks' value sums) is issued before
// the first reduction waits.

// The parameters `p`: attend.rs's `CombineParams` (kernels.rs declares their `struct P`).

// qkvg, gate_scale and z are attention.wgsl's.
@group(0) @binding(6) var<storage, read> part: array<vec4<f32>>;

const WG: u32 = 256u;
// Below every maximum a chunk leaves (attend.wgsl's NONE for an empty one).
const LOW: f32 = -3.0e38;

// Four chunks' value sums at dim `dim` (from chunk ch, every `step`), with their maxima
// (named, not arrays: the H200's driver keeps an array indexed in a loop in memory).
struct Sums {
    a0: vec4<f32>,
    a1: vec4<f32>,
    a2: vec4<f32>,
    a3: vec4<f32>,
    m0: vec4<f32>,
    m1: vec4<f32>,
    m2: vec4<f32>,
    m3: vec4<f32>,
}

// Chunk k's value sum at dim `dim` (0 past the last).
fn sum_at(first: u32, k: u32, dim: u32) -> vec4<f32> {
    if (k >= p.chunks) {
        return vec4<f32>(0.0);
    }
    return part[(first + k) * (2u + p.d) + 2u + dim];
}

// Chunk k's maximum (LOW past the last).
fn max_at(first: u32, k: u32) -> vec4<f32> {
    if (k >= p.chunks) {
        return vec4<f32>(LOW);
    }
    return part[(first + k) * (2u + p.d)];
}

fn load_sums(first: u32, ch: u32, step: u32, dim: u32) -> Sums {
    return Sums(sum_at(first, ch, dim), sum_at(first, ch + step, dim), sum_at(first, ch + 2u * step, dim),
        sum_at(first, ch + 3u * step, dim), max_at(first, ch), max_at(first, ch + step),
        max_at(first, ch + 2u * step), max_at(first, ch + 3u * step));
}

// Σ acc e^{m − M} of the four (a chunk past the last weighs 0: its acc is 0).
fn weigh(s: Sums, top: vec4<f32>) -> vec4<f32> {
    return (s.a0 * exp(s.m0 - top) + s.a1 * exp(s.m1 - top)) + (s.a2 * exp(s.m2 - top) + s.a3 * exp(s.m3 - top));
}

// The maxima and sums one chunk per invocation; the value sums of the slice's dims ×
// groups of chunks, four chunks at a time.
@compute @workgroup_size(256)
fn combine(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let c = wid.x;
    let r = wid.y + p.row0;
    let d = p.d;
    let first = (r * p.kv_heads + c) * p.chunks;
    let slice = p.slice;
    let groups = WG / slice;
    let group = lid / slice;
    let dim = wid.z * slice + lid % slice;
    var g = vec4<f32>(0.0);
    var sums: Sums;
    if (group < groups) {
        sums = load_sums(first, group, groups, dim);
        if (group == 0u) {
            g = gates(r, c, p.kv_heads, d, dim);
        }
    }
    var m = vec4<f32>(LOW);
    var l = vec4<f32>(0.0);
    if (lid < p.chunks) {
        let at = (first + lid) * (2u + d);
        m = part[at];
        l = part[at + 1u];
    }
    var top = m;
    for (var ch = lid + WG; ch < p.chunks; ch = ch + WG) {
        top = max(top, part[(first + ch) * (2u + d)]);
    }
    top = seg_max4(top, lid, WG);
    var sum = l * exp(m - top);
    for (var ch = lid + WG; ch < p.chunks; ch = ch + WG) {
        let at = (first + ch) * (2u + d);
        sum += part[at + 1u] * exp(part[at] - top);
    }
    sum = seg_sum4(sum, lid, WG);
    var acc = vec4<f32>(0.0);
    if (group < groups) {
        acc = weigh(sums, top);
        for (var ch = group + 4u * groups; ch < p.chunks; ch = ch + 4u * groups) {
            acc += weigh(load_sums(first, ch, groups, dim), top);
        }
    }
    acc = join_groups(acc, lid, slice);
    if (group == 0u) {
        gated_into_z(r, c, p.kv_heads, d, dim, acc / sum, g);
    }
}
