//! Attention over the cache (`attend.wgsl`, or `attend_rows.wgsl` for a prompt's rows in
//! blocks, `attend_coop.wgsl` on the tensor cores), split over chunks of keys when the
//! rows' keys would leave the GPU idle, then joined (`combine.wgsl`). A single row
//! prepares its query, key and value in the same dispatch (prep.wgsl's work, for several
//! rows).

use std::sync::Arc;

use dory::cache::{Keys, Rows};

use super::prep::PrepBufs;
use super::row_batches;
use crate::kernels::Options;
use crate::record::{Bind, Binds, Recorder, Store};
use smallvec::smallvec;

/// Where positions sit in a cache and which ones a row sees, as attend.wgsl reads them.
#[derive(Clone, Copy, Debug)]
pub struct Slots {
    pub sinks: u32,
    pub cap: u32,
    pub window: u32,
}

impl Slots {
    pub fn of(keys: &Keys) -> Slots {
        match keys {
            Keys::Ring(r) => Slots { sinks: 0, cap: r.cap as u32, window: r.window as u32 },
            Keys::Full { .. } => Slots { sinks: 0, cap: 0, window: 0 },
            Keys::Sealed(n) => Slots { sinks: n.sinks as u32, cap: n.window as u32, window: n.window as u32 },
        }
    }
}

params! {
    /// What attend.wgsl and attend_rows.wgsl take first: the step's rows, the cache's slots
    /// and the split.
    pub struct Walk {
        rows: u32,
        pos0: u32,
        kv_heads: u32,
        d: u32,       // ≤ 128 in blocks (blocks.wgsl)
        sinks: u32,
        cap: u32,
        window: u32,
        per: u32,     // positions per chunk (in blocks, of the block's walk)
        chunks: u32,
    }
}

impl Walk {
    fn new(c: &dory::Config, a: &Attend) -> Walk {
        Walk {
            rows: a.at.rows as u32,
            pos0: a.at.pos0 as u32,
            kv_heads: c.kv_heads as u32,
            d: c.head_dim as u32,
            sinks: a.slots.sinks,
            cap: a.slots.cap,
            window: a.slots.window,
            per: a.split.per as u32,
            chunks: a.split.chunks as u32,
        }
    }
}

params! {
    /// attend.wgsl's parameters.
    pub struct Params {
        walk: Walk,
        flags: u32,   // DIRECT | FUSED | ROTATE
        row0: u32,    // first row of this dispatch (grids hold at most 65535 rows)
        scale: f32,   // λ
        rope_at: u32, // FUSED: prep.wgsl's fields
        sample: u32,
        eps: f32,
    }
}

/// attend.wgsl's flags.
const DIRECT: u32 = 1;
const FUSED: u32 = 2;
const ROTATE: u32 = 4;

params! {
    /// The parameters of a prompt's attention in blocks (attend_rows.wgsl, attend_coop.wgsl).
    pub struct RowsParams {
        walk: Walk,
        direct: u32,
        block0: u32,  // first block of this dispatch (grids hold at most 65535 blocks)
        scale: f32,   // λ
    }
}

params! {
    /// combine.wgsl's parameters.
    pub struct CombineParams {
        kv_heads: u32,
        d: u32,
        chunks: u32,
        row0: u32,    // first row of this dispatch (grids hold at most 65535 rows)
        slice: u32,   // dims a workgroup joins (divides d)
    }
}

/// The dims a workgroup of combine.wgsl joins, for `heads` (rows × KV heads) workgroups
/// otherwise: 32 where they divide a head and the rows are few (a decoded row's many
/// chunks are then walked by several workgroups a KV head, each 8 groups of chunks; the
/// H200's larger config at depth 4096, 221–224 tok/s against 209), else the whole head (a
/// prompt's rows fill the GPU, and every slice would reduce the maxima and sums again).
fn combine_slice(d: usize, heads: usize) -> usize {
    if d % 32 == 0 && heads * (d / 32) <= TARGET_GROUPS {
        32
    } else {
        d
    }
}

