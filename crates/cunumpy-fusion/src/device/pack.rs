//! The arguments of a launch's kernel parameters, for core's `ArgPlan` (the packer of user
//! kernels, which packs fused launches too): device pointers of the inputs, outputs and
//! workspace buffers, scalar parameters converted to their declared dtypes, and the sizes and
//! strides the planner fixed. [`launch_signature`] is the launch's parameter list as a
//! kernel signature, [`launch_args`] one call's values; the runtime packs them.

use crate::codegen::cuda::param_c_type;
use crate::device::DevicePlan;
use crate::error::{FusionError, Result};
use crate::plan::{Launch, ParamValue};
use crate::scalar::{from_sv, to_sv, ScalarValue};
use cunumpy_core::args::{Arg, DeviceArray, Scalar, ScalarSource};
use cunumpy_core::dtype::DType;
use cunumpy_core::signature::{Param, ParamKind, Signature};

/// Device addresses of one call's arrays.
#[derive(Clone, Copy, Debug)]
pub struct DevicePointers<'a> {
    /// One per plan input, in order.
    pub inputs: &'a [u64],
    /// One per plan output, in order.
    pub outputs: &'a [u64],
    /// Base of the workspace allocation (at least `DevicePlan::workspace_bytes`; unused when 0).
    pub workspace: u64,
}

fn bad(launch: &Launch, param: &str, expected: String, got: String) -> FusionError {
    FusionError::Arguments {
        what: format!("launch `{}`: parameter `{param}`", launch.name),
        expected,
        got,
    }
}

/// The parameter list of `launch` as the signature of a user kernel: what core's `ArgPlan` is
/// built from (one plan per launch, made once per loaded plan).
pub fn launch_signature(launch: &Launch) -> Signature {
    Signature {
        kernel: launch.name.clone(),
        params: launch
            .params
            .iter()
            .map(|p| Param {
                name: p.name.clone(),
                decl: format!("{} {}", param_c_type(p), p.name),
                kind: p.kind.clone(),
                default: None,
            })
            .collect(),
        template_params: Vec::new(),
        expression: launch.name.clone(),
    }
}

