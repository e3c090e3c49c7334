//! Errors: the engine's `Error::Backend`, with what failed in words.

pub fn gpu_err(msg: impl Into<String>) -> dory::Error {
    dory::Error::Backend(format!("wgpu: {}", msg.into()))
}
