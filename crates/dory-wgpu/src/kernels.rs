//! The compute pipelines, created once per device: every op's WGSL module, prefixed by
//! its parameters' `struct P` (written from the Rust struct its dispatch pushes, `params!`)
//! and the shared libraries it uses (`ops/reduce_*.wgsl` and `ops/reduce.wgsl` always, and
//! those its `Module` lists). The libraries are whole WGSL files, not fragments: a module
//! is their concatenation, the way a C file includes headers, so that each kernel and
//! each piece shared by kernels is written once, and the reduction strategy (subgroups
//! or workgroup memory) is chosen per device without a second copy of any kernel. The one
//! fragment, a loop that must stand written out in two functions, is pasted (`paste`).

use dory::weights::{DType, Stored};

use crate::error::gpu_err;
use crate::ops::{attend, copy, embed, exit, matmul, mix, o1, prep, residual, swiglu, Field};

/// How the kernels reduce across a workgroup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    /// Subgroup operations, for any subgroup size (`ops/reduce_subgroup.wgsl`).
    Subgroup,
    /// Workgroup memory alone (`ops/reduce_shared.wgsl`).
    Shared,
}

/// Declares `Lib`, each library with its file, once.
macro_rules! libs {
    ($($(#[$doc:meta])* $lib:ident => $file:literal,)*) => {
        /// A library shared by modules: a whole WGSL file.
        #[derive(Debug)]
        pub enum Lib {
            $($(#[$doc])* $lib,)*
        }

        impl Lib {
            fn text(&self) -> &'static str {
                match self {
                    $(Lib::$lib => include_str!($file),)*
                }
            }
        }
    };
}

libs! {
    /// Stored weights widened in the shader.
    Dtype => "ops/dtype.wgsl",
    /// The bindings of the projections of several rows.
    Matmul => "ops/matmul.wgsl",
    /// Where a position sits in a layer's cache.
    Slots => "ops/slots.wgsl",
    /// Which positions a row sees.
    Seen => "ops/seen.wgsl",
    /// The gate's inputs and z (bindings 3–5), the group size, joining key groups and the gate.
    Attention => "ops/attention.wgsl",
    /// The nGPT residual of a row.
    Ngpt => "ops/ngpt.wgsl",
    /// That residual run in place on h, its reads and writes.
    InPlace => "ops/in_place.wgsl",
    /// That residual formed on the way in to a one-row projection, its bindings and reads.
    NgptIn => "ops/ngpt_in.wgsl",
    /// SwiGLU formed where a projection reads its input.
    Glu => "ops/glu.wgsl",
    /// x's rows cut into f16 parts for the tensor cores (with Hi).
    Parts => "ops/parts.wgsl",
    /// A value's top 11 significant bits, an f16 part.
    Hi => "ops/hi.wgsl",
    /// The bindings of a prompt's attention in blocks.
    Blocks => "ops/blocks.wgsl",
    /// The positions a prompt's attention on the tensor cores sees, and their parts' tiles.
    Span => "ops/span.wgsl",
    /// A row's split attention joined where a projection reads it.
    Join => "ops/join.wgsl",
    /// Chunks of a split attention folded in as an online softmax.
    Chunks => "ops/chunks.wgsl",
}

/// One WGSL module: an op's file, its parameters (the fields of its `struct P`), the
/// libraries it uses, and whether it runs on cooperative matrices (adapters with f16 tensor
/// cores only).
#[derive(Debug)]
pub struct Module {
    pub name: &'static str,
    pub source: &'static str,
    pub params: &'static [Field],
    pub libs: &'static [Lib],
    pub coop: bool,
}

const fn module(name: &'static str, source: &'static str, params: &'static [Field], libs: &'static [Lib]) -> Module {
    Module { name, source, params, libs, coop: false }
}

pub const MODULES: &[Module] = &[
    module(
        "gemv",
        include_str!("ops/gemv.wgsl"),
        matmul::Params::FIELDS,
        &[Lib::Dtype, Lib::Matmul, Lib::Ngpt, Lib::NgptIn, Lib::Glu, Lib::Chunks, Lib::Join],
    ),
    module("gemv1", include_str!("ops/gemv1.wgsl"), matmul::RowParams::FIELDS, &[Lib::Dtype, Lib::Ngpt, Lib::NgptIn]),
    module("gemm", include_str!("ops/gemm.wgsl"), matmul::Params::FIELDS, &[Lib::Dtype, Lib::Matmul]),
    Module {
        coop: true,
        ..module(
            "split",
            include_str!("ops/split.wgsl"),
            matmul::SplitParams::FIELDS,
            &[Lib::Glu, Lib::Hi, Lib::Parts, Lib::Chunks, Lib::Join],
        )
    },
    Module {
        coop: true,
        ..module("gemm_coop", include_str!("ops/gemm_coop.wgsl"), matmul::CoopParams::FIELDS, &[Lib::Hi])
    },
    module("q8_tiles", include_str!("ops/q8_tiles.wgsl"), matmul::Q8TileParams::FIELDS, &[Lib::Dtype, Lib::Hi]),
    module("embed", include_str!("ops/embed.wgsl"), embed::Params::FIELDS, &[Lib::Dtype]),
    module("mix", include_str!("ops/mix.wgsl"), mix::Params::FIELDS, &[Lib::Ngpt, Lib::InPlace]),
    module(
        "residual",
        include_str!("ops/residual.wgsl"),
        residual::Params::FIELDS,
        &[Lib::Ngpt, Lib::InPlace, Lib::Hi, Lib::Parts],
    ),
    module("swiglu", include_str!("ops/swiglu.wgsl"), swiglu::Params::FIELDS, &[]),
    module("copy", include_str!("ops/copy.wgsl"), copy::Params::FIELDS, &[]),
    module("prep", include_str!("ops/prep.wgsl"), prep::Params::FIELDS, &[Lib::Slots]),
    module("attend", include_str!("ops/attend.wgsl"), attend::Params::FIELDS, &[Lib::Slots, Lib::Seen, Lib::Attention]),
    module(
        "attend_rows",
        include_str!("ops/attend_rows.wgsl"),
        attend::RowsParams::FIELDS,
        &[Lib::Blocks, Lib::Slots, Lib::Seen, Lib::Attention],
    ),
    Module {
        coop: true,
        ..module(
            "attend_coop",
            include_str!("ops/attend_coop.wgsl"),
            attend::RowsParams::FIELDS,
            &[Lib::Blocks, Lib::Slots, Lib::Seen, Lib::Attention, Lib::Span, Lib::Hi],
        )
    },
    module(
        "kv_parts",
        include_str!("ops/kv_parts.wgsl"),
        attend::RowsParams::FIELDS,
        &[Lib::Blocks, Lib::Slots, Lib::Seen, Lib::Span, Lib::Hi],
    ),
    module("combine", include_str!("ops/combine.wgsl"), attend::CombineParams::FIELDS, &[Lib::Attention, Lib::Chunks]),
    module("exit", include_str!("ops/exit.wgsl"), exit::Params::FIELDS, &[]),
    module("o1", include_str!("ops/o1.wgsl"), o1::Params::FIELDS, &[Lib::Attention, Lib::Chunks]),
];

/// The text of `module` over the reduction library `reduce`.
pub fn module_text(module: &Module, reduce: Reduce) -> String {
    let lib = match reduce {
        Reduce::Subgroup => include_str!("ops/reduce_subgroup.wgsl"),
        Reduce::Shared => include_str!("ops/reduce_shared.wgsl"),
    };
    // WGSL wants its directives before anything else.
    let (enables, body): (Vec<&str>, Vec<&str>) =
        module.source.lines().partition(|l| l.starts_with("enable ") || l.starts_with("diagnostic("));
    let mut text: String = enables.iter().map(|l| format!("{l}\n")).collect();
    text.push_str(&crate::ops::wgsl(module.params));
    text.push_str(lib);
    text.push_str(include_str!("ops/reduce.wgsl"));
    for l in module.libs {
        text.push_str(l.text());
    }
    let body: Vec<String> = body.into_iter().map(paste).collect();
    text.push_str(&body.join("\n"));
    text
}

/// Fragments of functions: loops that the H200's compiler keeps fast only where they stand
/// written out in each entry point's function (not called, not passed in structs), so a
/// module names them where they go instead.
const FRAGMENTS: &[(&str, &str)] = &[
    ("gemm_steps.wgsl", include_str!("ops/gemm_steps.wgsl")),
    ("gemm_loads.wgsl", include_str!("ops/gemm_loads.wgsl")),
];

/// `line` itself, or, where it reads `// paste: FILE, $name = value, …`, FILE's fragment
/// (less its header comment) at the line's indent with each `$name` replaced by its value,
/// its own pastes made.
fn paste(line: &str) -> String {
    let indent = &line[..line.len() - line.trim_start().len()];
    let Some(directive) = line.trim_start().strip_prefix("// paste: ") else {
        return line.to_string();
    };
    let mut parts = directive.split(", ");
    let file = parts.next().unwrap_or_default();
    let (_, fragment) = FRAGMENTS.iter().find(|(f, _)| *f == file).unwrap_or_else(|| panic!("no fragment {file}"));
    let lines = fragment.lines().skip_while(|l| l.starts_with("//"));
    let mut text: Vec<String> =
        lines.map(|l| if l.is_empty() { String::new() } else { format!("{indent}{l}") }).collect();
    let mut names: Vec<(&str, &str)> = parts
        .map(|part| part.split_once(" = ").unwrap_or_else(|| panic!("{file}: `{part}` is not `$name = value`")))
        .collect();
    // Longer names first, so that no name is replaced inside another ($k in $k0).
    names.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
    for (name, value) in names {
        text = text.into_iter().map(|l| l.replace(name, value)).collect();
    }
    text.iter().map(|l| paste(l)).collect::<Vec<_>>().join("\n")
}

/// One pipeline before any device: a module's entry point with its pipeline constants.
#[derive(Clone, Debug)]
pub struct Spec {
    pub module: &'static Module,
    pub entry: &'static str,
    /// What profiles and errors call it.
    pub name: &'static str,
    pub constants: Vec<(&'static str, f64)>,
}

/// A pipeline and the layout of its one bind group.
pub struct Kernel {
    pub name: &'static str,
    pub pipeline: wgpu::ComputePipeline,
    pub layout: wgpu::BindGroupLayout,
}

/// Index of a kernel in `Kernels::specs` and `Kernels::list`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelId(pub u16);

/// The shape of the single-row projection (`gemv1.wgsl`): rows of W per 32 invocations,
/// pieces of a row in flight per invocation, and the vec4s of x a workgroup holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gemv1 {
    pub rw: u32,
    pub unroll: u32,
    pub xs: u32,
}

/// What decides which kernels exist and how they are built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    pub reduce: Reduce,
    /// The cooperative-matrix GEMM (f16 tensor cores, subgroups of 32).
    pub coop: bool,
    pub gemv1: Gemv1,
    /// The cooperative GEMM's subgroups per workgroup (rows × columns) and slices of 16
    /// inputs loaded before they are multiplied (1 or 2).
    pub coop_tile: (u32, u32),
    pub coop_unroll: u32,
    /// x's lo part kept (false only to measure what it adds).
    pub coop_lo: bool,
    /// `gemm_coop`'s inputs cut into slices among a workgroup's subgroups where its blocks
    /// are few.
    pub coop_slicing: Slicing,
    /// A decoded row's prep done by attend.
    pub fuse_prep: bool,
    /// A decoded row's residual done by the next projection (on the way in to `gemv.wgsl`
    /// where rows are narrow, or in gemv1's prologue).
    pub fuse_residual: bool,
    /// A decoded row's pass closed (its last residual and the loop's edge after it) by the
    /// next pass's first projection (`gemv.wgsl`'s EDGE).
    pub fuse_edge: bool,
    /// A decoded row's embedding and the loop's entry in one dispatch (`embed.wgsl`'s
    /// enter), after the greedy token's choice.
    pub fuse_enter: bool,
    /// Bands of W a workgroup of `gemv.wgsl` takes where it forms x from the residual
    /// (matmul.rs's `band_share`).
    pub gemv_bands: Bands,
    /// The widest row whose residual the next projection forms on the way in
    /// (`gemv.wgsl`'s RES, its y in workgroup memory: RES_K4 vec4s).
    pub residual_max_k: usize,
    /// A prompt's residual before a tensor-core projection cuts x's parts for it.
    pub fuse_split: bool,
    /// A prompt's gate|up on the tensor cores forms SwiGLU on the way out and cuts it into
    /// the down projection's parts (matmul.rs's `glu_parts`).
    pub fuse_glu: bool,
    /// Split attention joined by the out projection: a decoded row's (on the way in to
    /// `gemv.wgsl`) where its partials are at most this many bytes, a prompt's on the tensor
    /// cores (in `split.wgsl`); 0: neither.
    pub combine_bytes: usize,
    /// The fewest keys a chunk of a split attention takes (attend.rs): a decoded row's,
    /// and a prompt's blocks'.
    pub attend_per: usize,
    pub block_per: usize,
    /// The workgroups a prompt's attention in blocks is split to fill (attend.rs): in
    /// attend_rows.wgsl, and in attend_coop.wgsl.
    pub block_groups: usize,
    pub coop_groups: usize,
    /// Invocations that share a key's scores in attend.wgsl (4: tiles of 64 keys, the
    /// H200's best: bench/logs/h200-2026-12-02d/call-1).
    pub attend_lanes: u32,
    /// Loads in flight an invocation of attend.wgsl has in a tile's walks (AHEAD: 4 or 8).
    pub attend_ahead: u32,
    /// The kernels of q8_0 weights (DTYPE 3), built only where a q8_0 model is loaded
    /// (`GpuModel::new` asks for them): 18 pipelines, q8_tiles among them, that every
    /// other device would compile for nothing at start (0.85 s of lavapipe's 2.6).
    pub q8: bool,
    /// A q8_0 prompt on the tensor cores, through an f16 copy of its weights (hi + lo, a
    /// slice of rows at a time: `q8_tiles`), where the device has them; else the plain
    /// GEMM.
    pub q8_coop: bool,
    /// The most bytes of such a copy (its rows in blocks of 64; the tests take one block).
    pub q8_copy_bytes: usize,
    /// A prompt's attention in blocks of rows (attend_rows.wgsl), not row by row.
    pub attend_rows: bool,
    /// Those blocks on the tensor cores (attend_coop.wgsl), where the device has them, for
    /// heads of at least this many dims (None: never).
    pub attend_coop: Option<usize>,
    /// A decoded row's exit rule tested on the device (ops/exit.rs), the step read once:
    /// by default; DORY_WGPU_EXIT=host tests it on the host after each read-out's read
    /// (the next step recorded while that read comes back).
    pub exit_on_device: bool,
    /// Such a step recorded only to the most passes of this many last tokens (dory's
    /// `Cap::Recent`), the step after it gated on it (ops/exit.rs's `gate`), where its row
    /// goes on past them; 0 records every pass. DORY_WGPU_GATE=N (by default 16: on the
    /// H100, dory-tiny under its rule 1.12–1.15×; bench/logs/h200-2026-12-07c/call-3).
    pub recent: usize,
    /// f16 projections held in 16 × 16 tiles (model.rs's `Matrix::tiled`), as the
    /// tensor-core GEMM needs them: by default where the device has it.
    pub tiles: bool,
    /// bf16 projections held as f16 times a power of two where that is exact (model.rs),
    /// for the tensor cores: by default where the device has them.
    pub bf16_as_f16: bool,
    /// The shaders built with wgpu's runtime checks (`ShaderRuntimeChecks::checked`: every
    /// index into an array or vector clamped, every loop given a counter that breaks it,
    /// every division guarded), as wgpu builds them unless asked. The kernels are ours,
    /// index only within their arrays and buffers and their loops end, so on Vulkan they
    /// are built without (on the H100: the larger config's decode 1.03×, dory-tiny's
    /// 1.02–1.04×; bench/logs/h200-2026-12-07c/call-1): device.rs's `keeps_checks`.
    pub checks: bool,
    /// The adapter's subgroup size, where it reports one fixed size and the subgroup
    /// reductions are chosen: a pipeline constant (`reduce_subgroup.wgsl`'s SUBGROUP), so
    /// that the reductions' loops unroll (on the H100, with the checks off: the larger
    /// config's decode 1.07×, dory-tiny's 1.11–1.12×; call-1 as above). 0 where it varies,
    /// or DORY_WGPU_SUBGROUP=0: each reduction counts its subgroup's lanes.
    pub subgroup: u32,
    /// A new buffer of attention partials filled with NaN (the GPU tests' devices), so
    /// that a join reading what no attend wrote (chunks.wgsl skips an empty chunk's value
    /// sums, which the block kernels leave unwritten) shows in the results.
    pub poison_partials: bool,
}

impl Options {
    /// The defaults for a device with these reductions and, when `coop`, tensor cores;
    /// `workgroup_bytes` is its limit on workgroup memory.
    /// Environment variables override the shapes, for measuring them without a rebuild:
    /// DORY_WGPU_GEMV1=RW,UNROLL[,XS] (the one-row kernel; by default a single row takes
    /// the few-row kernel, which the H200 runs 1.5–3.7× faster: gemv1's x in workgroup
    /// memory costs it occupancy and its prologue is repeated by every workgroup),
    /// DORY_WGPU_COOP_TILE=WM,WN[,UNROLL],
    /// DORY_WGPU_COOP_LO=0 (x's lo part dropped, to
    /// measure its worth), DORY_WGPU_Q8_COOP=0 (q8_0 prompts on the plain GEMM),
    /// DORY_WGPU_COOP_SLICES=TARGET,STEPS[,MOST] (`Slicing`; TARGET 0: none),
    /// DORY_WGPU_FUSE=prep,residual,edge,enter,split,glu,combine (or 0: none; by default all), DORY_WGPU_COMBINE_BYTES=N (the most partials the out projection
    /// joins), DORY_WGPU_RESIDUAL_K=N (the widest row whose residual the next projection
    /// forms), DORY_WGPU_GEMV_BANDS=PER[,FROM] (`Bands`), DORY_WGPU_ATTEND_PER=N (the fewest keys to a chunk of attention),
    /// DORY_WGPU_BLOCK_PER=N (the same for a prompt's blocks),
    /// DORY_WGPU_ATTEND_GROUPS=N and DORY_WGPU_COOP_GROUPS=N (the workgroups a prompt's
    /// attention is split to fill, in attend_rows.wgsl and in attend_coop.wgsl),
    /// DORY_WGPU_ATTEND_LANES=2|4|8|16 (invocations per key in attend.wgsl),
    /// DORY_WGPU_ATTEND_AHEAD=4|8 (its loads in flight),
    /// DORY_WGPU_ATTEND_ROWS=0 (a prompt's attention row by row, as a single row's),
    /// DORY_WGPU_ATTEND_COOP=0|1 (its blocks never on the tensor cores, or there at any
    /// head's dims, not only from 128), DORY_WGPU_EXIT=host (a
    /// decoded row's exit rule tested on the host),
    /// DORY_WGPU_BF16_AS_F16=0|1 (bf16 projections held as stored, or as f16 where exact,
    /// whether or not the device has tensor cores), DORY_WGPU_TILES=0|1 (f16 projections in
    /// rows, which keeps them from the tensor cores, or in tiles without them),
    /// and, read by device.rs: DORY_WGPU_CHECKS=0|1 (the shaders built without or with
    /// wgpu's runtime checks), DORY_WGPU_SUBGROUP=0 (each reduction counts its subgroup's
    /// lanes).
    pub fn new(reduce: Reduce, coop: bool, workgroup_bytes: u32) -> Options {
        let xs = Self::xs_most(workgroup_bytes);
        let mut o = Options {
            reduce,
            coop,
            gemv1: Gemv1 { rw: 2, unroll: 2, xs: 4 },
            // The fastest of the H200's sweep (bench/logs/h200-2026-12-01b/call-3).
            coop_tile: (1, 1),
            coop_unroll: 2,
            coop_lo: std::env::var("DORY_WGPU_COOP_LO").map_or(true, |v| v != "0"),
            // The H200 (bench/logs/h200-2026-12-02f/call-1, µs at 512 rows): dory-tiny's
            // down 47.8 → 23.9 in 4 slices (96 blocks), its out 23.4 → 16.1. Since the
            // slices' sums meet in a buffer (bench/logs/h200-2026-12-03h/call-4), a target
            // of 1024 also pays for the larger config's out and down (512 blocks, 81 → 59
            // and 205 → 133 in 2 slices) and dory-tiny's q|k|v|gate (240 blocks, 24.1 →
            // 20.4 in 4), against its gate|up's 25.7 → 27.3 in 2 (512 blocks).
            coop_slicing: Slicing { target: 1024, steps: 4, most: 4 },
            fuse_prep: true,
            fuse_residual: true,
            fuse_edge: true,
            fuse_enter: true,
            fuse_split: true,
            fuse_glu: true,
            // Two: the larger config's decode +5.5–6 % on the H100 at depths 0, 4096 and
            // 32768 (O(1)), three +2–3 % (bench/logs/h200-2026-12-06f/call-1).
            gemv_bands: Bands { per: 2, from: crate::ops::matmul::MANY_BANDS },
            residual_max_k: crate::ops::matmul::RESIDUAL_MAX_K,
            combine_bytes: crate::ops::matmul::COMBINE_BYTES,
            attend_per: crate::ops::attend::MIN_PER,
            block_per: crate::ops::attend::MIN_PER_BLOCK,
            block_groups: crate::ops::attend::TARGET_GROUPS,
            coop_groups: crate::ops::attend::COOP_GROUPS,
            attend_lanes: 4,
            // Eight: the larger config's decode +0.3–0.5 % at depth 0 and +0.6–1.1 % at 4096
            // in each of three rounds on the H100 (bench/logs/h200-2026-12-06f/call-2, -3).
            attend_ahead: 8,
            q8: false,
            q8_coop: std::env::var("DORY_WGPU_Q8_COOP").map_or(true, |v| v != "0"),
            q8_copy_bytes: 64 << 20,
            attend_rows: std::env::var("DORY_WGPU_ATTEND_ROWS").map_or(true, |v| v != "0"),
            attend_coop: attend_coop_from_env(),
            exit_on_device: std::env::var("DORY_WGPU_EXIT").map_or(true, |v| v != "host"),
            recent: numbers("DORY_WGPU_GATE")
                .and_then(|n| n.first().copied())
                .map_or(dory::forward::RECENT, |n| n as usize),
            tiles: std::env::var("DORY_WGPU_TILES").map_or(coop, |v| v != "0"),
            bf16_as_f16: std::env::var("DORY_WGPU_BF16_AS_F16").map_or(coop, |v| v != "0"),
            checks: false,
            subgroup: 0,
            poison_partials: false,
        };
        match numbers("DORY_WGPU_GEMV1").as_deref() {
            Some(&[rw, unroll]) => o.gemv1 = Gemv1 { rw, unroll, xs },
            Some(&[rw, unroll, x]) => o.gemv1 = Gemv1 { rw, unroll, xs: x.min(xs) },
            _ => {}
        }
        match numbers("DORY_WGPU_COOP_TILE").as_deref() {
            Some(&[wm, wn]) => o.coop_tile = (wm.clamp(1, 8), wn.clamp(1, 4)),
            Some(&[wm, wn, unroll]) => {
                (o.coop_tile, o.coop_unroll) = ((wm.clamp(1, 8), wn.clamp(1, 4)), unroll.clamp(1, 2));
            }
            _ => {}
        }
        match numbers("DORY_WGPU_COOP_SLICES").as_deref() {
            Some(&[target, steps]) => o.coop_slicing = Slicing { target, steps, ..o.coop_slicing },
            Some(&[target, steps, most]) => o.coop_slicing = Slicing { target, steps, most },
            _ => {}
        }
        // wgpu does not check a kernel's workgroup memory against the device's limit (a
        // driver may then hang).
        o.coop &= coop_workgroup_bytes(o.coop_tile) <= workgroup_bytes;
        o.attend_coop = o.attend_coop.filter(|_| o.attend_coop_fits(workgroup_bytes));
        // Slices of 4, 2 or 1 (their workgroup memory is a tile of zeros whatever their count:
        // their sums meet in a buffer).
        o.coop_slicing.most = [4, 2, 1].into_iter().find(|&n| n <= o.coop_slicing.most.max(1)).unwrap_or(1);
        o.attention_from_env();
        o.fusion_from_env();
        o
    }

    /// For an adapter that runs on the CPU (lavapipe): a decoded row's residual and a
    /// pass's edge in their own dispatches (unless DORY_WGPU_FUSE says otherwise). Fused,
    /// every workgroup of the next projection forms them again, which hides latency on a
    /// GPU and only repeats work on CPU cores: lavapipe ran gemv_glu_residual ~100 ms a
    /// dispatch above gemv_glu, and dory-tiny decoded 0.3 tokens/s against 1.0 with it apart.
    pub fn on_cpu(self) -> Options {
        let asked = std::env::var_os("DORY_WGPU_FUSE").is_some();
        // Nor bands of W shared, whose kernels would only be built.
        let gemv_bands = if asked { self.gemv_bands } else { Bands { per: 1, ..self.gemv_bands } };
        Options { fuse_residual: self.fuse_residual && asked, fuse_edge: self.fuse_edge && asked, gemv_bands, ..self }
    }

    /// DORY_WGPU_ATTEND_PER, _BLOCK_PER, _ATTEND_GROUPS, _COOP_GROUPS, _ATTEND_LANES and
    /// _ATTEND_AHEAD (`new`).
    fn attention_from_env(&mut self) {
        if let Some(&[per]) = numbers("DORY_WGPU_ATTEND_PER").as_deref() {
            self.attend_per = (per as usize).max(1);
        }
        if let Some(&[per]) = numbers("DORY_WGPU_BLOCK_PER").as_deref() {
            self.block_per = (per as usize).max(1);
        }
        if let Some(&[groups]) = numbers("DORY_WGPU_ATTEND_GROUPS").as_deref() {
            self.block_groups = (groups as usize).max(1);
        }
        if let Some(&[groups]) = numbers("DORY_WGPU_COOP_GROUPS").as_deref() {
            self.coop_groups = (groups as usize).max(1);
        }
        if let Some(&[lanes @ (2 | 4 | 8 | 16)]) = numbers("DORY_WGPU_ATTEND_LANES").as_deref() {
            self.attend_lanes = lanes;
        }
        if let Some(&[ahead @ (4 | 8)]) = numbers("DORY_WGPU_ATTEND_AHEAD").as_deref() {
            self.attend_ahead = ahead;
        }
    }

    /// DORY_WGPU_FUSE, DORY_WGPU_COMBINE_BYTES and DORY_WGPU_RESIDUAL_K (`new`).
    fn fusion_from_env(&mut self) {
        if let Ok(v) = std::env::var("DORY_WGPU_FUSE") {
            self.fuse_prep = v.contains("prep");
            self.fuse_residual = v.contains("residual");
            self.fuse_edge = v.contains("edge");
            self.fuse_enter = v.contains("enter");
            self.fuse_split = v.contains("split");
            self.fuse_glu = v.contains("glu");
            if !v.contains("combine") {
                self.combine_bytes = 0;
            }
        }
        if let Some(bytes) = std::env::var("DORY_WGPU_COMBINE_BYTES").ok().and_then(|v| v.trim().parse().ok()) {
            self.combine_bytes = bytes;
        }
        // Up to 2,048: y's 8 KiB and the kernel's other workgroup memory stay within the
        // 16 KiB every adapter gives.
        if let Some(&[k]) = numbers("DORY_WGPU_RESIDUAL_K").as_deref() {
            self.residual_max_k = (k as usize).clamp(4, 2048).next_multiple_of(4);
        }
        match numbers("DORY_WGPU_GEMV_BANDS").as_deref() {
            Some(&[per]) => self.gemv_bands.per = (per as usize).clamp(1, 64),
            Some(&[per, from]) => self.gemv_bands = Bands { per: (per as usize).clamp(1, 64), from: from as usize },
            _ => {}
        }
    }

    /// Whether attend_coop.wgsl can run under these options on a device with this much
    /// workgroup memory (wgpu does not check it).
    pub fn attend_coop_fits(&self, workgroup_bytes: u32) -> bool {
        self.coop && ATTEND_COOP_BYTES <= workgroup_bytes
    }

    /// The vec4s of x gemv1 can hold: up to 8192 floats, less where the device allows less
    /// (the reductions take 1 KiB).
    pub fn xs_most(workgroup_bytes: u32) -> u32 {
        2048.min(workgroup_bytes.saturating_sub(1024) / 16)
    }
}

/// The comma-separated numbers of the environment variable `name`, where it is set.
fn numbers(name: &str) -> Option<Vec<u32>> {
    std::env::var(name).ok().map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
}

/// Bytes of workgroup memory the tensor-core GEMM takes for a tile of WM × WN subgroups
/// (either block): a 16 × 16 tile of f32 per subgroup.
pub fn coop_workgroup_bytes((wm, wn): (u32, u32)) -> u32 {
    4 * 256 * wm * wn
}

/// Bands of 8 rows of W (4 of gate|up's pairs in rows) a workgroup of `gemv.wgsl` takes
/// where it forms x from the residual, so that it forms x once for all of them (the
/// prologue's loads and reductions repeat per workgroup): `per` to a workgroup where a
/// projection has at least `from` bands (fewer would leave SMs idle), else one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bands {
    pub per: usize,
    pub from: usize,
}

/// How `gemm_coop` cuts a block's inputs among the subgroups of a workgroup: a product of
/// fewer blocks than `target` takes the most slices (up to `most`: 1, 2 or 4) that keep
/// blocks × slices within `target` and `steps` slices of 16 inputs to a slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slicing {
    pub target: u32,
    pub steps: u32,
    pub most: u32,
}

