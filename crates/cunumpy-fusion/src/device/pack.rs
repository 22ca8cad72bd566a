//! The values of a launch's kernel parameters, as the bytes `cuLaunchKernel` reads: device
//! pointers of the inputs, outputs and workspace buffers, scalar parameters converted to their
//! declared C types, and the sizes and strides the planner fixed. Pure data: the binding turns
//! the result into a launch buffer.

use crate::codegen::dialect::c_type;
use crate::device::DevicePlan;
use crate::error::{FusionError, Result};
use crate::plan::{Launch, ParamValue};
use crate::scalar::elem::Sv;
use crate::scalar::ScalarValue;

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

/// The bytes of every parameter of `launch` (a launch of `plan`), in parameter order. Fails
/// when a pointer or scalar is missing, a scalar cannot be converted to its C type, or a size
/// does not fit its C type.
pub fn launch_param_values(
    plan: &DevicePlan,
    launch: &Launch,
    ptrs: &DevicePointers<'_>,
    scalars: &[ScalarValue],
) -> Result<Vec<Vec<u8>>> {
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
        let bytes = match &p.value {
            ParamValue::Input(i) => ptr(ptrs.inputs, *i, "input")?.to_le_bytes().to_vec(),
            ParamValue::Output(i) => ptr(ptrs.outputs, *i, "output")?.to_le_bytes().to_vec(),
            ParamValue::Workspace { offset } => {
                if ptrs.workspace == 0 || *offset >= plan.workspace_bytes().max(1) {
                    return Err(bad(
                        launch,
                        &p.name,
                        format!("a workspace of {} bytes", plan.workspace_bytes()),
                        format!("address {:#x}, offset {offset}", ptrs.workspace),
                    ));
                }
                (ptrs.workspace + *offset as u64).to_le_bytes().to_vec()
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
                let want = c_type(dtype);
                if want != p.ctype {
                    return Err(bad(launch, &p.name, want.into(), p.ctype.clone()));
                }
                let cast = value
                    .to_sv(dtype)
                    .ok_or_else(|| bad(launch, &p.name, dtype.to_string(), format!("{value:?}")))?;
                Sv::c_bytes(cast)
            }
            ParamValue::Int(v) => match p.ctype.as_str() {
                "int" => i32::try_from(*v)
                    .map_err(|_| bad(launch, &p.name, "a 32-bit int".into(), v.to_string()))?
                    .to_le_bytes()
                    .to_vec(),
                "long long" => v.to_le_bytes().to_vec(),
                other => {
                    return Err(bad(
                        launch,
                        &p.name,
                        "int or long long".into(),
                        other.into(),
                    ))
                }
            },
        };
        out.push(bytes);
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
    use cunumpy_core::dtype::DType;

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
        let values = launch_param_values(&p, launch, &ptrs, &[ScalarValue::Float(2.5)]).unwrap();
        assert_eq!(values.len(), launch.params.len());
        for (param, bytes) in launch.params.iter().zip(&values) {
            match &param.value {
                ParamValue::Input(0) => assert_eq!(bytes, &0x1000u64.to_le_bytes()),
                ParamValue::Output(0) => assert_eq!(bytes, &0x2000u64.to_le_bytes()),
                // a weak Python float meets float32: the parameter is a float
                ParamValue::Scalar(0) => {
                    assert_eq!(param.ctype, planned.scalars[0].0.c_name());
                    assert_eq!(bytes.len(), planned.scalars[0].0.itemsize());
                }
                ParamValue::Int(v) => assert_eq!(bytes, &(*v as i32).to_le_bytes()),
                other => panic!("unexpected parameter {other:?}"),
            }
        }
        let missing = launch_param_values(&p, launch, &ptrs, &[]);
        assert!(missing.unwrap_err().to_string().contains("scalar 0"));
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
                let values = launch_param_values(&p, l, &ptrs, &[]).unwrap();
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
                    assert!(launch_param_values(&p, l, &no_ws, &[]).is_err());
                }
            }
        }
        assert!(saw_workspace);
    }
}
