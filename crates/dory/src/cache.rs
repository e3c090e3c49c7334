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

/// How a layer maps positions to slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keys {
    /// A sliding layer.
    Ring(Ring),
    /// A full layer in exact mode: position p in slot p.
    Full,
}

impl Keys {
    /// The layout a step of `rows` rows needs.
    pub fn for_step(kind: LayerKind, window: usize, rows: usize) -> Keys {
        match kind {
            LayerKind::Sliding => Keys::Ring(Ring::for_rows(window, rows)),
            LayerKind::Full => Keys::Full,
        }
    }

    pub fn slot(&self, p: usize) -> usize {
        match self {
            Keys::Ring(r) => r.slot(p),
            Keys::Full => p,
        }
    }

    /// The positions a query at `p` sees (spec §4), itself included.
    pub fn visible(&self, p: usize) -> Range<usize> {
        match self {
            Keys::Ring(r) => (p + 1).saturating_sub(r.window)..p + 1,
            Keys::Full => 0..p + 1,
        }
    }

    /// Slots the layer needs to hold positions below `end`.
    pub fn slots(&self, end: usize) -> usize {
        match self {
            Keys::Ring(r) => r.cap,
            Keys::Full => end,
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
                let keys = Keys::for_step(LayerKind::Sliding, window, rows);
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
        let ring = Keys::for_step(LayerKind::Sliding, 4, 1);
        assert_eq!(ring.visible(0), 0..1);
        assert_eq!(ring.visible(2), 0..3);
        assert_eq!(ring.visible(10), 7..11);
        assert_eq!(Keys::Full.visible(10), 0..11);
        assert_eq!(Keys::Full.slot(10), 10);
    }

    #[test]
    fn relayout_keeps_what_the_next_step_sees() {
        for (w, t_old, t_new) in [(4, 9, 1), (4, 1, 6), (3, 5, 2), (1, 7, 1)] {
            let old = Keys::for_step(LayerKind::Sliding, w, t_old);
            let new = Keys::for_step(LayerKind::Sliding, w, t_new);
            for pos0 in 0usize..25 {
                let moves = old.moves(&new, pos0);
                let kept: Vec<usize> = (pos0.saturating_sub(w - 1)..pos0).collect();
                assert_eq!(moves.len(), kept.len());
                for (p, (from, to)) in kept.iter().zip(moves) {
                    assert_eq!((from, to), (old.slot(*p), new.slot(*p)));
                }
            }
        }
        assert!(Keys::Full.moves(&Keys::Full, 5).is_empty());
    }
}
