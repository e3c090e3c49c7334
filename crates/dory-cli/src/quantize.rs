//! `dory quantize`: an 8-bit copy of a model folder (`dory::quant`).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use dory::quant::Quantization;
use dory::Model;

#[derive(clap::Args)]
pub struct Args {
    /// The model folder to quantize (f32, f16 or bf16 weights).
    #[arg(long, value_name = "DIR")]
    pub model: PathBuf,
    /// The folder to write (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The format: q8_0 (int8 weights, one f16 scale per 32 inputs).
    #[arg(long, default_value = "q8_0")]
    pub format: String,
}

pub fn run(a: &Args) -> Result<()> {
    let q = match a.format.as_str() {
        "q8_0" => Quantization::q8_0(),
        other => bail!("--format must be q8_0, got {other:?}"),
    };
    if a.out.canonicalize().ok().is_some_and(|o| a.model.canonicalize().ok() == Some(o)) {
        bail!("--out must be another folder than --model");
    }
    let model = Model::load(&a.model).with_context(|| format!("cannot load the model in {}", a.model.display()))?;
    dory::quant::quantize(&model, &a.out, &q)
        .with_context(|| format!("cannot write the quantized model to {}", a.out.display()))?;
    let bytes = Model::load(&a.out).context("the quantized model does not load")?.weights.stored_bytes;
    println!("wrote {} ({} → {} bytes of weights) to {}", a.format, model.weights.stored_bytes, bytes, a.out.display());
    Ok(())
}
