// The chunks of attend.wgsl joined (the split-key softmax): for each of the four query
// heads of a KV head, M = max of the chunks' maxima, Σ = Σ l e^{m − M}, out = Σ acc e^{m − M}
// / Σ, then the gate: z ← out ⊙ σ(yg ⊙ gate_scale). One workgroup per (KV head, row, slice
// of `slice` dims): a decoded row deep in its context has up to a few hundred chunks, and
// a workgroup per KV head alone would walk them in a long chain of loads on a few of the
// GPU's cores. Each group of `slice` invocations folds every groups-th chunk's maximum, sum
// and value sums in one walk (chunks.wgsl's online softmax), so that no load waits on a
// reduction, and the groups' runs meet once, in workgroup memory.

// The parameters `p`: attend.rs's `CombineParams` (kernels.rs declares their `struct P`).

// qkvg, gate_scale and z are attention.wgsl's.
@group(0) @binding(6) var<storage, read> part: array<vec4<f32>>;

const WG: u32 = 256u;

// chunks.wgsl's hook.
fn join_part(at: u32) -> vec4<f32> {
    return part[at];
}

// The groups' runs (their value sums in attention.wgsl's acc_sh).
var<workgroup> top_sh: array<vec4<f32>, 256>;
var<workgroup> sum_sh: array<vec4<f32>, 256>;

@compute @workgroup_size(256)
fn combine(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let c = wid.x;
    let r = wid.y + p.row0;
    let d = p.d;
    let slice = p.slice;
    let groups = WG / slice;
    let group = lid / slice;
    let dim = wid.z * slice + lid % slice;
    // The gates, loaded beside the walk's loads.
    var g = vec4<f32>(0.0);
    if (group == 0u) {
        g = gates(r, c, p.kv_heads, d, dim);
    }
    let first = (r * p.kv_heads + c) * p.chunks * (2u + d);
    var run = Joined(vec4<f32>(-3.0e38), vec4<f32>(0.0), vec4<f32>(0.0));
    if (group < groups) {
        for (var ch = group; ch < p.chunks; ch = ch + 4u * groups) {
            run = join_four(run, first, ch, groups, p.chunks, d, dim);
        }
    }
    top_sh[lid] = run.top;
    sum_sh[lid] = run.sum;
    acc_sh[lid] = run.acc;
    workgroupBarrier();
    if (group != 0u) {
        return;
    }
    var top = run.top;
    for (var i = 1u; i < groups; i = i + 1u) {
        top = max(top, top_sh[i * slice + lid]);
    }
    var sum = vec4<f32>(0.0);
    var acc = vec4<f32>(0.0);
    for (var i = 0u; i < groups; i = i + 1u) {
        let w = exp(top_sh[i * slice + lid] - top);
        sum += sum_sh[i * slice + lid] * w;
        acc += acc_sh[i * slice + lid] * w;
    }
    gated_into_z(r, c, p.kv_heads, d, dim, acc / sum, g);
}
