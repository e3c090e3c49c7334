//! A session: the segments fed so far (spec §5), with the position, the sampled token
//! not fed yet, and the recent tokens the repetition penalty looks at.

use std::collections::VecDeque;

use crate::backend::Backend;
use crate::error::{invalid, Result};
use crate::exit::ExitRule;
use crate::forward::{Decoded, Forward, Want};
use crate::sampler::PENALTY_WINDOW;

pub struct Session<B: Backend> {
    forward: Forward<B>,
    /// The next position.
    pos: usize,
    /// A sampled token not fed yet: a later prompt starts with it.
    pending: Option<u32>,
    recent: VecDeque<u32>,
    /// The early-exit rule of decoding steps.
    pub exit: ExitRule,
}

/// What a prompt segment fed and produced.
pub struct Prompted {
    /// The ids fed, the pending token and `bos` included.
    pub ids: Vec<u32>,
    /// [1 or ids.len(), V], as `Want` asked.
    pub logits: Vec<f32>,
}

impl<B: Backend> Session<B> {
    pub fn new(forward: Forward<B>) -> Session<B> {
        let exit = forward.config().exit;
        Session { forward, pos: 0, pending: None, recent: VecDeque::new(), exit }
    }

    pub fn forward(&self) -> &Forward<B> {
        &self.forward
    }

    /// The step itself, for callers that feed segments without the session's
    /// bookkeeping (perplexity over windows, benchmarks).
    pub fn forward_mut(&mut self) -> &mut Forward<B> {
        &mut self.forward
    }

    /// Chooses how full layers attend; starts the session over (the step's caches are
    /// reset by `Forward::set_attention` itself).
    pub fn set_attention(&mut self, attention: crate::forward::Attention) -> Result<()> {
        self.forward.set_attention(attention)?;
        self.forget();
        Ok(())
    }

    /// The next position.
    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn recent(&self) -> &VecDeque<u32> {
        &self.recent
    }

    /// Starts over: no positions, nothing pending.
    pub fn reset(&mut self) -> Result<()> {
        self.forward.reset()?;
        self.forget();
        Ok(())
    }

    /// `reset`, keeping the caches' storage (`Forward::clear`).
    pub fn clear(&mut self) -> Result<()> {
        self.forward.clear()?;
        self.forget();
        Ok(())
    }

    /// The session's own bookkeeping, back to a fresh session's.
    fn forget(&mut self) {
        self.pos = 0;
        self.pending = None;
        self.recent.clear();
    }

    /// Feeds a prompt as one segment: the pending sampled token first, then `bos` on a
    /// session's first segment (when `bos` is asked for, the config has one and `ids`
    /// does not already start with it), then `ids`.
    pub fn prompt(&mut self, ids: &[u32], bos: bool, want: Want) -> Result<Prompted> {
        let config = self.forward.config();
        let mut seg: Vec<u32> = self.pending.take().into_iter().collect();
        let pending = seg.len();
        if let (0, true, Some(b)) = (self.pos, bos, config.bos_token_id) {
            if ids.first() != Some(&b) {
                seg.push(b);
            }
        }
        seg.extend_from_slice(ids);
        if seg.is_empty() {
            return Err(invalid!("the prompt is empty"));
        }
        if let Some(&bad) = seg.iter().find(|&&id| id as usize >= config.vocab_size) {
            return Err(invalid!("token id {bad} is not below vocab_size {}", config.vocab_size));
        }
        let logits = self.forward.segment(&seg, self.pos, want)?;
        self.pos += seg.len();
        // The pending token was remembered when it was sampled.
        self.remember(&seg[pending..]);
        Ok(Prompted { ids: seg, logits })
    }

    /// Marks a sampled token: part of the context from now on, fed by the next `decode`
    /// (or first in the next prompt).
    pub fn sampled(&mut self, id: u32) {
        self.pending = Some(id);
        self.remember(&[id]);
    }

    /// Feeds the pending sampled token as one decoding step, with the session's exit rule.
    pub fn decode(&mut self) -> Result<Decoded> {
        let id = self.pending.take().ok_or_else(|| invalid!("no sampled token to feed"))?;
        let out = self.forward.decode(id, self.pos, &self.exit)?;
        self.pos += 1;
        Ok(out)
    }

    /// Feeds `id` as one decoding step (a replay: a token the caller chose).
    pub fn step(&mut self, id: u32) -> Result<Decoded> {
        if id as usize >= self.forward.config().vocab_size {
            return Err(invalid!("token id {id} is not below vocab_size {}", self.forward.config().vocab_size));
        }
        self.sampled(id);
        self.decode()
    }

    fn remember(&mut self, ids: &[u32]) {
        for &id in ids {
            if self.recent.len() == PENALTY_WINDOW {
                self.recent.pop_front();
            }
            self.recent.push_back(id);
        }
    }
}
