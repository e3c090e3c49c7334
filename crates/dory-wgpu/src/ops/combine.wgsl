// The chunks of attend.wgsl joined and gated into z (attention.wgsl's join_chunks), where
// attend does not join them itself. One workgroup per (KV head, row, slice of `slice` dims): a decoded row deep in its context has up to a few hundred chunks, and
// a workgroup per KV head alone would walk them in a long chain of loads on a few of the
// GPU's cores.

// The parameters `p`: attend.rs's `CombineParams` (kernels.rs declares their `struct P`).

// qkvg, gate_scale and z are attention.wgsl's.
@group(0) @binding(6) var<storage, read> part: array<vec4<f32>>;

@compute @workgroup_size(256)
fn combine(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let shape = vec3<u32>(p.kv_heads, p.d, p.chunks);
    join_chunks(lid, wid.y + p.row0, wid.x, shape, p.slice, wid.z * p.slice);
}
