//! The projection kernels for each instruction set: rows of a matrix as stored (f32, f16,
//! bf16 or q8_0) against an f32 vector, widened in registers and accumulated in f32 (spec
//! §8: the activations are never rounded to the weights' format). Chosen once at start
//! (`Isa::detect`); `DORY_CPU_KERNELS=portable` forces the portable code, so that a machine
//! with AVX2 tests it too.

use std::ops::Range;
use std::sync::OnceLock;

use half::f16;

use crate::error::{invalid, Result};
use crate::quant::Q8_0_GROUP as GROUP;

/// An instruction set the kernels are written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// x86-64 with AVX2, FMA and F16C (every x86-64 CPU since 2013–2015).
    Avx2,
    /// Plain Rust, eight lanes the compiler may vectorize: any CPU.
    Portable,
}

impl Isa {
    /// The best set this CPU has.
    pub fn best() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("fma") && has!("f16c") {
                return Isa::Avx2;
            }
        }
        Isa::Portable
    }

    /// The set `DORY_CPU_KERNELS` names (`auto`, the default, is the best one).
    pub fn from_env() -> Result<Isa> {
        Isa::parse(std::env::var("DORY_CPU_KERNELS").ok().as_deref())
    }

    fn parse(value: Option<&str>) -> Result<Isa> {
        match value.unwrap_or("auto") {
            "auto" | "" => Ok(Isa::best()),
            "portable" => Ok(Isa::Portable),
            "avx2" if Isa::best() == Isa::Avx2 => Ok(Isa::Avx2),
            "avx2" => Err(invalid!("DORY_CPU_KERNELS=avx2, but this CPU lacks AVX2, FMA or F16C")),
            other => Err(invalid!("DORY_CPU_KERNELS must be auto, avx2 or portable, got {other:?}")),
        }
    }

    /// The environment's choice, read once (`cpu::session` reports a bad value; here it
    /// falls back to the best set).
    pub fn detect() -> Isa {
        static ISA: OnceLock<Isa> = OnceLock::new();
        *ISA.get_or_init(|| Isa::from_env().unwrap_or_else(|_| Isa::best()))
    }

    /// Every set this CPU can run, for tests.
    pub fn available() -> Vec<Isa> {
        if Isa::best() == Isa::Avx2 {
            vec![Isa::Avx2, Isa::Portable]
        } else {
            vec![Isa::Portable]
        }
    }
}

/// Rows of a row-major [n, k] matrix as stored: f16 and bf16 as their bits; q8_0 as the
/// int8 values and the f16 bits of one scale per 32 inputs ([n, k/32]).
#[derive(Clone, Copy, Debug)]
pub enum Rows<'a> {
    F32(&'a [f32]),
    F16(&'a [u16]),
    Bf16(&'a [u16]),
    Q8(&'a [i8], &'a [u16]),
}

impl<'a> Rows<'a> {
    /// Rows `r` of the matrix, `k` inputs wide.
    pub fn slice(self, r: Range<usize>, k: usize) -> Rows<'a> {
        let e = r.start * k..r.end * k;
        match self {
            Rows::F32(w) => Rows::F32(&w[e]),
            Rows::F16(w) => Rows::F16(&w[e]),
            Rows::Bf16(w) => Rows::Bf16(&w[e]),
            Rows::Q8(q, s) => Rows::Q8(&q[e], &s[r.start * k / GROUP..r.end * k / GROUP]),
        }
    }

    /// Elements held (rows · k).
    pub(super) fn len(self) -> usize {
        match self {
            Rows::F32(w) => w.len(),
            Rows::F16(w) | Rows::Bf16(w) => w.len(),
            Rows::Q8(q, _) => q.len(),
        }
    }
}

/// out[j] ← Σ_i w[j, i] x[i] for every row j of `w` (k = x.len()).
pub fn gemv(isa: Isa, out: &mut [f32], w: Rows, x: &[f32]) {
    let k = x.len();
    debug_assert_eq!(w.len(), out.len() * k);
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx2 {
        // SAFETY: `Isa::Avx2` is only chosen (`best`, `parse`) when the CPU has AVX2, FMA
        // and F16C; the slices hold out.len() rows of k inputs (asserted by the callers'
        // shapes, and every load below stays inside them).
        unsafe { x86::gemv(out, w, x) };
        return;
    }
    let _ = isa;
    portable::gemv(out, w, x);
}

/// Σ a_i b_i (over the shorter of the two).
#[inline]
pub fn dot(isa: Isa, a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx2 {
        // SAFETY: as in `gemv`; both slices hold n elements.
        return unsafe { x86::dot(&a[..n], &b[..n]) };
    }
    let _ = isa;
    portable::dot(&b[..n], |i| a[i])
}

/// [q_h · k for h < 4]: the four query heads q4 = [4, d] of one KV head against one key
/// k = [d] (each key is loaded once for the four).
#[inline]
pub fn dot4(isa: Isa, q4: &[f32], k: &[f32]) -> [f32; 4] {
    let d = k.len();
    assert_eq!(q4.len(), 4 * d, "four query heads of the key's width");
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx2 {
        // SAFETY: as in `gemv`; q4 holds 4·d elements and k d (asserted).
        return unsafe { x86::dot4(q4, k) };
    }
    let _ = isa;
    [0, 1, 2, 3].map(|h| portable::dot(k, |i| q4[h * d + i]))
}

/// z4[h] += w[h] · v for the four heads z4 = [4, d] of one KV head and one value v = [d].
#[inline]
pub fn axpy4(isa: Isa, z4: &mut [f32], w: &[f32], v: &[f32]) {
    let d = v.len();
    assert!(z4.len() == 4 * d && w.len() == 4, "four heads of the value's width");
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx2 {
        // SAFETY: as in `gemv`; z4 holds 4·d elements, v d and w 4 (asserted).
        return unsafe { x86::axpy4(z4, w, v) };
    }
    let _ = isa;
    for (zh, &w) in z4.chunks_exact_mut(d).zip(w) {
        zh.iter_mut().zip(v).for_each(|(z, &x)| *z += w * x);
    }
}

/// x ← exp(x − max[i mod 4]) for the scores x = [slots, 4] of four heads, and the four
/// heads' sums of the results.
pub fn softmax4(isa: Isa, x: &mut [f32], max: &[f32; 4]) -> [f32; 4] {
    assert_eq!(x.len() % 4, 0, "[slots, 4] scores");
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx2 {
        // SAFETY: as in `gemv`; every access stays inside x (its length is a multiple of 4).
        return unsafe { x86::softmax4(x, max) };
    }
    let _ = isa;
    let mut sum = [0.0f32; 4];
    for row in x.chunks_exact_mut(4) {
        for ((x, m), s) in row.iter_mut().zip(max).zip(&mut sum) {
            *x = (*x - m).exp();
            *s += *x;
        }
    }
    sum
}

/// s[h, j] ← q_h · k_j for the four query heads q4 = [4, d] of one KV head against a tile
/// of n keys stored transposed, kt = [d, n] (n a multiple of 8), into s = [4, n]: each
/// load of eight keys' dimension i serves the four heads, and no horizontal sums.
pub fn scores4(isa: Isa, s: &mut [f32], q4: &[f32], kt: &[f32], n: usize) {
    let d = q4.len() / 4;
    assert!(n % 8 == 0 && q4.len() == 4 * d && kt.len() == d * n && s.len() == 4 * n, "[4, n] ← [4, d] · [d, n]");
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx2 {
        // SAFETY: as in `gemv`; the shapes are asserted above.
        return unsafe { x86::scores4(s, q4, kt, n) };
    }
    let _ = isa;
    s.fill(0.0);
    for h in 0..4 {
        let sh = &mut s[h * n..][..n];
        for (i, kr) in kt.chunks_exact(n).enumerate() {
            let qi = q4[h * d + i];
            sh.iter_mut().zip(kr).for_each(|(s, k)| *s += qi * k);
        }
    }
}

/// x ← exp(x − max) for scores x ≤ max, and Σ of the results.
pub fn exp_sum(isa: Isa, x: &mut [f32], max: f32) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx2 {
        // SAFETY: as in `gemv`; every access stays inside x.
        return unsafe { x86::exp_sum(x, max) };
    }
    let _ = isa;
    x.iter_mut().fold(0.0, |s, x| {
        *x = (*x - max).exp();
        s + *x
    })
}

