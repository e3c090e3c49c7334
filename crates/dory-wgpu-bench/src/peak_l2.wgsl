// The L2 cache's read bandwidth as wgpu reaches it: every workgroup reads 64 KiB chunks of a
// buffer that the L2 holds whole (16 MiB), a different chunk each iteration (so that the
// SM's own L1, which holds a few, rarely has it), 16 loads of 16 bytes in flight an
// invocation, and folds them so that nothing is left out. The tensor-core GEMM reads its
// fragments from the L2: this is the ceiling of those reads.

// Set by the benchmark (lib.rs), which counts the bytes by it.
override ITERS: u32;

@group(0) @binding(0) var<storage, read> a: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<u32>>;

// vec4s in a chunk.
const CHUNK: u32 = 4096u;

@compute @workgroup_size(256)
fn peak(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let chunks = arrayLength(&a) / CHUNK;
    var acc = vec4<u32>(0u);
    for (var i = 0u; i < ITERS; i = i + 1u) {
        let at = ((wid.x * 7u + i * 97u) % chunks) * CHUNK + lid;
        let v0 = a[at] ^ a[at + 256u] ^ a[at + 512u] ^ a[at + 768u];
        let v1 = a[at + 1024u] ^ a[at + 1280u] ^ a[at + 1536u] ^ a[at + 1792u];
        let v2 = a[at + 2048u] ^ a[at + 2304u] ^ a[at + 2560u] ^ a[at + 2816u];
        let v3 = a[at + 3072u] ^ a[at + 3328u] ^ a[at + 3584u] ^ a[at + 3840u];
        acc = acc ^ v0 ^ v1 ^ v2 ^ v3;
    }
    // Rarely true, and harmless: what keeps the compiler from leaving the loads out.
    if (acc.x == 12345u) {
        out[lid] = acc;
    }
}
