// What a prompt's attention in blocks of 16 rows takes (attend_rows.wgsl, attend_coop.wgsl):
// its parameters, and every binding but the queries' (binding 0, which each declares in the
// form it reads).

struct P {
    rows: u32,
    pos0: u32,
    kv_heads: u32,
    d: u32,       // ≤ 128
    sinks: u32,
    cap: u32,
    window: u32,
    per: u32,     // positions of the block's walk per chunk
    chunks: u32,
    direct: u32,
    block0: u32,  // first block of this dispatch (grids hold at most 65535 blocks)
    scale: f32,   // λ
}
var<immediate> p: P;

@group(0) @binding(1) var<storage, read> kc: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> vc: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> qkvg: array<f32>;
@group(0) @binding(4) var<storage, read> gate_scale: array<f32>;
@group(0) @binding(5) var<storage, read_write> z: array<f32>;
@group(0) @binding(6) var<storage, read_write> part: array<vec4<f32>>;
