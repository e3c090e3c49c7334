// x's rows for the tensor-core GEMM (gemm_coop.wgsl): row r of x times s_r, a power of two
// that puts its largest magnitude in [2¹², 2¹³), as hi = s_r x cut to f16's 11 significant
// bits and lo = f16(s_r x − hi), so that hi + lo keeps ~22 bits of every value and neither
// part leaves f16's range; rows widened from k to k16 with zeros, laid out in 16 × 16 tiles;
// 1/s_r beside. One workgroup per row. With SWIGLU = 1 x is formed on the way in, as the
// down projection's input: x_i = silu(g_i · gs_i) · (u_i · us_i) from gu = [rows, k | k]
// bound as x, and scale = [gate_scale | up_scale] (which spares SwiGLU its own dispatch).

enable f16;

struct P {
    k: u32,   // width of a row of x (a multiple of 4)
    k16: u32, // width of a row of the parts (k rounded up to 16)
    xr0: u32, // first row of x
    lo: u32,  // where the lo part starts in xa (halves)
    row0: u32, // first row of this dispatch (grids hold at most 65535 rows)
}
var<immediate> p: P;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> xa: array<vec4<f16>>;
@group(0) @binding(2) var<storage, read_write> xinv: array<f32>;
// SWIGLU = 1: [gate_scale | up_scale] (bound to x where not read).
@group(0) @binding(3) var<storage, read> scale: array<vec4<f32>>;

const WG: u32 = 256u;
// 0 drops the lo part (for measuring what it adds).
override LO: u32 = 1u;
override SWIGLU: u32 = 0u;

// Inputs 4i … 4i + 3 of x's row `row`.
fn x4(row: u32, i: u32) -> vec4<f32> {
    let k4 = p.k / 4u;
    if (SWIGLU == 1u) {
        return swiglu4(row, i, k4);
    }
    return x[row * k4 + i];
}

@compute @workgroup_size(256)
fn split(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let r = wid.x + p.row0;
    let k4 = p.k / 4u;
    let row = p.xr0 + r;
    var top = vec4<f32>(0.0);
    for (var i = lid; i < k4; i = i + WG) {
        top = max(top, abs(x4(row, i)));
    }
    let most = seg_max4(top, lid, WG);
    // The exponent of the largest magnitude, kept where s and 1/s are normal f32s.
    let e = clamp(frexp(max(max(most.x, most.y), max(most.z, most.w))).exp, -100, 100);
    let s = ldexp(1.0, 13 - e);
    // Tile by tile (gemm_coop's load_a): row r's inputs 4i … 4i + 3 sit in tile (r / 16,
    // i / 4), at row r % 16 of it, counted in vec4s.
    let dst = (r / 16u) * (p.k16 / 16u) * 64u + (r % 16u) * 4u;
    for (var i = lid; i < p.k16 / 4u; i = i + WG) {
        var v = vec4<f32>(0.0);
        if (i < k4) {
            v = x4(row, i) * s;
        }
        // hi: v's top 11 significant bits, cut with a mask (a rounding conversion and its
        // way back can be folded into nothing by a compiler; the mask cannot), so that
        // v − hi is exact and holds the rest.
        let top = bitcast<vec4<f32>>(bitcast<vec4<u32>>(v) & vec4<u32>(0xffffe000u));
        let at = dst + (i / 4u) * 64u + i % 4u;
        xa[at] = vec4<f16>(top);
        xa[p.lo / 4u + at] = vec4<f16>((v - top) * f32(LO));
    }
    if (lid == 0u) {
        xinv[r] = ldexp(1.0, e - 13);
    }
}
