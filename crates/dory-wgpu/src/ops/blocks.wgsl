// What a prompt's attention in blocks of 16 rows takes (attend_rows.wgsl, attend_coop.wgsl):
// every binding but the queries' (binding 0, which each declares in the form it reads) and
// attention.wgsl's. Its parameters `p` are attend.rs's `RowsParams` (kernels.rs declares
// their `struct P`).

@group(0) @binding(1) var<storage, read> kc: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> vc: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> part: array<vec4<f32>>;
