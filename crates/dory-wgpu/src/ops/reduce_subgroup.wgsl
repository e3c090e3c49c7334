// Reductions over aligned runs of `seg` invocations of a workgroup (seg a power of two
// that divides the workgroup), through the adapter's subgroup operations. Nothing here
// assumes a subgroup size: each call counts its subgroup's lanes, butterflies within
// min(subgroup, seg) lanes, and when a run spans several subgroups adds one partial per
// subgroup through workgroup memory. It relies on subgroups being runs of consecutive
// local indices, all of one size, which the device's probe (`subgroup_runs`) checks
// before this file is chosen.
// Every invocation of the workgroup must call these (they hold barriers).

var<workgroup> red_part: array<vec4<f32>, 64>;

// The adapter's subgroup size where it reports one fixed size (`Options::subgroup`), so that
// the reductions' loops are known at the pipeline's build and unroll; 0: counted here.
override SUBGROUP: u32 = 0u;

fn subgroup_size() -> u32 {
    if (SUBGROUP != 0u) {
        return SUBGROUP;
    }
    return subgroupAdd(1u);
}

fn seg_reduce4(x: vec4<f32>, lid: u32, seg: u32, is_max: bool) -> vec4<f32> {
    let sg = subgroup_size();
    let w = min(sg, seg);
    var v = x;
    for (var o = w / 2u; o > 0u; o = o / 2u) {
        let u = subgroupShuffleXor(v, o);
        v = select(v + u, max(v, u), is_max);
    }
    // Runs within a subgroup are done: no barrier (every subgroup of the workgroup has the
    // same size, so all of its invocations return here or none does).
    if (sg >= seg) {
        return v;
    }
    if (lid % sg == 0u) {
        red_part[lid / sg] = v;
    }
    workgroupBarrier();
    let first = (lid / seg) * (seg / sg);
    v = red_part[first];
    for (var i = 1u; i < seg / sg; i = i + 1u) {
        let u = red_part[first + i];
        v = select(v + u, max(v, u), is_max);
    }
    workgroupBarrier();
    return v;
}

// Two sums at once (reduce.wgsl's `Pair`): the subgroups' partials of both meet at the
// same barrier, y's in red_part's upper half (runs of 32 partials at most: subgroups of 8
// or more; smaller ones take the two sums in turn). Unless `fenced`, the barrier that
// keeps red_part from the next reduction's writes is left to the caller.
fn seg_sum_pair(x: vec4<f32>, y: vec4<f32>, lid: u32, seg: u32, fenced: bool) -> Pair {
    let sg = subgroup_size();
    if (sg < 8u && sg < seg) {
        let u = seg_reduce4(x, lid, seg, false);
        return Pair(u, seg_reduce4(y, lid, seg, false));
    }
    let w = min(sg, seg);
    var u = x;
    var v = y;
    for (var o = w / 2u; o > 0u; o = o / 2u) {
        u += subgroupShuffleXor(u, o);
        v += subgroupShuffleXor(v, o);
    }
    if (sg >= seg) {
        return Pair(u, v);
    }
    if (lid % sg == 0u) {
        red_part[lid / sg] = u;
        red_part[32u + lid / sg] = v;
    }
    workgroupBarrier();
    let first = (lid / seg) * (seg / sg);
    u = red_part[first];
    v = red_part[32u + first];
    for (var i = 1u; i < seg / sg; i = i + 1u) {
        u += red_part[first + i];
        v += red_part[32u + first + i];
    }
    if (fenced) {
        workgroupBarrier();
    }
    return Pair(u, v);
}
