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

// Chunk ch's value sums at dim `dim`, weighed by e^{m − M}.
fn weighed(first: u32, ch: u32, dim: u32, top: vec4<f32>) -> vec4<f32> {
    let at = (first + ch) * (2u + p.d);
    return part[at + 2u + dim] * exp(part[at] - top);
}

// The maxima and sums one chunk per invocation; the value sums of the slice's dims ×
// groups of chunks, four chunks' loads in flight before any is used.
@compute @workgroup_size(256)
fn combine(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let c = wid.x;
    let r = wid.y + p.row0;
    let d = p.d;
    let first = (r * p.kv_heads + c) * p.chunks;
    var top = vec4<f32>(-3.0e38);
    for (var ch = lid; ch < p.chunks; ch = ch + WG) {
        top = max(top, part[(first + ch) * (2u + d)]);
    }
    top = seg_max4(top, lid, WG);
    var sum = vec4<f32>(0.0);
    for (var ch = lid; ch < p.chunks; ch = ch + WG) {
        let at = (first + ch) * (2u + d);
        sum += part[at + 1u] * exp(part[at] - top);
    }
    sum = seg_sum4(sum, lid, WG);
    let slice = p.slice;
    let groups = WG / slice;
    let group = lid / slice;
    let dim = wid.z * slice + lid % slice;
    var acc = vec4<f32>(0.0);
    if (group < groups) {
        var ch = group;
        for (; ch + 3u * groups < p.chunks; ch = ch + 4u * groups) {
            let a0 = weighed(first, ch, dim, top);
            let a1 = weighed(first, ch + groups, dim, top);
            let a2 = weighed(first, ch + 2u * groups, dim, top);
            let a3 = weighed(first, ch + 3u * groups, dim, top);
            acc += (a0 + a1) + (a2 + a3);
        }
        for (; ch < p.chunks; ch = ch + groups) {
            acc += weighed(first, ch, dim, top);
        }
    }
    acc = join_groups(acc, lid, slice);
    if (group == 0u) {
        gate_into_z(r, c, p.kv_heads, d, dim, acc / sum);
    }
}
