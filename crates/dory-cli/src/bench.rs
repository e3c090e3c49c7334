//! `dory bench`: prompt processing (pp) and text generation (tg) speed at a pre-filled
//! context depth, with repetitions, as llama-bench reports them.

use std::time::Instant;

use anyhow::Result;
use dory::rng::Rng;
use dory::sampler::argmax;
use dory::{Backend, Want};
use serde_json::json;

use crate::common::{mib, parse_exit, peak_rss, rss, Job, ModelArgs, Sessions};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Prompt tokens to process (pp).
    #[arg(long, default_value_t = 512)]
    pub prompt: usize,
    /// Tokens to generate (tg).
    #[arg(long, default_value_t = 128)]
    pub gen: usize,
    /// Context filled before the measured prompt.
    #[arg(long, default_value_t = 0)]
    pub depth: usize,
    /// Measured repetitions (after one warm-up).
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Early exit for the generated tokens [default: the config's]
    #[arg(long)]
    pub exit: Option<String>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

struct Stats {
    median: f64,
    min: f64,
    max: f64,
}

fn stats(mut xs: Vec<f64>) -> Stats {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    let median = if n % 2 == 1 { xs[n / 2] } else { (xs[n / 2 - 1] + xs[n / 2]) / 2.0 };
    Stats { median, min: xs[0], max: xs[n - 1] }
}

pub fn run(a: &Args) -> Result<()> {
    anyhow::ensure!(a.prompt >= 1 && a.reps >= 1, "--prompt and --reps must be ≥ 1");
    let exit = a.exit.as_deref().map(parse_exit).transpose()?;
    a.model.run(Bench { a, exit })?;
    if let Some(table) = dory_wgpu::profile::report() {
        eprintln!("{table}");
    }
    Ok(())
}

/// The rest of `run`, on the backend `--backend` picks.
struct Bench<'a> {
    a: &'a Args,
    exit: Option<dory::ExitRule>,
}

impl Job for Bench<'_> {
    type Output = Result<()>;
    fn run<S: Sessions>(self, model: dory::Model, sessions: S) -> Result<()> {
        bench(self.a, self.exit, &model, &sessions)
    }
}

fn bench<S: Sessions>(a: &Args, exit: Option<dory::ExitRule>, model: &dory::Model, sessions: &S) -> Result<()> {
    let c = model.config.clone();
    let mut session = a.model.session(sessions, model)?;
    if let Some(exit) = exit {
        session.exit = exit;
    }
    let mut rng = Rng::new(1);
    let mut random = |n: usize| -> Vec<u32> { (0..n).map(|_| (rng.next_u64() % c.vocab_size as u64) as u32).collect() };
    let (mut pp, mut tg, mut passes, mut cache) = (vec![], vec![], vec![], 0);
    // Resident memory as the last repetition's generation starts and ends.
    let mut tg_rss = (None, None);
    for rep in 0..=a.reps {
        session.reset()?;
        if a.depth > 0 {
            session.prompt(&random(a.depth), false, Want::Last)?;
        }
        let prompt = random(a.prompt);
        let t0 = Instant::now();
        let mut logits = session.prompt(&prompt, false, Want::Last)?.logits;
        let pp_secs = t0.elapsed().as_secs_f64();
        let rss_before = rss();
        let t1 = Instant::now();
        let mut used = 0;
        for _ in 0..a.gen {
            session.sampled(argmax(&logits));
            let d = session.decode()?;
            used += d.passes;
            logits = d.logits;
        }
        let tg_secs = t1.elapsed().as_secs_f64();
        cache = session.forward().cache_bytes();
        tg_rss = (rss_before, rss());
        if rep == 0 {
            continue; // warm-up
        }
        pp.push(a.prompt as f64 / pp_secs);
        if a.gen > 0 {
            tg.push(a.gen as f64 / tg_secs);
            passes.push(used as f64 / a.gen as f64);
        }
    }
    let pp = stats(pp);
    let tg = (!tg.is_empty()).then(|| stats(tg));
    let mean_passes = passes.iter().sum::<f64>() / passes.len().max(1) as f64;
    let backend = session.forward().backend.name();
    let peak = peak_rss();
    if a.json {
        let tg_json = tg.as_ref().map(|t| json!({"tokens": a.gen, "median": t.median, "min": t.min, "max": t.max}));
        let out = json!({
            "commit": commit(),
            "model": model.dir.display().to_string(),
            "backend": backend,
            "parameters": c.parameters(),
            "depth": a.depth,
            "reps": a.reps,
            "pp": {"tokens": a.prompt, "median": pp.median, "min": pp.min, "max": pp.max},
            "tg": tg_json,
            "passes_per_token": mean_passes,
            "attention": session.forward().attention().name(),
            "cache_bytes": cache,
            "tg_rss_bytes": [tg_rss.0, tg_rss.1],
            "peak_rss_bytes": peak,
        });
        println!("{out}");
        return Ok(());
    }
    println!(
        "model {} · {} · {:.2} M parameters · depth {} · {} reps",
        model.dir.display(),
        backend,
        c.parameters() as f64 / 1e6,
        a.depth,
        a.reps
    );
    println!("pp{:<6} {:>10.1} tokens/s  (min {:.1}, max {:.1})", a.prompt, pp.median, pp.min, pp.max);
    if let Some(tg) = tg {
        println!(
            "tg{:<6} {:>10.1} tokens/s  (min {:.1}, max {:.1}); {mean_passes:.2} passes per token",
            a.gen, tg.median, tg.min, tg.max
        );
    }
    let show = |b: Option<u64>| b.map_or("n/a".into(), mib);
    println!(
        "{} attention · cache {} at context {} · memory {} → {} while generating · peak {}",
        session.forward().attention().name(),
        mib(cache as u64),
        a.depth + a.prompt + a.gen,
        show(tg_rss.0),
        show(tg_rss.1),
        show(peak)
    );
    Ok(())
}

/// The commit the binary was built from, for benchmark records.
fn commit() -> String {
    std::process::Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}
