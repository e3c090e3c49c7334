//! `dory bench`: prompt processing (pp) and text generation (tg) speed at a pre-filled
//! context depth, with repetitions, as llama-bench reports them (`dory::bench` measures).

use anyhow::Result;
use dory::bench::{peak_rss, Options, Report, Stats};
use serde_json::json;

use crate::common::{mib, parse_exit, ModelArgs};

/// Measured repetitions, at most.
const MAX_REPS: usize = 10_000;

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
    /// Measured repetitions (after a warm-up of half a second at least).
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Early exit for the generated tokens [default: the config's]
    #[arg(long)]
    pub exit: Option<String>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &Args) -> Result<()> {
    use dory::limits::{at_most, option, MAX_POSITIONS};
    option("--prompt", a.prompt, MAX_POSITIONS)?;
    option("--reps", a.reps, MAX_REPS)?;
    at_most("--gen", a.gen, MAX_POSITIONS)?;
    at_most("--depth", a.depth, MAX_POSITIONS)?;
    let exit = a.exit.as_deref().map(parse_exit).transpose()?;
    let (model, device) = a.model.open()?;
    let mut session = a.model.session(&device, &model)?;
    if let Some(exit) = exit {
        session.set_exit(exit);
    }
    let r = session.bench(&Options { prompt: a.prompt, gen: a.gen, depth: a.depth, reps: a.reps })?;
    let (backend, attention) = (session.backend(), session.attention());
    let (c, peak) = (&model.config, peak_rss());
    let (weight_bytes, mapped) = device.weight_bytes(&model);
    if a.json {
        let stats =
            |tokens: usize, s: &Stats| json!({"tokens": tokens, "median": s.median, "min": s.min, "max": s.max});
        let out = json!({
            "commit": commit(),
            "model": model.dir.display().to_string(),
            "backend": backend,
            "parameters": c.parameters(),
            "depth": a.depth,
            "reps": a.reps,
            "pp": stats(a.prompt, &r.pp),
            "tg": r.tg.as_ref().map(|t| stats(a.gen, t)),
            "passes_per_token": r.passes_per_token,
            "emptied_passes_per_token": r.emptied_per_token,
            "went_on": r.went_on,
            "attention": attention,
            "cache_bytes": r.cache_bytes,
            "tg_rss_bytes": [r.tg_rss.0, r.tg_rss.1],
            "peak_rss_bytes": peak,
            "weight_bytes": weight_bytes,
            "weight_mapped_bytes": mapped,
        });
        println!("{out}");
    } else {
        println!(
            "model {} · {backend} · {:.2} M parameters · depth {} · {} reps",
            model.dir.display(),
            c.parameters() as f64 / 1e6,
            a.depth,
            a.reps
        );
        table(a, &r, attention, peak);
        println!(
            "weights held {} ({} of it mapped from the model's files)",
            mib(weight_bytes as u64),
            mib(mapped as u64)
        );
    }
    if let Some(table) = dory_wgpu::profile::report() {
        eprintln!("{table}");
    }
    Ok(())
}

/// The report as rows: pp, tg, then attention and memory.
fn table(a: &Args, r: &Report, attention: &str, peak: Option<u64>) {
    let pp = &r.pp;
    println!("pp{:<6} {:>10.1} tokens/s  (min {:.1}, max {:.1})", a.prompt, pp.median, pp.min, pp.max);
    if let Some(tg) = &r.tg {
        // Where the device empties passes after a token leaves (an exit rule it tests).
        let recorded = if r.emptied_per_token > 0.0 || r.went_on > 0.0 {
            format!(
                " ({:.2} more recorded and emptied; {:.1} % of tokens went on past those first recorded)",
                r.emptied_per_token,
                100.0 * r.went_on
            )
        } else {
            String::new()
        };
        println!(
            "tg{:<6} {:>10.1} tokens/s  (min {:.1}, max {:.1}); {:.2} passes per token{recorded}",
            a.gen, tg.median, tg.min, tg.max, r.passes_per_token
        );
    }
    let show = |b: Option<u64>| b.map_or("n/a".into(), mib);
    println!(
        "{attention} attention · cache {} at context {} · memory {} → {} while generating · peak {}",
        mib(r.cache_bytes as u64),
        a.depth + a.prompt + a.gen,
        show(r.tg_rss.0),
        show(r.tg_rss.1),
        show(peak)
    );
}

/// The commit the binary was built from, for benchmark records: DORY_COMMIT at build time
/// (`bench/wgpu_h200.sh build` sets it: a binary carried to another machine runs beside
/// another checkout), else the checkout the binary was built in, asked at run time.
fn commit() -> String {
    if let Some(c) = option_env!("DORY_COMMIT") {
        return c.to_string();
    }
    std::process::Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}
