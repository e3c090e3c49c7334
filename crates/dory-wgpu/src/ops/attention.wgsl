// What the attention kernels share (attend.wgsl, attend_rows.wgsl, attend_coop.wgsl,
// combine.wgsl, o1.wgsl): the gate's inputs and the gated output, bound alike in each
// (attend.rs's `join_binds`, with the chunks' partials `part`, which each declares at
// binding 6 as it reads or writes them), and the join of key groups and the gate.

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
