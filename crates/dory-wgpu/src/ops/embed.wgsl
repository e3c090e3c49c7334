// x[r, c] ← embed[ids[r], c] (spec §4: h ← embed[token]), widened from the stored dtype.
// The table is bound in parts of whole rows (ids id0 … id0 + part_rows − 1); a row whose
// id another part holds is left to that part's dispatch.

// The parameters `p`: embed.rs's `Params` (kernels.rs declares their `struct P`).

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> up: array<u32>;
@group(0) @binding(2) var<storage, read_write> x: array<f32>;

@compute @workgroup_size(256)
fn embed(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    let r = gid.y + p.row0;
    if (c >= p.d || r >= p.rows) {
        return;
    }
    let id = up[p.ids_at + r];
    if (id < p.id0 || id >= p.id0 + p.part_rows) {
        return;
    }
    x[r * p.d + c] = load1((id - p.id0) * p.dp + c);
}
