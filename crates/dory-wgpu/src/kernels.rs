//! The compute pipelines, created once per device: every op's WGSL module, prefixed by
//! the shared libraries it uses (`ops/reduce_*.wgsl`, `ops/reduce.wgsl`,
//! `ops/dtype.wgsl`). The libraries are whole WGSL files, not fragments: a module is
//! their concatenation, the way a C file includes headers, so that each kernel is
//! written once and the reduction strategy (subgroups or workgroup memory) is chosen
//! per device without a second copy of any kernel.

use dory::weights::DType;

use crate::error::gpu_err;

/// How the kernels reduce across a workgroup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    /// Subgroup operations, for any subgroup size (`ops/reduce_subgroup.wgsl`).
    Subgroup,
    /// Workgroup memory alone (`ops/reduce_shared.wgsl`).
    Shared,
}

/// One WGSL module: an op's file and whether it reads stored weights (`ops/dtype.wgsl`).
pub struct Module {
    pub name: &'static str,
    pub source: &'static str,
    pub weights: bool,
}

pub const MODULES: &[Module] = &[
    Module { name: "gemv", source: include_str!("ops/gemv.wgsl"), weights: true },
    Module { name: "gemm", source: include_str!("ops/gemm.wgsl"), weights: true },
    Module { name: "embed", source: include_str!("ops/embed.wgsl"), weights: true },
    Module { name: "mix", source: include_str!("ops/mix.wgsl"), weights: false },
    Module { name: "residual", source: include_str!("ops/residual.wgsl"), weights: false },
    Module { name: "swiglu", source: include_str!("ops/swiglu.wgsl"), weights: false },
    Module { name: "copy", source: include_str!("ops/copy.wgsl"), weights: false },
    Module { name: "prep", source: include_str!("ops/prep.wgsl"), weights: false },
    Module { name: "attend", source: include_str!("ops/attend.wgsl"), weights: false },
    Module { name: "combine", source: include_str!("ops/combine.wgsl"), weights: false },
    Module { name: "o1", source: include_str!("ops/o1.wgsl"), weights: false },
];

/// The text of `module` over the reduction library `reduce`.
pub fn module_text(module: &Module, reduce: Reduce) -> String {
    let lib = match reduce {
        Reduce::Subgroup => include_str!("ops/reduce_subgroup.wgsl"),
        Reduce::Shared => include_str!("ops/reduce_shared.wgsl"),
    };
    let mut text = String::from(lib);
    text.push_str(include_str!("ops/reduce.wgsl"));
    if module.weights {
        text.push_str(include_str!("ops/dtype.wgsl"));
    }
    text.push_str(module.source);
    text
}

/// A pipeline and the layout of its one bind group.
pub struct Kernel {
    pub name: &'static str,
    pub pipeline: wgpu::ComputePipeline,
    pub layout: wgpu::BindGroupLayout,
}

/// Index of a kernel in `Kernels::list`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelId(pub u16);

/// Every pipeline the ops use. Weight-reading kernels come in one variant per dtype.
pub struct Kernels {
    pub list: Vec<Kernel>,
    /// [dtype][1 row, 4 rows]
    pub gemv: [[KernelId; 2]; 3],
    pub gemv_scaled: [[KernelId; 2]; 3],
    /// The down projection with SwiGLU formed on the way in.
    pub gemv_swiglu: [[KernelId; 2]; 3],
    pub gemm: [KernelId; 3],
    pub gemm_scaled: [KernelId; 3],
    pub embed: [KernelId; 3],
    pub mix: KernelId,
    pub residual: KernelId,
    pub swiglu: KernelId,
    pub copy: KernelId,
    pub copy_slots: KernelId,
    pub copy4: KernelId,
    pub prep: KernelId,
    pub attend: KernelId,
    pub combine: KernelId,
    pub push: KernelId,
    pub combine_sealed: KernelId,
}

/// The pipeline constant DTYPE of `dtype.wgsl`.
pub fn dtype_index(d: DType) -> usize {
    match d {
        DType::F32 => 0,
        DType::F16 => 1,
        DType::BF16 => 2,
    }
}

struct Builder<'a> {
    device: &'a wgpu::Device,
    reduce: Reduce,
    list: Vec<Kernel>,
}