impl Slicing {
    /// The slices of a product of `blocks` 32 × 64 blocks over `k16` inputs.
    pub fn slices(self, blocks: usize, k16: usize) -> u32 {
        let steps = k16 / 16;
        [4, 2]
            .into_iter()
            .find(|&n| {
                n <= self.most
                    && blocks * n as usize <= self.target as usize
                    && steps >= n as usize * self.steps as usize
            })
            .unwrap_or(1)
    }
}

/// The kernel shapes the kernel benchmarks (crate `dory-wgpu-bench`) compare and the
/// shader tests translate, each a variation of `base`: the single-row
/// projection (gemv1) in rows per run × pieces in flight, with x in as much workgroup
/// memory as the device allows and in 512 vec4s (enough for k ≤ 2048, and 4× the
/// occupancy), and the plain GEMM against the tensor-core one's tiles and unrolling.
pub fn kernel_shapes(base: Options, workgroup_bytes: u32) -> Vec<Options> {
    let most = Options::xs_most(workgroup_bytes);
    let mut all = vec![base];
    for (rw, unroll, xs) in [(1, 4, most), (2, 2, most), (2, 4, most), (4, 2, most), (4, 4, most), (2, 2, 512)] {
        all.push(Options { gemv1: Gemv1 { rw, unroll, xs }, ..base });
    }
    if base.coop {
        all.push(Options { coop: false, ..base });
        for (tile, unroll) in
            [((1, 1), 1), ((2, 1), 1), ((2, 2), 1), ((2, 2), 2), ((4, 1), 1), ((4, 2), 1), ((4, 2), 2)]
        {
            all.push(Options { coop_tile: tile, coop_unroll: unroll, ..base });
        }
        // Slices off.
        all.push(Options { coop_slicing: Slicing { most: 1, ..base.coop_slicing }, ..base });
        all.retain(|o| !o.coop || coop_workgroup_bytes(o.coop_tile) <= workgroup_bytes);
    }
    all.dedup();
    all
}

