//! Writing `.npy` files (NumPy's format, version 1.0), for `--logits`.

use std::path::Path;

use crate::error::Result;

/// An element type that `.npy` names.
pub trait NpyType: Copy {
    const DESCR: &'static str;
    fn le_bytes(self) -> [u8; 4];
}

impl NpyType for f32 {
    const DESCR: &'static str = "<f4";
    fn le_bytes(self) -> [u8; 4] {
        self.to_le_bytes()
    }
}

impl NpyType for i32 {
    const DESCR: &'static str = "<i4";
    fn le_bytes(self) -> [u8; 4] {
        self.to_le_bytes()
    }
}

/// Writes `data` with `shape` (C order) to `path`.
pub fn write<T: NpyType>(path: &Path, shape: &[usize], data: &[T]) -> Result<()> {
    assert_eq!(shape.iter().product::<usize>(), data.len(), "shape and data disagree");
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape_text = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!("{{'descr': '{}', 'fortran_order': False, 'shape': {shape_text}, }}", T::DESCR);
    // Magic (6) + version (2) + length (2) + header + '\n', padded to a multiple of 64.
    let total = (10 + header.len() + 1).div_ceil(64) * 64;
    header.push_str(&" ".repeat(total - 10 - header.len() - 1));
    header.push('\n');
    let mut out = Vec::with_capacity(total + 4 * data.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for &x in data {
        out.extend_from_slice(&x.le_bytes());
    }
    crate::files::write(path, &out)
}
