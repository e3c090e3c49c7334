//! Upper bounds on every size a config or an option sets, and the memory checks made
//! before allocating. A size past its bound gets an error naming the field or option,
//! the value and the bound (for memory, the bytes it would need), never an overflow, an
//! abort on a failed allocation, or work without end. docs/RELIABILITY.md lists them.

use std::path::Path;
use std::sync::OnceLock;

use crate::config::{Config, O1};
use crate::error::{invalid, Error, Result};

/// Positions a session may reach, and the bound on every setting counted in positions
/// (window, max_context, the O(1) settings, contexts and token counts of options):
/// RoPE stays precise far below it (spec §3), and a position times any width or layer
/// count stays far inside u64.
pub const MAX_POSITIONS: usize = 1 << 32;
/// Passes and layers: a token's work is their product, so each is bounded (hub models
/// have at most ~200 layers; Dory's loop runs a handful of passes).
pub const MAX_PASSES: usize = 1024;
pub const MAX_LAYERS: usize = 1024;
/// Widths: the largest published models stay well inside these.
pub const MAX_VOCAB: usize = 1 << 24;
pub const MAX_HIDDEN: usize = 1 << 16;
pub const MAX_FFN: usize = 1 << 18;
pub const MAX_KV_HEADS: usize = 256;
/// Rows of a prompt chunk (`--chunk`).
pub const MAX_CHUNK: usize = 1 << 16;
/// CPU worker threads (`--threads`): more only adds switching.
pub const MAX_THREADS: usize = 1024;

/// The checks of one object's fields; errors name `prefix` + the field.
pub(crate) struct Rules<'a> {
    pub path: &'a Path,
    pub prefix: &'a str,
}

impl Rules<'_> {
    pub(crate) fn fails(&self, field: &str, rule: String) -> Error {
        Error::Config { path: self.path.into(), field: format!("{}{field}", self.prefix), rule }
    }

    pub(crate) fn check(&self, field: &str, ok: bool, rule: impl FnOnce() -> String) -> Result<()> {
        ok.then_some(()).ok_or_else(|| self.fails(field, rule()))
    }

    pub(crate) fn at_least(&self, field: &str, n: usize, least: usize) -> Result<()> {
        self.check(field, n >= least, || format!("must be ≥ {least}, got {n}"))
    }

    pub(crate) fn at_most(&self, field: &str, n: usize, most: usize) -> Result<()> {
        self.check(field, n <= most, || format!("must be ≤ {most}, got {n}"))
    }
}

