//! `dory ppl`: perplexity of a text file, with the prefill semantics (each window one
//! segment, every row all passes) or, with `--decode`, the decode semantics (token by
//! token, as generation feeds them: the only way to exercise the O(1) path on long
//! texts, and early exit).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use dory::exit::log_softmax;
use dory::Want;
use indicatif::{ProgressBar, ProgressStyle};

use crate::common::{parse_exit, Job, ModelArgs, Sessions};

#[derive(clap::Args)]
pub struct Args {
    /// A UTF-8 text file.
    pub file: PathBuf,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Tokens per window: the text is cut into windows, each a fresh session [default:
    /// the config's max_context, else 1024; with --decode, the whole text]
    #[arg(long, value_name = "TOKENS")]
    pub context: Option<usize>,
    /// Do not prepend the model's bos token to each window.
    #[arg(long)]
    pub no_bos: bool,
    /// Feed the text token by token with the decode semantics.
    #[arg(long)]
    pub decode: bool,
    /// Score only the first N tokens of the file.
    #[arg(long, value_name = "N")]
    pub tokens: Option<usize>,
    /// Early exit while decoding: none, kl:T or confidence:T [default: the config's]
    #[arg(long, value_name = "RULE", requires = "decode")]
    pub exit: Option<String>,
}

pub fn run(a: &Args) -> Result<()> {
    let exit = a.exit.as_deref().map(parse_exit).transpose()?;
    let text = std::fs::read_to_string(&a.file).with_context(|| format!("cannot read {}", a.file.display()))?;
    a.model.run(Ppl { a, exit, text })
}

/// The rest of `run`, on the backend `--backend` picks.
struct Ppl<'a> {
    a: &'a Args,
    exit: Option<dory::ExitRule>,
    text: String,
}

impl Job for Ppl<'_> {
    type Output = Result<()>;
    fn run<S: Sessions>(self, model: dory::Model, sessions: S) -> Result<()> {
        ppl(self.a, self.exit, &self.text, &model, &sessions)
    }
}

fn ppl<S: Sessions>(
    a: &Args,
    exit: Option<dory::ExitRule>,
    text: &str,
    model: &dory::Model,
    sessions: &S,
) -> Result<()> {
    let c = &model.config;
    let mut ids = model.tokenizer.encode(text)?;
    if let Some(n) = a.tokens {
        anyhow::ensure!(ids.len() >= n, "{}: has {} tokens, fewer than --tokens {n}", a.file.display(), ids.len());
        ids.truncate(n);
    }
    let context = match (a.context, a.decode) {
        (Some(n), _) => n,
        (None, false) => c.max_context.unwrap_or(1024),
        (None, true) => ids.len() + 1,
    };
    let bos = if a.no_bos { None } else { c.bos_token_id };
    let room = context.saturating_sub(usize::from(bos.is_some()));
    if context < 2 || room < 1 {
        bail!("--context must leave room for at least one token to score, got {context}");
    }
    if ids.len() < 1 + usize::from(bos.is_none()) {
        bail!("{}: too short to score: {} tokens", a.file.display(), ids.len());
    }
    let windows: Vec<Vec<u32>> = ids.chunks(room).map(|w| bos.into_iter().chain(w.iter().copied()).collect()).collect();
    let mut session = a.model.session(sessions, model)?;
    if let Some(exit) = exit {
        session.exit = exit;
    }
    let (chunk, v) = (a.model.chunk, c.vocab_size);
    let total: usize = if a.decode {
        windows.iter().map(Vec::len).sum()
    } else {
        windows.iter().map(|w| w.len().div_ceil(chunk.min(w.len())) * c.passes).sum()
    };
    let bar = ProgressBar::new(total as u64);
    let unit = if a.decode { "tokens" } else { "chunk-passes" };
    bar.set_style(
        ProgressStyle::with_template(&format!("{{bar:40}} {{pos}}/{{len}} {unit}, {{elapsed}} (eta {{eta}})"))
            .expect("template"),
    );
    if ids.len() < 4096 {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let (mut nll, mut scored, mut passes) = (0.0f64, 0usize, 0usize);
    let t0 = Instant::now();
    for w in &windows {
        session.reset()?;
        if a.decode {
            let mut logits = session.prompt(&w[..1], false, Want::Last)?.logits;
            for (i, &next) in w.iter().enumerate().skip(1) {
                nll -= log_softmax(&logits)[next as usize];
                scored += 1;
                bar.inc(1);
                if i + 1 < w.len() {
                    let step = session.step(next)?;
                    passes += step.passes;
                    logits = step.logits;
                }
            }
            continue;
        }
        session.forward_mut().segment_each(
            w,
            0,
            Want::All,
            |first, rows| {
                for (i, row) in rows.chunks_exact(v).enumerate() {
                    if let Some(&next) = w.get(first + i + 1) {
                        nll -= log_softmax(row)[next as usize];
                        scored += 1;
                    }
                }
            },
            |n| bar.inc(n as u64),
        )?;
    }
    bar.finish_and_clear();
    if scored == 0 {
        bail!("no token to score");
    }
    let secs = t0.elapsed().as_secs_f64();
    let fed: usize = windows.iter().map(Vec::len).sum();
    let semantics = if a.decode {
        let steps = fed - 2 * windows.len();
        format!(
            "decode semantics, {} attention, {:.2} passes per step, cache {} at the end",
            session.forward().attention().name(),
            passes as f64 / steps.max(1) as f64,
            crate::common::mib(session.forward().cache_bytes() as u64)
        )
    } else {
        "prefill semantics".to_string()
    };
    println!(
        "perplexity {:.4} (mean NLL {:.4} nats) over {scored} tokens in {} windows of ≤ {context}; {semantics}; {:.1} tokens/s",
        (nll / scored as f64).exp(),
        nll / scored as f64,
        windows.len(),
        fed as f64 / secs
    );
    Ok(())
}
