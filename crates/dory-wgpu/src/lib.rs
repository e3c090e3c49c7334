//! Dory's GPU backend: the engine's operations (`dory::Backend`) as WGSL kernels on wgpu,
//! so that the one step orchestration runs on Vulkan, Metal and DX12.
//!
//! - `GpuDevice` (device.rs): an adapter, its queue and every pipeline, built once.
//! - `GpuModel` (model.rs): a model's weights uploaded once; shared by sessions.
//! - `Wgpu` (backend.rs): one session's backend, with its own recorder, caches and
//!   scratch. Ops record dispatches (ops/<op>.rs beside ops/<op>.wgsl); `read` submits
//!   them as one command encoder and waits (record.rs).
//!
//! ```no_run
//! # fn main() -> dory::Result<()> {
//! let model = dory::Model::load(std::path::Path::new("models/dory-tiny"))?;
//! let dev = dory_wgpu::GpuDevice::open(dory_wgpu::Pick::Any)?;
//! let weights = dory_wgpu::GpuModel::new(dev, &model.config, &model.weights)?;
//! // One backend per session; the device, pipelines and weights are shared.
//! let mut session = dory_wgpu::session(&weights, dory_wgpu::DEFAULT_CHUNK)?;
//! # Ok(()) }
//! ```

mod backend;
mod device;
mod error;
pub mod kernels;
mod model;
mod ops;
pub mod profile;
mod record;

pub use backend::{GpuBuf, GpuCache, Wgpu};
pub use device::{adapters, choose, Caps, GpuDevice, Pick};
pub use kernels::Reduce;
pub use model::GpuModel;

/// The backend's pieces that its kernel benchmarks (crate `dory-wgpu-bench`, binary
/// `dory-wgpu-kernels`) drive one at a time, outside a session: the recorder (with its
/// GPU timer, `timed` and `gpu_seconds`), device buffers, a matrix uploaded as a model's
/// weights are, the projection op and the copies. A session needs none of them.
pub mod hooks {
    pub use crate::error::gpu_err;
    pub use crate::model::{upload_matrix, upload_q8, Matrix, Q8Rows};
    pub use crate::ops::copy::{run as copy, run4 as copy4};
    pub use crate::ops::exit::record as exit_test;
    pub use crate::ops::matmul::{fuses, kernel_name, q8_tiles, record as project, Input};
    pub use crate::record::{Recorder, Store};
}

/// Rows of a prompt a GPU session runs at once by default, as many as the CPU's
/// (`dory::DEFAULT_CHUNK`), measured apart: at 256 the tensor-core GEMM has half the blocks
/// (the larger config's pp512 on the H200: 11,253 tok/s at 512 rows against 8,712 at 256;
/// 1,024 rows add nothing).
pub const DEFAULT_CHUNK: usize = 512;

/// A session on `model`'s device, with its own caches and scratch.
pub fn session(model: &std::sync::Arc<GpuModel>, chunk: usize) -> dory::Result<dory::Session<Wgpu>> {
    let backend = Wgpu::new(model)?;
    let mut forward = dory::Forward::new(backend, &model.config, chunk)?;
    forward.set_cap(dory::exit::Cap::Recent(model.dev.kernels.options.recent));
    Ok(dory::Session::new(forward))
}