/// How a step's keys are cut: `per` positions to a chunk, `chunks` chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    pub per: usize,
    pub chunks: usize,
}

/// Workgroups that keep a large GPU busy; fewer chunks when rows already give them.
pub const TARGET_GROUPS: usize = 512;
/// The fewest keys to a chunk by default (`Options::attend_per`), measured with tiles of 32
/// and of 64 keys (bench/logs/h200-2026-12-02b, h200-2026-12-02d/call-1).
pub const MIN_PER: usize = 32;

/// The fewest keys to a chunk of a prompt's blocks by default (`Options::block_per`):
/// dory-tiny's pp512 in 4 or 5 chunks ran 143,040–148,483 tok/s on the H200 against
/// 135,481–144,892 in 9 of 64 (bench/logs/h200-2026-12-04d/call-1: a small gain, within
/// the noise of one split's runs; the larger config's prompt does not move).
pub const MIN_PER_BLOCK: usize = 256;

/// The chunks of a step whose rows see at most `most` positions, `min_per` or more to each.
///
/// A row's time is its longest chunk's walk (∝ keys / chunks) plus the combine's read of
/// the chunks' partials (∝ chunks), least at about √keys chunks. Measured on the H200
/// (decode, tok/s): dory-tiny at ~600 keys 953 with 19 chunks against 881 with 10; the
/// larger config at ~4,600 keys 213 with 72 chunks against 202 with 128 (at 32k keys √
/// and the target agree on 128 chunks, as before).
pub fn split(most: usize, rows: usize, kv_heads: usize, min_per: usize, groups: usize) -> Split {
    let want = groups.div_ceil(rows * kv_heads).max(1);
    let chunks = want.min(most.div_ceil(min_per)).min(most.isqrt()).max(1);
    let per = most.div_ceil(chunks);
    Split { per, chunks: most.div_ceil(per) }
}

/// Rows of a block of `attend_rows.wgsl`.
pub const BLOCK: usize = 16;
/// Rows of a block of `attend_coop.wgsl`: four subgroups' (BR · SG), 16 queries each.
pub const COOP_BLOCK: usize = 16;
/// Workgroups (of four subgroups) that keep the H200 busy with `attend_coop.wgsl`: ~8 an SM
/// (`Options::coop_groups`, by default).
pub const COOP_GROUPS: usize = 1024;
/// The head's dims attend_coop.wgsl has a pipeline of its own for (its D: loops of a known
/// count), the larger config's.
pub const COOP_D: usize = 128;
/// Keys of a tile of `attend_rows.wgsl` and `attend_coop.wgsl` (their KT).
const BLOCK_TILE: usize = 32;
/// The widest head `attend_rows.wgsl` takes: its tile of 32 keys is 16 KiB of workgroup
/// memory at 128 dims (wider heads go row by row); `attend_coop.wgsl` holds as many sums.
const BLOCK_MAX_D: usize = 128;

/// Whether a step's rows take `attend_rows.wgsl`: several rows not prepared by attend.
pub fn in_blocks(o: &Options, d: usize, rows: usize, fused: bool) -> bool {
    o.attend_rows && !fused && rows > 1 && d <= BLOCK_MAX_D
}

/// Whether the blocks take attend_coop.wgsl: tensor cores, heads of whole 16-dim tiles as
/// wide as the options ask, positions without sinks (an exact full layer or a sliding one,
/// whose positions in order are one span: span.wgsl).
pub fn on_tensor_cores(o: &Options, d: usize, rows: usize, fused: bool, slots: Slots) -> bool {
    let wide = o.attend_coop.is_some_and(|fewest| d >= fewest);
    in_blocks(o, d, rows, fused) && wide && d % 16 == 0 && slots.sinks == 0
}

