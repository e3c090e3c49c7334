//! Every kernel validates through naga and translates to SPIR-V (Vulkan), MSL (Metal)
//! and HLSL (DX12), with either reduction library and every pipeline-constant variant:
//! no GPU needed.

use dory_wgpu::kernels::{module_text, Reduce, MODULES};
use naga::back::PipelineConstants;
use naga::valid::{Capabilities, ShaderStages, SubgroupOperationSet, ValidationFlags, Validator};

fn validator(reduce: Reduce) -> Validator {
    // unpack2x16float needs SHADER_FLOAT16_IN_FLOAT32, which wgpu grants on Vulkan, Metal and DX12.
    let mut caps = Capabilities::IMMEDIATES | Capabilities::SHADER_FLOAT16_IN_FLOAT32;
    if reduce == Reduce::Subgroup {
        caps |= Capabilities::SUBGROUP;
    }
    let mut v = Validator::new(ValidationFlags::all(), caps);
    if reduce == Reduce::Subgroup {
        v.subgroup_stages(ShaderStages::COMPUTE).subgroup_operations(SubgroupOperationSet::all());
    }
    v
}

/// The pipeline constants each module is built with.
fn variants(name: &str) -> Vec<Vec<(&'static str, f64)>> {
    match name {
        "gemv" => {
            let mut all = vec![];
            for d in [0.0, 1.0, 2.0] {
                for x in [1.0, 4.0] {
                    for s in [0.0, 1.0] {
                        all.push(vec![("DTYPE", d), ("XROWS", x), ("SWIGLU", s)]);
                    }
                }
            }
            all
        }
        "gemm" | "embed" => [0.0, 1.0, 2.0].iter().map(|&d| vec![("DTYPE", d)]).collect(),
        _ => vec![vec![]],
    }
}

#[test]
fn every_kernel_validates_and_translates() {
    let mut checked = 0;
    for reduce in [Reduce::Subgroup, Reduce::Shared] {
        for m in MODULES {
            let text = module_text(m, reduce);
            let module = naga::front::wgsl::parse_str(&text)
                .unwrap_or_else(|e| panic!("{} ({reduce:?}): {}", m.name, e.emit_to_string(&text)));
            let info = validator(reduce)
                .validate(&module)
                .unwrap_or_else(|e| panic!("{} ({reduce:?}): {}", m.name, e.emit_to_string(&text)));
            for ep in &module.entry_points {
                for constants in variants(m.name) {
                    let pc: PipelineConstants = constants.iter().map(|(k, v)| (k.to_string(), *v)).collect();
                    let (module, info) = naga::back::pipeline_constants::process_overrides(
                        &module,
                        &info,
                        Some((naga::ShaderStage::Compute, &ep.name)),
                        &pc,
                    )
                    .unwrap_or_else(|e| panic!("{}::{} {constants:?}: {e}", m.name, ep.name));
                    let what = format!("{}::{} ({reduce:?}, {constants:?})", m.name, ep.name);
                    let spv_opts = naga::back::spv::Options::default();
                    let pipeline = naga::back::spv::PipelineOptions {
                        shader_stage: naga::ShaderStage::Compute,
                        entry_point: ep.name.clone(),
                    };
                    naga::back::spv::write_vec(&module, &info, &spv_opts, Some(&pipeline))
                        .unwrap_or_else(|e| panic!("{what}: SPIR-V: {e}"));
                    let msl_opts = naga::back::msl::Options { lang_version: (2, 4), ..Default::default() };
                    let msl_pipeline = naga::back::msl::PipelineOptions {
                        entry_point: Some((naga::ShaderStage::Compute, ep.name.clone())),
                        ..Default::default()
                    };
                    naga::back::msl::write_string(&module, &info, &msl_opts, &msl_pipeline)
                        .unwrap_or_else(|e| panic!("{what}: MSL: {e}"));
                    let hlsl_opts = naga::back::hlsl::Options {
                        shader_model: naga::back::hlsl::ShaderModel::V6_0,
                        // wgpu's DX12 backend puts the immediates in root constants.
                        immediates_target: Some(naga::back::hlsl::BindTarget {
                            space: 0,
                            register: 0,
                            ..Default::default()
                        }),
                        ..Default::default()
                    };
                    let mut out = String::new();
                    let hlsl_pipeline = naga::back::hlsl::PipelineOptions {
                        entry_point: Some((naga::ShaderStage::Compute, ep.name.clone())),
                    };
                    naga::back::hlsl::Writer::new(&mut out, &hlsl_opts, &hlsl_pipeline)
                        .write(&module, &info, None)
                        .unwrap_or_else(|e| panic!("{what}: HLSL: {e}"));
                    checked += 1;
                }
            }
        }
    }
    // 11 modules, 16 entry points; gemv in 12 variants (dtype × rows × SwiGLU) and gemm,
    // embed in 3 each.
    assert_eq!(checked, 2 * (2 * 12 + 2 * 3 + 3 + 11), "every pipeline checked");
}
