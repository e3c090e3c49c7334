//! Choosing the backend once, for every command and for the server: `--backend
//! cpu|wgpu|auto` names a `Choice`; `dispatch` opens what it picks (for wgpu: the
//! device, its pipelines and the model's weights, once) and hands a `Sessions` factory to
//! a `Job`, whose one generic method is the code that runs on either backend.
//!
//! ```no_run
//! use dory_wgpu::select::{dispatch, Choice, Job, Sessions};
//!
//! struct Hello;
//! impl Job for Hello {
//!     type Output = dory::Result<String>;
//!     fn run<S: Sessions>(self, model: dory::Model, sessions: S) -> dory::Result<String> {
//!         let session = sessions.session(&model, dory::DEFAULT_CHUNK)?;
//!         Ok(sessions.describe() + " " + &session.forward().config().vocab_size.to_string())
//!     }
//! }
//! # fn main() -> dory::Result<()> {
//! let model = dory::Model::load(std::path::Path::new("models/dory-tiny"))?;
//! println!("{}", dispatch(Choice::Auto, model, Hello)??);
//! # Ok(()) }
//! ```

use std::str::FromStr;
use std::sync::Arc;

use dory::{Backend, Model, Session};

use crate::device::{GpuDevice, Pick};
use crate::model::GpuModel;
use crate::Wgpu;

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

/// Makes sessions of one backend. Cloning is cheap and clones share what was opened:
/// the server gives one to each worker thread.
pub trait Sessions: Clone + Send + Sync + 'static {
    type Backend: Backend + Send + 'static;
    /// A fresh session on `model` (the model `dispatch` was given).
    fn session(&self, model: &Model, chunk: usize) -> dory::Result<Session<Self::Backend>>;
    /// The backend in words (for `dory info`, logs and benchmark records).
    fn describe(&self) -> String;
    /// Bytes of weights the backend holds.
    fn weight_bytes(&self, model: &Model) -> usize;
}

/// Sessions on the CPU reference backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuSessions;

impl Sessions for CpuSessions {
    type Backend = dory::cpu::Cpu;
    fn session(&self, model: &Model, chunk: usize) -> dory::Result<Session<dory::cpu::Cpu>> {
        dory::cpu_session(model, chunk)
    }
    fn describe(&self) -> String {
        format!("cpu ({} threads)", rayon::current_num_threads())
    }
    fn weight_bytes(&self, model: &Model) -> usize {
        // The CPU widens every tensor to f32.
        4 * model.config.parameters()
    }
}

/// Sessions on one GPU, sharing its device, pipelines and the uploaded weights; each
/// session has its own caches and scratch.
#[derive(Clone)]
pub struct GpuSessions {
    pub model: Arc<GpuModel>,
}

impl Sessions for GpuSessions {
    type Backend = Wgpu;
    fn session(&self, model: &Model, chunk: usize) -> dory::Result<Session<Wgpu>> {
        if model.config != self.model.config {
            return Err(dory::Error::Invalid(format!(
                "{} is not the model whose weights this GPU holds",
                model.dir.display()
            )));
        }
        crate::session(&self.model, chunk)
    }
    fn describe(&self) -> String {
        format!("wgpu: {}", self.model.dev.describe())
    }
    fn weight_bytes(&self, _model: &Model) -> usize {
        self.model.weight_bytes()
    }
}

/// Code that runs on whichever backend `dispatch` picks.
pub trait Job {
    type Output;
    fn run<S: Sessions>(self, model: Model, sessions: S) -> Self::Output;
}

/// Opens the backend `choice` names (auto: a hardware adapter, else the CPU) and runs
/// `job` with it.
pub fn dispatch<J: Job>(choice: Choice, model: Model, job: J) -> dory::Result<J::Output> {
    let dev = match choice {
        Choice::Cpu => None,
        Choice::Wgpu => Some(GpuDevice::open(Pick::Any)?),
        Choice::Auto => match crate::device::choose(Pick::Hardware) {
            Some(adapter) => Some(Arc::new(GpuDevice::from_adapter(adapter, None)?)),
            None => None,
        },
    };
    Ok(match dev {
        None => job.run(model, CpuSessions),
        Some(dev) => {
            let gpu = GpuModel::new(dev, &model.config, &model.weights)?;
            job.run(model, GpuSessions { model: gpu })
        }
    })
}
