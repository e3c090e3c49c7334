// The nGPT residual's reads and writes (ngpt.wgsl) where it runs in place on the hidden
// state: residual.wgsl and mix.wgsl, which bind `h` and `o` under those names.

fn res_h(base: u32, e: u32) -> vec4<f32> {
    return h[base + e];
}

fn res_o(base: u32, e: u32) -> vec4<f32> {
    return o[base + e];
}

fn res_put(base: u32, e: u32, y: vec4<f32>) {
    h[base + e] = y;
}
