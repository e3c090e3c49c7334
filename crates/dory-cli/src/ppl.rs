//! `dory ppl`: perplexity of a text file, with the prefill semantics.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use dory::exit::log_softmax;
use dory::Want;
use indicatif::{ProgressBar, ProgressStyle};

use crate::common::ModelArgs;

#[derive(clap::Args)]
pub struct Args {
    /// A UTF-8 text file.
    pub file: PathBuf,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Tokens per window: the text is cut into windows, each a fresh session [default:
    /// the config's max_context, else 1024]
    #[arg(long, value_name = "TOKENS")]
    pub context: Option<usize>,
    /// Do not prepend the model's bos token to each window.
    #[arg(long)]
    pub no_bos: bool,
}

pub fn run(a: &Args) -> Result<()> {
    let text = std::fs::read_to_string(&a.file).with_context(|| format!("cannot read {}", a.file.display()))?;
    let model = a.model.load()?;
    let c = &model.config;
    let context = a.context.or(c.max_context).unwrap_or(1024);
    let bos = if a.no_bos { None } else { c.bos_token_id };
    let room = context - usize::from(bos.is_some());
    if context < 2 || room < 1 {
        bail!("--context must leave room for at least one token to score, got {context}");
    }
    let ids = model.tokenizer.encode(&text)?;
    if ids.len() < 1 + usize::from(bos.is_none()) {
        bail!("{}: too short to score: {} tokens", a.file.display(), ids.len());
    }
    let windows: Vec<Vec<u32>> = ids.chunks(room).map(|w| bos.into_iter().chain(w.iter().copied()).collect()).collect();
    let mut session = a.model.session(&model)?;
    let chunk = a.model.chunk;
    let total: usize = windows.iter().map(|w| w.len().div_ceil(chunk.min(w.len())) * c.passes).sum();
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} chunk-passes, {elapsed} (eta {eta})").expect("template"),
    );
    if ids.len() < 4096 {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let (mut nll, mut scored) = (0.0f64, 0usize);
    let v = c.vocab_size;
    let t0 = Instant::now();
    for w in &windows {
        session.reset()?;
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
    println!(
        "perplexity {:.4} (mean NLL {:.4} nats) over {scored} tokens in {} windows of ≤ {context}; {:.1} tokens/s",
        (nll / scored as f64).exp(),
        nll / scored as f64,
        windows.len(),
        fed as f64 / secs
    );
    Ok(())
}
