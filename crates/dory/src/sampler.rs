//! Choosing the next token (spec §7).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::error::{invalid, Result};
use crate::rng::Rng;

/// How many recent tokens the repetition penalty looks at.
pub const PENALTY_WINDOW: usize = 64;

#[derive(Clone, Debug, PartialEq)]
pub struct Sampling {
    /// 0: greedy.
    pub temperature: f32,
    /// 0: off.
    pub top_k: usize,
    /// 1: off.
    pub top_p: f32,
    /// 0: off.
    pub min_p: f32,
    /// 1: off.
    pub repetition_penalty: f32,
    pub seed: u64,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling { temperature: 0.8, top_k: 40, top_p: 0.95, min_p: 0.05, repetition_penalty: 1.0, seed: 0 }
    }
}

impl Sampling {
    pub fn greedy() -> Sampling {
        Sampling { temperature: 0.0, ..Sampling::default() }
    }

    /// Refuses options outside their range, naming the option.
    pub fn validate(&self) -> Result<()> {
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return Err(invalid!("temperature must be a finite number ≥ 0, got {}", self.temperature));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(invalid!("top-p must be in (0, 1], got {}", self.top_p));
        }
        if !(0.0..=1.0).contains(&self.min_p) {
            return Err(invalid!("min-p must be in [0, 1], got {}", self.min_p));
        }
        if !(self.repetition_penalty.is_finite() && self.repetition_penalty > 0.0) {
            return Err(invalid!("repetition penalty must be a finite number > 0, got {}", self.repetition_penalty));
        }
        Ok(())
    }
}

/// A seeded sampler: the same seed, logits and history give the same tokens.
pub struct Sampler {
    opts: Sampling,
    rng: Rng,
}

impl Sampler {
    pub fn new(opts: Sampling) -> Result<Sampler> {
        opts.validate()?;
        let rng = Rng::new(opts.seed);
        Ok(Sampler { opts, rng })
    }

    /// Picks a token from `logits` given the session's `recent` tokens (the last
    /// `PENALTY_WINDOW`, prompt included).
    pub fn sample(&mut self, logits: &[f32], recent: &VecDeque<u32>) -> u32 {
        let o = &self.opts;
        let mut l = logits.to_vec();
        if o.repetition_penalty != 1.0 {
            // Each token once, however often it appears.
            let mut seen: Vec<u32> = recent.iter().copied().collect();
            seen.sort_unstable();
            seen.dedup();
            for id in seen {
                if let Some(x) = l.get_mut(id as usize) {
                    *x = if *x > 0.0 { *x / o.repetition_penalty } else { *x * o.repetition_penalty };
                }
            }
        }
        if o.temperature == 0.0 {
            return argmax(&l);
        }
        // Candidates by falling logit (ties by id), then the filters in spec order.
        let mut ids = match o.top_k {
            k if k > 0 && k < l.len() => top_k(&l, k),
            _ => (0..l.len() as u32).collect(),
        };
        ids.sort_unstable_by(|&a, &b| l[b as usize].total_cmp(&l[a as usize]).then(a.cmp(&b)));
        let t = f64::from(o.temperature);
        let top = f64::from(l[ids[0] as usize]) / t;
        let mut p: Vec<f64> = ids.iter().map(|&i| (f64::from(l[i as usize]) / t - top).exp()).collect();
        let total: f64 = p.iter().sum();
        p.iter_mut().for_each(|x| *x /= total);
        if o.top_p < 1.0 {
            let mut cum = 0.0;
            let keep = p.iter().position(|&x| {
                cum += x;
                cum >= f64::from(o.top_p)
            });
            let keep = keep.map_or(p.len(), |i| i + 1);
            p.truncate(keep);
        }
        if o.min_p > 0.0 {
            let floor = f64::from(o.min_p) * p[0];
            let keep = p.iter().take_while(|&&x| x >= floor).count().max(1);
            p.truncate(keep);
        }
        let total: f64 = p.iter().sum();
        let mut u = self.rng.uniform() * total;
        for (i, &x) in p.iter().enumerate() {
            if u < x {
                return ids[i];
            }
            u -= x;
        }
        ids[p.len() - 1]
    }
}

