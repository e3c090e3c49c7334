//! The CPU's matrices as stored (f32, f16, bf16 or q8_0), borrowed from the mapped
//! safetensors file where its layout allows (aligned, little-endian host), owned
//! otherwise; and the projection `out ← x · Wᵀ` over them: a GEMV per row for decoding,
//! for a prompt a GEMM over f32 panels of a few hundred rows of W widened on the fly
//! (never a widened copy of a whole matrix).

use std::cell::RefCell;

use rayon::prelude::*;

use super::isa::{self, Isa, Rows};
use crate::quant::scale_name;
use crate::weights::{DType, Shared, Stored, Weights};

/// An element type read from little-endian bytes.
trait Elem: bytemuck::Pod {
    fn from_le(b: &[u8]) -> Self;
}

impl Elem for f32 {
    fn from_le(b: &[u8]) -> f32 {
        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
}

impl Elem for u16 {
    fn from_le(b: &[u8]) -> u16 {
        u16::from_le_bytes([b[0], b[1]])
    }
}

impl Elem for i8 {
    fn from_le(b: &[u8]) -> i8 {
        b[0] as i8
    }
}

/// A tensor's elements: the mapped bytes themselves, or a copy where they cannot be
/// read in place (misaligned, or a big-endian host).
enum Data<T> {
    Mapped(Shared),
    Owned(Vec<T>),
}

impl<T: Elem> Data<T> {
    fn new(s: Shared) -> Data<T> {
        if cfg!(target_endian = "little") && bytemuck::try_cast_slice::<u8, T>(&s).is_ok() {
            Data::Mapped(s)
        } else {
            Data::Owned(s.chunks_exact(size_of::<T>()).map(T::from_le).collect())
        }
    }

    fn get(&self) -> &[T] {
        match self {
            Data::Mapped(s) => bytemuck::cast_slice(s),
            Data::Owned(v) => v,
        }
    }
}

enum Store {
    F32(Data<f32>),
    F16(Data<u16>),
    Bf16(Data<u16>),
    /// int8 values [n, k] and f16 scales [n, k/32].
    Q8(Data<i8>, Data<u16>),
}

/// One [n, k] matrix of the model, as stored.
pub struct Matrix {
    pub n: usize,
    pub k: usize,
    store: Store,
}

impl Matrix {
    /// The checked tensor `name` ([n, k]), with its scales when it is quantized.
    pub fn load(w: &Weights, name: &str) -> Matrix {
        let s = w.share(name);
        let (n, k) = (s.shape[0], s.shape[1]);
        let store = match s.stored {
            Stored::Float(DType::F32) => Store::F32(Data::new(s)),
            Stored::Float(DType::F16) => Store::F16(Data::new(s)),
            Stored::Float(DType::BF16) => Store::Bf16(Data::new(s)),
            Stored::I8 => Store::Q8(Data::new(s), Data::new(w.share(&scale_name(name)))),
        };
        Matrix { n, k, store }
    }

    pub fn rows(&self) -> Rows<'_> {
        match &self.store {
            Store::F32(d) => Rows::F32(d.get()),
            Store::F16(d) => Rows::F16(d.get()),
            Store::Bf16(d) => Rows::Bf16(d.get()),
            Store::Q8(q, s) => Rows::Q8(q.get(), s.get()),
        }
    }

    /// Bytes held: (mapped from the file, owned).
    pub fn bytes(&self) -> (usize, usize) {
        fn of<T: Elem>(d: &Data<T>) -> (usize, usize) {
            let b = size_of_val(d.get());
            if matches!(d, Data::Mapped(_)) {
                (b, 0)
            } else {
                (0, b)
            }
        }
        match &self.store {
            Store::F32(d) => of(d),
            Store::F16(d) | Store::Bf16(d) => of(d),
            Store::Q8(q, s) => {
                let (a, b) = (of(q), of(s));
                (a.0 + b.0, a.1 + b.1)
            }
        }
    }
}

/// Matrices with the same input stacked along the output (the fused q | k | v | gate and
/// gate | up projections): [Σ n, k], each part where the file holds it.
pub struct Stacked {
    pub parts: Vec<Matrix>,
    pub n: usize,
    pub k: usize,
}