/// The argument of every parameter of `launch` (a launch of `plan`) for one call on device
/// `device`, in parameter order, for the `ArgPlan` of [`launch_signature`]. Fails when a
/// pointer or scalar is missing or a scalar does not convert to its declared dtype (the
/// packer then checks each value against its parameter, as for a user kernel).
pub fn launch_args(
    plan: &DevicePlan,
    launch: &Launch,
    ptrs: &DevicePointers<'_>,
    scalars: &[ScalarValue],
    device: i32,
) -> Result<Vec<Arg<'static>>> {
    let mut out = Vec::with_capacity(launch.params.len());
    for p in &launch.params {
        let ptr = |list: &[u64], i: usize, what: &str| {
            list.get(i).copied().ok_or_else(|| {
                bad(
                    launch,
                    &p.name,
                    format!("{what} {i}"),
                    format!("{} {what}(s)", list.len()),
                )
            })
        };
        let array = |ptr: u64| {
            let dtype = match &p.kind {
                ParamKind::Pointer { dtype: Some(d), .. } => Ok(*d),
                _ => Err("void"),
            };
            Arg::DeviceArray(DeviceArray {
                ptr,
                dtype,
                shape: &[],
                strides: &[],
                c_contiguous: true,
                device,
            })
        };
        let arg = match &p.value {
            ParamValue::Input(i) => array(ptr(ptrs.inputs, *i, "input")?),
            ParamValue::Output(i) => array(ptr(ptrs.outputs, *i, "output")?),
            ParamValue::Workspace { offset } => {
                if ptrs.workspace == 0 || *offset >= plan.workspace_bytes().max(1) {
                    return Err(bad(
                        launch,
                        &p.name,
                        format!("a workspace of {} bytes", plan.workspace_bytes()),
                        format!("address {:#x}, offset {offset}", ptrs.workspace),
                    ));
                }
                array(ptrs.workspace + *offset as u64)
            }
            ParamValue::Scalar(i) => {
                let value = scalars.get(*i).ok_or_else(|| {
                    bad(
                        launch,
                        &p.name,
                        format!("scalar {i}"),
                        format!("{} scalar(s)", scalars.len()),
                    )
                })?;
                let dtype = plan.scalars.get(*i).copied().ok_or_else(|| {
                    bad(launch, &p.name, "a declared scalar".into(), format!("{i}"))
                })?;
                if p.kind != ParamKind::Scalar(dtype) {
                    return Err(bad(launch, &p.name, dtype.to_string(), param_c_type(p)));
                }
                let cast = to_sv(*value, dtype)
                    .ok_or_else(|| bad(launch, &p.name, dtype.to_string(), format!("{value:?}")))?;
                // the value is now exactly of the parameter's dtype: the packer's checks pass
                // and it writes these very bits
                Arg::Scalar(from_sv(cast), ScalarSource::NumPy(dtype))
            }
            ParamValue::Int(v) => {
                Arg::Scalar(Scalar::Int((*v).into()), ScalarSource::NumPy(DType::Int64))
            }
        };
        out.push(arg);
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::device::DeviceTarget;
    use crate::ir::graph::{Axis, GraphBuilder, ReduceKind};
    use crate::ir::ops::Op;
    use crate::plan::plan;
    use cunumpy_core::args::ArgPlan;

    /// What core's packer writes for each parameter of `launch` (the bytes of its slot).
    fn packed(
        p: &DevicePlan,
        launch: &Launch,
        ptrs: &DevicePointers<'_>,
        svs: &[ScalarValue],
    ) -> std::result::Result<Vec<Vec<u8>>, String> {
        let args = launch_args(p, launch, ptrs, svs, 0).map_err(|e| e.to_string())?;
        let plan = ArgPlan::new(&launch_signature(launch), &|_| None).map_err(|e| e.message)?;
        let mut buffer = plan.new_buffer();
        for (i, arg) in args.iter().enumerate() {
            plan.pack(i, arg, 0, &mut buffer).map_err(|e| e.message)?;
        }
        Ok((0..args.len()).map(|i| buffer.bytes_of(&plan, i)).collect())
    }

    #[test]
    fn packs_pointers_scalars_and_sizes_in_order() {
        let mut g = GraphBuilder::new();
        let a = g.input(DType::Float32, 1).unwrap();
        let s = g.scalar(DType::Float64, true).unwrap();
        let y = g.op(Op::Mul, &[a, s]).unwrap();
        g.output(y).unwrap();
        let planned = plan(&g.finish().unwrap(), &[vec![10]]).unwrap();
        let p = planned.for_device(DeviceTarget::H200);
        let launch = &p.kernels[0].launches[0];
        let ptrs = DevicePointers {
            inputs: &[0x1000],
            outputs: &[0x2000],
            workspace: 0,
        };
        let values = packed(&p, launch, &ptrs, &[ScalarValue::Float(2.5)]).unwrap();
        assert_eq!(values.len(), launch.params.len());
        for (param, bytes) in launch.params.iter().zip(&values) {
            match &param.value {
                ParamValue::Input(0) => assert_eq!(bytes, &0x1000u64.to_le_bytes()),
                ParamValue::Output(0) => assert_eq!(bytes, &0x2000u64.to_le_bytes()),
                // the parameter has the scalar's declared dtype, and holds 2.5 in it
                ParamValue::Scalar(0) => {
                    let declared = planned.scalars[0].0;
                    assert_eq!(param.kind, ParamKind::Scalar(declared));
                    let want = match declared {
                        DType::Float32 => 2.5f32.to_le_bytes().to_vec(),
                        _ => 2.5f64.to_le_bytes().to_vec(),
                    };
                    assert_eq!(bytes, &want);
                }
                ParamValue::Int(v) => assert_eq!(bytes, &(*v as i32).to_le_bytes()),
                other => panic!("unexpected parameter {other:?}"),
            }
        }
        let missing = packed(&p, launch, &ptrs, &[]);
        assert!(missing.unwrap_err().contains("scalar 0"));
    }

    #[test]
    fn workspace_offsets_are_added_and_a_missing_workspace_is_an_error() {
        let mut g = GraphBuilder::new();
        let a = g.input(DType::Float64, 1).unwrap();
        let m = g
            .reduce(ReduceKind::Mean { ddof: 0 }, a, &Axis::All, false)
            .unwrap();
        let d = g.op(Op::Sub, &[a, m]).unwrap();
        g.output(d).unwrap();
        let p = plan(&g.finish().unwrap(), &[vec![1 << 20]])
            .unwrap()
            .for_device(DeviceTarget::H200);
        assert!(p.workspace_bytes() > 0);
        let ptrs = DevicePointers {
            inputs: &[0x10_0000],
            outputs: &[0x20_0000],
            workspace: 0x30_0000,
        };
        let mut saw_workspace = false;
        for k in &p.kernels {
            for l in &k.launches {
                let values = packed(&p, l, &ptrs, &[]).unwrap();
                for (param, bytes) in l.params.iter().zip(&values) {
                    if let ParamValue::Workspace { offset } = param.value {
                        saw_workspace = true;
                        assert_eq!(bytes, &(0x30_0000u64 + offset as u64).to_le_bytes());
                    }
                }
                let no_ws = DevicePointers {
                    workspace: 0,
                    ..ptrs
                };
                if l.params
                    .iter()
                    .any(|p| matches!(p.value, ParamValue::Workspace { .. }))
                {
                    assert!(packed(&p, l, &no_ws, &[]).is_err());
                }
            }
        }
        assert!(saw_workspace);
    }

    #[test]
    fn a_size_beyond_its_c_type_is_refused_by_the_packer() {
        let launch = Launch {
            name: "k".into(),
            grid: 1,
            block: 32,
            shared_bytes: 0,
            params: vec![crate::plan::Param {
                name: "n".into(),
                kind: ParamKind::Scalar(DType::Int32),
                value: ParamValue::Int(1 << 40),
            }],
        };
        let mut g = GraphBuilder::new();
        let a = g.input(DType::Float32, 1).unwrap();
        g.output(a).unwrap();
        let p = plan(&g.finish().unwrap(), &[vec![4]])
            .unwrap()
            .for_device(DeviceTarget::H200);
        let ptrs = DevicePointers {
            inputs: &[],
            outputs: &[],
            workspace: 0,
        };
        let err = packed(&p, &launch, &ptrs, &[]).unwrap_err();
        assert!(
            err.contains("k(): argument 0 (int n)") && err.contains("out of range"),
            "{err}"
        );
    }
}
