//! Every pipeline the backend builds, as `Kernels::plan` lists it for each set of options,
//! validates through naga and translates to SPIR-V (Vulkan), MSL (Metal) and HLSL (DX12;
//! not the tensor-core GEMM, which wgpu offers on Vulkan only): no GPU needed.

use dory_wgpu::kernels::{coop_workgroup_bytes, module_text, Kernels, Options, Reduce, Slicing, Spec, MODULES};
use naga::back::PipelineConstants;
use naga::valid::{Capabilities, ShaderStages, SubgroupOperationSet, ValidationFlags, Validator};

fn validator(reduce: Reduce, coop: bool) -> Validator {
    // unpack2x16float needs SHADER_FLOAT16_IN_FLOAT32, which wgpu grants on Vulkan, Metal and DX12.
    let mut caps = Capabilities::IMMEDIATES | Capabilities::SHADER_FLOAT16_IN_FLOAT32;
    if coop {
        caps |= Capabilities::SHADER_FLOAT16 | Capabilities::COOPERATIVE_MATRIX | Capabilities::SUBGROUP_BARRIER;
    }
    if reduce == Reduce::Subgroup {
        caps |= Capabilities::SUBGROUP;
    }
    let mut v = Validator::new(ValidationFlags::all(), caps);
    if reduce == Reduce::Subgroup {
        v.subgroup_stages(ShaderStages::COMPUTE).subgroup_operations(SubgroupOperationSet::all());
    }
    v
}

/// The option sets the backend builds its kernels under: either reduction library, with
/// and without tensor cores, attention's tiles of 64 and 16 keys, q8_0's kernels, the
/// kernel shapes the benchmarks compare, and attention on the tensor cores.
fn option_sets() -> Vec<Options> {
    let mut all = vec![];
    for reduce in [Reduce::Subgroup, Reduce::Shared] {
        all.push(Options::new(reduce, false, 16384));
        all.push(Options::new(reduce, false, 49152));
        for attend_lanes in [4, 16] {
            all.push(Options { attend_lanes, ..Options::new(reduce, false, 16384) });
        }
        all.push(Options { q8: true, ..Options::new(reduce, false, 16384) });
    }
    for o in dory_wgpu::kernels::kernel_shapes(Options::new(Reduce::Subgroup, true, 49152), 49152) {
        all.push(o);
    }
    // A prompt's attention on the tensor cores at any head's dims (the defaults' from 128,
    // none under DORY_WGPU_ATTEND_COOP=0).
    all.push(Options { attend_coop: Some(16), ..Options::new(Reduce::Subgroup, true, 49152) });
    // A fixed subgroup size, as NVIDIA's (32) and lavapipe's (8) adapters report.
    for subgroup in [32, 8] {
        all.push(Options { subgroup, ..Options::new(Reduce::Subgroup, true, 49152) });
    }
    all
}

fn translate(spec: &Spec, reduce: Reduce) -> String {
    let m = spec.module;
    let text = module_text(m, reduce);
    let module = naga::front::wgsl::parse_str(&text)
        .unwrap_or_else(|e| panic!("{} ({reduce:?}): {}", m.name, e.emit_to_string(&text)));
    let info = validator(reduce, m.coop)
        .validate(&module)
        .unwrap_or_else(|e| panic!("{} ({reduce:?}): {}", m.name, e.emit_to_string(&text)));
    let pc: PipelineConstants = spec.constants.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let what = format!("{}::{} ({reduce:?}, {:?})", m.name, spec.entry, spec.constants);
    let (module, info) = naga::back::pipeline_constants::process_overrides(
        &module,
        &info,
        Some((naga::ShaderStage::Compute, spec.entry)),
        &pc,
    )
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    let entry = spec.entry.to_string();
    let spv_opts = naga::back::spv::Options::default();
    let pipeline =
        naga::back::spv::PipelineOptions { shader_stage: naga::ShaderStage::Compute, entry_point: entry.clone() };
    naga::back::spv::write_vec(&module, &info, &spv_opts, Some(&pipeline))
        .unwrap_or_else(|e| panic!("{what}: SPIR-V: {e}"));
    let msl_opts = naga::back::msl::Options { lang_version: (2, 4), ..Default::default() };
    let msl_pipeline = naga::back::msl::PipelineOptions {
        entry_point: Some((naga::ShaderStage::Compute, entry.clone())),
        ..Default::default()
    };
    naga::back::msl::write_string(&module, &info, &msl_opts, &msl_pipeline)
        .unwrap_or_else(|e| panic!("{what}: MSL: {e}"));
    // wgpu 30 has no cooperative matrices on DX12: there the backend runs the plain GEMM.
    if m.coop {
        return what;
    }
    let hlsl_opts = naga::back::hlsl::Options {
        shader_model: naga::back::hlsl::ShaderModel::V6_0,
        // wgpu's DX12 backend puts the immediates in root constants.
        immediates_target: Some(naga::back::hlsl::BindTarget { space: 0, register: 0, ..Default::default() }),
        ..Default::default()
    };
    let mut out = String::new();
    let hlsl_pipeline = naga::back::hlsl::PipelineOptions { entry_point: Some((naga::ShaderStage::Compute, entry)) };
    naga::back::hlsl::Writer::new(&mut out, &hlsl_opts, &hlsl_pipeline)
        .write(&module, &info, None)
        .unwrap_or_else(|e| panic!("{what}: HLSL: {e}"));
    what
}