/// The bounded fields of a config: (field, value, bound), checked before any other rule
/// so that the others may compute with them.
pub(crate) fn config_bounds(c: &Config) -> [(&'static str, usize, usize); 10] {
    [
        ("vocab_size", c.vocab_size, MAX_VOCAB),
        ("hidden", c.hidden, MAX_HIDDEN),
        ("ffn", c.ffn, MAX_FFN),
        ("kv_heads", c.kv_heads, MAX_KV_HEADS),
        ("heads", c.heads, crate::config::GROUP * MAX_KV_HEADS),
        ("layers", c.layers.len(), MAX_LAYERS),
        ("passes", c.passes, MAX_PASSES),
        ("window", c.window, MAX_POSITIONS),
        ("max_context", c.max_context.unwrap_or(1), MAX_POSITIONS),
        ("exit.min_passes", c.exit.min_passes, MAX_PASSES),
    ]
}

/// The bounded fields of an `o1` section (landmarks has the spec's own bound).
pub(crate) fn o1_bounds(o: &O1) -> [(&'static str, usize, usize); 4] {
    [
        ("sinks", o.sinks, MAX_POSITIONS),
        ("window", o.window, MAX_POSITIONS),
        ("stride", o.stride, MAX_POSITIONS),
        ("seal_at", o.seal_at, MAX_POSITIONS),
    ]
}

/// An option's value within 1…`most`, or an error naming the option.
pub fn option(name: &str, value: usize, most: usize) -> Result<usize> {
    if value == 0 || value > most {
        return Err(invalid!("{name} must be in 1…{most}, got {value}"));
    }
    Ok(value)
}

/// An option's value of at most `most` (0 allowed), or an error naming the option.
pub fn at_most(name: &str, value: usize, most: usize) -> Result<usize> {
    if value > most {
        return Err(invalid!("{name} must be ≤ {most}, got {value}"));
    }
    Ok(value)
}

/// Bytes of memory this process may use, where the OS tells it (Linux: physical
/// memory, or the cgroup's limit when a container sets a lower one); elsewhere only the
/// arithmetic bounds hold.
pub fn memory() -> Option<u64> {
    static MEMORY: OnceLock<Option<u64>> = OnceLock::new();
    *MEMORY.get_or_init(|| {
        let info = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
        let total = line.split_whitespace().nth(1)?.parse::<u64>().ok()?.checked_mul(1024)?;
        // "max" (no limit) does not parse, and leaves the physical memory.
        let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok().and_then(|t| t.trim().parse().ok());
        Some(cgroup.map_or(total, |limit: u64| limit.min(total)))
    })
}

/// Checks that `bytes` (None: past u64) fit this machine's memory; `what` names what
/// needs them, as a user wrote it ("--depth 100000000", "field `window`", …).
pub fn fits(what: &str, bytes: Option<u64>) -> Result<()> {
    let have = memory().unwrap_or(u64::MAX);
    match bytes {
        Some(b) if b <= have => Ok(()),
        Some(b) => Err(invalid!("{what}: would need {}, more than this machine's {} of memory", size(b), size(have))),
        None => Err(invalid!("{what}: would need more than 2^64 bytes of memory")),
    }
}

/// Bytes in the unit that reads best (KiB, MiB, GiB, TiB).
pub fn size(bytes: u64) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut x = bytes as f64;
    let mut unit = 0;
    while x >= 1024.0 && unit + 1 < units.len() {
        x /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{x:.1} {}", units[unit])
    }
}

/// Bytes of `floats` f32 values, None past u64.
pub fn f32_bytes(floats: Option<usize>) -> Option<u64> {
    (floats? as u64).checked_mul(4)
}

/// Grows (or shrinks) `store` to `len` zeros past what it holds, refusing before
/// allocating what cannot fit; `what` names the buffer.
pub fn resize(store: &mut Vec<f32>, len: usize, what: &str) -> Result<()> {
    if len > store.len() {
        fits(what, f32_bytes(Some(len)))?;
        let more = len - store.len();
        // Amortised, as `Vec::resize` would: a full layer's cache grows a row a step.
        store.try_reserve(more).map_err(|_| invalid!("{what}: cannot allocate {}", size(4 * len as u64)))?;
    }
    store.resize(len, 0.0);
    Ok(())
}

/// `len` f32 zeros, refused before allocating when they cannot fit.
pub fn zeros(len: usize, what: &str) -> Result<Vec<f32>> {
    let mut v = Vec::new();
    resize(&mut v, len, what)?;
    Ok(v)
}

/// The most bytes a model folder's small files may hold: they are read whole.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
pub const MAX_INDEX_BYTES: u64 = 16 << 20;
pub const MAX_TOKENIZER_BYTES: u64 = 64 << 20;

/// Opens `path` if it is a regular file (a link to one is followed), refusing FIFOs,
/// devices and folders, which would block or never end.
pub fn open_regular(path: &Path) -> Result<(std::fs::File, u64)> {
    let regular = |meta: std::io::Result<std::fs::Metadata>| {
        let meta = meta.map_err(|e| Error::io(path, e))?;
        if !meta.is_file() {
            let what = format!("not a regular file (a {}), so not read", kind(&meta.file_type()));
            return Err(Error::io(path, std::io::Error::new(std::io::ErrorKind::InvalidInput, what)));
        }
        Ok(meta.len())
    };
    // Checked before opening too: opening a FIFO blocks until someone writes to it.
    regular(std::fs::metadata(path))?;
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let len = regular(file.metadata())?;
    Ok((file, len))
}

fn kind(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "FIFO";
        }
        if t.is_char_device() || t.is_block_device() {
            return "device";
        }
        if t.is_socket() {
            return "socket";
        }
    }
    if t.is_dir() {
        "folder"
    } else {
        "special file"
    }
}

/// Reads a regular file of at most `most` bytes whole.
pub fn read_capped(path: &Path, most: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let (file, len) = open_regular(path)?;
    let too_big = |n: u64| {
        let msg = format!("is {} long, more than the {} such a file may hold", size(n), size(most));
        Error::io(path, std::io::Error::new(std::io::ErrorKind::InvalidData, msg))
    };
    if len > most {
        return Err(too_big(len));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    // The file may grow between the check and the read: never read past the cap.
    file.take(most + 1).read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > most {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// `read_capped`, as UTF-8 text.
pub fn read_text(path: &Path, most: u64) -> Result<String> {
    String::from_utf8(read_capped(path, most)?).map_err(|e| {
        Error::io(path, std::io::Error::new(std::io::ErrorKind::InvalidData, format!("not UTF-8 text: {e}")))
    })
}
