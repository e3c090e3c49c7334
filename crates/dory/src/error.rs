//! The library's errors: each names the file, field, tensor or option at fault and the
//! rule it breaks, so that a user can fix the input without reading the code.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The I/O error is part of the message, not a source: a caller printing the chain
    /// would say it twice.
    #[error("{}: {error}", path.display())]
    Io { path: PathBuf, error: std::io::Error },
    #[error("{}: {msg}", path.display())]
    Json { path: PathBuf, msg: String },
    #[error("{}: field `{field}`: {rule}", path.display())]
    Config { path: PathBuf, field: String, rule: String },
    #[error("{}: {msg}", path.display())]
    Safetensors { path: PathBuf, msg: String },
    #[error("{}: tensor `{name}`: {rule}", path.display())]
    Tensor { path: PathBuf, name: String, rule: String },
    #[error("{}: {msg}", path.display())]
    Tokenizer { path: PathBuf, msg: String },
    /// An out-of-range option or request (sampling, exit rule, prompt, …).
    #[error("{0}")]
    Invalid(String),
    /// The backend failed (a GPU lost, a shader that would not build, …).
    #[error("backend: {0}")]
    Backend(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, error: std::io::Error) -> Self {
        Error::Io { path: path.into(), error }
    }
}

/// `Error::Invalid` from a format string.
macro_rules! invalid {
    ($($arg:tt)*) => { $crate::error::Error::Invalid(format!($($arg)*)) };
}
pub(crate) use invalid;
