// What the attention kernels share (attend.wgsl, attend_rows.wgsl, attend_coop.wgsl,
// combine.wgsl, o1.wgsl): the gate's inputs and the gated output, bound alike in each
// (attend.rs's `join_binds`, with the chunks' partials `part`, which each declares at
// binding 6 as it reads or writes them), the join of key groups, the join of a split's
// chunks, and the gate.

@group(0) @binding(3) var<storage, read> qkvg: array<f32>;
@group(0) @binding(4) var<storage, read> gate_scale: array<f32>;
@group(0) @binding(5) var<storage, read_write> z: array<f32>;

// Query heads per KV head (spec §1: H = 4K): the four lanes of the vec4s that hold a KV
// head's scores, sums and value sums.
const GROUP: u32 = 4u;

// The value sums of the workgroup's groups of keys (or chunks), one vec4 (a KV head's
// query heads) per invocation, joined across the groups.
var<workgroup> acc_sh: array<vec4<f32>, 256>;

// Σ over the groups of invocation `lid`'s dim (lid % d) of the groups' value sums
// `acc`: complete in the first group (lid < d), which the caller keeps; every invocation
// of the workgroup (256) must call it.
fn join_groups(acc: vec4<f32>, lid: u32, d: u32) -> vec4<f32> {
    acc_sh[lid] = acc;
    workgroupBarrier();
    var sum = acc;
    if (lid < d) {
        for (var g = 1u; g < 256u / d; g = g + 1u) {
            sum += acc_sh[g * d + lid];
        }
    }
    return sum;
}

// The chunks of a split attention joined (the split-key softmax), for the four query heads
// of KV head c, row r, `shape` = (KV heads, d, chunks): M = max of the chunks' maxima, Σ =
// Σ l e^{m − M}, out = Σ acc e^{m − M} / Σ, then the gate into z, for the `slice` dims from
// dim0 on. The maxima and sums one chunk per invocation; the value sums in dims × groups of
// chunks, four chunks' loads in flight before any is used. Every invocation of the
// workgroup (256) must call it.
fn join_chunks(lid: u32, r: u32, c: u32, shape: vec3<u32>, slice: u32, dim0: u32) {
    let d = shape.y;
    let chunks = shape.z;
    let first = (r * shape.x + c) * chunks;
    var top = vec4<f32>(-3.0e38);
    for (var ch = lid; ch < chunks; ch = ch + 256u) {
        top = max(top, part[(first + ch) * (2u + d)]);
    }
    top = seg_max4(top, lid, 256u);
    var sum = vec4<f32>(0.0);
    for (var ch = lid; ch < chunks; ch = ch + 256u) {
        let at = (first + ch) * (2u + d);
        sum += part[at + 1u] * exp(part[at] - top);
    }
    sum = seg_sum4(sum, lid, 256u);
    let groups = 256u / slice;
    let group = lid / slice;
    let dim = dim0 + lid % slice;
    var acc = vec4<f32>(0.0);
    if (group < groups) {
        var ch = group;
        for (; ch + 3u * groups < chunks; ch = ch + 4u * groups) {
            let a0 = weighed(first + ch, d, dim, top);
            let a1 = weighed(first + ch + groups, d, dim, top);
            let a2 = weighed(first + ch + 2u * groups, d, dim, top);
            let a3 = weighed(first + ch + 3u * groups, d, dim, top);
            acc += (a0 + a1) + (a2 + a3);
        }
        for (; ch < chunks; ch = ch + groups) {
            acc += weighed(first + ch, d, dim, top);
        }
    }
    acc = join_groups(acc, lid, slice);
    if (group == 0u) {
        gate_into_z(r, c, shape.x, d, dim, acc / sum);
    }
}

// Chunk `at`'s value sums at dim `dim` (of d), weighed by e^{m − M}.
fn weighed(at: u32, d: u32, dim: u32, top: vec4<f32>) -> vec4<f32> {
    let base = at * (2u + d);
    return part[base + 2u + dim] * exp(part[base] - top);
}

// z ← out ⊙ σ(yg ⊙ gate_scale) (spec §4's gate) at dim `dim` of the query heads of KV
// head c, row r, for the attention output `out` of each (a vec4 of GROUP heads).
fn gate_into_z(r: u32, c: u32, kv_heads: u32, d: u32, dim: u32, out: vec4<f32>) {
    gated_into_z(r, c, kv_heads, d, dim, out, gates(r, c, kv_heads, d, dim));
}

// z ← out ⊙ g for the gates g of `gates` (loaded earlier, where the kernel has a wait to
// hide their loads behind).
fn gated_into_z(r: u32, c: u32, kv_heads: u32, d: u32, dim: u32, out: vec4<f32>, g: vec4<f32>) {
    for (var h = 0u; h < GROUP; h = h + 1u) {
        z[z_at(r, c, h, kv_heads, d, dim)] = out[h] * g[h];
    }
}

// Where dim `dim` of query head h of KV head c, row r, sits in z.
fn z_at(r: u32, c: u32, h: u32, kv_heads: u32, d: u32, dim: u32) -> u32 {
    return r * GROUP * kv_heads * d + (GROUP * c + h) * d + dim;
}

// σ(yg ⊙ gate_scale) at dim `dim` of the query heads of KV head c, row r.
fn gates(r: u32, c: u32, kv_heads: u32, d: u32, dim: u32) -> vec4<f32> {
    var g: vec4<f32>;
    for (var h = 0u; h < GROUP; h = h + 1u) {
        g[h] = gate_of(r, c, h, kv_heads, d, dim);
    }
    return g;
}

// The gate of query head h of the group alone.
fn gate_of(r: u32, c: u32, h: u32, kv_heads: u32, d: u32, dim: u32) -> f32 {
    let kd = kv_heads * d;
    let qd = GROUP * kd;
    // A row of qkvg: H·d + K·d + K·d + H·d.
    let yg = r * (2u * qd + 2u * kd) + qd + 2u * kd;
    let at = (GROUP * c + h) * d + dim;
    return sigmoid(qkvg[yg + at] * gate_scale[at]);
}

// gate_into_z for query head h of the group alone.
fn gate_one(r: u32, c: u32, h: u32, kv_heads: u32, d: u32, dim: u32, out: f32) {
    z[z_at(r, c, h, kv_heads, d, dim)] = out * gate_of(r, c, h, kv_heads, d, dim);
}