/// z += Σ_j w_j v_j for the values of a tile v = [n, d], weights w = [n] and z = [d].
pub fn axpy_rows(isa: Isa, z: &mut [f32], w: &[f32], v: &[f32]) {
    let d = z.len();
    assert_eq!(v.len(), w.len() * d, "[n, d] values for n weights");
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx2 {
        // SAFETY: as in `gemv`; the shapes are asserted above.
        return unsafe { x86::axpy_rows(z, w, v) };
    }
    let _ = isa;
    for (&w, vr) in w.iter().zip(v.chunks_exact(d)) {
        z.iter_mut().zip(vr).for_each(|(z, &x)| *z += w * x);
    }
}

/// m ← silu(g ⊙ gs) ⊙ (u ⊙ us), silu(a) = a σ(a) (spec §4's SwiGLU), all of length f.
pub fn swiglu(isa: Isa, m: &mut [f32], g: &[f32], u: &[f32], gs: &[f32], us: &[f32]) {
    let f = m.len();
    assert!(g.len() == f && u.len() == f && gs.len() == f && us.len() == f, "SwiGLU over [f]");
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx2 {
        // SAFETY: as in `gemv`; the five slices hold f elements (asserted).
        return unsafe { x86::swiglu(m, g, u, gs, us) };
    }
    let _ = isa;
    for j in 0..f {
        m[j] = silu_mul(g[j] * gs[j], u[j] * us[j]);
    }
}

/// a σ(a) b, one element.
#[inline]
fn silu_mul(a: f32, b: f32) -> f32 {
    a * super::kernels::sigmoid(a) * b
}

/// out ← the rows of `w` widened to f32, row-major (a GEMM's panel).
pub fn widen(isa: Isa, out: &mut [f32], w: Rows) {
    debug_assert_eq!(out.len(), w.len());
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx2 {
        // SAFETY: as in `gemv`; out and w hold the same number of elements.
        unsafe { x86::widen(out, w) };
        return;
    }
    let _ = isa;
    portable::widen(out, w);
}

/// out[c · ld + r] ← src[r · cols + c] for r < rows, c < cols: a panel of W transposed for
/// the gemm crate, which packs such a panel with vector copies.
pub fn transpose(isa: Isa, out: &mut [f32], src: &[f32], rows: usize, cols: usize, ld: usize) {
    assert!(src.len() >= rows * cols && ld >= rows && out.len() >= (cols.max(1) - 1) * ld + rows);
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx2 {
        // SAFETY: as in `gemv`; the bounds are checked above.
        unsafe { x86::transpose(out, src, rows, cols, ld) };
        return;
    }
    let _ = isa;
    portable::transpose(out, src, rows, cols, ld, 0, 0);
}

#[inline]
fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

#[inline]
fn f16_to_f32(b: u16) -> f32 {
    f16::from_bits(b).to_f32()
}

mod portable {
    use super::*;

    /// Σ w_i x_i over eight lanes, each w_i widened by `get`.
    #[inline]
    pub fn dot(x: &[f32], get: impl Fn(usize) -> f32) -> f32 {
        let mut acc = [0.0f32; 8];
        let n8 = x.len() / 8 * 8;
        for (c, xc) in x[..n8].chunks_exact(8).enumerate() {
            for l in 0..8 {
                acc[l] += get(8 * c + l) * xc[l];
            }
        }
        let tail: f32 = (n8..x.len()).map(|i| get(i) * x[i]).sum();
        acc.iter().sum::<f32>() + tail
    }

