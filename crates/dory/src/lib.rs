//! Dory: an inference engine for looped, hyperspherical transformers.
//!
//! The semantics are `docs/SEMANTICS.md`'s (after the project spec). The step is written
//! once, in `forward`, over the operations of `backend::Backend`; `cpu` is the reference
//! backend.

pub mod backend;
pub mod bench;
pub mod cache;
pub mod config;
pub mod cpu;
pub mod error;
pub mod exit;
pub mod files;
pub mod forward;
pub mod generate;
pub mod init;
pub mod limits;
pub mod model;
pub mod npy;
pub mod nystrom;
pub mod perplexity;
pub mod quant;
pub mod rng;
pub mod rope;
pub mod sampler;
pub mod session;
pub mod testing;
pub mod tokenizer;
pub mod weights;

pub use backend::Backend;
pub use config::{Config, LayerKind};
pub use error::{Error, Result};
pub use exit::{Criterion, ExitRule};
pub use forward::{Attention, Decoded, Forward, Want, DEFAULT_CHUNK};
pub use generate::{generate, Finish, Generated, Request};
pub use model::Model;
pub use sampler::{Sampler, Sampling};
pub use session::Session;