/// The split of a step of `rows` rows whose last sees `most` positions, in blocks where
/// `in_blocks` says so (of COOP_BLOCK rows where `coop`, on the tensor cores): a block
/// walks the union of its rows' positions, at most a block's rows − 1 more than its last
/// row sees.
pub fn plan(o: &Options, kv_heads: usize, d: usize, most: usize, rows: usize, fused: bool, coop: bool) -> Split {
    if in_blocks(o, d, rows, fused) {
        let (block, groups) = if coop { (COOP_BLOCK, o.coop_groups) } else { (BLOCK, o.block_groups) };
        let walk = most + block - 1;
        whole_tiles(split(walk, rows.div_ceil(block), kv_heads, o.block_per, groups), walk, BLOCK_TILE)
    } else {
        let tile = 256 / o.attend_lanes as usize;
        whole_tiles(split(most, rows, kv_heads, o.attend_per, TARGET_GROUPS), most, tile)
    }
}

/// `s` with chunks of whole tiles of `tile` keys where they hold more than one: a chunk's
/// time is its count of tiles, a last tile of a few keys waiting as long as a full one, so
/// a decoded row's ~4,640 keys go in 73 chunks of one tile (attend.wgsl's 64) rather than
/// 68 of two, and a prompt's blocks at depth 0 (527 keys) in 4 chunks of 5 tiles of 32
/// rather than 3 of 176 keys, 6 tiles.
fn whole_tiles(s: Split, most: usize, tile: usize) -> Split {
    if s.per <= tile {
        return s;
    }
    let per = s.per / tile * tile;
    Split { per, chunks: most.div_ceil(per) }
}

/// Floats of `part` a split needs.
pub fn part_len(split: Split, rows: usize, kv_heads: usize, d: usize) -> usize {
    4 * rows * kv_heads * split.chunks * (2 + d)
}

/// The buffers attend reads and writes: prep's (attend prepares a single row itself),
/// and the gate's scale, the output and the chunks' partials.
pub struct AttendBufs<'a> {
    pub prep: PrepBufs<'a>,
    pub gate_scale: &'a Arc<Store>,
    pub z: &'a Arc<Store>,
    pub part: &'a Arc<Store>,
    /// The keys' and values' parts (`kv_parts_len`), where attend_coop.wgsl runs.
    pub coop: Option<CoopBufs<'a>>,
}

/// The buffers of a prompt's attention on the tensor cores, and the span's `len` they
/// were sized for (`span_len`).
#[derive(Clone, Copy)]
pub struct CoopBufs<'a> {
    pub kv_parts: &'a Arc<Store>,
    pub len: usize,
}

/// Bytes of kv_parts.wgsl's parts for a span of `len`: four parts and an exponent of each
/// position.
pub fn kv_parts_len(len: usize, kv_heads: usize, d: usize) -> usize {
    2 * (4 * d + 1) * kv_heads * len
}

/// span.wgsl's `len` for the rows `at` of a layer without sinks whose first row sees from
/// position `first` on: to the last row's position, rounded up to tiles of 32, and one
/// more.
pub fn span_len(first: usize, at: Rows) -> usize {
    (at.end() - first).next_multiple_of(32) + 32
}

/// prep.wgsl's work, when attend does it (one row): the step's RoPE table in the
/// uploads (None: no rotation) and the query store's stride (0: none).
#[derive(Clone, Copy)]
pub struct Prep {
    pub rope_at: Option<u32>,
    pub sample: usize,
}

/// Attention of the rows `at`, prepared first when `prep` is given (one row); with `join`
/// false (a sealed layer) every split leaves partials for the caller's combine.
pub struct Attend {
    pub slots: Slots,
    pub at: Rows,
    pub split: Split,
    pub join: bool,
    pub prep: Option<Prep>,
}

