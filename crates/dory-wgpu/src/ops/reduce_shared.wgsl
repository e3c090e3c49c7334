// Reductions over aligned runs of `seg` invocations of a workgroup (seg a power of two
// that divides the workgroup, which holds at most 256), through workgroup memory alone:
// the fallback for adapters without subgroup operations, and the twin the tests check
// the subgroup version against. Every invocation of the workgroup must call these.

var<workgroup> red_all: array<vec4<f32>, 256>;

fn seg_reduce4(x: vec4<f32>, lid: u32, seg: u32, is_max: bool) -> vec4<f32> {
    red_all[lid] = x;
    workgroupBarrier();
    for (var o = seg / 2u; o > 0u; o = o / 2u) {
        if (lid % seg < o) {
            let u = red_all[lid + o];
            red_all[lid] = select(red_all[lid] + u, max(red_all[lid], u), is_max);
        }
        workgroupBarrier();
    }
    let v = red_all[lid - lid % seg];
    workgroupBarrier();
    return v;
}

// Always fenced: `fenced` spares a barrier only where subgroups reduce.
fn seg_sum_pair(x: vec4<f32>, y: vec4<f32>, lid: u32, seg: u32, fenced: bool) -> Pair {
    let u = seg_reduce4(x, lid, seg, false);
    return Pair(u, seg_reduce4(y, lid, seg, false));
}
