//! The bodies of Dory's fuzz targets (docs/RELIABILITY.md). Each takes any bytes and
//! either gets a named error or a result whose invariants it checks; a panic, an abort,
//! a hang or an allocation past memory is a finding. `fuzz/` runs them under libFuzzer
//! (nightly); `tests/corpus.rs` runs them on stable over the committed corpus and a
//! bounded number of mutations of it.

pub mod files;
pub mod generate;
pub mod options;
pub mod request;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A target: the name of its corpus folder, and its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every target but the generation one.
pub const TARGETS: [Target; 8] = [
    ("config", files::config),
    ("safetensors", files::safetensors),
    ("index", files::index),
    ("tokenizer", files::tokenizer),
    ("exit", options::exit),
    ("o1", options::o1),
    ("sampling", options::sampling),
    ("request", request::request),
];

/// The generation target is slower (a model per input): run apart, fewer times.
pub const GENERATE: Target = ("generate", generate::generate);

/// Reads small values off the front of fuzzer bytes (zeros once they run out).
pub struct Input<'a>(pub &'a [u8]);

impl Input<'_> {
    pub fn byte(&mut self) -> u8 {
        let (first, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        first
    }

    /// A value in lo..=hi.
    pub fn pick(&mut self, lo: usize, hi: usize) -> usize {
        let wide = u16::from_le_bytes([self.byte(), self.byte()]) as usize;
        lo + wide % (hi - lo + 1)
    }

    /// Any f32 bit pattern, NaN and infinities included.
    pub fn f32(&mut self) -> f32 {
        f32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }
}

/// A folder of this process for a target's files, made once.
pub fn scratch(name: &str) -> PathBuf {
    static ROOT: OnceLock<tempfile::TempDir> = OnceLock::new();
    let root = ROOT.get_or_init(|| tempfile::tempdir().expect("a temporary folder"));
    let dir = root.path().join(format!("{name}-{:?}", std::thread::current().id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

/// The corpus folder of a target, in the repository.
pub fn corpus(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(target)
}
