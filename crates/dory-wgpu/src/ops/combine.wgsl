// The chunks of attend.wgsl joined (the split-key softmax): for each of the four query
// heads of a KV head, M = max of the chunks' maxima, Σ = Σ l e^{m − M}, out = Σ acc e^{m − M}
// / Σ, then the gate: z ← out ⊙ σ(yg ⊙ gate_scale). One workgroup per (KV head, row, slice
// of `slice` dims): a decoded row deep in its context has up to a few hundred chunks, and
// a workgroup per KV head alone would walk them in a long chain of loads on a few of the
// GPU's cores.

// The parameters `p`: attend.rs's `CombineParams` (kernels.rs declares their `struct P`).

// qkvg, gate_scale and z are attention.wgsl's.
@group(0) @binding(6) var<storage, read> part: array<vec4<f32>>;

const WG: u32 = 256u;

// Chunk ch's value sums at dim `dim`, and its maxima (for the weight e^{m − M}).
struct Sums {
    acc: vec4<f32>,
    m: vec4<f32>,
}

fn sums_at(first: u32, ch: u32, dim: u32) -> Sums {
    let at = (first + min(ch, p.chunks - 1u)) * (2u + p.d);
    return Sums(part[at + 2u + dim], part[at]);
}

fn weighed(s: Sums, top: vec4<f32>) -> vec4<f32> {
    return s.acc * exp(s.m - top);
}

// Everything an invocation reads first is loaded before the first reduction waits: its
// gates, its chunk's maximum and sum (one chunk per invocation), and the value sums (with
// their chunks' maxima) of its group's first four chunks, which for a decoded row at a few
// thousand keys are all or most of them; the rest follow four at a time.
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
    if (group == 0u) {
        g = gates(r, c, p.kv_heads, d, dim);
    }
    let own = (first + min(lid, p.chunks - 1u)) * (2u + d);
    let m0 = part[own];
    let l0 = part[own + 1u];
    let s0 = sums_at(first, group, dim);
    let s1 = sums_at(first, group + groups, dim);
    let s2 = sums_at(first, group + 2u * groups, dim);
    let s3 = sums_at(first, group + 3u * groups, dim);
    var top = select(vec4<f32>(-3.0e38), m0, lid < p.chunks);
    for (var ch = lid + WG; ch < p.chunks; ch = ch + WG) {
        top = max(top, part[(first + ch) * (2u + d)]);
    }
    top = seg_max4(top, lid, WG);
    var sum = select(vec4<f32>(0.0), l0 * exp(m0 - top), lid < p.chunks);
    for (var ch = lid + WG; ch < p.chunks; ch = ch + WG) {
        let at = (first + ch) * (2u + d);
        sum += part[at + 1u] * exp(part[at] - top);
    }
    sum = seg_sum4(sum, lid, WG);
    var acc = vec4<f32>(0.0);
    if (group < groups) {
        // The first four (past the chunks: clamped loads, weighed 0).
        let n = p.chunks;
        acc = select(vec4<f32>(0.0), weighed(s0, top), group < n) + select(vec4<f32>(0.0), weighed(s1, top), group + groups < n)
            + select(vec4<f32>(0.0), weighed(s2, top), group + 2u * groups < n)
            + select(vec4<f32>(0.0), weighed(s3, top), group + 3u * groups < n);
        var ch = group + 4u * groups;
        for (; ch + 3u * groups < n; ch = ch + 4u * groups) {
            let a0 = weighed(sums_at(first, ch, dim), top);
            let a1 = weighed(sums_at(first, ch + groups, dim), top);
            let a2 = weighed(sums_at(first, ch + 2u * groups, dim), top);
            let a3 = weighed(sums_at(first, ch + 3u * groups, dim), top);
            acc += (a0 + a1) + (a2 + a3);
        }
        for (; ch < n; ch = ch + groups) {
            acc += weighed(sums_at(first, ch, dim), top);
        }
    }
    acc = join_groups(acc, lid, slice);
    if (group == 0u) {
        gated_into_z(r, c, p.kv_heads, d, dim, acc / sum, g);
    }
}
