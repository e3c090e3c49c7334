// A decoded row's MLP in one dispatch: out = down · m, m = SwiGLU(gate|up · x) (gemv.wgsl's
// gemv_glu, x formed as RES says, then its plain projection), by persistent workgroups
// that take their work from queues. Each takes gate|up items (gemv_glu's workgroups'
// rows) by ticket until none is left, then down items (8 rows of D each); a down item
// loads its first round of W, then waits until every gate|up item has written its part
// of m. A workgroup waits only once every gate|up item has been taken, so only on items
// held by workgroups that are running and never wait before they finish them: any number
// of the dispatch's workgroups may be resident at once, as long as the running ones keep
// running while one polls (NVIDIA's adapters: `Options::mlp_groups`). Each
// workgroup takes its next ticket while its current item's first loads are in flight.
// The last workgroup to finish zeroes the counters for the next dispatch.

// Four counters, each on its own 256 bytes, so that the polls of one do not queue behind
// the others' updates: TAKEN_GLU and TAKEN_DOWN the tickets taken, GLU_DONE the gate|up
// items done, GROUPS_DONE the workgroups done; all zero between dispatches.
@group(0) @binding(7) var<storage, read_write> queue: array<atomic<u32>, 256>;
const TAKEN_GLU: u32 = 0u;
const TAKEN_DOWN: u32 = 64u;
const GLU_DONE: u32 = 128u;
const GROUPS_DONE: u32 = 192u;
// The down projection, in W's dtype and order, and m (down's x), in floats: a float of a
// vec4 stored alone was a store of the whole vec4 on lavapipe (and likely the H200), so
// that items writing beside each other lost each other's floats.
@group(0) @binding(8) var<storage, read> w_down: array<vec4<u32>>;
// Coherent, so that a workgroup's loads of m see what others stored before they counted
// their items done (without it the H200 and lavapipe read m unwritten now and then).
@coherent @group(0) @binding(9) var<storage, read_write> m: array<f32>;

// Whether the workgroup works on down items (all its invocations alike).
var<private> down: bool;
// Whether x (RES = 1: y in y_sh) is formed, or m is known to be written.
var<private> ready: bool;
// Which of tickets_sh holds the current item's ticket; the other gets the next.
var<private> slot: u32;
var<workgroup> tickets_sh: array<u32, 2>;

fn mlp_down() -> bool {
    return down;
}

fn mlp_x(at: u32) -> vec4<f32> {
    return vec4<f32>(m[4u * at], m[4u * at + 1u], m[4u * at + 2u], m[4u * at + 3u]);
}

fn mlp_w8(g: u32) -> W8 {
    if (DTYPE == 0u) {
        return widen8(w_down[2u * g], w_down[2u * g + 1u]);
    }
    return widen8(w_down[g], vec4<u32>());
}

fn glu_put(at: u32, v: f32) {
    m[at] = v;
}

// Takes the next ticket, and for the first down item waits for m; true where x needs no
// forming (a down item, or a gate|up item after the workgroup's first).
fn mlp_prologue(lid: u32) -> bool {
    if (lid == 0u) {
        tickets_sh[1u - slot] = atomicAdd(&queue[select(TAKEN_GLU, TAKEN_DOWN, down)], 1u);
    }
    let was = ready;
    ready = true;
    if (down) {
        if (lid == 0u && !was) {
            wait_done(glu_groups());
        }
        storageBarrier();
        return true;
    }
    return was;
}

// A wait that gives up after 2³² − 1 polls (minutes on the H200), so that an adapter
// without forward progress gets a wrong row rather than a device hung for good. Each poll
// adds 0: lavapipe read an atomicLoad in such a loop once, so its waits ended at once.
fn wait_done(items: u32) {
    for (var polls = 0u; polls < 0xffffffffu; polls = polls + 1u) {
        if (atomicAdd(&queue[GLU_DONE], 0u) >= items) {
            break;
        }
    }
}

// The ticket in the next slot, taken from counter i; every invocation must call it.
fn take(lid: u32, i: u32) -> u32 {
    slot = 1u - slot;
    if (lid == 0u) {
        tickets_sh[slot] = atomicAdd(&queue[i], 1u);
    }
    return workgroupUniformLoad(&tickets_sh[slot]);
}

// The ticket mlp_prologue took; every invocation must call it.
fn next(lid: u32) -> u32 {
    slot = 1u - slot;
    return workgroupUniformLoad(&tickets_sh[slot]);
}

@compute @workgroup_size(256)
fn gemv_mlp(@builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) n: vec3<u32>) {
    let items = glu_groups();
    var t = take(lid, TAKEN_GLU);
    loop {
        if (t >= items) {
            break;
        }
        glu_rows(lid, t);
        // The item's part of m out, then counted.
        storageBarrier();
        if (lid == 0u) {
            atomicAdd(&queue[GLU_DONE], 1u);
        }
        t = next(lid);
    }
    down = true;
    ready = false;
    t = take(lid, TAKEN_DOWN);
    loop {
        if (t >= (p.k + 7u) / 8u) {
            break;
        }
        gemv_out(lid, t, false);
        t = next(lid);
    }
    if (lid == 0u && atomicAdd(&queue[GROUPS_DONE], 1u) + 1u == n.x) {
        for (var i = 0u; i < 4u; i = i + 1u) {
            atomicStore(&queue[64u * i], 0u);
        }
    }
}
