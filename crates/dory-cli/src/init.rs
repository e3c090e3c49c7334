//! `dory init`: a random model folder.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use dory::weights::DType;
use dory::Config;

#[derive(clap::Args)]
pub struct Args {
    /// A config.json (spec §2) giving the model's shape.
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The folder to write (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Storage type of the weights: f32, f16 or bf16.
    #[arg(long, default_value = "f32")]
    pub dtype: String,
    /// Write hub-style shards with an index instead of one model.safetensors.
    #[arg(long, default_value_t = 1)]
    pub shards: usize,
    /// Write into a folder that is not empty: its model files (config, tokenizer,
    /// weights, shards, index) are removed first, other files kept.
    #[arg(long)]
    pub force: bool,
}

pub fn run(a: &Args) -> Result<()> {
    let dtype = match a.dtype.as_str() {
        "f32" => DType::F32,
        "f16" => DType::F16,
        "bf16" => DType::BF16,
        other => bail!("--dtype must be f32, f16 or bf16, got {other:?}"),
    };
    if a.shards == 0 {
        bail!("--shards must be ≥ 1");
    }
    let config = Config::load(&a.config)?;
    // Checked before the folder is touched: --force removes files.
    dory::init::check(&config, dtype)?;
    dory::files::model_folder(&a.out, a.force)?;
    dory::init::write_random_model(&a.out, &config, a.seed, dtype, a.shards)
        .with_context(|| format!("cannot write the model to {}", a.out.display()))?;
    println!("wrote a random model ({} parameters, seed {}) to {}", config.parameters(), a.seed, a.out.display());
    Ok(())
}
