//! Where the model runs, chosen once (`--backend cpu|wgpu|auto`): `Device::open` is the
//! one place the CLI picks a backend, and `AnySession` the one place it matches on it
//! (as candle picks a `Device`). Commands are plain functions over an `AnySession`;
//! `dory serve` hands the server a session maker for the backend opened.

use std::str::FromStr;
use std::sync::Arc;

use dory::cpu::Cpu;
use dory::perplexity::{Score, Semantics};
use dory::{Attention, ExitRule, Generated, Model, Request, Session};
use dory_wgpu::{GpuDevice, GpuModel, Pick, Wgpu};

/// The backend a user asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    Cpu,
    /// The best GPU adapter there is, a software one included (lavapipe).
    Wgpu,
    /// wgpu on a hardware GPU when there is one, else the CPU.
    Auto,
}

impl FromStr for Choice {
    type Err = String;
    fn from_str(s: &str) -> Result<Choice, String> {
        match s {
            "cpu" => Ok(Choice::Cpu),
            "wgpu" => Ok(Choice::Wgpu),
            "auto" => Ok(Choice::Auto),
            other => Err(format!("the backend must be cpu, wgpu or auto, got {other:?}")),
        }
    }
}

/// An opened backend. A GPU holds the device, its pipelines and the model's weights,
/// uploaded once and shared by every session made from it (the server's workers too).
#[derive(Clone)]
pub enum Device {
    Cpu,
    Wgpu(Arc<GpuModel>),
}

impl Device {
    /// Opens what `choice` names for `model` (auto: a hardware adapter, else the CPU).
    pub fn open(choice: Choice, model: &Model) -> dory::Result<Device> {
        let gpu = match choice {
            Choice::Cpu => None,
            Choice::Wgpu => Some(GpuDevice::open_for(Pick::Any, &model.config)?),
            Choice::Auto => match dory_wgpu::choose(Pick::Hardware) {
                Some(adapter) => Some(Arc::new(GpuDevice::from_adapter_for(adapter, &model.config)?)),
                None => None,
            },
        };
        Ok(match gpu {
            None => Device::Cpu,
            Some(dev) => Device::Wgpu(GpuModel::new(dev, &model.config, &model.weights)?),
        })
    }

    /// Rows of a prompt a session runs at once unless told (`--chunk`).
    pub fn default_chunk(&self) -> usize {
        match self {
            Device::Cpu => dory::DEFAULT_CHUNK,
            Device::Wgpu(_) => dory_wgpu::DEFAULT_CHUNK,
        }
    }

    /// A fresh session on `model` (the model the device was opened for).
    pub fn session(&self, model: &Model, chunk: usize) -> dory::Result<AnySession> {
        Ok(match self {
            Device::Cpu => AnySession::Cpu(dory::cpu::session(model, chunk)?),
            Device::Wgpu(gpu) => AnySession::Wgpu(dory_wgpu::session(gpu, chunk)?),
        })
    }

    /// Bytes of weights the backend holds, and how many of them are the model file's
    /// own pages, mapped (the CPU reads matrices in place).
    pub fn weight_bytes(&self, model: &Model) -> (usize, usize) {
        match self {
            Device::Cpu => {
                let (mapped, owned) = Cpu::new(&model.config, &model.weights).weight_bytes();
                (mapped + owned, mapped)
            }
            Device::Wgpu(gpu) => (gpu.weight_bytes(), 0),
        }
    }
}

/// A session on whichever backend was opened.
pub enum AnySession {
    Cpu(Session<Cpu>),
    Wgpu(Session<Wgpu>),
}

/// `on!(session, s => expr)`: `expr` with `s` the typed session inside.
macro_rules! on {
    ($session:expr, $s:ident => $body:expr) => {
        match $session {
            AnySession::Cpu($s) => $body,
            AnySession::Wgpu($s) => $body,
        }
    };
}

impl AnySession {
    pub fn set_attention(&mut self, attention: Attention) -> dory::Result<()> {
        on!(self, s => s.set_attention(attention))
    }

    pub fn set_exit(&mut self, exit: ExitRule) {
        on!(self, s => s.exit = exit)
    }

    /// The backend in words.
    pub fn backend(&self) -> String {
        on!(self, s => dory::Backend::name(&s.forward().backend))
    }

    /// The attention mode in words ("exact" or "o1").
    pub fn attention(&self) -> &'static str {
        on!(self, s => s.forward().attention().name())
    }

    pub fn cache_bytes(&self) -> usize {
        on!(self, s => s.forward().cache_bytes())
    }

    pub fn generate(
        &mut self,
        model: &Model,
        prompt: &[u32],
        req: &Request,
        on_token: impl FnMut(&dory::generate::Token) -> bool,
    ) -> dory::Result<Generated> {
        on!(self, s => dory::generate(s, &model.tokenizer, prompt, req, on_token))
    }

    pub fn perplexity(
        &mut self,
        semantics: Semantics,
        windows: &[Vec<u32>],
        bytes: &[usize],
        progress: impl FnMut(usize),
    ) -> dory::Result<Score> {
        on!(self, s => dory::perplexity::score(s, semantics, windows, bytes, progress))
    }

    pub fn bench(&mut self, options: &dory::bench::Options) -> dory::Result<dory::bench::Report> {
        on!(self, s => dory::bench::run(s, options))
    }
}