pub fn record(rec: &mut Recorder, c: &dory::Config, b: &AttendBufs, a: Attend) {
    let (at, split) = (a.at, a.split);
    debug_assert!(a.prep.is_none() || at.rows == 1, "attend prepares single rows only");
    let kernels = &rec.dev().kernels;
    let combine = kernels.combine;
    let direct = a.join && split.chunks == 1;
    if in_blocks(&kernels.options, c.head_dim, at.rows, a.prep.is_some()) {
        record_blocks(rec, c, b, &a, direct);
    } else {
        record_rows(rec, c, b, &a, direct);
    }
    if direct || !a.join {
        return;
    }
    let binds = join_binds(b);
    row_batches(at.rows, |row0, n| {
        let (d, slice) = (c.head_dim, combine_slice(c.head_dim, n as usize * c.kv_heads));
        let p = CombineParams {
            kv_heads: c.kv_heads as u32,
            d: d as u32,
            chunks: split.chunks as u32,
            row0,
            slice: slice as u32,
        };
        rec.dispatch(combine, &binds, &p, [c.kv_heads as u32, n, (d / slice) as u32]);
    });
}

/// The bindings every attention kernel that joins or gates shares: attention.wgsl's gate
/// and z, and the chunks' partials.
pub fn join_binds(b: &AttendBufs) -> [(u32, Bind); 4] {
    [
        (3, Bind::Buf(b.prep.qkvg.clone())),
        (4, Bind::Buf(b.gate_scale.clone())),
        (5, Bind::Buf(b.z.clone())),
        (6, Bind::Buf(b.part.clone())),
    ]
}

/// The bindings attend.wgsl and attend_rows.wgsl share (attend.wgsl binds three more).
fn walk_binds(b: &AttendBufs) -> Binds {
    let pb = b.prep;
    let mut binds: Binds =
        smallvec![(0, Bind::Buf(pb.q.clone())), (1, Bind::Buf(pb.k.clone())), (2, Bind::Buf(pb.v.clone()))];
    binds.extend(join_binds(b));
    binds
}

/// attend_rows.wgsl, or attend_coop.wgsl where prep left the queries' parts (after
/// kv_parts.wgsl), over the step's blocks of rows.
fn record_blocks(rec: &mut Recorder, c: &dory::Config, b: &AttendBufs, a: &Attend, direct: bool) {
    let mut binds = walk_binds(b);
    let (mut kernel, mut block) = (rec.dev().kernels.attend_rows, BLOCK);
    let kv = c.kv_heads as u32;
    if let (Some(parts), Some(cb), Some(k)) = (b.prep.parts, b.coop, rec.dev().kernels.attend_coop) {
        // Four positions a workgroup, in at most 65,535 workgroups (they loop).
        let p = RowsParams { walk: Walk::new(c, a), direct: 0, block0: 0, scale: c.attn_scale };
        let kv_binds = [binds[1].clone(), binds[2].clone(), (9, Bind::Buf(cb.kv_parts.clone()))];
        rec.dispatch(k.kv_parts, &kv_binds, &p, [cb.len.div_ceil(4).min(super::MAX_GROUPS) as u32, kv, 1]);
        binds = smallvec![(0, Bind::Buf(parts.clone())), (7, Bind::Buf(parts.clone()))];
        binds.push((9, Bind::Buf(cb.kv_parts.clone())));
        binds.extend(join_binds(b));
        kernel = if c.head_dim == COOP_D { k.attend_d } else { k.attend };
        block = COOP_BLOCK;
    }
    row_batches(a.at.rows.div_ceil(block), |block0, n| {
        let p = RowsParams { walk: Walk::new(c, a), direct: u32::from(direct), block0, scale: c.attn_scale };
        rec.dispatch(kernel, &binds, &p, [a.split.chunks as u32, kv, n]);
    });
}

