//! `dory serve`: the HTTP server over sessions of the backend `--backend` opened; every
//! worker's session comes from the same device (one copy of the weights for all).

use std::sync::Arc;

use anyhow::Result;
use dory::{Attention, Backend, Model, Session};

use crate::common::ModelArgs;
use crate::device::Device;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub server: dory_server::Args,
}

pub fn run(a: &Args) -> Result<()> {
    a.server.check()?;
    // Read, not mapped: a server outlives edits to the folder, and rebuilds a worker's
    // session from these bytes after a fault.
    let (model, device) = a.model.open_with(true)?;
    let chunk = a.model.chunk(&device)?;
    let attention = a.model.attention(&model.config)?;
    match device {
        Device::Cpu => {
            // The sessions share the weights held as stored; each holds its own copy of
            // the rest (what it widens or repacks).
            let n = a.server.parallel;
            let (held, shared) = device.weight_bytes(&model);
            let bytes = ((held - shared) as u64).checked_mul(n as u64);
            dory::limits::fits(&format!("--parallel {n} (the weights' own copies per worker)"), bytes)?;
            serve(model, &a.server, attention, move |m| dory::cpu::session(m, chunk))
        }
        Device::Wgpu(gpu) => serve(model, &a.server, attention, move |_| dory_wgpu::session(&gpu, chunk)),
    }
}

/// Runs the server with sessions from `make`, each set to `attention`.
fn serve<B: Backend + 'static>(
    model: Model,
    server: &dory_server::Args,
    attention: Attention,
    make: impl Fn(&Model) -> dory::Result<Session<B>> + Send + Sync + 'static,
) -> Result<()> {
    let make = move |m: &Model| -> Result<Session<B>> {
        let mut session = make(m)?;
        session.set_attention(attention.clone())?;
        Ok(session)
    };
    dory_server::run(model, server, Arc::new(make))
}
