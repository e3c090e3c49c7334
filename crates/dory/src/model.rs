//! A model folder (spec §2): config, weights and tokenizer, each checked on load.

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::tokenizer::Tokenizer;
use crate::weights::Weights;

pub struct Model {
    pub dir: PathBuf,
    pub config: Config,
    pub weights: Weights,
    pub tokenizer: Tokenizer,
}

impl Model {
    pub fn load(dir: &Path) -> Result<Model> {
        Model::load_with(dir, false)
    }

    /// `load`, the weights read into memory (`in_memory`: for a server, so that a file
    /// changed on disk while it runs cannot reach them) or mapped.
    pub fn load_with(dir: &Path, in_memory: bool) -> Result<Model> {
        if !dir.is_dir() {
            return Err(Error::io(dir, std::io::Error::new(std::io::ErrorKind::NotFound, "no such model folder")));
        }
        let config = Config::load(&dir.join("config.json"))?;
        let weights = Weights::load_with(dir, &config, in_memory)?;
        let tokenizer = Tokenizer::load(&dir.join("tokenizer.json"), config.vocab_size)?;
        Ok(Model { dir: dir.to_path_buf(), config, weights, tokenizer })
    }
}
