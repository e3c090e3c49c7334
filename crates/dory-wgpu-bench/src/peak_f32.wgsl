// The f32 multiply-adds' ceiling (the CUDA cores, where attention's f32 products run):
// every invocation runs 8 independent chains of vec4 multiply-adds, ITERS long, on values
// it holds, and stores their sum (so that nothing is left out). Each step is written as a
// product and a sum, which the driver fuses: the H200 ran it at the rate of `fma`
// (bench/logs/h200-2026-12-03e/call-5).

// Set by the benchmark (lib.rs), which counts the operations by it.
override ITERS: u32;

@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f32>>;

@compute @workgroup_size(256)
fn peak(@builtin(global_invocation_id) gid: vec3<u32>) {
    let m = a[0];
    let s = a[1];
    var c0 = a[2];
    var c1 = c0 + s;
    var c2 = c1 + s;
    var c3 = c2 + s;
    var c4 = c3 + s;
    var c5 = c4 + s;
    var c6 = c5 + s;
    var c7 = c6 + s;
    for (var i = 0u; i < ITERS; i = i + 1u) {
        c0 = c0 * m + s;
        c1 = c1 * m + s;
        c2 = c2 * m + s;
        c3 = c3 * m + s;
        c4 = c4 * m + s;
        c5 = c5 * m + s;
        c6 = c6 * m + s;
        c7 = c7 * m + s;
    }
    out[gid.x % 1024u] = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7;
}