impl Stacked {
    pub fn load(w: &Weights, names: &[String]) -> Stacked {
        let parts: Vec<Matrix> = names.iter().map(|n| Matrix::load(w, n)).collect();
        let (n, k) = (parts.iter().map(|m| m.n).sum(), parts[0].k);
        Stacked { parts, n, k }
    }

    /// Bytes held: (mapped, owned).
    pub fn bytes(&self) -> (usize, usize) {
        self.parts.iter().map(Matrix::bytes).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    }

    /// out[k] ← row `i`, widened (an embedding lookup).
    pub fn widen_row(&self, isa: Isa, i: usize, out: &mut [f32]) {
        let mut i = i;
        for m in &self.parts {
            if i < m.n {
                return isa::widen(isa, out, m.rows().slice(i..i + 1, m.k));
            }
            i -= m.n;
        }
        panic!("row {i} past the matrix's {} rows", self.n);
    }
}

/// Outputs below this many multiply-adds are not worth a thread.
const PARALLEL_WORK: usize = 1 << 15;

/// Bytes of a widened panel of W: a few hundred rows, well inside a core's L2.
const PANEL_BYTES: usize = 1 << 18;

/// out[rows, n] ← x[rows, k] · wᵀ.
pub fn matmul(isa: Isa, out: &mut [f32], x: &[f32], w: &Stacked, rows: usize) {
    let (k, n) = (w.k, w.n);
    let out = &mut out[..rows * n];
    let x = &x[..rows * k];
    if rows <= 2 {
        // Decoding: a matrix-vector product, bound by reading w once.
        for (o, xr) in out.chunks_exact_mut(n).zip(x.chunks_exact(k)) {
            gemv(isa, o, w, xr);
        }
        return;
    }
    gemm(isa, out, x, w, rows);
}

/// out[n] ← w · x, rayon over blocks of rows of every part at once.
fn gemv(isa: Isa, out: &mut [f32], w: &Stacked, x: &[f32]) {
    let k = w.k;
    let block = if w.n * k < PARALLEL_WORK { w.n } else { (PARALLEL_WORK / k).clamp(8, 256) };
    let mut tasks = Vec::new();
    let mut rest = out;
    for m in &w.parts {
        let (o, r) = rest.split_at_mut(m.n);
        rest = r;
        for (b, ob) in o.chunks_mut(block).enumerate() {
            let rows = m.rows().slice(b * block..b * block + ob.len(), k);
            tasks.push((ob, rows));
        }
    }
    if tasks.len() == 1 {
        let (o, rows) = tasks.pop().expect("one task");
        return isa::gemv(isa, o, rows, x);
    }
    tasks.into_par_iter().for_each(|(o, rows)| isa::gemv(isa, o, rows, x));
}

/// The output of a GEMM shared by the tasks that write its disjoint columns.
#[derive(Clone, Copy)]
struct OutPtr(*mut f32);
// SAFETY: every task writes only its own columns of the output (see `gemm`).
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

impl OutPtr {
    /// The output from column `col` (a method, so that a closure captures the whole
    /// `OutPtr`, which is Send, rather than its raw pointer, which is not).
    fn at(self, col: usize) -> *mut f32 {
        self.0.wrapping_add(col)
    }
}

