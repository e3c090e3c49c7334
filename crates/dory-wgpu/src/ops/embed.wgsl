// x[r, c] ← embed[ids[r], c] (spec §4: h ← embed[token]), widened from the stored dtype.
// The table is bound in parts of whole rows (ids id0 … id0 + part_rows − 1); a row whose
// id another part holds is left to that part's dispatch.

// The parameters `p`: embed.rs's `Params` (kernels.rs declares their `struct P`).

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> up: array<u32>;
@group(0) @binding(2) var<storage, read_write> x: array<f32>;

@compute @workgroup_size(256)
fn embed(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    let r = gid.y + p.row0;
    if (c >= p.d || r >= p.rows) {
        return;
    }
    let id = up[p.ids_at + r];
    if (id < p.id0 || id >= p.id0 + p.part_rows) {
        return;
    }
    x[r * p.d + c] = load1((id - p.id0) * p.dp + c);
}

// The greedy token of a decoded row, written where the next step's embed reads it, so that
// a greedy decoder's next step needs nothing from the host: sampler.rs's argmax of
// logits[0 .. n) (n: `ids_at`), the lowest id of the largest logit, where a NaN is never
// larger and a NaN at id 0 is never beaten; as a u32 at logits[n]. The logits are compared
// as integers that order as the floats do (−0 as +0): WGSL may assume floats are never NaN
// or infinite.
@group(0) @binding(3) var<storage, read_write> logits: array<u32>;

var<workgroup> top_key: array<u32, 256>;
var<workgroup> top_id: array<u32, 256>;
const NO_ID: u32 = 0xffffffffu;

// A non-NaN float's bits as a u32 that orders as the float does.
fn order_key(bits: u32) -> u32 {
    let b = select(bits, 0u, bits == 0x80000000u);
    return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

fn is_nan(bits: u32) -> bool {
    return (bits & 0x7fffffffu) > 0x7f800000u;
}

// Whether (key, id) beats (other, oid): larger, or as large with the lower id.
fn beats(key: u32, id: u32, other: u32, oid: u32) -> bool {
    return id != NO_ID && (oid == NO_ID || key > other || (key == other && id < oid));
}

@compute @workgroup_size(256)
fn greedy(@builtin(local_invocation_index) lid: u32) {
    let n = p.ids_at;
    var key = 0u;
    var id = NO_ID;
    for (var i = lid; i < n; i = i + 256u) {
        let bits = logits[i];
        if (!is_nan(bits) && beats(order_key(bits), i, key, id)) {
            key = order_key(bits);
            id = i;
        }
    }
    top_key[lid] = key;
    top_id[lid] = id;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s = s >> 1u) {
        if (lid < s && beats(top_key[lid + s], top_id[lid + s], top_key[lid], top_id[lid])) {
            top_key[lid] = top_key[lid + s];
            top_id[lid] = top_id[lid + s];
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        logits[n] = select(top_id[0], 0u, top_id[0] == NO_ID || is_nan(logits[0]));
    }
}
