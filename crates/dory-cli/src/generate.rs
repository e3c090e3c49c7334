//! `dory generate`: a prompt in, text streamed out.

use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use dory::{Generated, Request, Sampling};

use dory::bench::peak_rss;

use crate::common::{mib, parse_exit, ModelArgs};

#[derive(clap::Args)]
pub struct Args {
    /// The prompt (read from standard input when absent or "-").
    pub prompt: Option<String>,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Tokens to generate at most.
    #[arg(long, short = 'n', default_value_t = 128)]
    pub max_tokens: usize,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// Stop before this text (may be given several times).
    #[arg(long, value_name = "TEXT")]
    pub stop: Vec<String>,
    /// Early exit: none, kl:T or confidence:T, optionally :MIN_PASSES [default: the config's]
    #[arg(long, value_name = "RULE")]
    pub exit: Option<String>,
    /// Do not prepend the model's bos token.
    #[arg(long)]
    pub no_bos: bool,
    /// Print only the generated text, not the prompt before it.
    #[arg(long)]
    pub no_echo: bool,
    /// Print prefill and decode speed, passes per token and peak memory (to stderr).
    #[arg(long)]
    pub stats: bool,
    /// Write the logits of every generated step to FILE.npy (f32 [steps, V]) and the
    /// sampled tokens to FILE.tokens.npy (i32 [steps]).
    #[arg(long, value_name = "FILE.npy")]
    pub logits: Option<PathBuf>,
}

#[derive(clap::Args, Clone, Debug)]
pub struct SamplingArgs {
    /// 0 is greedy.
    #[arg(long, short = 't', default_value_t = 0.8, allow_negative_numbers = true)]
    pub temperature: f32,
    /// Keep the K likeliest tokens (0: all).
    #[arg(long, default_value_t = 40)]
    pub top_k: usize,
    /// Keep the likeliest tokens whose probabilities add up to P (1: all).
    #[arg(long, default_value_t = 0.95, allow_negative_numbers = true)]
    pub top_p: f32,
    /// Drop tokens less likely than P × the likeliest (0: none).
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
    pub min_p: f32,
    /// Penalise the last 64 tokens (1: off).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub repeat_penalty: f32,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl SamplingArgs {
    pub fn sampling(&self) -> Sampling {
        Sampling {
            temperature: self.temperature,
            top_k: self.top_k,
            top_p: self.top_p,
            min_p: self.min_p,
            repetition_penalty: self.repeat_penalty,
            seed: self.seed,
        }
    }
}

pub fn run(a: &Args) -> Result<()> {
    dory::limits::at_most("--max-tokens", a.max_tokens, dory::limits::MAX_POSITIONS)?;
    let sampling = a.sampling.sampling();
    sampling.validate()?;
    let exit = a.exit.as_deref().map(parse_exit).transpose()?;
    let prompt = read_prompt(a.prompt.as_deref())?;
    let (model, device) = a.model.open()?;
    let mut session = a.model.session(&device, &model)?;
    if let Some(exit) = exit {
        session.set_exit(exit);
    }
    if a.logits.is_some() {
        // Every step's logits are held until the end: refuse what cannot fit first.
        let (n, v) = (a.max_tokens, model.config.vocab_size);
        let bytes = dory::limits::f32_bytes(n.checked_mul(v + 1));
        dory::limits::fits(&format!("--logits with --max-tokens {n} ({n} steps × {v} logits)"), bytes)?;
    }
    let ids = model.tokenizer.encode(&prompt)?;
    let req = Request { max_tokens: a.max_tokens, sampling, stop: a.stop.clone(), bos: !a.no_bos };
    let mut out = std::io::stdout().lock();
    if !a.no_echo {
        write!(out, "{prompt}")?;
        out.flush()?;
    }
    let mut logits: Vec<f32> = vec![];
    let mut tokens: Vec<i32> = vec![];
    let mut write_err = None;
    let gen = session.generate(&model, &ids, &req, |t| {
        if a.logits.is_some() {
            logits.extend_from_slice(t.logits);
            tokens.push(t.id as i32);
        }
        // A closed pipe (`| head`) ends generation quietly.
        match out.write_all(t.text.as_bytes()).and_then(|_| out.flush()) {
            Ok(()) => true,
            Err(e) => {
                write_err = Some(e);
                false
            }
        }
    })?;
    if write_err.is_none() {
        writeln!(out)?;
    }
    if let Some(path) = &a.logits {
        let steps = tokens.len();
        dory::npy::write(path, &[steps, model.config.vocab_size], &logits)?;
        dory::npy::write(&tokens_path(path), &[steps], &tokens)?;
    }
    if a.stats {
        eprintln!("{}", stats(&gen, model.config.passes));
    }
    Ok(())
}

/// The prompt argument, or standard input when it is absent or "-".
fn read_prompt(arg: Option<&str>) -> Result<String> {
    if let Some(p) = arg.filter(|&p| p != "-") {
        return Ok(p.to_string());
    }
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).context("cannot read the prompt from standard input")?;
    Ok(s)
}

/// `--stats`: speeds, passes and memory in one line.
fn stats(gen: &Generated, passes: usize) -> String {
    let prefill = gen.prompt_tokens as f64 / gen.prefill_time.as_secs_f64();
    // The first token comes from the prompt's logits: decode speed counts the rest.
    let decoded = gen.tokens.len().saturating_sub(1);
    let decode = decoded as f64 / gen.decode_time.as_secs_f64();
    format!(
        "prefill: {} tokens, {prefill:.1} tokens/s | decode: {decoded} tokens, {decode:.1} tokens/s | \
         passes per token: {:.2} of {passes} | finish: {:?} | peak memory: {}",
        gen.prompt_tokens,
        gen.mean_passes(),
        gen.finish,
        peak_rss().map_or("n/a".into(), mib),
    )
}

/// FILE.npy → FILE.tokens.npy.
fn tokens_path(path: &std::path::Path) -> PathBuf {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!("{stem}.tokens.npy"))
}