/// The ids of the `k` largest logits (ties to the lowest ids), in no order: one pass that
/// keeps the best so far, where a sort of the whole vocabulary cost ~1 ms a token at 32k
/// ids, with the GPU idle meanwhile.
fn top_k(logits: &[f32], k: usize) -> Vec<u32> {
    // f32::total_cmp's order as an integer's: NaNs and -0.0 stay where it puts them.
    let key = |x: f32| {
        let bits = x.to_bits() as i32;
        bits ^ (((bits >> 31) as u32) >> 1) as i32
    };
    // The worst kept on top: the lowest logit, then the highest id.
    let mut kept: BinaryHeap<Reverse<(i32, Reverse<u32>)>> = BinaryHeap::with_capacity(k + 1);
    for (id, &x) in logits.iter().enumerate() {
        let c = (key(x), Reverse(id as u32));
        if kept.len() < k {
            kept.push(Reverse(c));
        } else if kept.peek().is_some_and(|w| c > w.0) {
            kept.pop();
            kept.push(Reverse(c));
        }
    }
    kept.into_iter().map(|Reverse((_, Reverse(id)))| id).collect()
}

/// The largest logit's id, the lowest id among ties (NaNs are passed over, but a NaN first
/// logit is taken, as a scan that keeps the first until a larger one comes would).
pub fn argmax(logits: &[f32]) -> u32 {
    // The largest value in 16 independent lanes, then its first id: a single scan's
    // comparison waits on the one before it (~8 µs for 4,096 logits; 32,000 took ~60).
    const LANES: usize = 16;
    let Some(&first) = logits.first() else { return 0 };
    if first.is_nan() {
        return 0;
    }
    let mut lanes = [first; LANES];
    let chunks = logits.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (m, &x) in lanes.iter_mut().zip(chunk) {
            *m = if x > *m { x } else { *m };
        }
    }
    let top = lanes.iter().chain(tail).fold(first, |m, &x| if x > m { x } else { m });
    logits.iter().position(|&x| x == top).unwrap_or(0) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(opts: Sampling, logits: &[f32], n: usize) -> Vec<u32> {
        let mut s = Sampler::new(opts).unwrap();
        (0..n).map(|_| s.sample(logits, &VecDeque::new())).collect()
    }

    fn free() -> Sampling {
        Sampling { temperature: 1.0, top_k: 0, top_p: 1.0, min_p: 0.0, repetition_penalty: 1.0, seed: 3 }
    }

    #[test]
    fn greedy_takes_the_lowest_id_of_a_tie() {
        assert_eq!(argmax(&[0.5, 2.0, 2.0, -1.0]), 1);
        assert_eq!(draws(Sampling::greedy(), &[0.5, 2.0, 2.0], 3), [1, 1, 1]);
    }

    #[test]
    fn argmax_agrees_with_a_plain_scan() {
        let scan = |l: &[f32]| {
            let mut best = 0;
            for (i, &x) in l.iter().enumerate() {
                if x > l[best] {
                    best = i;
                }
            }
            best as u32
        };
        let mut rng = crate::rng::Rng::new(7);
        for len in [1, 2, 15, 16, 17, 33, 4096, 4099] {
            for round in 0..20 {
                // Coarse values, so that ties are common; NaNs and infinities here and there.
                let mut l: Vec<f32> = (0..len).map(|_| (rng.uniform() * 8.0).floor() as f32 - 4.0).collect();
                let i = round % len;
                match round % 5 {
                    1 => l[i] = f32::NAN,
                    2 => l[i] = f32::INFINITY,
                    3 => l.iter_mut().for_each(|x| *x = f32::NEG_INFINITY),
                    _ => {}
                }
                assert_eq!(argmax(&l), scan(&l), "{l:?}");
            }
        }
        assert_eq!(argmax(&[]), 0);
    }

    #[test]
    fn filters_cut_the_tail() {
        let logits = [3.0f32, 2.9, 0.0, -1.0, -5.0];
        let k = draws(Sampling { top_k: 2, ..free() }, &logits, 500);
        assert!(k.iter().all(|&t| t < 2) && k.contains(&0) && k.contains(&1));
        // p ≈ [.50 .45 .03 .01 .0002]: top-p 0.9 keeps the first two.
        let p = draws(Sampling { top_p: 0.9, ..free() }, &logits, 500);
        assert!(p.iter().all(|&t| t < 2));
        // min-p 0.04 keeps tokens with p ≥ 0.0203: the first three.
        let m = draws(Sampling { min_p: 0.04, ..free() }, &logits, 3000);
        assert!(m.iter().all(|&t| t < 3) && m.contains(&2));
        let all = draws(free(), &logits, 3000);
        assert!(all.contains(&3));
    }

    #[test]
    fn top_k_keeps_what_a_whole_sort_would() {
        let mut rng = Rng::new(7);
        for n in [1usize, 2, 40, 41, 300, 4096] {
            // Few distinct values, so that ties cross the k-th place, and the values
            // total_cmp orders apart: ±0, ±∞, NaNs of both signs.
            let mut l: Vec<f32> = (0..n).map(|_| (rng.uniform() * 8.0).floor() as f32 - 4.0).collect();
            for (i, x) in [0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN].into_iter().enumerate() {
                if let Some(v) = l.get_mut(i * 7 % n) {
                    *v = x;
                }
            }
            let falling = |a: &u32, b: &u32| l[*b as usize].total_cmp(&l[*a as usize]).then(a.cmp(b));
            let mut sorted: Vec<u32> = (0..n as u32).collect();
            sorted.sort_by(falling);
            for k in [1, 2, 39, 40, n.saturating_sub(1)].into_iter().filter(|&k| k > 0 && k < n) {
                let mut top = top_k(&l, k);
                top.sort_by(falling);
                assert_eq!(top, sorted[..k], "n {n}, k {k}");
            }
        }
    }

    #[test]
    fn frequencies_follow_the_softmax() {
        let logits = [1.0f32, 0.0];
        let n = 20000;
        let ones = draws(free(), &logits, n).iter().filter(|&&t| t == 1).count();
        let want = 1.0 / (1.0 + 1f64.exp());
        assert!(((ones as f64 / n as f64) - want).abs() < 0.015);
        // Temperature 0.5 doubles the logit gap.
        let ones = draws(Sampling { temperature: 0.5, ..free() }, &logits, n).iter().filter(|&&t| t == 1).count();
        let want = 1.0 / (1.0 + 2f64.exp());
        assert!(((ones as f64 / n as f64) - want).abs() < 0.015);
    }

    #[test]
    fn seeds_repeat_and_differ() {
        let logits: Vec<f32> = (0..50).map(|i| (i as f32 * 0.37).sin()).collect();
        assert_eq!(draws(free(), &logits, 40), draws(free(), &logits, 40));
        assert_ne!(draws(free(), &logits, 40), draws(Sampling { seed: 4, ..free() }, &logits, 40));
    }

    #[test]
    fn repetition_penalty_divides_and_multiplies() {
        let mut s = Sampler::new(Sampling { repetition_penalty: 2.0, ..Sampling::greedy() }).unwrap();
        let recent: VecDeque<u32> = [0, 0].into_iter().collect();
        // 3.0 → 1.5 loses to 2.0.
        assert_eq!(s.sample(&[3.0, 2.0], &recent), 1);
        // −1.0 → −2.0 loses to −1.5.
        assert_eq!(s.sample(&[-1.0, -1.5], &recent), 1);
    }

    #[test]
    fn bad_options_are_named() {
        let bad = [
            (Sampling { temperature: -0.1, ..free() }, "temperature"),
            (Sampling { temperature: f32::NAN, ..free() }, "temperature"),
            (Sampling { top_p: 0.0, ..free() }, "top-p"),
            (Sampling { top_p: 1.5, ..free() }, "top-p"),
            (Sampling { min_p: -0.5, ..free() }, "min-p"),
            (Sampling { repetition_penalty: 0.0, ..free() }, "repetition penalty"),
        ];
        for (opts, name) in bad {
            let e = Sampler::new(opts).err().expect("refused").to_string();
            assert!(e.starts_with(name), "{e}");
        }
    }
}