#[test]
fn every_kernel_validates_and_translates() {
    let mut checked = std::collections::BTreeSet::new();
    for options in option_sets() {
        let kernels = Kernels::plan(options);
        for spec in &kernels.specs {
            checked.insert(translate(spec, options.reduce));
        }
        // Every module the backend lists is in some plan.
        for m in MODULES {
            assert!(!m.coop || options.coop || kernels.specs.iter().all(|s| s.module.name != m.name));
        }
    }
    for m in MODULES {
        assert!(checked.iter().any(|w| w.starts_with(&format!("{}::", m.name))), "{} was never checked", m.name);
    }
    eprintln!("{} pipelines translated", checked.len());
}

/// wgpu does not check workgroup memory against the device's limit, so the options must:
/// every tile the backend or the benchmarks would build fits, and a device with less than
/// the default tile takes has no tensor cores.
#[test]
fn tensor_core_tiles_fit_the_workgroup_memory() {
    for limit in [16384, 32768, 49152] {
        let o = Options::new(Reduce::Subgroup, true, limit);
        assert!(!o.coop || coop_workgroup_bytes(o.coop_tile) <= limit, "{o:?} at {limit}");
        for v in dory_wgpu::kernels::kernel_shapes(o, limit) {
            assert!(!v.coop || coop_workgroup_bytes(v.coop_tile) <= limit, "{v:?} at {limit}");
        }
    }
    assert_eq!(coop_workgroup_bytes((2, 2)), 4096);
    assert_eq!(coop_workgroup_bytes(Options::new(Reduce::Subgroup, true, 49152).coop_tile), 1024);
    assert!(!Options::new(Reduce::Subgroup, true, 512).coop);
}

/// Slices where the blocks are few and the inputs many.
#[test]
fn a_few_blocks_take_slices_of_the_inputs() {
    let s = Options::new(Reduce::Subgroup, true, 49152).coop_slicing;
    // (blocks, k16, slices) at 512 rows: dory-tiny's q|k|v|gate, out, gate|up and down, the
    // larger config's out and gate|up; then fewer inputs.
    for (blocks, k16, n) in
        [(240, 384, 4), (96, 384, 4), (512, 384, 2), (96, 1024, 4), (512, 2048, 2), (2816, 2048, 1), (96, 96, 1)]
    {
        assert_eq!(s.slices(blocks, k16), n, "{blocks} blocks, k16 {k16}");
    }
    assert_eq!(Slicing { most: 2, ..s }.slices(96, 1024), 2);
    assert_eq!(Slicing { target: 0, ..s }.slices(1, 4096), 1);
    assert_eq!(Options::new(Reduce::Subgroup, true, 16384).coop_slicing.most, 4);
}

/// attend_coop.wgsl's workgroup memory, every array of its module counted, is what the
/// options check against the device's limit.
#[test]
fn attention_on_tensor_cores_takes_the_memory_it_states() {
    use dory_wgpu::kernels::ATTEND_COOP_BYTES;
    let m = MODULES.iter().find(|m| m.name == "attend_coop").expect("listed");
    let text = module_text(m, Reduce::Subgroup);
    let module = naga::front::wgsl::parse_str(&text).expect("parses");
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).expect("lays out");
    let bytes: u32 = module
        .global_variables
        .iter()
        .filter(|(_, g)| g.space == naga::AddressSpace::WorkGroup)
        .map(|(_, g)| layouter[g.ty].size)
        .sum();
    assert_eq!(bytes, ATTEND_COOP_BYTES);
    // Never where the memory is short, though the defaults ask for it.
    assert!(Options::new(Reduce::Subgroup, true, ATTEND_COOP_BYTES - 1).attend_coop.is_none());
}