impl Builder<'_> {
    fn module(&self, name: &str) -> wgpu::ShaderModule {
        let m = MODULES.iter().find(|m| m.name == name).expect("a listed module");
        self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(m.name),
            source: wgpu::ShaderSource::Wgsl(module_text(m, self.reduce).into()),
        })
    }

    fn add(&mut self, module: &wgpu::ShaderModule, entry: &'static str, constants: &[(&str, f64)]) -> KernelId {
        self.add_as(module, entry, entry, constants)
    }

    /// A pipeline of `entry` that profiles and errors call `name`.
    fn add_as(
        &mut self,
        module: &wgpu::ShaderModule,
        entry: &'static str,
        name: &'static str,
        constants: &[(&str, f64)],
    ) -> KernelId {
        let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(name),
            layout: None,
            module,
            entry_point: Some(entry),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants,
                // Every kernel writes its workgroup memory before reading it.
                zero_initialize_workgroup_memory: false,
            },
            cache: None,
        });
        let layout = pipeline.get_bind_group_layout(0);
        self.list.push(Kernel { name, pipeline, layout });
        KernelId((self.list.len() - 1) as u16)
    }
}

impl Kernels {
    /// Builds every pipeline; an invalid shader or pipeline is an error naming it.
    pub fn new(device: &wgpu::Device, reduce: Reduce) -> Result<Kernels, dory::Error> {
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut b = Builder { device, reduce, list: Vec::new() };
        let dtypes = [0.0, 1.0, 2.0];
        let gemv_m = b.module("gemv");
        let mut gemv = [[KernelId(0); 2]; 3];
        let mut gemv_scaled = [[KernelId(0); 2]; 3];
        let mut gemv_swiglu = [[KernelId(0); 2]; 3];
        for (i, &dt) in dtypes.iter().enumerate() {
            for (j, xrows) in [1.0, 4.0].into_iter().enumerate() {
                gemv[i][j] = b.add(&gemv_m, "gemv", &[("DTYPE", dt), ("XROWS", xrows)]);
                gemv_scaled[i][j] = b.add(&gemv_m, "gemv_scaled", &[("DTYPE", dt), ("XROWS", xrows)]);
                gemv_swiglu[i][j] =
                    b.add_as(&gemv_m, "gemv", "gemv_swiglu", &[("DTYPE", dt), ("XROWS", xrows), ("SWIGLU", 1.0)]);
            }
        }
        let gemm_m = b.module("gemm");
        let gemm = dtypes.map(|dt| b.add(&gemm_m, "gemm", &[("DTYPE", dt)]));
        let gemm_scaled = dtypes.map(|dt| b.add(&gemm_m, "gemm_scaled", &[("DTYPE", dt)]));
        let embed_m = b.module("embed");
        let embed = dtypes.map(|dt| b.add(&embed_m, "embed", &[("DTYPE", dt)]));
        let m = b.module("mix");
        let mix = b.add(&m, "mix", &[]);
        let m = b.module("residual");
        let residual = b.add(&m, "residual", &[]);
        let m = b.module("swiglu");
        let swiglu = b.add(&m, "swiglu", &[]);
        let m = b.module("copy");
        let copy = b.add(&m, "copy", &[]);
        let copy_slots = b.add(&m, "copy_slots", &[]);
        let copy4 = b.add(&m, "copy4", &[]);
        let m = b.module("prep");
        let prep = b.add(&m, "prep", &[]);
        let m = b.module("attend");
        let attend = b.add(&m, "attend", &[]);
        let m = b.module("combine");
        let combine = b.add(&m, "combine", &[]);
        let m = b.module("o1");
        let push = b.add(&m, "push", &[]);
        let combine_sealed = b.add(&m, "combine_sealed", &[]);
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(gpu_err(format!("the kernels ({reduce:?} reductions) do not build on this device: {e}")));
        }
        Ok(Kernels {
            list: b.list,
            gemv,
            gemv_scaled,
            gemv_swiglu,
            gemm,
            gemm_scaled,
            embed,
            mix,
            residual,
            swiglu,
            copy,
            copy_slots,
            copy4,
            prep,
            attend,
            combine,
            push,
            combine_sealed,
        })
    }

    pub fn get(&self, id: KernelId) -> &Kernel {
        &self.list[id.0 as usize]
    }
}
