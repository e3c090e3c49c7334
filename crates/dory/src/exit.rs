//! Early exit (spec §5): when a decoded token reads out, and what decides that it
//! leaves the loop. Statistics are computed in f64 on the softmax of the raw logits
//! (temperature 1, whatever the sampling temperature).

use serde::{Deserialize, Serialize};

/// What decides that a decoded token leaves the loop early (spec §5).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Criterion {
    None,
    /// KL(p_k ‖ p_{k−1}) < threshold.
    Kl,
    /// max p_k ≥ threshold.
    Confidence,
}

/// An early-exit rule: a config's `exit` section, `--exit`, or a request's `exit`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExitRule {
    pub criterion: Criterion,
    /// Required unless the criterion is none (`Config::parse` checks that it is given).
    #[serde(default)]
    pub threshold: f64,
    #[serde(default = "one")]
    pub min_passes: usize,
}

fn one() -> usize {
    1
}

impl Default for ExitRule {
    fn default() -> Self {
        ExitRule::NONE
    }
}

impl ExitRule {
    pub const NONE: ExitRule = ExitRule { criterion: Criterion::None, threshold: 0.0, min_passes: 1 };

    pub fn is_none(&self) -> bool {
        self.criterion == Criterion::None
    }

    /// Whether the token reads out after pass `k` of `passes`.
    pub fn reads_out(&self, k: usize, passes: usize) -> bool {
        self.criterion != Criterion::None && k >= self.min_passes.saturating_sub(1).max(1) && k < passes
    }

    /// Whether the rule is tested after pass `k` of `passes`.
    pub fn tested(&self, k: usize, passes: usize) -> bool {
        let least = match self.criterion {
            Criterion::None => return false,
            Criterion::Kl => self.min_passes.max(2),
            Criterion::Confidence => self.min_passes,
        };
        k >= least && k < passes
    }

    /// The statistic the criterion tests, from the log-probabilities of this read-out and
    /// of the one before it (KL needs that one: `tested` never asks before there is one).
    pub fn statistic(&self, logp: &[f64], previous: Option<&[f64]>) -> f64 {
        match self.criterion {
            Criterion::Kl => kl(logp, previous.expect("a read-out after the pass before")),
            Criterion::Confidence | Criterion::None => confidence(logp),
        }
    }

    /// Whether a statistic lets the token leave.
    pub fn holds(&self, stat: f64) -> bool {
        match self.criterion {
            Criterion::None => false,
            Criterion::Kl => stat < self.threshold,
            Criterion::Confidence => stat >= self.threshold,
        }
    }
}

/// How many passes a decoded step whose rule the device tests is recorded to
/// (`Forward::set_cap`). Recorded to all of them, a step that leaves early still runs the
/// later passes' dispatches, emptied, a few µs each on a GPU; recorded to fewer, it runs its
/// later passes only where its row goes on past them, after a read and with the step
/// recorded after it emptied (`Backend::gate`), so that a miss costs a host round trip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cap {
    /// The most passes any of the last n tokens decoded ran (every pass before the first,
    /// and where n is 0).
    Recent(usize),
    /// k passes.
    Fixed(usize),
}

/// The passes of the tokens decoded last, as many as `Cap::Recent` looks back at.
#[derive(Debug, Default)]
pub struct Recent {
    passes: std::collections::VecDeque<usize>,
}

impl Recent {
    pub fn push(&mut self, passes: usize, keep: usize) {
        self.passes.push_back(passes);
        while self.passes.len() > keep {
            self.passes.pop_front();
        }
    }

    /// The passes `cap` records a step to, of `passes` (before any is tested: all).
    pub fn cap(&self, cap: Cap, passes: usize) -> usize {
        match cap {
            Cap::Recent(n) => self.passes.iter().rev().take(n).copied().max().unwrap_or(passes),
            Cap::Fixed(k) => k,
        }
    }
}

impl std::fmt::Display for ExitRule {
    /// As `--exit` takes it: `none`, `kl:0.05`, `confidence:0.9:2`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self.criterion {
            Criterion::None => return write!(f, "none"),
            Criterion::Kl => "kl",
            Criterion::Confidence => "confidence",
        };
        write!(f, "{name}:{}", self.threshold)?;
        if self.min_passes > 1 {
            write!(f, ":{}", self.min_passes)?;
        }
        Ok(())
    }
}

impl std::str::FromStr for ExitRule {
    type Err = crate::Error;

    /// `none`, `kl:T` or `confidence:T`, optionally `…:T:MIN_PASSES` (what `--exit` and the
    /// server's `exit` field take).
    fn from_str(text: &str) -> crate::Result<ExitRule> {
        let bad = |why: &str| {
            crate::Error::Invalid(format!("exit rule {text:?}: {why} (write none, kl:T or confidence:T[:MIN_PASSES])"))
        };
        let parts: Vec<&str> = text.split(':').collect();
        let criterion = match parts[0] {
            "none" if parts.len() == 1 => return Ok(ExitRule::NONE),
            "kl" => Criterion::Kl,
            "confidence" => Criterion::Confidence,
            _ => return Err(bad("unknown rule")),
        };
        let threshold = match parts.get(1).map(|t| t.parse::<f64>()) {
            Some(Ok(t)) if t.is_finite() && t >= 0.0 => t,
            _ => return Err(bad("the threshold must be a number ≥ 0")),
        };
        let min_passes = match parts.get(2).map(|m| m.parse::<usize>()) {
            None => 1,
            Some(Ok(m)) if m >= 1 => m,
            _ => return Err(bad("min_passes must be an integer ≥ 1")),
        };
        if parts.len() > 3 {
            return Err(bad("too many fields"));
        }
        Ok(ExitRule { criterion, threshold, min_passes })
    }
}

