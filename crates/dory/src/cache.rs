//! Where a layer's keys and values live: the index math every backend shares. The
//! backends own the storage; these say which slot holds which position and which
//! positions a query sees.

use std::ops::Range;

use crate::config::LayerKind;

/// A sliding layer's ring: `cap` slots, position p in slot p mod cap. A step of T rows
/// per pass needs W + T − 1 slots (spec §5), so that its first row still sees the W − 1
/// positions before it while its last row is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ring {
    pub window: usize,
    pub cap: usize,
}

impl Ring {
    pub fn for_rows(window: usize, rows: usize) -> Ring {
        Ring { window, cap: window + rows.max(1) - 1 }
    }

    pub fn slot(&self, p: usize) -> usize {
        p % self.cap
    }
}

/// A sealed full layer's exact part (spec §6): the sinks [0, ns) in slots [0, ns), and a
/// ring of w slots after them for the window, whose position p sits in slot ns + p mod w.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Near {
    pub sinks: usize,
    pub window: usize,
}

impl Near {
    pub fn slot(&self, p: usize) -> usize {
        if p < self.sinks {
            p
        } else {
            self.sinks + p % self.window
        }
    }

    /// The window of a query at `p`: [max(ns, p − w + 1), p].
    pub fn window_of(&self, p: usize) -> Range<usize> {
        (p + 1).saturating_sub(self.window).max(self.sinks)..p + 1
    }

    /// The far span [ns, p − w] of a query at `p`, empty while p − w < ns.
    pub fn far(&self, p: usize) -> Range<usize> {
        self.sinks..(p + 1).saturating_sub(self.window).max(self.sinks)
    }

    /// The position that leaves the window when a step at `p` starts, if it joins the
    /// far span (spec §6, push).
    pub fn leaving(&self, p: usize) -> Option<usize> {
        p.checked_sub(self.window).filter(|&e| e >= self.sinks)
    }
}

/// How a layer maps positions to slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keys {
    /// A sliding layer.
    Ring(Ring),
    /// A full layer running exactly: position p in slot p. With `sample`, it also keeps
    /// the prepared queries of the positions j ≡ 0 (mod sample) for a later seal (O(1)
    /// mode before the seal), query j in row j / sample of the layer's query store.
    Full { sample: Option<usize> },
    /// A full layer after the seal.
    Sealed(Near),
}

impl Keys {
    /// The layout a step of `rows` rows needs, for a layer that is not sealed.
    pub fn for_step(kind: LayerKind, window: usize, rows: usize, sample: Option<usize>) -> Keys {
        match kind {
            LayerKind::Sliding => Keys::Ring(Ring::for_rows(window, rows)),
            LayerKind::Full => Keys::Full { sample },
        }
    }

    pub fn slot(&self, p: usize) -> usize {
        match self {
            Keys::Ring(r) => r.slot(p),
            Keys::Full { .. } => p,
            Keys::Sealed(n) => n.slot(p),
        }
    }

    /// The positions a query at `p` sees exactly (spec §4, §6), itself included: for a
    /// sealed layer, the sinks then the window.
    pub fn visible(&self, p: usize) -> std::iter::Chain<Range<usize>, Range<usize>> {
        match self {
            Keys::Ring(r) => (0..0).chain((p + 1).saturating_sub(r.window)..p + 1),
            Keys::Full { .. } => (0..0).chain(0..p + 1),
            Keys::Sealed(n) => (0..n.sinks.min(p + 1)).chain(n.window_of(p)),
        }
    }

    /// Slots the layer needs to hold positions below `end`: a ring needs no more slots
    /// than positions (p mod cap ≤ p), so that a huge window costs only the context.
    pub fn slots(&self, end: usize) -> usize {
        match self {
            Keys::Ring(r) => r.cap.min(end),
            Keys::Full { .. } => end,
            Keys::Sealed(n) => n.sinks + n.window,
        }
    }

    /// Rows of the query store the layer needs for positions below `end`.
    pub fn samples(&self, end: usize) -> usize {
        match self {
            Keys::Full { sample: Some(s) } => end.div_ceil(*s),
            _ => 0,
        }
    }

    /// When a step at `pos0` changes the layout from `self` to `next`: each position
    /// still visible to the step, moved from its old slot to its new one.
    pub fn moves(&self, next: &Keys, pos0: usize) -> Vec<(usize, usize)> {
        match (self, next) {
            (Keys::Ring(old), Keys::Ring(new)) if old != new => {
                let keep = pos0.saturating_sub(old.window.min(new.window) - 1)..pos0;
                keep.map(|p| (old.slot(p), new.slot(p))).collect()
            }
            (Keys::Full { .. }, Keys::Sealed(near)) => {
                let window = near.window_of(pos0);
                (0..near.sinks.min(pos0)).chain(window.start..pos0).map(|p| (p, near.slot(p))).collect()
            }
            _ => vec![],
        }
    }
}

