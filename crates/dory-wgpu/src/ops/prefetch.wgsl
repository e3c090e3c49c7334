// A projection's weights pulled into the L2 cache beside a short dispatch that waits on
// latency, not on memory (prefetch.rs), so that the projection after both reads them from
// the L2 instead of the device's memory. Each invocation loads one 16-byte piece of each
// 32-byte sector of the ranges it takes (the L2 fetches whole sectors), eight loads in
// flight. The pieces' xor is stored only where it equals `p.never`: the compiler must keep
// the loads, and the sink, which nothing reads, is almost never written.

// The parameters `p`: prefetch.rs's `Params` (kernels.rs declares their `struct P`).

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> sink: array<u32>;

// The vec4 that holds sector s of the two ranges, taken one after the other.
fn sector(s: u32) -> u32 {
    return 2u * select(p.at1 + (s - p.len0), p.at0 + s, s < p.len0);
}

@compute @workgroup_size(256)
fn prefetch(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let total = p.len0 + p.len1;
    let stride = 256u * groups.x;
    let last = total - 1u;
    var acc = vec4<u32>(0u);
    for (var s = gid.x; s < total; s = s + 8u * stride) {
        let a0 = w[sector(s)];
        let a1 = w[sector(min(s + stride, last))];
        let a2 = w[sector(min(s + 2u * stride, last))];
        let a3 = w[sector(min(s + 3u * stride, last))];
        let a4 = w[sector(min(s + 4u * stride, last))];
        let a5 = w[sector(min(s + 5u * stride, last))];
        let a6 = w[sector(min(s + 6u * stride, last))];
        let a7 = w[sector(min(s + 7u * stride, last))];
        acc ^= (a0 ^ a1) ^ (a2 ^ a3) ^ (a4 ^ a5) ^ (a6 ^ a7);
    }
    let x = acc.x ^ acc.y ^ acc.z ^ acc.w;
    if (x == p.never) {
        sink[0] = x;
    }
}
