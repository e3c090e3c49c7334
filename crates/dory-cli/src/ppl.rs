//! `dory ppl`: perplexity and bits per byte of a text file (`dory::perplexity` scores
//! it), with the prefill semantics or, with `--decode`, the decode semantics.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use dory::perplexity::{self, Score, Semantics};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::common::{mib, parse_exit, ModelArgs};

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
    for (name, value) in [("--context", a.context), ("--tokens", a.tokens)] {
        if let Some(n) = value {
            dory::limits::option(name, n, dory::limits::MAX_POSITIONS)?;
        }
    }
    let exit = a.exit.as_deref().map(parse_exit).transpose()?;
    let text = std::fs::read_to_string(&a.file).with_context(|| format!("cannot read {}", a.file.display()))?;
    let (model, device) = a.model.open()?;
    let c = &model.config;
    let mut ids = model.tokenizer.encode(&text)?;
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
    let windows = perplexity::windows(&ids, bos, context)
        .with_context(|| format!("cannot score {} with --context {context}", a.file.display()))?;
    let mut session = a.model.session(&device, &model)?;
    if let Some(exit) = exit {
        session.set_exit(exit);
    }
    let semantics = if a.decode { Semantics::Decode } else { Semantics::Prefill };
    let bar = progress(semantics, semantics.work(&windows, a.model.chunk(&device)?, c.passes), ids.len());
    let bytes = model.tokenizer.byte_lengths();
    let t0 = Instant::now();
    let score = session.perplexity(semantics, &windows, &bytes, |n| bar.inc(n as u64))?;
    let secs = t0.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let how = match semantics {
        Semantics::Decode => format!(
            "decode semantics, {} attention, {:.2} passes per step, cache {} at the end",
            session.attention(),
            score.passes_per_step(),
            mib(session.cache_bytes() as u64)
        ),
        Semantics::Prefill => "prefill semantics".to_string(),
    };
    let fed: usize = windows.iter().map(Vec::len).sum();
    println!("{}; {how}; {:.1} tokens/s", summary(&score, windows.len(), context), fed as f64 / secs);
    Ok(())
}

/// A bar of `work` units, drawn only for texts long enough to wait for.
fn progress(semantics: Semantics, work: usize, tokens: usize) -> ProgressBar {
    let bar = ProgressBar::new(work as u64);
    let unit = if semantics == Semantics::Decode { "tokens" } else { "chunk-passes" };
    bar.set_style(
        ProgressStyle::with_template(&format!("{{bar:40}} {{pos}}/{{len}} {unit}, {{elapsed}} (eta {{eta}})"))
            .expect("template"),
    );
    if tokens < 4096 {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar
}

/// What the score is, over what.
fn summary(s: &Score, windows: usize, context: usize) -> String {
    format!(
        "perplexity {:.4} (mean NLL {:.4} nats, {:.4} bits per byte) over {} tokens ({} bytes) in {windows} \
         windows of ≤ {context}",
        s.perplexity(),
        s.mean_nll(),
        s.bits_per_byte(),
        s.tokens,
        s.bytes
    )
}
