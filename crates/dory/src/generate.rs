//! Generation: a prompt, then sampled tokens fed back one decoding step at a time,
//! until the token limit, an end-of-sequence token or a stop string.

use std::time::{Duration, Instant};

use crate::backend::Backend;
use crate::error::Result;
use crate::forward::Want;
use crate::sampler::{Sampler, Sampling};
use crate::session::Session;
use crate::tokenizer::{TextStream, Tokenizer};

#[derive(Clone, Debug)]
pub struct Request {
    pub max_tokens: usize,
    pub sampling: Sampling,
    /// Generation stops before the first of these appears in the text.
    pub stop: Vec<String>,
    /// Prepend `bos_token_id` on a session's first segment (spec §5).
    pub bos: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    /// `max_tokens` reached.
    Length,
    /// An end-of-sequence token was sampled.
    Eos,
    /// A stop string appeared.
    Stop,
    /// The caller stopped it.
    Cancelled,
}

/// One generated token, as the caller sees it.
pub struct Token<'a> {
    pub id: u32,
    /// Passes that produced its logits (P for the first token, which the prompt's last
    /// row gives).
    pub passes: usize,
    /// [V]: the logits it was sampled from.
    pub logits: &'a [f32],
    /// Text completed by this token, stop strings held back (may be empty).
    pub text: &'a str,
}

#[derive(Clone, Debug)]
pub struct Generated {
    pub prompt_tokens: usize,
    pub tokens: Vec<u32>,
    pub passes: Vec<usize>,
    pub text: String,
    pub finish: Finish,
    pub prefill_time: Duration,
    pub decode_time: Duration,
}

impl Generated {
    pub fn mean_passes(&self) -> f64 {
        self.passes.iter().sum::<usize>() as f64 / self.passes.len().max(1) as f64
    }
}

/// Runs `prompt` then samples up to `req.max_tokens` tokens, calling `on_token` for
/// each; `on_token` returning false stops generation (a client went away).
pub fn generate<B: Backend>(
    session: &mut Session<B>,
    tokenizer: &Tokenizer,
    prompt: &[u32],
    req: &Request,
    mut on_token: impl FnMut(&Token) -> bool,
) -> Result<Generated> {
    let mut sampler = Sampler::new(req.sampling.clone())?;
    // Greedy: a GPU then chooses each token itself and starts its step at once.
    let s = &req.sampling;
    session.forward_mut().set_greedy(s.temperature == 0.0 && s.repetition_penalty == 1.0);
    let config = session.forward().config().clone();
    let t0 = Instant::now();
    let prompted = session.prompt(prompt, req.bos, Want::Last)?;
    let prefill_time = t0.elapsed();
    let mut out = Generated {
        prompt_tokens: prompted.ids.len(),
        tokens: vec![],
        passes: vec![],
        text: String::new(),
        finish: Finish::Length,
        prefill_time,
        decode_time: Duration::ZERO,
    };
    let mut logits = prompted.logits;
    let mut passes = config.passes;
    let mut stream = TextStream::new();
    let mut stops = StopMatcher::new(&req.stop);
    let t1 = Instant::now();
    for i in 0..req.max_tokens {
        let id = sampler.sample(&logits, session.recent());
        session.sampled(id);
        out.tokens.push(id);
        out.passes.push(passes);
        let eos = config.eos_token_ids.contains(&id);
        let mut piece = if eos { String::new() } else { stream.push(tokenizer, id)? };
        if i + 1 == req.max_tokens && !eos {
            piece.push_str(&stream.finish(tokenizer)?);
        }
        let (text, stopped) = stops.push(&piece);
        let last = eos || stopped || i + 1 == req.max_tokens;
        let text = if last && !stopped { text + &stops.finish() } else { text };
        out.text.push_str(&text);
        if !on_token(&Token { id, passes, logits: &logits, text: &text }) {
            out.finish = Finish::Cancelled;
            break;
        }
        if eos || stopped {
            out.finish = if eos { Finish::Eos } else { Finish::Stop };
            break;
        }
        if last {
            break;
        }
        let step = session.decode()?;
        logits = step.logits;
        passes = step.passes;
    }
    out.decode_time = t1.elapsed();
    Ok(out)
}

/// Holds back text that could be the start of a stop string, and cuts the text where one
/// appears.
struct StopMatcher {
    stops: Vec<String>,
    held: String,
}

impl StopMatcher {
    fn new(stops: &[String]) -> StopMatcher {
        StopMatcher { stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(), held: String::new() }
    }

    /// The text that is safe to show now, and whether a stop string appeared.
    fn push(&mut self, piece: &str) -> (String, bool) {
        self.held.push_str(piece);
        if let Some(at) = self.stops.iter().filter_map(|s| self.held.find(s.as_str())).min() {
            let text = self.held[..at].to_string();
            self.held.clear();
            return (text, true);
        }
        // Keep the longest tail that some stop string starts with.
        let keep = self
            .stops
            .iter()
            .flat_map(|s| (1..s.len()).filter(|&n| s.is_char_boundary(n)).map(move |n| &s[..n]))
            .filter(|prefix| self.held.ends_with(prefix))
            .map(str::len)
            .max()
            .unwrap_or(0);
        let cut = self.held.len() - keep;
        let text = self.held[..cut].to_string();
        self.held.drain(..cut);
        (text, false)
    }

    fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_strings_are_cut_and_held_back() {
        let mut m = StopMatcher::new(&["\n\n".to_string(), "END".to_string()]);
        assert_eq!(m.push("Hello"), ("Hello".into(), false));
        assert_eq!(m.push(" wor\n"), (" wor".into(), false));
        assert_eq!(m.push("ld"), ("\nld".into(), false));
        assert_eq!(m.push(" E"), (" ".into(), false));
        assert_eq!(m.push("NDING"), ("".into(), true));
        let mut m = StopMatcher::new(&["ab".to_string()]);
        assert_eq!(m.push("xa"), ("x".into(), false));
        assert_eq!(m.finish(), "a");
        let mut m = StopMatcher::new(&[]);
        assert_eq!(m.push("anything"), ("anything".into(), false));
    }
}
