// A decoded row's exit rule tested on the device (spec §5's early exit), after a read-out it
// tests: the statistic of these logits (and, under KL, of the read-out before, kept row 0),
// and the rule's verdict. Where it holds, the pass is written after the logits and the
// greedy token's word (as a u32, 0 while the row goes on) and the step's later dispatches
// are emptied: each is indirect, its
// counts in `args` (the recorder's), which the rest of the step then reads as zeros. Where
// it does not, these logits become the next test's "before". A later test of a row that has
// left does nothing (this kernel itself is not skipped: it writes the counts that the
// skipped read). One workgroup, one walk of the logits (five walks, one after another,
// took 17.5 µs a test on the H100): the statistic is the host's (exit.rs), in f32, so a
// verdict may differ from the host's only for a statistic within rounding of the threshold,
// which spec §8 allows.

// The parameters `p`: exit.rs's `Params` (kernels.rs declares their `struct P`).

@group(0) @binding(0) var<storage, read_write> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> kept: array<f32>;
@group(0) @binding(2) var<storage, read_write> args: array<u32>;

const WG: u32 = 256u;
// exit.rs's criteria.
const KL: u32 = 1u;

var<workgroup> gone: u32;

// An invocation's online sums (exit_test): the maxima of a and b, and Σ e^{a − ma},
// Σ e^{a − ma} (a − b), Σ e^{b − mb}.
struct Online {
    ma: f32,
    mb: f32,
    sums: vec3<f32>,
}

// `run` with the logit a and its read-out before, b.
fn fold(run: Online, a: f32, b: f32) -> Online {
    let na = max(run.ma, a);
    let nb = max(run.mb, b);
    let ea = exp(a - na);
    let ra = exp(run.ma - na);
    let s = run.sums;
    return Online(na, nb, vec3(s.x * ra + ea, s.y * ra + ea * (a - b), s.z * exp(run.mb - nb) + exp(b - nb)));
}

@compute @workgroup_size(256)
fn exit_test(@builtin(local_invocation_index) lid: u32) {
    if (lid == 0u) {
        gone = select(bitcast<u32>(logits[p.v + 1u]), 0u, p.first != 0u);
    }
    if (workgroupUniformLoad(&gone) != 0u) {
        return;
    }
    // One walk, online: over these logits a and (KL) the read-out before, b (else a again),
    // each invocation's maxima, Σ e^{a − ma}, Σ e^{a − ma} (a − b) and Σ e^{b − mb}; four
    // logits' loads (and their b's) in flight before any is folded in.
    let kl = p.criterion == KL;
    var run = Online(-3.0e38, -3.0e38, vec3(0.0));
    var i = lid;
    for (; i + 3u * WG < p.v; i = i + 4u * WG) {
        let a0 = logits[i];
        let a1 = logits[i + WG];
        let a2 = logits[i + 2u * WG];
        let a3 = logits[i + 3u * WG];
        let b0 = select(a0, kept[i], kl);
        let b1 = select(a1, kept[i + WG], kl);
        let b2 = select(a2, kept[i + 2u * WG], kl);
        let b3 = select(a3, kept[i + 3u * WG], kl);
        run = fold(fold(fold(fold(run, a0, b0), a1, b1), a2, b2), a3, b3);
    }
    for (; i < p.v; i = i + WG) {
        let a = logits[i];
        run = fold(run, a, select(a, kept[i], kl));
    }
    // The invocations' runs met at the workgroup's maxima.
    let m = seg_max4(vec4(run.ma, run.mb, 0.0, 0.0), lid, WG);
    let ka = exp(run.ma - m.x);
    let s = seg_sum4(vec4(run.sums.x * ka, run.sums.y * ka, run.sums.z * exp(run.mb - m.y), 0.0), lid, WG);
    // KL: Σ p (a − b) − (lse_a − lse_b), p = e^{a − lse_a}; confidence: max p = e^{ma − lse_a}.
    let lse_a = m.x + log(s.x);
    let lse_b = m.y + log(s.z);
    let stat = select(1.0 / s.x, s.y / s.x - (lse_a - lse_b), kl);
    let holds = select(stat >= p.threshold, stat < p.threshold, kl);
    if (holds) {
        if (lid == 0u) {
            logits[p.v + 1u] = bitcast<f32>(p.k);
        }
        for (var i = lid; i < 3u * args[0]; i = i + WG) {
            args[1u + i] = 0u;
        }
    } else {
        if (lid == 0u) {
            logits[p.v + 1u] = 0.0;
        }
        for (var i = lid; i < p.v; i = i + WG) {
            kept[i] = logits[i];
        }
    }
}

// The word a gate (exit_gate) leaves after the logits where it emptied its step: a row that
// has left, to the step's own tests.
const EMPTIED: u32 = 0xffffffffu;

// The first dispatch of a decoded step recorded ahead of one recorded to fewer than all its
// passes (forward.rs's `upto`): where that row went on past them (the word after its greedy
// token's still 0), this step is emptied, as a test that holds empties the rest of its own
// (the host then runs that row's later passes and records this step again), and the word
// set to EMPTIED, so that this step's tests do nothing; else the word is cleared for them.
@compute @workgroup_size(256)
fn exit_gate(@builtin(local_invocation_index) lid: u32) {
    if (lid == 0u) {
        gone = bitcast<u32>(logits[p.v + 1u]);
    }
    let went_on = workgroupUniformLoad(&gone) == 0u;
    if (went_on) {
        for (var i = lid; i < 3u * args[0]; i = i + WG) {
            args[1u + i] = 0u;
        }
    }
    if (lid == 0u) {
        logits[p.v + 1u] = bitcast<f32>(select(0u, EMPTIED, went_on));
    }
}
