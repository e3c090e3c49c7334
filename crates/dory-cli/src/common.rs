//! What the commands share: finding the model, opening the backend, building a session,
//! exit rules, sizes.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use dory::{Attention, ExitRule, Model};

use crate::device::{AnySession, Choice, Device};

/// Where the model comes from (`--model`).
#[derive(clap::Args, Clone, Debug)]
pub struct ModelArgs {
    /// The model folder [default: $DORY_MODEL, else ./models/dory-tiny, else the
    /// models/dory-tiny of the repository this binary was built from]
    #[arg(long, value_name = "DIR")]
    pub model: Option<PathBuf>,
    /// Rows of a prompt run at once (a memory bound; the logits do not depend on it)
    /// [default: 512]
    #[arg(long, value_name = "ROWS")]
    pub chunk: Option<usize>,
    /// How full layers attend: exact, or o1 (constant memory after the seal) [default:
    /// o1 when the model's config has an o1 section, else exact]
    #[arg(long, value_name = "MODE")]
    pub attention: Option<String>,
    /// O(1) settings over the config's, e.g. "landmarks=16,rect=false" (sinks, window,
    /// landmarks, stride, rect, rcond, seal_at)
    #[arg(long, value_name = "KEY=VALUE,…")]
    pub o1: Option<String>,
    /// Where the model runs: cpu, wgpu (the best GPU adapter, a software one included)
    /// or auto (a hardware GPU when there is one, else the CPU)
    #[arg(long, default_value = "auto", value_name = "BACKEND", value_parser = str::parse::<Choice>)]
    pub backend: Choice,
}

impl ModelArgs {
    pub fn dir(&self) -> Result<PathBuf> {
        if let Some(dir) = &self.model {
            return Ok(dir.clone());
        }
        if let Some(dir) = std::env::var_os("DORY_MODEL") {
            return Ok(dir.into());
        }
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/dory-tiny");
        for dir in [PathBuf::from("models/dory-tiny"), shipped] {
            if dir.join("config.json").exists() {
                return Ok(dir);
            }
        }
        bail!(
            "no model found: pass --model DIR or set DORY_MODEL to a model folder (config.json, \
             model.safetensors, tokenizer.json), or make a random one with \
             `dory init --config CONFIG.json --seed 0 --out DIR`"
        )
    }

    /// The model, its weights read into memory (`in_memory`) or mapped.
    pub fn load_with(&self, in_memory: bool) -> Result<Model> {
        let dir = self.dir()?;
        Model::load_with(&dir, in_memory).with_context(|| format!("cannot load the model in {}", dir.display()))
    }

    /// Loads the model and opens the backend `--backend` picks for it.
    pub fn open(&self) -> Result<(Model, Device)> {
        self.open_with(false)
    }

    /// `open`, the weights read into memory (`in_memory`) or mapped.
    pub fn open_with(&self, in_memory: bool) -> Result<(Model, Device)> {
        let model = self.load_with(in_memory)?;
        let device = Device::open(self.backend, &model).context("cannot open the backend")?;
        Ok((model, device))
    }

    /// A session on `device` with `--chunk`, `--attention` and `--o1`.
    pub fn session(&self, device: &Device, model: &Model) -> Result<AnySession> {
        let attention = self.attention(&model.config)?;
        let mut session = device.session(model, self.chunk(device)?)?;
        session.set_attention(attention)?;
        Ok(session)
    }

    /// `--chunk`, within its bound, else the default of `device`'s backend.
    pub fn chunk(&self, device: &Device) -> Result<usize> {
        match self.chunk {
            Some(n) => Ok(dory::limits::option("--chunk", n, dory::limits::MAX_CHUNK)?),
            None => Ok(device.default_chunk()),
        }
    }

    /// The attention mode that `--attention` and `--o1` ask for.
    pub fn attention(&self, config: &dory::Config) -> Result<Attention> {
        let mode = match self.attention.as_deref() {
            None => Attention::default_for(config).name(),
            Some(m @ ("exact" | "o1")) => m,
            Some(other) => bail!("--attention must be exact or o1, got {other:?}"),
        };
        if mode == "exact" {
            anyhow::ensure!(self.o1.is_none(), "--o1 needs --attention o1");
            return Ok(Attention::Exact);
        }
        let base = config.o1.clone().unwrap_or_default();
        Ok(Attention::O1(match &self.o1 {
            Some(text) => base.with_overrides(text)?,
            None => base,
        }))
    }
}

/// `--exit`: `none`, `kl:T` or `confidence:T`, optionally `…:T:MIN_PASSES`.
pub fn parse_exit(text: &str) -> Result<ExitRule> {
    text.parse().map_err(|e| anyhow::anyhow!("--exit: {e}"))
}

/// Bytes in MiB, or in KiB below one MiB.
pub fn mib(bytes: u64) -> String {
    match bytes {
        0..1048576 => format!("{:.1} KiB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MiB", bytes as f64 / 1048576.0),
    }
}
