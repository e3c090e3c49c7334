//! `tokenizer.json` through the Hugging Face `tokenizers` crate, and the streaming of
//! decoded text that never splits a UTF-8 character.

use std::path::Path;

use tokenizers::DecoderWrapper;

use crate::error::{Error, Result};

pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
}

impl Tokenizer {
    /// Loads `path` and checks that every id it can produce is below `vocab_size`.
    pub fn load(path: &Path, vocab_size: usize) -> Result<Tokenizer> {
        let bytes = crate::limits::read_capped(path, crate::limits::MAX_TOKENIZER_BYTES)?;
        let bad = |msg: String| Error::Tokenizer { path: path.into(), msg };
        // The tokenizers crate panics on some malformed files (a decoder that is not
        // JSON, or not UTF-8: found by fuzzing): the JSON is read whole first (strings,
        // escapes and UTF-8 checked, which skipping it would not), and a panic is still
        // caught.
        serde_json::from_slice::<serde_json::Value>(&bytes).map_err(|e| bad(format!("invalid JSON: {e}")))?;
        let parsed = std::panic::catch_unwind(|| tokenizers::Tokenizer::from_bytes(&bytes));
        let inner = parsed
            .map_err(|_| bad("not a valid tokenizer (the tokenizers crate failed on it)".into()))?
            .map_err(|e| bad(format!("not a valid tokenizer: {e}")))?;
        let largest = inner.get_vocab(true).into_values().max().map_or(0, |id| id as usize + 1);
        if largest > vocab_size {
            return Err(Error::Tokenizer {
                path: path.into(),
                msg: format!("its vocabulary has ids up to {} but the model's vocab_size is {vocab_size}", largest - 1),
            });
        }
        Ok(Tokenizer { inner })
    }

    /// Token ids of `text`, without special tokens (spec §5).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let enc =
            self.inner.encode(text, false).map_err(|e| Error::Invalid(format!("cannot tokenize the prompt: {e}")))?;
        Ok(enc.get_ids().to_vec())
    }

    /// The text of `ids`, special tokens included (a user sees what the model wrote).
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner.decode(ids, false).map_err(|e| Error::Invalid(format!("cannot decode tokens: {e}")))
    }

    /// Each id's text in UTF-8 bytes (special tokens: none), for bits per byte. A
    /// byte-level vocabulary spells every byte as one character; other tokenizers decode
    /// the token alone.
    pub fn byte_lengths(&self) -> Vec<usize> {
        let byte_level = matches!(self.inner.get_decoder(), Some(DecoderWrapper::ByteLevel(_)));
        let added = self.inner.get_added_tokens_decoder();
        let ids = 0..self.inner.get_vocab_size(true) as u32;
        ids.map(|id| match (added.get(&id), self.inner.id_to_token(id)) {
            (Some(t), _) if t.special => 0,
            (Some(t), _) => t.content.len(),
            (None, Some(t)) if byte_level => t.chars().count(),
            (None, Some(_)) => self.decode(&[id]).map_or(0, |text| text.len()),
            (None, None) => 0,
        })
        .collect()
    }

    pub fn id_of(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    pub fn inner(&self) -> &tokenizers::Tokenizer {
        &self.inner
    }
}

/// Turns a stream of token ids into a stream of text pieces. A token can end in the
/// middle of a UTF-8 character (byte-level BPE), which decodes to U+FFFD: such text is
/// held back until a later token completes the character. Like the Hugging Face
/// streamers, it decodes only the ids since the last piece (and the piece before, so
/// that tokenizers which strip a leading space at the start of a text keep it), so each
/// token costs the same however long the text.
#[derive(Default)]
pub struct TextStream {
    ids: Vec<u32>,
    /// `ids[prefix..read]` is the last piece handed out; `ids[read..]` is pending.
    prefix: usize,
    read: usize,
}

impl TextStream {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a token; returns the text that is now complete (possibly empty).
    pub fn push(&mut self, tok: &Tokenizer, id: u32) -> Result<String> {
        self.ids.push(id);
        self.take(tok, false)
    }

    /// Whatever is left at the end (a character that never completed comes out as U+FFFD).
    pub fn finish(&mut self, tok: &Tokenizer) -> Result<String> {
        self.take(tok, true)
    }

    fn take(&mut self, tok: &Tokenizer, last: bool) -> Result<String> {
        let before = tok.decode(&self.ids[self.prefix..self.read])?;
        let now = tok.decode(&self.ids[self.prefix..])?;
        let complete = last || !now.ends_with('\u{FFFD}');
        if !complete || now.len() <= before.len() || !now.is_char_boundary(before.len()) {
            return Ok(String::new());
        }
        self.prefix = self.read;
        self.read = self.ids.len();
        Ok(now[before.len()..].to_string())
    }
}