/// The fewest head dims a prompt's attention takes the tensor cores at: 128 by default (on
/// an H100 the larger config's pp512 at depth 4096 ran 1.13× attend_rows.wgsl's speed,
/// bench/logs/h200-2026-12-07f/call-1; dory-tiny's at 64 dims 0.89×, h200-2026-12-07e/call-2),
/// DORY_WGPU_ATTEND_COOP=1 any, =0 none.
fn attend_coop_from_env() -> Option<usize> {
    match std::env::var("DORY_WGPU_ATTEND_COOP").as_deref() {
        Ok("0") => None,
        Ok("1") => Some(16),
        _ => Some(crate::ops::attend::COOP_D),
    }
}

/// Bytes of workgroup memory attend_coop.wgsl takes (its own arrays, 34,048 bytes, and the
/// libraries' it does not use, should a driver count them).
pub const ATTEND_COOP_BYTES: u32 = 34_048 + 1024 + 4096;

/// A prompt's attention on the tensor cores: prep that also writes the queries' f16 parts,
/// the keys' and values' parts (kv_parts.wgsl), and attend_coop.wgsl.
#[derive(Clone, Copy, Debug)]
pub struct AttendCoop {
    pub prep: KernelId,
    pub kv_parts: KernelId,
    pub attend: KernelId,
    /// attend_coop.wgsl for heads of attend::COOP_D dims.
    pub attend_d: KernelId,
}