    pub fn gemv(out: &mut [f32], w: Rows, x: &[f32]) {
        let k = x.len();
        for (j, o) in out.iter_mut().enumerate() {
            *o = match w {
                Rows::F32(w) => dot(x, |i| w[j * k + i]),
                Rows::F16(w) => dot(x, |i| f16_to_f32(w[j * k + i])),
                Rows::Bf16(w) => dot(x, |i| bf16_to_f32(w[j * k + i])),
                Rows::Q8(q, s) => {
                    let groups = x.chunks_exact(GROUP).enumerate();
                    groups
                        .map(|(g, xg)| f16_to_f32(s[j * k / GROUP + g]) * dot(xg, |i| q[j * k + g * GROUP + i] as f32))
                        .sum()
                }
            };
        }
    }

    /// `transpose` from row r0 and column c0 on (the edges the vector kernels leave).
    pub fn transpose(out: &mut [f32], src: &[f32], rows: usize, cols: usize, ld: usize, r0: usize, c0: usize) {
        for r in 0..rows {
            let c_from = if r < r0 { c0 } else { 0 };
            for c in c_from..cols {
                out[c * ld + r] = src[r * cols + c];
            }
        }
    }

    pub fn widen(out: &mut [f32], w: Rows) {
        match w {
            Rows::F32(w) => out.copy_from_slice(w),
            Rows::F16(w) => out.iter_mut().zip(w).for_each(|(o, &b)| *o = f16_to_f32(b)),
            Rows::Bf16(w) => out.iter_mut().zip(w).for_each(|(o, &b)| *o = bf16_to_f32(b)),
            Rows::Q8(q, s) => {
                for ((o, q), &s) in out.chunks_exact_mut(GROUP).zip(q.chunks_exact(GROUP)).zip(s) {
                    let s = f16_to_f32(s);
                    o.iter_mut().zip(q).for_each(|(o, &q)| *o = s * q as f32);
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{bf16_to_f32, f16_to_f32, portable, Rows, GROUP};

    /// Eight f32 from eight stored elements at `p` (any alignment).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load_f32(p: *const f32) -> __m256 {
        _mm256_loadu_ps(p)
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load_f16(p: *const u16) -> __m256 {
        _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i))
    }

    /// bf16 is the top half of an f32: zero-extend and shift.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load_bf16(p: *const u16) -> __m256 {
        _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(_mm_loadu_si128(p as *const __m128i))))
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load_i8(p: *const i8) -> __m256 {
        _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(p as *const __m128i)))
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn sum(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)))
    }

    /// How far ahead of its reads a pair of q8_0 rows prefetches their weights, in bytes:
    /// decoding reads W once a pass, from memory where the model outgrows the caches, and
    /// the hardware's prefetcher alone left these loads waiting (a 118 MB q8_0 model on one
    /// Zen 4 core: 12.4–14.7 tok/s, 19.4–20.8 with 4 KiB ahead; 256 bytes gained nothing,
    /// 8–16 KiB no more). On Zen 4 the f32, f16 and bf16 rows did not gain from it (`row_ahead`).
    const AHEAD_Q8: usize = 128 * GROUP;

    /// How far ahead of its reads a row of f32, f16 or bf16 weights has the L2 fetch them,
    /// in bytes: on an Intel Xeon (2 cores of a VM, 480 MiB of L3) the hardware's
    /// prefetcher alone kept a 1.05 GB bf16 model's decode at 20.6 GB/s (its layers read once
    /// a pass, 3.29 GB a token); 4 KiB ahead into the L2 ran it 1.35× faster, 27.8 GB/s
    /// against a C loop's best of 32.8 (1 KiB into the L1: 1.05×,
    /// 4 KiB into the L1: 1.12×, 16–32 KiB no more), the benchmark config in cache no slower
    /// (docs/BENCHMARKS.md, 2026-12-04). On Zen 4 the hardware kept a 221 MB bf16 model at
    /// 22.8 GB/s and 4 KiB ahead into the L1 cost 5–8 %: only Intel's cores prefetch here.
    /// `DORY_CPU_ROW_AHEAD=BYTES` sets it (0: off) for measuring.
    fn row_ahead() -> usize {
        static AHEAD: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        *AHEAD.get_or_init(|| {
            let set = std::env::var("DORY_CPU_ROW_AHEAD").ok().and_then(|v| v.trim().parse().ok());
            set.unwrap_or(if intel() { 4096 } else { 0 })
        })
    }

    /// Elements of `p`'s type in `bytes`.
    fn elems<T>(_p: *const T, bytes: usize) -> usize {
        bytes / size_of::<T>()
    }

    /// Whether the CPU's vendor string is Intel's.
    fn intel() -> bool {
        let id = __cpuid(0);
        let vendor: Vec<u8> = [id.ebx, id.edx, id.ecx].iter().flat_map(|r| r.to_le_bytes()).collect();
        vendor == b"GenuineIntel"
    }

    /// `dot!(load, scalar, w, x)`: Σ w_i x_i for a row `w` of pointers' element type,
    /// four accumulators of eight lanes (to hide the FMA latency), then a scalar tail.
    /// With `ahead` (bytes; 0: none), each step of 32 elements first asks the L2 for the
    /// cache lines `ahead` bytes on (`row_ahead`).
    macro_rules! dot {
        ($load:ident, $scalar:expr, $w:expr, $x:expr) => {
            dot!($load, $scalar, $w, $x, 0)
        };
        ($load:ident, $scalar:expr, $w:expr, $x:expr, $ahead:expr) => {{
            let (w, x) = ($w, $x);
            let n = x.len();
            let (pw, px) = (w.as_ptr(), x.as_ptr());
            let (ahead, line) = (elems(pw, $ahead), elems(pw, 64));
            let mut acc = [_mm256_setzero_ps(); 4];
            let mut i = 0;
            while i + 32 <= n {
                if ahead > 0 {
                    for l in (0..32).step_by(line) {
                        _mm_prefetch::<_MM_HINT_T1>(pw.wrapping_add(i + ahead + l) as *const i8);
                    }
                }
                for (j, a) in acc.iter_mut().enumerate() {
                    *a = _mm256_fmadd_ps($load(pw.add(i + 8 * j)), _mm256_loadu_ps(px.add(i + 8 * j)), *a);
                }
                i += 32;
            }
            while i + 8 <= n {
                acc[0] = _mm256_fmadd_ps($load(pw.add(i)), _mm256_loadu_ps(px.add(i)), acc[0]);
                i += 8;
            }
            let mut total = sum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
            while i < n {
                total += $scalar(*pw.add(i)) * *px.add(i);
                i += 1;
            }
            total
        }};
    }

    /// `gemv` of q8_0 rows two at a time, each load of x serving both: decoding's q8_0
    /// GEMV is bound by its instructions (W sits in cache), and this runs it 1.2× faster;
    /// each row's group in two chains of FMAs, 1.08× more (the benchmark config's decode on
    /// the Zen 4 VM, bench/logs/cpu-2026-12-04-zen4/q8-two-chains-campaign.txt).
    /// (The same for f32, f16 and bf16 rows ran 1.3–1.9× slower, stalled on W's loads.)
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn gemv_q8(out: &mut [f32], q: &[i8], s: &[u16], x: &[f32]) {
        let (k, n) = (x.len(), out.len());
        let g = k / GROUP;
        let mut pairs = out.chunks_exact_mut(2);
        for (p, o) in (&mut pairs).enumerate() {
            let j = 2 * p;
            [o[0], o[1]] = dot_q8_2(&q[j * k..(j + 2) * k], &s[j * g..(j + 2) * g], x);
        }
        if let [o] = pairs.into_remainder() {
            *o = dot_q8(&q[(n - 1) * k..], &s[(n - 1) * g..], x);
        }
    }

    /// `dot_q8` of two consecutive rows.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn dot_q8_2(q: &[i8], s: &[u16], x: &[f32]) -> [f32; 2] {
        let k = x.len();
        let g = k / GROUP;
        let (pq, px) = (q.as_ptr(), x.as_ptr());
        let mut acc = [_mm256_setzero_ps(); 2];
        for gi in 0..g {
            let i = gi * GROUP;
            for r in 0..2 {
                _mm_prefetch::<_MM_HINT_T0>(pq.wrapping_add(r * k + i + AHEAD_Q8));
            }
            // Two chains a row (the group's halves), so that its FMAs do not wait in a row.
            let mut part = [[_mm256_setzero_ps(); 2]; 2];
            for c in (0..GROUP).step_by(8) {
                let xv = _mm256_loadu_ps(px.add(i + c));
                for (r, p) in part.iter_mut().enumerate() {
                    let h = c / 16;
                    p[h] = _mm256_fmadd_ps(load_i8(pq.add(r * k + i + c)), xv, p[h]);
                }
            }
            for (r, a) in acc.iter_mut().enumerate() {
                let scale = _mm256_cvtph_ps(_mm_set1_epi16(s[r * g + gi] as i16));
                *a = _mm256_fmadd_ps(_mm256_add_ps(part[r][0], part[r][1]), scale, *a);
            }
        }
        [sum(acc[0]), sum(acc[1])]
    }

    /// Σ_g scale_g Σ_{i in g} q_i x_i over the groups of 32 of one q8_0 row.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn dot_q8(q: &[i8], s: &[u16], x: &[f32]) -> f32 {
        let (pq, px) = (q.as_ptr(), x.as_ptr());
        let mut acc = [_mm256_setzero_ps(); 2];
        for (g, &scale) in s.iter().enumerate() {
            let i = g * GROUP;
            let lo = _mm256_fmadd_ps(load_i8(pq.add(i)), _mm256_loadu_ps(px.add(i)), _mm256_setzero_ps());
            let lo = _mm256_fmadd_ps(load_i8(pq.add(i + 8)), _mm256_loadu_ps(px.add(i + 8)), lo);
            let hi = _mm256_mul_ps(load_i8(pq.add(i + 16)), _mm256_loadu_ps(px.add(i + 16)));
            let hi = _mm256_fmadd_ps(load_i8(pq.add(i + 24)), _mm256_loadu_ps(px.add(i + 24)), hi);
            let scale = _mm256_cvtph_ps(_mm_set1_epi16(scale as i16));
            acc[g % 2] = _mm256_fmadd_ps(_mm256_add_ps(lo, hi), scale, acc[g % 2]);
        }
        sum(_mm256_add_ps(acc[0], acc[1]))
    }

    /// See `super::dot`.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn dot(a: &[f32], b: &[f32]) -> f32 {
        dot!(load_f32, |v: f32| v, a, b)
    }

    /// See `super::dot4`.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn dot4(q4: &[f32], k: &[f32]) -> [f32; 4] {
        let d = k.len();
        let (pq, pk) = (q4.as_ptr(), k.as_ptr());
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 8 <= d {
            let kv = _mm256_loadu_ps(pk.add(i));
            for (h, a) in acc.iter_mut().enumerate() {
                *a = _mm256_fmadd_ps(_mm256_loadu_ps(pq.add(h * d + i)), kv, *a);
            }
            i += 8;
        }
        let mut out = [0.0f32; 4];
        for h in 0..4 {
            out[h] = sum(acc[h]) + (i..d).map(|j| q4[h * d + j] * k[j]).sum::<f32>();
        }
        out
    }

    /// See `super::axpy4`.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn axpy4(z4: &mut [f32], w: &[f32], v: &[f32]) {
        let d = v.len();
        let (pz, pv) = (z4.as_mut_ptr(), v.as_ptr());
        let d8 = d / 8 * 8;
        for (h, &wh) in w.iter().enumerate() {
            let wv = _mm256_set1_ps(wh);
            for i in (0..d8).step_by(8) {
                let z = pz.add(h * d + i);
                _mm256_storeu_ps(z, _mm256_fmadd_ps(wv, _mm256_loadu_ps(pv.add(i)), _mm256_loadu_ps(z)));
            }
            for (i, &x) in v.iter().enumerate().skip(d8) {
                *pz.add(h * d + i) += wh * x;
            }
        }
    }

    /// e^x for x ≤ 0 (larger x are not asked for): 2^n · p(r) with n = round(x / ln 2),
    /// r = x − n ln 2 in two parts (Cody–Waite) and Cephes's degree-5 polynomial, within
    /// 2 ulp of the true value; below −87.3 (where f32 underflows) it gives 0 or a value
    /// under 2⁻¹²⁶, which no softmax sum of a maximum's 1 can see.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn exp_neg(x: __m256) -> __m256 {
        let x = _mm256_max_ps(x, _mm256_set1_ps(-87.3));
        let n = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(
            x,
            _mm256_set1_ps(std::f32::consts::LOG2_E),
        ));
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693_359_4), x);
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.121_944_4e-4), r);
        let mut p = _mm256_set1_ps(1.987_569_1e-4);
        for c in [1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 0.166_666_65, 0.5] {
            p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
        }
        let p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0)));
        let scale = _mm256_slli_epi32::<23>(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)));
        _mm256_mul_ps(p, _mm256_castsi256_ps(scale))
    }

    /// x ← e^{x − m} over whole groups of eight (m repeats with period 8), their sum in
    /// eight lanes, and where the tail starts.
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn exp_sub8(x: &mut [f32], m: __m256) -> (__m256, usize) {
        let px = x.as_mut_ptr();
        let mut acc = _mm256_setzero_ps();
        let mut i = 0;
        while i + 8 <= x.len() {
            let e = exp_neg(_mm256_sub_ps(_mm256_loadu_ps(px.add(i)), m));
            _mm256_storeu_ps(px.add(i), e);
            acc = _mm256_add_ps(acc, e);
            i += 8;
        }
        (acc, i)
    }

    /// See `super::softmax4`.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn softmax4(x: &mut [f32], max: &[f32; 4]) -> [f32; 4] {
        let n = x.len();
        let m4 = _mm_loadu_ps(max.as_ptr());
        let (acc, i) = exp_sub8(x, _mm256_set_m128(m4, m4));
        let px = x.as_mut_ptr();
        let mut sum = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps::<1>(acc));
        if i < n {
            // One last slot of four heads: the low half of an 8-lane exp.
            let e = _mm256_castps256_ps128(exp_neg(_mm256_castps128_ps256(_mm_sub_ps(_mm_loadu_ps(px.add(i)), m4))));
            _mm_storeu_ps(px.add(i), e);
            sum = _mm_add_ps(sum, e);
        }
        let mut out = [0.0f32; 4];
        _mm_storeu_ps(out.as_mut_ptr(), sum);
        out
    }

    /// See `super::scores4`: sixteen keys at a time (eight accumulators, to hide the FMA
    /// latency), then eight.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn scores4(s: &mut [f32], q4: &[f32], kt: &[f32], n: usize) {
        let d = q4.len() / 4;
        let (ps, pq, pk) = (s.as_mut_ptr(), q4.as_ptr(), kt.as_ptr());
        let mut j = 0;
        while j + 16 <= n {
            let (mut a, mut b) = ([_mm256_setzero_ps(); 4], [_mm256_setzero_ps(); 4]);
            for i in 0..d {
                let (ka, kb) = (_mm256_loadu_ps(pk.add(i * n + j)), _mm256_loadu_ps(pk.add(i * n + j + 8)));
                for h in 0..4 {
                    let qv = _mm256_broadcast_ss(&*pq.add(h * d + i));
                    a[h] = _mm256_fmadd_ps(qv, ka, a[h]);
                    b[h] = _mm256_fmadd_ps(qv, kb, b[h]);
                }
            }
            for h in 0..4 {
                _mm256_storeu_ps(ps.add(h * n + j), a[h]);
                _mm256_storeu_ps(ps.add(h * n + j + 8), b[h]);
            }
            j += 16;
        }
        if j < n {
            let mut a = [_mm256_setzero_ps(); 4];
            for i in 0..d {
                let ka = _mm256_loadu_ps(pk.add(i * n + j));
                for (h, a) in a.iter_mut().enumerate() {
                    *a = _mm256_fmadd_ps(_mm256_broadcast_ss(&*pq.add(h * d + i)), ka, *a);
                }
            }
            for (h, a) in a.iter().enumerate() {
                _mm256_storeu_ps(ps.add(h * n + j), *a);
            }
        }
    }

    /// See `super::exp_sum`.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn exp_sum(x: &mut [f32], max: f32) -> f32 {
        let n = x.len();
        let m8 = _mm256_set1_ps(max);
        let (acc, i) = exp_sub8(x, m8);
        let mut total = sum(acc);
        if i < n {
            // The tail through one more 8-lane exp, of which only n − i lanes count.
            let mut t = [max; 8];
            t[..n - i].copy_from_slice(&x[i..]);
            let e = exp_neg(_mm256_sub_ps(_mm256_loadu_ps(t.as_ptr()), m8));
            _mm256_storeu_ps(t.as_mut_ptr(), e);
            x[i..].copy_from_slice(&t[..n - i]);
            total += t[..n - i].iter().sum::<f32>();
        }
        total
    }

    /// See `super::axpy_rows`: z held in registers 32 floats at a time across the tile.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn axpy_rows(z: &mut [f32], w: &[f32], v: &[f32]) {
        let d = z.len();
        let (pz, pv) = (z.as_mut_ptr(), v.as_ptr());
        let mut c = 0;
        while c + 32 <= d {
            let mut acc = [0, 1, 2, 3].map(|x| _mm256_loadu_ps(pz.add(c + 8 * x)));
            for (j, &wj) in w.iter().enumerate() {
                let wv = _mm256_set1_ps(wj);
                for (x, a) in acc.iter_mut().enumerate() {
                    *a = _mm256_fmadd_ps(wv, _mm256_loadu_ps(pv.add(j * d + c + 8 * x)), *a);
                }
            }
            for (x, a) in acc.iter().enumerate() {
                _mm256_storeu_ps(pz.add(c + 8 * x), *a);
            }
            c += 32;
        }
        while c + 8 <= d {
            let mut a = _mm256_loadu_ps(pz.add(c));
            for (j, &wj) in w.iter().enumerate() {
                a = _mm256_fmadd_ps(_mm256_set1_ps(wj), _mm256_loadu_ps(pv.add(j * d + c)), a);
            }
            _mm256_storeu_ps(pz.add(c), a);
            c += 8;
        }
        for i in c..d {
            z[i] += w.iter().enumerate().map(|(j, &wj)| wj * v[j * d + i]).sum::<f32>();
        }
    }

    /// See `super::gemv`.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn gemv(out: &mut [f32], w: Rows, x: &[f32]) {
        let k = x.len();
        let rows = out.iter_mut().enumerate().map(|(j, o)| (o, j * k..(j + 1) * k));
        let ahead = row_ahead();
        match w {
            Rows::F32(w) => rows.for_each(|(o, r)| *o = dot!(load_f32, |v: f32| v, &w[r], x, ahead)),
            Rows::F16(w) => rows.for_each(|(o, r)| *o = dot!(load_f16, f16_to_f32, &w[r], x, ahead)),
            Rows::Bf16(w) => rows.for_each(|(o, r)| *o = dot!(load_bf16, bf16_to_f32, &w[r], x, ahead)),
            Rows::Q8(q, s) => gemv_q8(out, q, s, x),
        }
    }

    /// See `super::swiglu`: σ(a) from e = e^{−|a|}, 1 / (1 + e) for a ≥ 0 and e / (1 + e)
    /// below, so that the exponential never overflows.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn swiglu(m: &mut [f32], g: &[f32], u: &[f32], gs: &[f32], us: &[f32]) {
        let f = m.len();
        let (pm, pg, pu, pgs, pus) = (m.as_mut_ptr(), g.as_ptr(), u.as_ptr(), gs.as_ptr(), us.as_ptr());
        let (one, sign) = (_mm256_set1_ps(1.0), _mm256_set1_ps(-0.0));
        let mut j = 0;
        while j + 8 <= f {
            let a = _mm256_mul_ps(_mm256_loadu_ps(pg.add(j)), _mm256_loadu_ps(pgs.add(j)));
            let b = _mm256_mul_ps(_mm256_loadu_ps(pu.add(j)), _mm256_loadu_ps(pus.add(j)));
            let e = exp_neg(_mm256_or_ps(a, sign));
            let r = _mm256_div_ps(one, _mm256_add_ps(one, e));
            let sig = _mm256_blendv_ps(r, _mm256_mul_ps(e, r), a);
            _mm256_storeu_ps(pm.add(j), _mm256_mul_ps(_mm256_mul_ps(a, sig), b));
            j += 8;
        }
        for j in j..f {
            m[j] = super::silu_mul(g[j] * gs[j], u[j] * us[j]);
        }
    }

    /// `super::transpose` in blocks of 8 × 8, each transposed in registers; the edges by
    /// the portable loop.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn transpose(out: &mut [f32], src: &[f32], rows: usize, cols: usize, ld: usize) {
        let (r8, c8) = (rows / 8 * 8, cols / 8 * 8);
        let (ps, po) = (src.as_ptr(), out.as_mut_ptr());
        for r in (0..r8).step_by(8) {
            for c in (0..c8).step_by(8) {
                // (Plain statements: a closure would not inherit the target features, and its
                // intrinsics would be calls.)
                let at = ps.add(r * cols + c);
                let a0 = _mm256_loadu_ps(at);
                let a1 = _mm256_loadu_ps(at.add(cols));
                let a2 = _mm256_loadu_ps(at.add(2 * cols));
                let a3 = _mm256_loadu_ps(at.add(3 * cols));
                let a4 = _mm256_loadu_ps(at.add(4 * cols));
                let a5 = _mm256_loadu_ps(at.add(5 * cols));
                let a6 = _mm256_loadu_ps(at.add(6 * cols));
                let a7 = _mm256_loadu_ps(at.add(7 * cols));
                let (t0, t1) = (_mm256_unpacklo_ps(a0, a1), _mm256_unpackhi_ps(a0, a1));
                let (t2, t3) = (_mm256_unpacklo_ps(a2, a3), _mm256_unpackhi_ps(a2, a3));
                let (t4, t5) = (_mm256_unpacklo_ps(a4, a5), _mm256_unpackhi_ps(a4, a5));
                let (t6, t7) = (_mm256_unpacklo_ps(a6, a7), _mm256_unpackhi_ps(a6, a7));
                let (u0, u1) = (_mm256_shuffle_ps::<0x44>(t0, t2), _mm256_shuffle_ps::<0xEE>(t0, t2));
                let (u2, u3) = (_mm256_shuffle_ps::<0x44>(t1, t3), _mm256_shuffle_ps::<0xEE>(t1, t3));
                let (u4, u5) = (_mm256_shuffle_ps::<0x44>(t4, t6), _mm256_shuffle_ps::<0xEE>(t4, t6));
                let (u6, u7) = (_mm256_shuffle_ps::<0x44>(t5, t7), _mm256_shuffle_ps::<0xEE>(t5, t7));
                let to = po.add(c * ld + r);
                _mm256_storeu_ps(to, _mm256_permute2f128_ps::<0x20>(u0, u4));
                _mm256_storeu_ps(to.add(ld), _mm256_permute2f128_ps::<0x20>(u1, u5));
                _mm256_storeu_ps(to.add(2 * ld), _mm256_permute2f128_ps::<0x20>(u2, u6));
                _mm256_storeu_ps(to.add(3 * ld), _mm256_permute2f128_ps::<0x20>(u3, u7));
                _mm256_storeu_ps(to.add(4 * ld), _mm256_permute2f128_ps::<0x31>(u0, u4));
                _mm256_storeu_ps(to.add(5 * ld), _mm256_permute2f128_ps::<0x31>(u1, u5));
                _mm256_storeu_ps(to.add(6 * ld), _mm256_permute2f128_ps::<0x31>(u2, u6));
                _mm256_storeu_ps(to.add(7 * ld), _mm256_permute2f128_ps::<0x31>(u3, u7));
            }
        }
        portable::transpose(out, src, rows, cols, ld, r8, c8);
    }

    /// See `super::widen`.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn widen(out: &mut [f32], w: Rows) {
        let n = out.len();
        let po = out.as_mut_ptr();
        let n8 = n / 8 * 8;
        match w {
            Rows::F32(w) => out.copy_from_slice(w),
            Rows::F16(w) => {
                for i in (0..n8).step_by(8) {
                    _mm256_storeu_ps(po.add(i), load_f16(w.as_ptr().add(i)));
                }
                (n8..n).for_each(|i| out[i] = f16_to_f32(w[i]));
            }
            Rows::Bf16(w) => {
                for i in (0..n8).step_by(8) {
                    _mm256_storeu_ps(po.add(i), load_bf16(w.as_ptr().add(i)));
                }
                (n8..n).for_each(|i| out[i] = bf16_to_f32(w[i]));
            }
            Rows::Q8(q, s) => {
                for (g, &scale) in s.iter().enumerate() {
                    let scale = _mm256_cvtph_ps(_mm_set1_epi16(scale as i16));
                    for i in (g * GROUP..(g + 1) * GROUP).step_by(8) {
                        _mm256_storeu_ps(po.add(i), _mm256_mul_ps(load_i8(q.as_ptr().add(i)), scale));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{rand_vec, rel_err};

    /// A random [n, k] matrix in every storage, and its exact f64 values.
    fn matrices(n: usize, k: usize, seed: u64) -> Vec<(&'static str, Vec<f64>, Store)> {
        let w = rand_vec(n * k, seed);
        let f16s: Vec<u16> = w.iter().map(|&v| f16::from_f32(v).to_bits()).collect();
        let bf16s: Vec<u16> = w.iter().map(|&v| half::bf16::from_f32(v).to_bits()).collect();
        let mut out = vec![
            ("f32", w.iter().map(|&v| v as f64).collect(), Store::F32(w.clone())),
            ("f16", f16s.iter().map(|&b| f16_to_f32(b) as f64).collect(), Store::F16(f16s)),
            ("bf16", bf16s.iter().map(|&b| bf16_to_f32(b) as f64).collect(), Store::Bf16(bf16s)),
        ];
        if k % GROUP == 0 {
            let (q, s) = crate::quant::quantize_q8_0(&w, k).unwrap();
            let exact = q.iter().enumerate().map(|(i, &v)| s[i / GROUP].to_f64() * v as f64).collect();
            out.push(("q8_0", exact, Store::Q8(q, s.iter().map(|s| s.to_bits()).collect())));
        }
        out
    }

    enum Store {
        F32(Vec<f32>),
        F16(Vec<u16>),
        Bf16(Vec<u16>),
        Q8(Vec<i8>, Vec<u16>),
    }

    impl Store {
        fn rows(&self) -> Rows<'_> {
            match self {
                Store::F32(w) => Rows::F32(w),
                Store::F16(w) => Rows::F16(w),
                Store::Bf16(w) => Rows::Bf16(w),
                Store::Q8(q, s) => Rows::Q8(q, s),
            }
        }
    }

    const SHAPES: [(usize, usize); 7] = [(1, 1), (3, 7), (5, 33), (33, 64), (17, 96), (9, 1757), (130, 384)];

    #[test]
    fn transpose_moves_every_element_in_every_isa() {
        for isa in Isa::available() {
            for (s, &(rows, cols)) in SHAPES.iter().enumerate() {
                let src = rand_vec(rows * cols, 200 + s as u64);
                let ld = rows + 3;
                let mut out = vec![f32::NAN; cols * ld];
                transpose(isa, &mut out, &src, rows, cols, ld);
                for r in 0..rows {
                    for c in 0..cols {
                        assert_eq!(out[c * ld + r], src[r * cols + c], "{isa:?} {rows}×{cols} at ({r}, {c})");
                    }
                }
                // The padding between rows is left as it was.
                assert!((0..cols).all(|c| out[c * ld + rows..c * ld + ld].iter().all(|v| v.is_nan())));
            }
        }
    }

    #[test]
    fn gemv_matches_the_formula_in_every_storage_and_isa() {
        for isa in Isa::available() {
            for (s, &(n, k)) in SHAPES.iter().enumerate() {
                let x = rand_vec(k, 100 + s as u64);
                for (name, exact, store) in matrices(n, k, s as u64) {
                    let want: Vec<f64> =
                        exact.chunks_exact(k).map(|r| r.iter().zip(&x).map(|(w, &x)| w * x as f64).sum()).collect();
                    let mut out = vec![f32::NAN; n];
                    gemv(isa, &mut out, store.rows(), &x);
                    let e = rel_err(&out, &want);
                    assert!(e < 1e-5, "{isa:?} {name} {n}×{k}: {e}");
                }
            }
        }
    }

    #[test]
    fn widening_is_exact_in_every_storage_and_isa() {
        for isa in Isa::available() {
            for (s, &(n, k)) in SHAPES.iter().enumerate() {
                for (name, exact, store) in matrices(n, k, s as u64) {
                    let mut out = vec![f32::NAN; n * k];
                    widen(isa, &mut out, store.rows().slice(0..n, k));
                    let exact: Vec<f32> = exact.iter().map(|&v| v as f32).collect();
                    assert_eq!(out, exact, "{isa:?} {name} {n}×{k}");
                }
            }
        }
    }

    #[test]
    fn dot_matches_the_formula_in_every_isa() {
        for isa in Isa::available() {
            for n in [0, 1, 7, 8, 31, 32, 33, 100, 1757] {
                let (a, b) = (rand_vec(n, 1), rand_vec(n + 3, 2));
                let want: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
                assert!((dot(isa, &a, &b) as f64 - want).abs() < 1e-4, "{isa:?} n {n}");
            }
        }
    }

    #[test]
    fn dot4_matches_the_formula_in_every_isa() {
        for isa in Isa::available() {
            for d in [1, 8, 13, 48, 256] {
                let (q4, k) = (rand_vec(4 * d, 3), rand_vec(d, 4));
                let got = dot4(isa, &q4, &k);
                for h in 0..4 {
                    let want: f64 = (0..d).map(|i| q4[h * d + i] as f64 * k[i] as f64).sum();
                    assert!((got[h] as f64 - want).abs() < 1e-5, "{isa:?} d {d} head {h}");
                }
            }
        }
    }

    #[test]
    fn axpy4_matches_the_formula_in_every_isa() {
        for isa in Isa::available() {
            for d in [1, 8, 13, 48, 256] {
                let (z0, w, v) = (rand_vec(4 * d, 5), rand_vec(4, 6), rand_vec(d, 7));
                let mut z = z0.clone();
                axpy4(isa, &mut z, &w, &v);
                let want: Vec<f64> = (0..4 * d).map(|i| z0[i] as f64 + w[i / d] as f64 * v[i % d] as f64).collect();
                assert!(rel_err(&z, &want) < 1e-6, "{isa:?} d {d}");
            }
        }
    }

    #[test]
    fn softmax4_matches_the_formula_in_every_isa() {
        for isa in Isa::available() {
            for slots in [1, 2, 3, 64, 257] {
                // Scores from far below the maximum (underflow) to it.
                let x: Vec<f32> = rand_vec(4 * slots, 8).iter().map(|v| 60.0 * v - 30.0).collect();
                let mut max = [f32::NEG_INFINITY; 4];
                x.iter().enumerate().for_each(|(i, &v)| max[i % 4] = max[i % 4].max(v));
                let mut got = x.clone();
                let sum = softmax4(isa, &mut got, &max);
                // Of the difference as f32 has it: both paths subtract in f32.
                let want: Vec<f64> = x.iter().enumerate().map(|(i, &v)| ((v - max[i % 4]) as f64).exp()).collect();
                for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    assert!((g as f64 - w).abs() <= 3e-7 * w + 1e-37, "{isa:?} {slots} slots, {i}: {g} vs {w}");
                }
                for (h, &got) in sum.iter().enumerate() {
                    let s: f64 = want.iter().skip(h).step_by(4).sum();
                    assert!((got as f64 - s).abs() < 1e-6 * s, "{isa:?} {slots} slots, head {h}");
                }
            }
        }
    }

    #[test]
    fn scores4_matches_the_formula_in_every_isa() {
        for isa in Isa::available() {
            for (d, n) in [(1, 8), (13, 8), (48, 16), (48, 24), (64, 32), (7, 40)] {
                let (q4, kt) = (rand_vec(4 * d, 9), rand_vec(d * n, 10));
                let mut s = vec![f32::NAN; 4 * n];
                scores4(isa, &mut s, &q4, &kt, n);
                let want: Vec<f64> = (0..4 * n)
                    .map(|x| (0..d).map(|i| q4[x / n * d + i] as f64 * kt[i * n + x % n] as f64).sum())
                    .collect();
                assert!(rel_err(&s, &want) < 1e-6, "{isa:?} d {d} n {n}");
            }
        }
    }

    #[test]
    fn exp_sum_matches_the_formula_in_every_isa() {
        for isa in Isa::available() {
            for n in [0, 1, 7, 8, 9, 32, 61] {
                let x: Vec<f32> = rand_vec(n, 11).iter().map(|v| 60.0 * v - 30.0).collect();
                let max = x.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v)).max(-5.0);
                let mut got = x.clone();
                let sum = exp_sum(isa, &mut got, max);
                let want: Vec<f64> = x.iter().map(|&v| ((v - max) as f64).exp()).collect();
                for (&g, &w) in got.iter().zip(&want) {
                    assert!((g as f64 - w).abs() <= 3e-7 * w + 1e-37, "{isa:?} n {n}: {g} vs {w}");
                }
                let s: f64 = want.iter().sum();
                assert!((sum as f64 - s).abs() <= 1e-6 * s, "{isa:?} n {n}: {sum} vs {s}");
            }
        }
    }

    #[test]
    fn axpy_rows_matches_the_formula_in_every_isa() {
        for isa in Isa::available() {
            for (d, n) in [(1, 3), (8, 1), (13, 5), (48, 32), (40, 7), (70, 9)] {
                let (z0, w, v) = (rand_vec(d, 12), rand_vec(n, 13), rand_vec(n * d, 14));
                let mut z = z0.clone();
                axpy_rows(isa, &mut z, &w, &v);
                let want: Vec<f64> = (0..d)
                    .map(|i| z0[i] as f64 + (0..n).map(|j| w[j] as f64 * v[j * d + i] as f64).sum::<f64>())
                    .collect();
                assert!(rel_err(&z, &want) < 1e-6, "{isa:?} d {d} n {n}");
            }
        }
    }

    #[test]
    fn swiglu_matches_the_formula_in_every_isa() {
        for isa in Isa::available() {
            for f in [1, 7, 8, 9, 64, 1027] {
                // Gate inputs from −120 to 120: σ's two branches and the exponential's clamp.
                let g: Vec<f32> = rand_vec(f, 21).iter().map(|v| 120.0 * v).collect();
                let (u, gs, us) = (rand_vec(f, 22), rand_vec(f, 23), rand_vec(f, 24));
                let want: Vec<f64> = (0..f)
                    .map(|j| {
                        // From the f32 products (at a = ±120 their rounding alone moves
                        // e^a by 7e-6).
                        let (a, b) = ((g[j] * gs[j]) as f64, (u[j] * us[j]) as f64);
                        a / (1.0 + (-a).exp()) * b
                    })
                    .collect();
                let mut m = vec![f32::NAN; f];
                swiglu(isa, &mut m, &g, &u, &gs, &us);
                for (j, (&got, &want)) in m.iter().zip(&want).enumerate() {
                    assert!(
                        (got as f64 - want).abs() <= 1e-6 * want.abs() + 1e-30,
                        "{isa:?} f {f} j {j}: {got} vs {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_environment_picks_the_kernels() {
        assert_eq!(Isa::parse(Some("portable")).unwrap(), Isa::Portable);
        assert_eq!(Isa::parse(None).unwrap(), Isa::best());
        let e = Isa::parse(Some("neon")).unwrap_err().to_string();
        assert!(e.contains("DORY_CPU_KERNELS") && e.contains("\"neon\""), "{e}");
    }
}
