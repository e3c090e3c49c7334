// The positions a prompt's rows see on the tensor cores (attend_coop.wgsl), whose keys' and
// values' f16 parts kv_parts.wgsl writes: from the first row's first position to the last
// row's (a layer without sinks, attend.rs's `on_tensor_cores`), `n` in all, held for
// `len`: rounded up to tiles of 32 keys, and a tile of zeros after, so that a tile that
// starts inside reads only what kv_parts.wgsl wrote. Every module that includes this has
// `pos0`, `rows` and `d` in its parameters `p`.
//
// The parts' halves: keys hi, keys lo, values hi, values lo (each `len` keys of every KV
// head, in kv_tile's order), then each key's value exponent e_j ([KV head][len]).

struct Span {
    base: u32,
    n: u32,
    len: u32,
}

fn span() -> Span {
    let base = seen(p.pos0).lo;
    let n = p.pos0 + p.rows - base;
    return Span(base, n, (n + 31u) / 32u * 32u + 32u);
}

// Where dim i of key u of KV head c sits in a part: in 16 × 16 tiles of [16 keys][16 dims]
// whose 256 halves lie together, as the GEMM's W, so that a cooperative load of a tile
// reads one run of 512 bytes.
fn kv_tile(len: u32, c: u32, u: u32, i: u32) -> u32 {
    let key = c * len + u;
    return ((key / 16u) * (p.d / 16u) + i / 16u) * 256u + (key % 16u) * 16u + i % 16u;
}