thread_local! {
    /// Each thread's panel of W widened, and transposed, reused from call to call.
    static PANEL: RefCell<(Vec<f32>, Vec<f32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// out[rows, n] ← x[rows, k] · wᵀ, one rayon task per panel of rows of W: f16, bf16 and q8_0
/// panels widened to f32 on the fly, every panel transposed (`gemm_f32`) on its way to the
/// gemm crate. (The gemm crate's own threading ran f32 prefill about 1.1× slower than these
/// panels.)
fn gemm(isa: Isa, out: &mut [f32], x: &[f32], w: &Stacked, rows: usize) {
    let (k, n) = (w.k, w.n);
    let panel = (PANEL_BYTES / (4 * k)).clamp(16, 512);
    let mut panels = Vec::new();
    let mut col = 0;
    for m in &w.parts {
        // As many panels as threads at least, of about equal width: `out` (D columns) in
        // three panels ran one thread twice while the other waited.
        let count = m.n.div_ceil(panel).next_multiple_of(rayon::current_num_threads());
        let size = m.n.div_ceil(count);
        panels.extend((0..m.n).step_by(size).map(|r| (col + r, m.rows().slice(r..(r + size).min(m.n), k))));
        col += m.n;
    }
    let out = OutPtr(out.as_mut_ptr());
    panels.into_par_iter().for_each(|(col, wb)| {
        let wn = wb.len() / k;
        PANEL.with_borrow_mut(|(p, wt)| {
            let w = match wb {
                Rows::F32(w) => w,
                stored => {
                    p.resize(wn * k, 0.0);
                    isa::widen(isa, p, stored);
                    p
                }
            };
            wt.resize(stride(wn) * k, 0.0);
            isa::transpose(isa, wt, w, wn, k, stride(wn));
            // SAFETY: this panel's columns col … col + wn of out[rows, n]: no other task
            // writes them, and the caller's borrow of out outlives the parallel loop.
            unsafe { gemm_f32(out.at(col), n, x, wt, rows, k, wn) };
        });
    });
}

/// The row stride of a panel of `rows` rows of W transposed: whole cache lines, and not a
/// power of two, so that one step of k does not fall in a few sets of L1.
fn stride(rows: usize) -> usize {
    rows.next_multiple_of(16) + 16
}

/// out[rows, wn] (row stride `ld`) ← x[rows, k] · w[wn, k]ᵀ, w given transposed, wt[k, wn]
/// (row stride `stride(wn)`): the gemm crate packs such a panel with vector copies, where it
/// gathers the panel as held, element by element (11 % of a bf16 prompt's time, `perf`).
///
/// # Safety
/// `out` must be valid for writes of rows − 1 strides of `ld` plus `wn` elements.
unsafe fn gemm_f32(out: *mut f32, ld: usize, x: &[f32], wt: &[f32], rows: usize, k: usize, wn: usize) {
    debug_assert!(x.len() >= rows * k && wt.len() >= stride(wn) * k);
    gemm::gemm(
        rows,
        wn,
        k,
        out,
        1,
        ld as isize,
        false,
        x.as_ptr(),
        1,
        k as isize,
        wt.as_ptr(),
        1,
        stride(wn) as isize,
        0.0,
        1.0,
        false,
        false,
        false,
        gemm::Parallelism::None,
    );
}

#[cfg(test)]
mod tests {
    use half::{bf16, f16};

    use super::*;
    use crate::testing::{rand_vec, rel_err};

    /// A random [n, k] matrix stored as `kind`, and its exact values.
    fn matrix(kind: usize, n: usize, k: usize, seed: u64) -> (Matrix, Vec<f64>) {
        let w = rand_vec(n * k, seed);
        let (store, exact): (Store, Vec<f64>) = match kind {
            0 => (Store::F32(Data::Owned(w.clone())), w.iter().map(|&v| v as f64).collect()),
            1 => {
                let b: Vec<u16> = w.iter().map(|&v| f16::from_f32(v).to_bits()).collect();
                let exact = b.iter().map(|&b| f16::from_bits(b).to_f64()).collect();
                (Store::F16(Data::Owned(b)), exact)
            }
            2 => {
                let b: Vec<u16> = w.iter().map(|&v| bf16::from_f32(v).to_bits()).collect();
                let exact = b.iter().map(|&b| bf16::from_bits(b).to_f64()).collect();
                (Store::Bf16(Data::Owned(b)), exact)
            }
            _ => {
                let (q, s) = crate::quant::quantize_q8_0(&w, k).expect("finite");
                let exact = q.iter().enumerate().map(|(i, &v)| s[i / 32].to_f64() * v as f64).collect();
                (Store::Q8(Data::Owned(q), Data::Owned(s.iter().map(|s| s.to_bits()).collect())), exact)
            }
        };
        (Matrix { n, k, store }, exact)
    }

    #[test]
    fn matmul_matches_the_formula_on_stacked_parts_of_every_storage() {
        let shapes = [(1, 64, 33), (2, 96, 1025), (3, 32, 5), (17, 96, 130), (64, 384, 960), (300, 64, 700)];
        for isa in Isa::available() {
            for (s, &(rows, k, n)) in shapes.iter().enumerate() {
                // Parts of several storages and sizes, as q | k | v | gate are.
                let cuts = [0, n / 3, n / 2, n];
                for kinds in [[0, 0, 0], [2, 2, 2], [1, 1, 1], [3, 3, 3], [2, 0, 3]] {
                    let (mut parts, mut exact) = (vec![], vec![]);
                    for (p, &kind) in kinds.iter().enumerate() {
                        let (m, e) = matrix(kind, cuts[p + 1] - cuts[p], k, 10 * s as u64 + p as u64);
                        parts.push(m);
                        exact.extend(e);
                    }
                    let w = Stacked { parts, n, k };
                    let x = rand_vec(rows * k, 99 + s as u64);
                    let mut out = vec![f32::NAN; rows * n];
                    matmul(isa, &mut out, &x, &w, rows);
                    let want: Vec<f64> = (0..rows * n)
                        .map(|i| (0..k).map(|j| x[i / n * k + j] as f64 * exact[i % n * k + j]).sum())
                        .collect();
                    let e = rel_err(&out, &want);
                    assert!(e < 1e-5, "{isa:?} {kinds:?} {rows}×{k}×{n}: {e}");
                }
            }
        }
    }

    /// One thread's matrix-vector product per storage, on the benchmark config's shapes,
    /// interleaved: multiply-adds a second, where each storage's decode stands when it is
    /// bound by its instructions rather than by memory:
    /// `cargo test --release -p dory --lib -- --ignored gemv_speed --nocapture`. One layer's
    /// matrices sit in a core's L2; `DORY_GEMV_SPEED_LAYERS=6` reads the config's six
    /// layers' in turn from the L3, as decoding does.
    #[test]
    #[ignore]
    fn gemv_speed() {
        let layers: usize =
            std::env::var("DORY_GEMV_SPEED_LAYERS").map_or(1, |v| v.parse().expect("a count of layers"));
        let isa = Isa::best();
        // q|k|v|gate, out, gate|up, down of bench/configs-bench-cpu.json ([n, k]).
        let shapes = [(960, 384), (384, 384), (2048, 384), (384, 1024)];
        let names = ["f32", "f16", "bf16", "q8_0"];
        let mats: Vec<Vec<Matrix>> = (0..4)
            .map(|kind| {
                let seeds = (0..layers).flat_map(|l| shapes.iter().map(move |&s| (l, s)));
                seeds.map(|(l, (n, k))| matrix(kind, n, k, (kind + 4 * l) as u64).0).collect()
            })
            .collect();
        let macs: usize = layers * shapes.iter().map(|&(n, k)| n * k).sum::<usize>();
        let (x, mut out) = (rand_vec(1024, 7), vec![0.0f32; 2048]);
        let mut rates = vec![vec![]; 4];
        for _ in 0..25 {
            for (kind, ms) in mats.iter().enumerate() {
                let t = std::time::Instant::now();
                for _ in 0..20 {
                    for (m, &(n, k)) in ms.iter().zip(shapes.iter().cycle()) {
                        isa::gemv(isa, &mut out[..n], m.rows(), &x[..k]);
                        std::hint::black_box(&out);
                    }
                }
                rates[kind].push(20.0 * macs as f64 / t.elapsed().as_secs_f64() / 1e9);
            }
        }
        for (name, r) in names.iter().zip(&mut rates) {
            r.sort_by(f64::total_cmp);
            println!("{isa:?} {name}: {:.1} GMAC/s (median of 25; {:.1}–{:.1})", r[12], r[0], r[24]);
        }
    }

    #[test]
    fn rows_widen_from_the_right_part() {
        let (a, ea) = matrix(2, 3, 32, 1);
        let (b, eb) = matrix(3, 4, 32, 2);
        let w = Stacked { parts: vec![a, b], n: 7, k: 32 };
        let mut row = vec![f32::NAN; 32];
        for (i, want) in ea.chunks(32).chain(eb.chunks(32)).enumerate() {
            w.widen_row(Isa::detect(), i, &mut row);
            assert!(row.iter().zip(want).all(|(&x, &y)| x as f64 == y), "row {i}");
        }
    }
}
