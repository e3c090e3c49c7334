// Which positions a row sees (spec §4, §6's near set), as attend.wgsl and attend_rows.wgsl
// walk them: the sinks [0, min(sinks, p + 1)), then [lo, p] with lo = max(sinks,
// p + 1 − window) (window 0: no bound). Every module that includes this has `sinks` and
// `window` in its parameters `p` (`pos0` too for block_walk).

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

// Whether a row at `pos` with `sn = seen(pos)` sees position i.
fn sees(sn: Seen, pos: u32, i: u32) -> bool {
    return i < sn.sinks || (i >= sn.lo && i <= pos);
}

// The walk of a block of rows r0 … last (attend_rows.wgsl, attend_coop.wgsl): the union of
// their positions, the last row's sinks, then from the first row's lo (or the sinks' end) to
// the last row's position; each row masks what it does not see.
fn block_walk(r0: u32, last: u32) -> Seen {
    let first = seen(p.pos0 + r0);
    let tail = seen(p.pos0 + last);
    let lo = max(first.lo, tail.sinks);
    return Seen(tail.sinks, lo, tail.sinks + p.pos0 + last + 1u - lo);
}
