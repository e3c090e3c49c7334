//! The code's shape: no function in any crate's sources (Rust or WGSL) runs past 80 lines,
//! so that each reads on one screen. A function is taken from its `fn` line to the first
//! line after it that closes a brace at the same indentation (rustfmt's layout, which the
//! WGSL follows too).

use std::path::{Path, PathBuf};

const MOST_LINES: usize = 80;

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a readable folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs" || e == "wgsl") {
            out.push(path);
        }
    }
}

/// (first line, lines, the `fn` line) of every function in `text` longer than `most`.
fn long_functions(text: &str, most: usize) -> Vec<(usize, usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut long = vec![];
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let code = line.trim_start();
        let indent = line.len() - code.len();
        let head = ["fn ", "pub fn ", "pub(crate) fn ", "pub(super) fn ", "unsafe fn ", "pub unsafe fn ", "const fn "];
        if head.iter().any(|h| code.starts_with(h)) && !code.ends_with(';') {
            let close = " ".repeat(indent) + "}";
            if let Some(end) = (i + 1..lines.len())
                .find(|&j| lines[j].starts_with(&close) && !lines[j][indent..].starts_with("} else"))
            {
                if end - i + 1 > most {
                    long.push((i + 1, end - i + 1, code.to_string()));
                }
                i = end;
            }
        }
        i += 1;
    }
    long
}

#[test]
fn no_function_runs_past_80_lines() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = vec![];
    for krate in std::fs::read_dir(&crates).expect("the crates folder") {
        let src = krate.expect("an entry").path().join("src");
        if src.is_dir() {
            sources(&src, &mut files);
        }
    }
    assert!(files.iter().any(|f| f.ends_with("cpu/isa.rs")), "the sources were not found from {crates:?}");
    let mut long = vec![];
    for f in &files {
        let text = std::fs::read_to_string(f).expect("a readable source");
        for (at, n, head) in long_functions(&text, MOST_LINES) {
            long.push(format!("{}:{at}: {n} lines: {head}", f.display()));
        }
    }
    assert!(long.is_empty(), "functions over {MOST_LINES} lines:\n{}", long.join("\n"));
}

#[test]
fn a_long_function_is_found() {
    let body = "    let x = 1;\n".repeat(90);
    let text = format!("struct A;\n\nimpl A {{\n    pub fn f() {{\n{body}    }}\n\n    fn g() {{}}\n}}\n");
    let long = long_functions(&text, MOST_LINES);
    assert_eq!(long.len(), 1, "{long:?}");
    assert_eq!((long[0].0, long[0].1), (4, 92));
    assert!(long_functions(&text, 100).is_empty());
}