/// The tensor-core GEMM's kernels: x split into f16 parts, then the product (plain, and
/// times a per-column scale) in blocks of 32 × 64 or 64 × 64.
#[derive(Clone, Copy, Debug)]
pub struct Coop {
    pub split: KernelId,
    /// The split of SwiGLU(gu), the down projection's x formed on the way in.
    pub split_swiglu: KernelId,
    /// The split of a prompt's split attention joined, the out projection's x.
    pub split_combine: KernelId,
    /// The nGPT residual that also cuts the new h into parts (no split after it).
    pub residual_split: KernelId,
    /// [plain, scaled, gate|up with SwiGLU formed on the way out into the down
    /// projection's parts (`matmul::glu_parts`)]
    pub gemm: [KernelId; 3],
    /// `gemm` in 2 and 4 slices (`Slicing`; where the device has the workgroup memory).
    pub sliced: [[KernelId; 3]; 2],
}

/// Every pipeline the ops use, and which one each op takes. Weight-reading kernels come in
/// one variant per dtype (indexed by `dtype_index`).
pub struct Kernels {
    pub options: Options,
    pub specs: Vec<Spec>,
    /// The built pipelines, one per spec (empty in a plan).
    pub list: Vec<Kernel>,
    /// [dtype][1 row, 4 rows]
    pub gemv: [[KernelId; 2]; DTYPES],
    pub gemv_scaled: [[KernelId; 2]; DTYPES],
    /// The down projection with SwiGLU formed on the way in.
    pub gemv_swiglu: [[KernelId; 2]; DTYPES],
    /// gate|up with SwiGLU formed on the way out (one row).
    pub gemv_glu: [KernelId; DTYPES],
    /// One row whose x is the nGPT residual formed on the way in: [one band a workgroup,
    /// or `Options::gemv_bands`'][dtype][plain, gate|up with SwiGLU].
    pub gemv_residual: [[[KernelId; 2]; DTYPES]; 2],
    /// One row whose x is a decoded row's attention, its chunks joined on the way in.
    pub gemv_combine: [KernelId; DTYPES],
    /// One row whose x is formed by a pass's last residual and the edge after it
    /// (`Options::fuse_edge`): [bands as gemv_residual's][dtype].
    pub gemv_edge: Option<[[KernelId; DTYPES]; 2]>,
    /// One row: [dtype][prologue: none, residual, SwiGLU].
    pub gemv1: [[KernelId; 3]; DTYPES],
    pub gemv1_scaled: [KernelId; DTYPES],
    pub gemm: [KernelId; DTYPES],
    pub gemm_scaled: [KernelId; DTYPES],
    /// Where the device has tensor cores.
    pub gemm_coop: Option<Coop>,
    /// A slice of a q8_0 matrix copied in f16 for them (with `Options::q8`: built wherever
    /// q8_0's kernels are, so that the tests check it on every adapter).
    pub q8_tiles: Option<KernelId>,
    pub embed: [KernelId; DTYPES],
    pub greedy: KernelId,
    /// A row's embedding and the loop's entry; after the greedy token's choice.
    pub enter: [KernelId; DTYPES],
    pub greedy_enter: [KernelId; DTYPES],
    pub exit_test: KernelId,
    pub exit_gate: KernelId,
    pub mix: KernelId,
    /// A pass's last residual, then the edge after it.
    pub residual_mix: KernelId,
    pub residual: KernelId,
    pub swiglu: KernelId,
    pub copy: KernelId,
    pub copy_slots: KernelId,
    pub copy4: KernelId,
    pub prep: KernelId,
    pub attend: KernelId,
    pub attend_rows: KernelId,
    /// Where the device has tensor cores (`Options::attend_coop`).
    pub attend_coop: Option<AttendCoop>,
    pub combine: KernelId,
    pub push: KernelId,
    pub combine_sealed: KernelId,
}

