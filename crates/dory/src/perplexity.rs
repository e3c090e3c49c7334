//! Perplexity and bits per byte of a text (the engine's twin of
//! `train/dory/perplexity.py`): the text is cut into windows, each a fresh session that
//! starts with bos, and every token after a window's first is scored by the logits of
//! the row before it.
//!
//! - Prefill semantics: each window one segment, every row all passes.
//! - Decode semantics: token by token, as generation feeds them, with the session's exit
//!   rule: the only way to exercise the O(1) path on long texts, and early exit.
//!
//! Bits per byte compare models whose tokenizers differ: Σ −ln p over the scored tokens
//! divided by ln 2 × the UTF-8 bytes of those tokens (special tokens count none).

use crate::backend::Backend;
use crate::error::{invalid, Result};
use crate::exit::log_softmax;
use crate::forward::Want;
use crate::session::Session;

/// How the text is fed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Semantics {
    /// Each window one segment: every row all passes, rows seeing each other in parallel.
    Prefill,
    /// Each window token by token, as decoding steps with the session's exit rule.
    Decode,
}

impl Semantics {
    /// The units `score` reports progress in, in all: tokens (decode) or chunk-passes
    /// (prefill, with `chunk` rows a chunk and `passes` passes).
    pub fn work(self, windows: &[Vec<u32>], chunk: usize, passes: usize) -> usize {
        match self {
            Semantics::Decode => windows.iter().map(Vec::len).sum(),
            Semantics::Prefill => windows.iter().map(|w| w.len().div_ceil(chunk.min(w.len())) * passes).sum(),
        }
    }
}

/// What scoring a text found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Score {
    /// Σ −ln p(token) over the scored tokens, in nats.
    pub nll: f64,
    /// Tokens scored.
    pub tokens: usize,
    /// UTF-8 bytes of the scored tokens.
    pub bytes: usize,
    /// Decoding steps run (decode semantics), and the passes they ran.
    pub steps: usize,
    pub passes: usize,
}

impl Score {
    pub fn mean_nll(&self) -> f64 {
        self.nll / self.tokens as f64
    }

    pub fn perplexity(&self) -> f64 {
        self.mean_nll().exp()
    }

    pub fn bits_per_byte(&self) -> f64 {
        self.nll / (std::f64::consts::LN_2 * self.bytes as f64)
    }

    /// Passes per decoding step (decode semantics).
    pub fn passes_per_step(&self) -> f64 {
        self.passes as f64 / self.steps.max(1) as f64
    }

    /// Scores `next` by the logits of the row before it.
    fn add(&mut self, logits: &[f32], next: u32, bytes: &[usize]) {
        self.nll -= log_softmax(logits)[next as usize];
        self.tokens += 1;
        self.bytes += bytes.get(next as usize).copied().unwrap_or(0);
    }
}

/// `ids` cut into windows of at most `context` tokens, each starting with `bos` when
/// there is one (as every session starts).
pub fn windows(ids: &[u32], bos: Option<u32>, context: usize) -> Result<Vec<Vec<u32>>> {
    let room = context.saturating_sub(usize::from(bos.is_some()));
    if context < 2 || room < 1 {
        return Err(invalid!("the context must leave room for at least one token to score, got {context}"));
    }
    if ids.len() < 1 + usize::from(bos.is_none()) {
        return Err(invalid!("too short to score: {} tokens", ids.len()));
    }
    Ok(ids.chunks(room).map(|w| bos.into_iter().chain(w.iter().copied()).collect()).collect())
}

/// Scores every window with `semantics`; `bytes[id]` is token `id`'s UTF-8 length
/// (`Tokenizer::byte_lengths`). Reports each unit of `Semantics::work` done to `progress`.
pub fn score<B: Backend>(
    session: &mut Session<B>,
    semantics: Semantics,
    windows: &[Vec<u32>],
    bytes: &[usize],
    mut progress: impl FnMut(usize),
) -> Result<Score> {
    let v = session.forward().config().vocab_size;
    let mut score = Score::default();
    for w in windows {
        session.reset()?;
        match semantics {
            // The window as one segment, the logits of every row handed over chunk by chunk.
            Semantics::Prefill => {
                let sink = |first: usize, rows: &[f32]| {
                    for (i, row) in rows.chunks_exact(v).enumerate() {
                        if let Some(&next) = w.get(first + i + 1) {
                            score.add(row, next, bytes);
                        }
                    }
                };
                session.forward_mut().segment_each(w, 0, Want::All, sink, &mut progress)?;
            }
            // The first token as a prompt, then a decoding step each.
            Semantics::Decode => {
                let mut logits = session.prompt(&w[..1], false, Want::Last)?.logits;
                for (i, &next) in w.iter().enumerate().skip(1) {
                    score.add(&logits, next, bytes);
                    progress(1);
                    if i + 1 < w.len() {
                        let step = session.step(next)?;
                        score.steps += 1;
                        score.passes += step.passes;
                        logits = step.logits;
                    }
                }
            }
        }
    }
    if score.tokens == 0 {
        return Err(invalid!("no token to score"));
    }
    Ok(score)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_start_with_bos_and_fill_the_context() {
        let ids: Vec<u32> = (10..17).collect();
        assert_eq!(windows(&ids, Some(0), 4).unwrap(), [vec![0, 10, 11, 12], vec![0, 13, 14, 15], vec![0, 16]]);
        assert_eq!(windows(&ids, None, 4).unwrap(), [vec![10, 11, 12, 13], vec![14, 15, 16]]);
        assert!(windows(&ids, Some(0), 1).unwrap_err().to_string().contains("room"));
        assert!(windows(&ids[..1], None, 4).unwrap_err().to_string().contains("too short"));
    }

    #[test]
    fn bits_per_byte_by_hand() {
        // Four equal logits: every token has p = 1/4, 2 bits. Tokens of 3, 5 and 3 bytes and
        // a special one (0 bytes): 8 bits over 3 + 5 + 3 + 0 = 11 bytes.
        let bytes = [0, 3, 5, 0];
        let mut s = Score::default();
        for next in [1, 2, 1, 3] {
            s.add(&[0.0; 4], next, &bytes);
        }
        assert_eq!((s.tokens, s.bytes), (4, 11));
        assert!((s.nll - 4.0 * 4.0f64.ln()).abs() < 1e-12);
        assert!((s.bits_per_byte() - 8.0 / 11.0).abs() < 1e-12);
        assert!((s.perplexity() - 4.0).abs() < 1e-12);
    }
}