/// attend.wgsl, one row to a workgroup (prepared first when `a.prep` is given).
fn record_rows(rec: &mut Recorder, c: &dory::Config, b: &AttendBufs, a: &Attend, direct: bool) {
    let attend = rec.dev().kernels.attend;
    let mut binds = walk_binds(b);
    binds.extend([(7, Bind::Upload), (8, Bind::Buf(b.prep.q_scale.clone())), (9, Bind::Buf(b.prep.qs.clone()))]);
    let prep = a.prep.unwrap_or(Prep { rope_at: None, sample: 0 });
    let flags =
        u32::from(direct) * DIRECT + u32::from(a.prep.is_some()) * FUSED + u32::from(prep.rope_at.is_some()) * ROTATE;
    let kv = c.kv_heads;
    row_batches(a.at.rows, |row0, n| {
        let p = Params {
            walk: Walk::new(c, a),
            flags,
            row0,
            scale: c.attn_scale,
            rope_at: prep.rope_at.unwrap_or(0),
            sample: prep.sample as u32,
            eps: c.eps,
        };
        rec.dispatch(attend, &binds, &p, [a.split.chunks as u32, kv as u32, n]);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_covers_the_keys_in_about_root_keys_chunks() {
        // (keys, rows, KV heads) → chunks: a short context by its tiles, a long one by √keys,
        // 32k by the workgroups' target, a prompt in one chunk per row.
        for (most, rows, kv, chunks) in
            [(600, 1, 2, 19), (4_640, 1, 4, 68), (32_768, 1, 4, 128), (512, 512, 4, 1), (20, 1, 2, 1)]
        {
            let s = split(most, rows, kv, MIN_PER, TARGET_GROUPS);
            assert_eq!(s.chunks, chunks, "{most} keys");
            assert!(s.per * s.chunks >= most && s.per * (s.chunks - 1) < most, "{s:?} for {most} keys");
        }
    }

    #[test]
    fn a_decoded_row_walks_whole_tiles() {
        // (keys) → (per, chunks) for a row of 4 KV heads and tiles of 64 keys: a short
        // context keeps its chunks of less than a tile.
        for (most, per, chunks) in [(600, 32, 19), (4_640, 64, 73), (33_280, 256, 130), (32_768, 256, 128)] {
            let s = whole_tiles(split(most, 1, 4, MIN_PER, TARGET_GROUPS), most, 64);
            assert_eq!((s.per, s.chunks), (per, chunks), "{most} keys");
            assert!(s.per * (s.chunks - 1) < most, "{s:?}: an empty last chunk");
        }
    }

    #[test]
    fn a_prompt_takes_the_tensor_cores_from_the_heads_dims_asked_for() {
        use crate::kernels::Reduce;
        let full = Slots { sinks: 0, cap: 0, window: 0 };
        let o = Options { attend_coop: Some(COOP_D), ..Options::new(Reduce::Subgroup, true, 49152) };
        // The defaults' heads of 128 dims; any whole tiles of 16 when asked; never a decoded
        // row's, nor a layer's with sinks.
        assert!(on_tensor_cores(&o, 128, 512, false, full));
        assert!(!on_tensor_cores(&o, 64, 512, false, full), "dory-tiny's heads stay on attend_rows");
        assert!(!on_tensor_cores(&o, 128, 1, true, full), "a decoded row");
        assert!(!on_tensor_cores(&o, 128, 512, false, Slots { sinks: 4, ..full }), "a sealed layer");
        let any = Options { attend_coop: Some(16), ..o };
        assert!(on_tensor_cores(&any, 64, 512, false, full));
        assert!(!on_tensor_cores(&any, 72, 512, false, full), "not whole tiles of 16 dims");
        assert!(!on_tensor_cores(&Options { attend_coop: None, ..o }, 128, 512, false, full));
    }

    #[test]
    fn a_prompts_blocks_walk_whole_tiles() {
        // pp512 at depth 0 (a walk of 527 keys, 32 blocks) → (per, chunks): dory-tiny's
        // 2 KV heads, the larger config's 4; at depth 4096 a last chunk of 15 keys.
        for (walk, kv, per, chunks) in [(527, 2, 160, 4), (527, 4, 160, 4), (4_623, 4, 1_152, 5)] {
            let s = whole_tiles(split(walk, 32, kv, MIN_PER_BLOCK, TARGET_GROUPS), walk, BLOCK_TILE);
            assert_eq!((s.per, s.chunks), (per, chunks), "{walk} keys, {kv} KV heads");
        }
    }
}