/// The pipeline constant DTYPE of `dtype.wgsl`, for weights stored as `s`.
pub fn dtype_index(s: Stored) -> usize {
    match s {
        Stored::Float(DType::F32) => 0,
        Stored::Float(DType::F16) => 1,
        Stored::Float(DType::BF16) => 2,
        Stored::I8 => 3,
    }
}

/// The weights' dtypes the kernels read (`dtype_index`).
const DTYPES: usize = 4;
const DTYPE_CONSTANTS: [f64; DTYPES] = [0.0, 1.0, 2.0, 3.0];

/// One row's projections whose x is formed on the way in (`Kernels`' fields of the names).
struct Formed {
    gemv_residual: [[[KernelId; 2]; DTYPES]; 2],
    gemv_combine: [KernelId; DTYPES],
    gemv_edge: Option<[[KernelId; DTYPES]; 2]>,
}

/// `Formed`: by the residual (gemv and gemv_glu), by the attention's join, and by a pass's
/// close (`Options::fuse_edge`); those that form x from the residual once for one band a
/// workgroup and once for `Options::gemv_bands` (the same kernels where that is one: a
/// loop kept for bands that never come cost dory-tiny's decode 1–2 % on the H100).
fn plan_formed(b: &mut Planner, options: Options) -> Formed {
    let q8 = options.q8;
    // y in workgroup memory as wide as the widest row the option fuses.
    let res_k4 = (options.residual_max_k / 4).max(256) as f64;
    let banded = |b: &mut Planner, bands: usize| {
        let bands = bands as f64;
        let gemv_residual = per_dtype(q8, |dt| {
            let c = [("DTYPE", dt), ("RES", 1.0), ("RES_K4", res_k4), ("BANDS", bands)];
            [b.add_as("gemv", "gemv", "gemv_residual", &c), b.add_as("gemv", "gemv_glu", "gemv_glu_residual", &c)]
        });
        let gemv_edge = options.fuse_edge.then(|| {
            per_dtype(q8, |dt| {
                let c = [("DTYPE", dt), ("RES", 1.0), ("RES_K4", res_k4), ("EDGE", 1.0), ("BANDS", bands)];
                b.add_as("gemv", "gemv", "gemv_edge", &c)
            })
        });
        (gemv_residual, gemv_edge)
    };
    let one = banded(b, 1);
    let per = options.gemv_bands.per;
    let several = if per > 1 { banded(b, per) } else { one };
    let gemv_combine = per_dtype(q8, |dt| b.add_as("gemv", "gemv", "gemv_combine", &[("DTYPE", dt), ("COMBINE", 1.0)]));
    Formed { gemv_residual: [one.0, several.0], gemv_combine, gemv_edge: one.1.zip(several.1).map(|(a, b)| [a, b]) }
}

