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
        if !dir.is_dir() {
            return Err(Error::io(dir, std::io::Error::new(std::io::ErrorKind::NotFound, "no such model folder")));
        }
        let config = Config::load(&dir.join("config.json"))?;
        let weights = Weights::load(dir, &config)?;
        let tokenizer = Tokenizer::load(&dir.join("tokenizer.json"), config.vocab_size)?;
        Ok(Model { dir: dir.to_path_buf(), config, weights, tokenizer })
    }
}
