// What a prompt's attention in blocks of 16 rows takes (attend_rows.wgsl, attend_coop.wgsl):
// every binding but the queries' (binding 0, which each declares in the form it reads) and
// attention.wgsl's. Its parameters `p` are attend.rs's `RowsParams` (kernels.rs declares
// their `struct P`).

@group(0) @binding(1) var<storage, read> kc: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> vc: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> part: array<vec4<f32>>;

// Row r's partials of KV head c's chunk ch, a chunk past its block's walk (a causal
// prompt's early blocks walk fewer keys than its last): only m (the block kernels' NONE,
// the lowest score) and l = 0, which mark it empty to the join (chunks.wgsl takes none of
// its value sums, left unwritten).
fn mark_empty(r: u32, c: u32, ch: u32) {
    let base = ((r * p.kv_heads + c) * p.chunks + ch) * (2u + p.d);
    part[base] = vec4<f32>(-1.0e30);
    part[base + 1u] = vec4<f32>(0.0);
}
