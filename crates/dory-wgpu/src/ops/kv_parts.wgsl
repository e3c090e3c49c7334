// The keys' and values' f16 parts of a step's span (span.wgsl) that attend_coop.wgsl
// multiplies on the tensor cores, each as hi + lo (parts.wgsl says how):
// - a key times 2¹², a unit vector (spec §4);
// - a value times 2^e_j, the power of two of its own (per KV head) that puts its largest
//   magnitude in [2¹², 2¹³): values have no bound. e_j follows the parts.
// Positions from n to len are zeros. A run of 32 invocations takes a position, invocation l
// dims 4l … 4l + 3 (d ≤ 128), four positions a workgroup at a time.
//
// The parts' halves are written two to a u32, as parts.wgsl writes x's for the GEMM.

@group(0) @binding(9) var<storage, read_write> kv: array<u32>;

var<workgroup> most_sh: array<f32, 128>;
var<workgroup> e_sh: array<f32, 4>;

// v's parts at u32 `at` (4 halves), the lo part `part` u32s on.
fn put(at: u32, part: u32, v: vec4<f32>) {
    let hi = hi11(v);
    let rest = v - hi;
    kv[at] = pack2x16float(hi.xy);
    kv[at + 1u] = pack2x16float(hi.zw);
    kv[at + part] = pack2x16float(rest.xy);
    kv[at + part + 1u] = pack2x16float(rest.zw);
}

@compute @workgroup_size(128)
fn kv_parts(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let c = wid.y;
    let run = lid / 32u;
    let lane = lid % 32u;
    let d4 = p.d / 4u;
    let s = span();
    // u32s of one part.
    let part = p.kv_heads * s.len * p.d / 2u;
    for (var j0 = 4u * wid.x; j0 < s.len; j0 = j0 + 4u * groups.x) {
        let j = j0 + run;
        var k = vec4<f32>(0.0);
        var v = vec4<f32>(0.0);
        if (j < s.n && lane < d4) {
            let at = (slot_of(s.base + j) * p.kv_heads + c) * d4 + lane;
            k = kc[at];
            v = vc[at];
        }
        let a = abs(v);
        most_sh[lid] = max(max(a.x, a.y), max(a.z, a.w));
        workgroupBarrier();
        var most = 0.0;
        for (var i = 0u; i < 32u; i = i + 1u) {
            most = max(most, most_sh[run * 32u + i]);
        }
        let e = clamp(13 - frexp(most).exp, -100, 100);
        if (lane < d4) {
            let at = kv_tile(s.len, c, j, 4u * lane) / 2u;
            put(at, part, k * 4096.0);
            put(at + 2u * part, part, ldexp(v, vec4<i32>(e)));
        }
        if (lane == 0u) {
            e_sh[run] = f32(e);
        }
        workgroupBarrier();
        if (lid < 2u) {
            kv[4u * part + (c * s.len + j0) / 2u + lid] = pack2x16float(vec2<f32>(e_sh[2u * lid], e_sh[2u * lid + 1u]));
        }
    }
}
