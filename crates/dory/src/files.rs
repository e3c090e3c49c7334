//! Writes that lose nothing. A file is written beside its destination under a fresh
//! name, synced, then renamed over it: a full disk or a failed write leaves the old file
//! (or none), never half of one; a destination that is a symlink is replaced, never
//! written through; the file gets the mode any new file gets (0666 less the umask).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{invalid, Error, Result};

/// Writes `bytes` to `path`, whole or not at all.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    let temp = beside(path)?;
    let written = (|| {
        // create_new: never opens what is there, a symlink included.
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&temp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        Error::io(path, e)
    })
}

/// A name in `path`'s folder that nothing else uses.
fn beside(path: &Path) -> Result<PathBuf> {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().ok_or_else(|| invalid!("{}: not a file name", path.display()))?;
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    let temp = format!(".{}.{}-{n}.partial", name.to_string_lossy(), std::process::id());
    Ok(path.with_file_name(temp))
}

/// Whether `name` is a file a model folder's loader reads (spec §2).
pub fn is_model_file(name: &str) -> bool {
    let shard = name.strip_prefix("model-").and_then(|n| n.strip_suffix(".safetensors"));
    let shard = shard.and_then(|n| n.split_once("-of-"));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    matches!(name, "config.json" | "tokenizer.json" | "model.safetensors" | "model.safetensors.index.json")
        || shard.is_some_and(|(i, n)| digits(i) && digits(n))
}

/// Makes `dir` ready for a new model: created if missing. A folder that holds anything
/// is refused unless `force`; with it, every model file there is removed first, so that
/// no old file shadows the new weights (a single file beside new shards, or old shards
/// and index beside a new single file). Other files are kept.
pub fn model_folder(dir: &Path, force: bool) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut names = vec![];
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        names.push(entry.map_err(|e| Error::io(dir, e))?.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    if names.is_empty() {
        return Ok(());
    }
    if !force {
        return Err(invalid!(
            "{}: the folder is not empty (it holds {}); a model is written only into an empty folder, unless \
             --force, which replaces the model files in it",
            dir.display(),
            names.iter().take(4).cloned().collect::<Vec<_>>().join(", ") + if names.len() > 4 { ", …" } else { "" }
        ));
    }
    for name in names.iter().filter(|n| is_model_file(n)) {
        let path = dir.join(name);
        let meta = std::fs::symlink_metadata(&path).map_err(|e| Error::io(&path, e))?;
        if meta.is_dir() {
            return Err(invalid!("{}: a folder where a model file goes; remove it first", path.display()));
        }
        // A symlink goes, not what it points to.
        std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_files_are_what_a_loader_reads() {
        for name in ["config.json", "model.safetensors", "model-00001-of-00002.safetensors", "tokenizer.json"] {
            assert!(is_model_file(name), "{name}");
        }
        for name in ["README.md", "model-a-of-2.safetensors", "model-1-of-.safetensors", "x.safetensors"] {
            assert!(!is_model_file(name), "{name}");
        }
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_partial_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.npy");
        std::fs::create_dir(&path).unwrap(); // a rename over a folder fails
        let e = write(&path, b"new").unwrap_err().to_string();
        assert!(e.contains("out.npy"), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no partial file left");
        let missing = dir.path().join("no/such/folder/x.npy");
        assert!(write(&missing, b"x").unwrap_err().to_string().contains("no/such/folder/x.npy"));
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_replaced_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, b"keep").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        write(&link, b"new").unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
        assert_eq!(std::fs::read(&link).unwrap(), b"new");
        assert!(!std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    }
}
