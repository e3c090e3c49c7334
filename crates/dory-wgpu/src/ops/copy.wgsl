// Copies between buffers by shader (a buffer-to-buffer copy is slow on some drivers and
// would end the compute pass): `copy` moves one contiguous run, `copy_slots` the cache
// rows that a relayout or a seal lists as (old slot, new slot) pairs in `up`.

// The parameters `p`: copy.rs's `Params` (kernels.rs declares their `struct P`).

@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read> up: array<u32>;

@compute @workgroup_size(256)
fn copy(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.y * p.span + gid.x;
    if (i < p.len) {
        dst[p.dst_at + i] = src[p.src_at + i];
    }
}

@compute @workgroup_size(256)
fn copy_slots(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let mv = gid.y;
    if (i >= p.len || mv >= p.moves) {
        return;
    }
    let src_slot = up[p.moves_at + 2u * mv];
    let dst_slot = up[p.moves_at + 2u * mv + 1u];
    dst[dst_slot * p.len + i] = src[src_slot * p.len + i];
}

// The bandwidth probe's copy (the kernel benchmarks, crate dory-wgpu-bench): 16 bytes
// per invocation.
@group(0) @binding(3) var<storage, read> src4: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> dst4: array<vec4<f32>>;

@compute @workgroup_size(256)
fn copy4(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.y * p.span + gid.x;
    if (i < p.len) {
        dst4[i] = src4[i];
    }
}
