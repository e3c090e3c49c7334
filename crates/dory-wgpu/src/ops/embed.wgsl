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

// An invocation's best (key, id) so far.
struct Best {
    key: u32,
    id: u32,
}

// `best` against logit `bits` at id i (a later id than best's).
fn fold(best: Best, bits: u32, i: u32) -> Best {
    if (!is_nan(bits) && beats(order_key(bits), i, best.key, best.id)) {
        return Best(order_key(bits), i);
    }
    return best;
}

@compute @workgroup_size(256)
fn greedy(@builtin(local_invocation_index) lid: u32) {
    argmax(lid);
}

// The greedy token (written at logits[n], n = `ids_at`), returned to every invocation.
fn argmax(lid: u32) -> u32 {
    let n = p.ids_at;
    var best = Best(0u, NO_ID);
    // Eight logits' loads in flight an invocation before any is compared (a vocabulary of
    // 32,000 is 125 an invocation), then the rest in turn; ids in order per invocation, so
    // that a tie keeps the lower.
    var i = lid;
    for (; i + 7u * 256u < n; i = i + 8u * 256u) {
        let b0 = logits[i];
        let b1 = logits[i + 256u];
        let b2 = logits[i + 2u * 256u];
        let b3 = logits[i + 3u * 256u];
        let b4 = logits[i + 4u * 256u];
        let b5 = logits[i + 5u * 256u];
        let b6 = logits[i + 6u * 256u];
        let b7 = logits[i + 7u * 256u];
        best = fold(fold(fold(fold(best, b0, i), b1, i + 256u), b2, i + 2u * 256u), b3, i + 3u * 256u);
        best = fold(fold(fold(fold(best, b4, i + 4u * 256u), b5, i + 5u * 256u), b6, i + 6u * 256u), b7, i + 7u * 256u);
    }
    for (; i < n; i = i + 256u) {
        best = fold(best, logits[i], i);
    }
    let key = best.key;
    let id = best.id;
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
    let chosen = select(top_id[0], 0u, top_id[0] == NO_ID || is_nan(logits[0]));
    if (lid == 0u) {
        logits[n] = chosen;
    }
    return chosen;
}

// The loop's entry of one row (spec §4; mix.wgsl's mode 0) fused with its embedding, where
// the table is one part: x ← embed[id]; s ← x; h ← N(s + x), by one workgroup, which
// spares the entry its dispatch, and a greedy decoder's token the embedding's.
@group(0) @binding(4) var<storage, read_write> h: array<f32>;
@group(0) @binding(5) var<storage, read_write> s: array<f32>;

fn enter_row(lid: u32, id: u32) {
    var sq = 0.0;
    for (var c = lid; c < p.d; c = c + 256u) {
        let v = load1(id * p.dp + c);
        x[c] = v;
        s[c] = v;
        let y = v + v;
        sq += y * y;
    }
    let r = 1.0 / sqrt(seg_sum(sq, lid, 256u) + p.eps);
    // Each invocation reads back what it wrote.
    for (var c = lid; c < p.d; c = c + 256u) {
        let v = x[c];
        h[c] = (v + v) * r;
    }
}

// The token at up[ids_at]: uploaded, or a held step's, written at its release.
@compute @workgroup_size(256)
fn enter(@builtin(local_invocation_index) lid: u32) {
    enter_row(lid, up[p.ids_at]);
}

// A greedy decoder's next step: the argmax of the logits, then its entry.
@compute @workgroup_size(256)
fn greedy_enter(@builtin(local_invocation_index) lid: u32) {
    enter_row(lid, argmax(lid));
}
