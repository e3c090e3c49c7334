// Which positions a row sees (spec §4, §6's near set), as attend.wgsl and attend_rows.wgsl
// walk them: the sinks [0, min(sinks, p + 1)), then [lo, p] with lo = max(sinks,
// p + 1 − window) (window 0: no bound). Every module that includes this has `sinks` and
// `window` in its parameters `p`.

struct Seen {
    sinks: u32, // sinks the row sees
    lo: u32,    // first position after them
    n: u32,     // positions seen in all
}

fn seen(pos: u32) -> Seen {
    let ns = min(p.sinks, pos + 1u);
    var lo = p.sinks;
    if (p.window != 0u && pos + 1u > p.window) {
        lo = max(lo, pos + 1u - p.window);
    }
    lo = min(lo, pos + 1u);
    return Seen(ns, lo, ns + pos + 1u - lo);
}

// The position of step i of the walk `s`: the sinks first, then lo onwards.
fn walk_at(s: Seen, i: u32) -> u32 {
    if (i < s.sinks) {
        return i;
    }
    return s.lo + i - s.sinks;
}
