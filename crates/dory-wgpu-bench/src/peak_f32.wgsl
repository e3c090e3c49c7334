// The f32 multiply-adds' ceiling (the CUDA cores, where attention's f32 products run):
// every invocation runs CHAINS independent chains of vec4 multiply-adds, ITERS long, on
// values it holds (the inner loop has a constant count, for the driver to unroll into
// registers), and stores their sum (so that nothing is left out).

const ITERS: u32 = 512u;
const CHAINS: u32 = 16u;

@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f32>>;

@compute @workgroup_size(256)
fn peak(@builtin(global_invocation_id) gid: vec3<u32>) {
    let m = a[0];
    let s = a[1];
    var c: array<vec4<f32>, CHAINS>;
    for (var j = 0u; j < CHAINS; j = j + 1u) {
        c[j] = a[2] + f32(j) * s;
    }
    for (var i = 0u; i < ITERS; i = i + 1u) {
        for (var j = 0u; j < CHAINS; j = j + 1u) {
            c[j] = fma(c[j], m, s);
        }
    }
    var sum = vec4<f32>(0.0);
    for (var j = 0u; j < CHAINS; j = j + 1u) {
        sum += c[j];
    }
    out[gid.x % 1024u] = sum;
}