/// `add`'s kernel for each dtype: q8_0's only with `q8` (`Options::q8`), its slot otherwise
/// holding f32's, which no matrix reaches (`upload_q8` refuses a device without q8_0's).
fn per_dtype<T: Copy>(q8: bool, mut add: impl FnMut(f64) -> T) -> [T; DTYPES] {
    let mut all = [add(DTYPE_CONSTANTS[0]); DTYPES];
    for (slot, &dt) in all.iter_mut().zip(&DTYPE_CONSTANTS).skip(1) {
        if dt != 3.0 || q8 {
            *slot = add(dt);
        }
    }
    all
}

struct Planner {
    specs: Vec<Spec>,
    /// Constants every kernel takes (`Options::subgroup`'s SUBGROUP).
    common: Vec<(&'static str, f64)>,
}

impl Planner {
    fn add(&mut self, module: &str, entry: &'static str, constants: &[(&'static str, f64)]) -> KernelId {
        self.add_as(module, entry, entry, constants)
    }

    fn add_as(
        &mut self,
        module: &str,
        entry: &'static str,
        name: &'static str,
        constants: &[(&'static str, f64)],
    ) -> KernelId {
        let module = MODULES.iter().find(|m| m.name == module).expect("a listed module");
        self.specs.push(Spec { module, entry, name, constants: [constants, &self.common].concat() });
        KernelId((self.specs.len() - 1) as u16)
    }
}

/// A prompt's attention on the tensor cores' pipelines (`AttendCoop`).
fn plan_attend_coop(b: &mut Planner) -> AttendCoop {
    let d = ("D", crate::ops::attend::COOP_D as f64);
    AttendCoop {
        prep: b.add_as("prep", "prep", "prep_parts", &[("PARTS", 1.0)]),
        kv_parts: b.add("kv_parts", "kv_parts", &[]),
        attend: b.add("attend_coop", "attend_coop", &[]),
        attend_d: b.add_as("attend_coop", "attend_coop", "attend_coop_d", &[d]),
    }
}

/// The tensor-core GEMM's pipelines (`Coop`).
fn plan_coop(b: &mut Planner, options: Options) -> Coop {
    let (wm, wn) = options.coop_tile;
    let unroll = ("UNROLL", f64::from(options.coop_unroll));
    let c = [("WM", f64::from(wm)), ("WN", f64::from(wn)), unroll];
    let glu = ("GLU", 1.0);
    let [plain, scaled] = ["gemm_coop", "gemm_coop_scaled"].map(|e| b.add("gemm_coop", e, &c));
    let gemm = [plain, scaled, b.add("gemm_coop", "gemm_glu", &[&c[..], &[glu]].concat())];
    let mut sliced = [gemm; 2];
    for (i, n) in [2, 4].into_iter().enumerate().filter(|&(_, n)| n <= options.coop_slicing.most) {
        let c = [unroll, ("SLICES", f64::from(n))];
        let [plain, scaled] = ["gemm_sliced", "gemm_sliced_scaled"].map(|e| b.add("gemm_coop", e, &c));
        sliced[i] = [plain, scaled, b.add("gemm_coop", "gemm_sliced_glu", &[&c[..], &[glu]].concat())];
    }
    let lo = ("LO", f64::from(u8::from(options.coop_lo)));
    let split = b.add("split", "split", &[lo]);
    let split_swiglu = b.add_as("split", "split", "split_swiglu", &[lo, ("SWIGLU", 1.0)]);
    let split_combine = b.add_as("split", "split", "split_combine", &[lo, ("COMBINE", 1.0)]);
    let residual_split = b.add("residual", "residual_split", &[lo]);
    Coop { split, split_swiglu, split_combine, residual_split, gemm, sliced }
}

/// The one-row kernels, [dtype][prologue: none, residual, SwiGLU] and scaled, of shape `g`.
fn plan_gemv1(b: &mut Planner, g: Gemv1, q8: bool) -> ([[KernelId; 3]; DTYPES], [KernelId; DTYPES]) {
    let shape = [("RW", f64::from(g.rw)), ("UNROLL", f64::from(g.unroll)), ("XS", f64::from(g.xs))];
    let gemv1_c = |dt: f64, pro: f64| [[("DTYPE", dt), ("PRO", pro)].as_slice(), &shape].concat();
    let names = ["gemv1", "gemv1_residual", "gemv1_swiglu"];
    let gemv1 = per_dtype(q8, |dt| {
        let mut k = [KernelId(0); 3];
        for (pro, name) in names.into_iter().enumerate() {
            k[pro] = b.add_as("gemv1", "gemv1", name, &gemv1_c(dt, pro as f64));
        }
        k
    });
    let scaled = per_dtype(q8, |dt| {
        b.add_as("gemv1", "gemv1", "gemv1_scaled", &[gemv1_c(dt, 0.0).as_slice(), &[("SCALED", 1.0)]].concat())
    });
    (gemv1, scaled)
}

impl Kernels {
    /// Every pipeline these options call for, unbuilt (the shader test translates them).
    pub fn plan(options: Options) -> Kernels {
        // Every module of the subgroup reductions declares SUBGROUP (reduce_subgroup.wgsl).
        let fixed = options.reduce == Reduce::Subgroup && options.subgroup != 0;
        let common = if fixed { vec![("SUBGROUP", f64::from(options.subgroup))] } else { vec![] };
        let mut b = Planner { specs: Vec::new(), common };
        let q8 = options.q8;
        // [1 row, 4 rows] of gemv, gemv_scaled and gemv_swiglu.
        let rows = per_dtype(q8, |dt| {
            [1.0, 4.0].map(|xrows| {
                let c = [("DTYPE", dt), ("XROWS", xrows)];
                let swiglu = [c.as_slice(), &[("SWIGLU", 1.0)]].concat();
                [
                    b.add("gemv", "gemv", &c),
                    b.add("gemv", "gemv_scaled", &c),
                    b.add_as("gemv", "gemv", "gemv_swiglu", &swiglu),
                ]
            })
        });
        let [gemv, gemv_scaled, gemv_swiglu] = [0, 1, 2].map(|v| rows.map(|r| r.map(|x| x[v])));
        let gemv_glu = per_dtype(q8, |dt| b.add("gemv", "gemv_glu", &[("DTYPE", dt)]));
        let Formed { gemv_residual, gemv_combine, gemv_edge } = plan_formed(&mut b, options);
        let (gemv1, gemv1_scaled) = plan_gemv1(&mut b, options.gemv1, q8);
        let gemm = per_dtype(q8, |dt| b.add("gemm", "gemm", &[("DTYPE", dt)]));
        let gemm_scaled = per_dtype(q8, |dt| b.add("gemm", "gemm_scaled", &[("DTYPE", dt)]));
        let gemm_coop = options.coop.then(|| plan_coop(&mut b, options));
        let embed = per_dtype(q8, |dt| b.add("embed", "embed", &[("DTYPE", dt)]));
        let greedy = b.add("embed", "greedy", &[("DTYPE", DTYPE_CONSTANTS[0])]);
        let enter = per_dtype(q8, |dt| b.add("embed", "enter", &[("DTYPE", dt)]));
        let greedy_enter = per_dtype(q8, |dt| b.add("embed", "greedy_enter", &[("DTYPE", dt)]));
        Kernels {
            options,
            gemv,
            gemv_scaled,
            gemv_swiglu,
            gemv_glu,
            gemv_residual,
            gemv_combine,
            gemv_edge,
            gemv1,
            gemv1_scaled,
            gemm,
            gemm_scaled,
            gemm_coop,
            q8_tiles: q8.then(|| b.add("q8_tiles", "q8_tiles", &[("DTYPE", DTYPE_CONSTANTS[3])])),
            embed,
            greedy,
            enter,
            greedy_enter,
            exit_test: b.add("exit", "exit_test", &[]),
            exit_gate: b.add("exit", "exit_gate", &[]),
            mix: b.add("mix", "mix", &[]),
            residual_mix: b.add("mix", "residual_mix", &[]),
            residual: b.add("residual", "residual", &[]),
            swiglu: b.add("swiglu", "swiglu", &[]),
            copy: b.add("copy", "copy", &[]),
            copy_slots: b.add("copy", "copy_slots", &[]),
            copy4: b.add("copy", "copy4", &[]),
            prep: b.add("prep", "prep", &[]),
            attend: b.add(
                "attend",
                "attend",
                &[("LANES", f64::from(options.attend_lanes)), ("AHEAD", f64::from(options.attend_ahead))],
            ),
            attend_rows: b.add("attend_rows", "attend_rows", &[]),
            attend_coop: (options.coop && options.attend_coop.is_some()).then(|| plan_attend_coop(&mut b)),
            combine: b.add("combine", "combine", &[]),
            push: b.add("o1", "push", &[]),
            combine_sealed: b.add("o1", "combine_sealed", &[]),
            specs: b.specs,
            list: Vec::new(),
        }
    }

    /// Builds every pipeline of the plan; an invalid shader or pipeline is an error naming it.
    pub fn new(device: &wgpu::Device, options: Options) -> Result<Kernels, dory::Error> {
        let mut k = Kernels::plan(options);
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut modules: Vec<(&str, wgpu::ShaderModule)> = Vec::new();
        for spec in &k.specs {
            let m = spec.module;
            if !modules.iter().any(|(n, _)| *n == m.name) {
                let desc = wgpu::ShaderModuleDescriptor {
                    label: Some(m.name),
                    source: wgpu::ShaderSource::Wgsl(module_text(m, options.reduce).into()),
                };
                let module = if options.checks {
                    device.create_shader_module(desc)
                } else {
                    // SAFETY: wgpu asks that a module built without its checks index only
                    // within its arrays and buffers, divide by no zero and loop finitely
                    // (`Options::checks`): ours do; every GPU test passes without the checks
                    // on lavapipe and the H100.
                    unsafe { device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked()) }
                };
                modules.push((m.name, module));
            }
            let module = &modules.iter().find(|(n, _)| *n == m.name).expect("made above").1;
            let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(spec.name),
                layout: None,
                module,
                entry_point: Some(spec.entry),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: &spec.constants,
                    // Every kernel writes its workgroup memory before reading it.
                    zero_initialize_workgroup_memory: false,
                },
                cache: None,
            });
            let layout = pipeline.get_bind_group_layout(0);
            k.list.push(Kernel { name: spec.name, pipeline, layout });
        }
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(gpu_err(format!("the kernels ({options:?}) do not build on this device: {e}")));
        }
        Ok(k)
    }

    pub fn get(&self, id: KernelId) -> &Kernel {
        &self.list[id.0 as usize]
    }

    pub fn get_spec(&self, id: KernelId) -> &Spec {
        &self.specs[id.0 as usize]
    }
}