/// ln softmax(logits), as logit − log-sum-exp (never the log of an underflowed p).
pub fn log_softmax(logits: &[f32]) -> Vec<f64> {
    let max = logits.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(f64::from(x)));
    let sum: f64 = logits.iter().map(|&x| (f64::from(x) - max).exp()).sum();
    let lse = max + sum.ln();
    logits.iter().map(|&x| f64::from(x) - lse).collect()
}

/// KL(p ‖ q) = Σ p (ln p − ln q) from log-probabilities.
pub fn kl(logp: &[f64], logq: &[f64]) -> f64 {
    logp.iter().zip(logq).map(|(&a, &b)| a.exp() * (a - b)).sum()
}

/// max p.
pub fn confidence(logp: &[f64]) -> f64 {
    logp.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x)).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(criterion: Criterion, min_passes: usize) -> ExitRule {
        ExitRule { criterion, threshold: 0.5, min_passes }
    }

    #[test]
    fn schedule_follows_the_spec() {
        // P = 4, kl, min_passes 1: read-outs after 1, 2, 3; tests after 2 and 3.
        let r = rule(Criterion::Kl, 1);
        assert_eq!((1..=4).filter(|&k| r.reads_out(k, 4)).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!((1..=4).filter(|&k| r.tested(k, 4)).collect::<Vec<_>>(), [2, 3]);
        // confidence, min_passes 1: read-outs and tests after 1, 2 (P = 3).
        let r = rule(Criterion::Confidence, 1);
        assert_eq!((1..=3).filter(|&k| r.reads_out(k, 3)).collect::<Vec<_>>(), [1, 2]);
        assert_eq!((1..=3).filter(|&k| r.tested(k, 3)).collect::<Vec<_>>(), [1, 2]);
        // min_passes 3 of P = 5 under kl: read-outs from pass 2, tests from pass 3.
        let r = rule(Criterion::Kl, 3);
        assert_eq!((1..=5).filter(|&k| r.reads_out(k, 5)).collect::<Vec<_>>(), [2, 3, 4]);
        assert_eq!((1..=5).filter(|&k| r.tested(k, 5)).collect::<Vec<_>>(), [3, 4]);
        // none never reads out; P = 1 never exits early.
        assert!(!(1..=4).any(|k| rule(Criterion::None, 1).reads_out(k, 4)));
        assert!(!rule(Criterion::Confidence, 1).tested(1, 1));
    }

    #[test]
    fn statistics_match_their_formulas() {
        let a = [2.0f32, 0.0, -1.0];
        let b = [1.0f32, 1.0, -3.0];
        let (la, lb) = (log_softmax(&a), log_softmax(&b));
        let p: Vec<f64> = la.iter().map(|x| x.exp()).collect();
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let q: Vec<f64> = lb.iter().map(|x| x.exp()).collect();
        let want: f64 = p.iter().zip(&q).map(|(p, q)| p * (p / q).ln()).sum();
        assert!((kl(&la, &lb) - want).abs() < 1e-12);
        assert!(kl(&la, &la).abs() < 1e-15);
        assert!((confidence(&la) - p[0]).abs() < 1e-12);
        // Each criterion's statistic.
        assert_eq!(rule(Criterion::Kl, 1).statistic(&la, Some(&lb)), kl(&la, &lb));
        assert_eq!(rule(Criterion::Confidence, 1).statistic(&la, None), confidence(&la));
        // Far-apart logits: ln p stays finite where p underflows.
        let l = log_softmax(&[0.0, -2000.0]);
        assert_eq!(l[1], -2000.0);
    }

    #[test]
    fn rules_parse_and_print() {
        for text in ["none", "kl:0.05", "confidence:0.9:2"] {
            assert_eq!(text.parse::<ExitRule>().unwrap().to_string(), text);
        }
        let r: ExitRule = "kl:0.05:1".parse().unwrap();
        assert_eq!((r.criterion, r.threshold, r.min_passes), (Criterion::Kl, 0.05, 1));
        for bad in ["", "kl", "kl:x", "kl:-1", "confidence:0.5:0", "entropy:1", "none:1", "kl:1:2:3", "kl:inf"] {
            let e = bad.parse::<ExitRule>().unwrap_err().to_string();
            assert!(e.starts_with(&format!("exit rule {bad:?}")), "{e}");
        }
    }

    #[test]
    fn thresholds() {
        assert!(rule(Criterion::Kl, 1).holds(0.49));
        assert!(!rule(Criterion::Kl, 1).holds(0.5));
        assert!(rule(Criterion::Confidence, 1).holds(0.5));
        assert!(!rule(Criterion::Confidence, 1).holds(0.49));
    }
}