/// The positions `pos0..pos0 + rows` of one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rows {
    pub pos0: usize,
    pub rows: usize,
}

impl Rows {
    pub fn end(&self) -> usize {
        self.pos0 + self.rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_slots_never_collide_within_a_step() {
        // Every position a row of the step sees must sit in its own slot while the
        // whole step is written: W − 1 positions before it plus the step's T rows.
        for window in 1..9 {
            for rows in 1..12 {
                let keys = Keys::for_step(LayerKind::Sliding, window, rows, None);
                for pos0 in 0usize..30 {
                    let live = pos0.saturating_sub(window - 1)..pos0 + rows;
                    let mut slots: Vec<usize> = live.clone().map(|p| keys.slot(p)).collect();
                    slots.sort();
                    slots.dedup();
                    assert_eq!(slots.len(), live.len(), "W {window} T {rows} at {pos0}");
                    assert!(slots.iter().all(|&s| s < keys.slots(pos0 + rows)));
                }
            }
        }
    }

    #[test]
    fn visible_spans() {
        let ring = Keys::for_step(LayerKind::Sliding, 4, 1, None);
        let seen = |k: &Keys, p: usize| k.visible(p).collect::<Vec<_>>();
        assert_eq!(seen(&ring, 0), [0]);
        assert_eq!(seen(&ring, 2), [0, 1, 2]);
        assert_eq!(seen(&ring, 10), [7, 8, 9, 10]);
        let full = Keys::Full { sample: None };
        assert_eq!(seen(&full, 3), [0, 1, 2, 3]);
        assert_eq!(full.slot(10), 10);
        let sealed = Keys::Sealed(Near { sinks: 2, window: 3 });
        assert_eq!(seen(&sealed, 1), [0, 1]);
        assert_eq!(seen(&sealed, 3), [0, 1, 2, 3]);
        assert_eq!(seen(&sealed, 10), [0, 1, 8, 9, 10]);
    }

    #[test]
    fn relayout_keeps_what_the_next_step_sees() {
        for (w, t_old, t_new) in [(4, 9, 1), (4, 1, 6), (3, 5, 2), (1, 7, 1)] {
            let old = Keys::for_step(LayerKind::Sliding, w, t_old, None);
            let new = Keys::for_step(LayerKind::Sliding, w, t_new, None);
            for pos0 in 0usize..25 {
                let moves = old.moves(&new, pos0);
                let kept: Vec<usize> = (pos0.saturating_sub(w - 1)..pos0).collect();
                assert_eq!(moves.len(), kept.len());
                for (p, (from, to)) in kept.iter().zip(moves) {
                    assert_eq!((from, to), (old.slot(*p), new.slot(*p)));
                }
            }
        }
        let full = Keys::Full { sample: Some(8) };
        assert!(full.moves(&full, 5).is_empty());
    }

    #[test]
    fn the_sealed_layout() {
        for (ns, w) in [(0, 1), (2, 3), (4, 6), (1, 8)] {
            let near = Near { sinks: ns, window: w };
            for p in ns + 1..60 {
                // The near set and the far span split [0, p] with no gap or overlap.
                let far = near.far(p);
                let seen: Vec<usize> = Keys::Sealed(near).visible(p).collect();
                let mut all: Vec<usize> = seen.iter().copied().chain(far.clone()).collect();
                all.sort();
                assert_eq!(all, (0..=p).collect::<Vec<_>>(), "ns {ns} w {w} p {p}");
                // The window's slots are distinct and after the sinks'.
                let mut slots: Vec<usize> = seen.iter().map(|&j| near.slot(j)).collect();
                slots.sort();
                slots.dedup();
                assert_eq!(slots.len(), seen.len());
                assert!(slots.iter().all(|&s| s < ns + w));
                // The leaving position is the one the step's own slot held, joining F.
                if let Some(e) = near.leaving(p) {
                    assert_eq!(near.slot(e), near.slot(p));
                    assert_eq!(far.end, e + 1);
                } else {
                    assert!(far.is_empty());
                }
            }
            // Sealing at p moves the sinks and the window before p into their slots.
            let p = ns + 2 * w + 3;
            let moves = Keys::Full { sample: Some(2) }.moves(&Keys::Sealed(near), p);
            let want: Vec<(usize, usize)> = (0..ns).chain(p + 1 - w..p).map(|j| (j, near.slot(j))).collect();
            assert_eq!(moves, want);
        }
    }
}
