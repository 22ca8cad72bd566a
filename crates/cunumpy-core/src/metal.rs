//! The checks of a `MetalKernel` call, made before any launch on every platform (the real Metal
//! device through MLX and the emulated one alike): the constructor's settings, the element types
//! MLX's Metal kernels take per argument, shapes, output layouts, the float64 policy, and the
//! grid and threadgroup. Pure logic over array descriptions; the binding reads the arrays.

use std::fmt;

/// What `float64` data does (the Apple GPU has no float64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Float64Policy {
    /// A float64 input or output is an error.
    Error,
    /// float64 data is computed in float32: inputs cast before the copy to the device, results
    /// cast back into the float64 output (each cast recorded).
    Cast,
}

impl Float64Policy {
    /// `"error"` or `"cast"`.
    pub fn parse(text: &str) -> Option<Float64Policy> {
        match text {
            "error" => Some(Float64Policy::Error),
            "cast" => Some(Float64Policy::Cast),
            _ => None,
        }
    }
}

/// A rejected call or constructor: the Python side raises `KernelArgumentTypeError`
/// (`Type`), `KernelArgumentValueError` (`Value`) or `LaunchShapeError` (`Shape`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetalCheckError {
    /// A wrong kind, dtype, layout or count.
    Type(String),
    /// A wrong value (a name, a setting).
    Value(String),
    /// A wrong grid or threadgroup.
    Shape(String),
}

impl fmt::Display for MetalCheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetalCheckError::Type(m) | MetalCheckError::Value(m) | MetalCheckError::Shape(m) => {
                f.write_str(m)
            }
        }
    }
}

/// The most threads of one threadgroup on Apple silicon GPUs.
pub const MAX_THREADS_PER_THREADGROUP: u64 = 1024;

/// The MSL type of the elements of a NumPy dtype (by name) that a Metal kernel takes, as MLX
/// names it in the signature it generates; None for float64, complex128 and anything else
/// Metal has no type for.
pub fn msl_type(dtype: &str) -> Option<&'static str> {
    Some(match dtype {
        "bool" => "bool",
        "int8" => "int8_t",
        "uint8" => "uint8_t",
        "int16" => "int16_t",
        "uint16" => "uint16_t",
        "int32" => "int32_t",
        "uint32" => "uint32_t",
        "int64" => "int64_t",
        "uint64" => "uint64_t",
        "float16" => "float16_t",
        "bfloat16" => "bfloat16_t",
        "float32" => "float",
        "complex64" => "complex64_t",
        _ => return None,
    })
}

/// The dtypes [`msl_type`] accepts, for messages.
pub const METAL_DTYPES: &str =
    "bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16, bfloat16, float32, complex64";

/// One array argument of a call as the binding read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetalArray {
    /// NumPy's dtype name.
    pub dtype: String,
    /// The shape.
    pub shape: Vec<i64>,
    /// Whether it is C-contiguous (row-major, no gaps).
    pub c_contiguous: bool,
    /// Whether it may be written.
    pub writeable: bool,
}

/// What a call does with one array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetalArgPlan {
    /// The MSL element type in the kernel's signature.
    pub msl_type: &'static str,
    /// float64 data computed in float32 (`float64="cast"`).
    pub cast_to_float32: bool,
    /// An input that is not C-contiguous: the copy to the device makes it row-contiguous.
    pub packed: bool,
}

/// A checked call: one plan per input and output, and the launch shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetalCallPlan {
    /// The inputs, in order.
    pub inputs: Vec<MetalArgPlan>,
    /// The outputs, in order.
    pub outputs: Vec<MetalArgPlan>,
    /// Threads in each dimension (MLX's grid).
    pub grid: [u32; 3],
    /// Threads per threadgroup in each dimension.
    pub threadgroup: [u32; 3],
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Checks the constructor's names: at least one output, every name a C identifier, no name
/// twice (inputs and outputs together).
pub fn check_names(
    kernel: &str,
    inputs: &[String],
    outputs: &[String],
) -> Result<(), MetalCheckError> {
    if outputs.is_empty() {
        return Err(MetalCheckError::Value(format!(
            "MetalKernel '{kernel}': needs at least one output name, got none"
        )));
    }
    let mut seen: Vec<&str> = Vec::new();
    for name in inputs.iter().chain(outputs) {
        if !is_identifier(name) {
            return Err(MetalCheckError::Value(format!(
                "MetalKernel '{kernel}': argument names must be C identifiers, got {name:?}"
            )));
        }
        if seen.contains(&name.as_str()) {
            return Err(MetalCheckError::Value(format!(
                "MetalKernel '{kernel}': input and output names must be distinct, {name:?} appears twice"
            )));
        }
        seen.push(name);
    }
    Ok(())
}

/// Checks a launch size (1 to 3 positive integers) and pads it to three dimensions.
pub fn dims(kernel: &str, what: &str, values: &[i64]) -> Result<[u32; 3], MetalCheckError> {
    if values.is_empty() || values.len() > 3 {
        return Err(MetalCheckError::Shape(format!(
            "MetalKernel '{kernel}': {what} must be 1 to 3 positive integers, got {values:?}"
        )));
    }
    let mut out = [1u32; 3];
    for (d, &v) in values.iter().enumerate() {
        out[d] = u32::try_from(v).ok().filter(|&v| v > 0).ok_or_else(|| {
            MetalCheckError::Shape(format!(
                "MetalKernel '{kernel}': {what} must be 1 to 3 positive integers (each below 2**32), got {values:?}"
            ))
        })?;
    }
    Ok(out)
}

fn plan_array(
    kernel: &str,
    role: &str,
    name: &str,
    a: &MetalArray,
    policy: Float64Policy,
    output: bool,
) -> Result<MetalArgPlan, MetalCheckError> {
    let (msl, cast) = match (msl_type(&a.dtype), a.dtype.as_str(), policy) {
        (Some(t), _, _) => (t, false),
        (None, "float64", Float64Policy::Cast) => ("float", true),
        (None, "float64", Float64Policy::Error) => {
            return Err(MetalCheckError::Type(format!(
            "MetalKernel '{kernel}': {role} '{name}' is float64, which the Apple GPU has no type \
for; expected float32 (or float64=\"cast\" to compute it in float32), got float64"
        )))
        }
        (None, other, _) => {
            return Err(MetalCheckError::Type(format!(
                "MetalKernel '{kernel}': {role} '{name}' has dtype {other}; expected one of \
{METAL_DTYPES}{}",
                if other == "complex128" {
                    " (complex128 has no Metal type)"
                } else {
                    ""
                }
            )))
        }
    };
    if output {
        if a.shape.is_empty() {
            return Err(MetalCheckError::Type(format!(
                "MetalKernel '{kernel}': output '{name}' must be an array of at least one dimension, got a 0-d array"
            )));
        }
        if !a.c_contiguous {
            return Err(MetalCheckError::Type(format!(
                "MetalKernel '{kernel}': output '{name}' must be C-contiguous (the kernel writes it \
row-major); got a non-contiguous array of shape {:?} (pass np.empty(shape) and copy after)",
                a.shape
            )));
        }
        if !a.writeable {
            return Err(MetalCheckError::Type(format!(
                "MetalKernel '{kernel}': output '{name}' must be writeable, got a read-only array"
            )));
        }
    }
    if a.shape.iter().any(|&d| d < 0 || d > i64::from(i32::MAX)) {
        return Err(MetalCheckError::Type(format!(
            "MetalKernel '{kernel}': {role} '{name}' has shape {:?}; each dimension must be below 2**31",
            a.shape
        )));
    }
    Ok(MetalArgPlan {
        msl_type: msl,
        cast_to_float32: cast,
        packed: !output && !a.c_contiguous,
    })
}

/// The settings of a `MetalKernel` that a call is checked against.
#[derive(Debug, Clone)]
pub struct MetalKernelSpec<'a> {
    /// The kernel's name.
    pub kernel: &'a str,
    /// Input names.
    pub inputs: &'a [String],
    /// Output names.
    pub outputs: &'a [String],
    /// The float64 policy.
    pub float64: Float64Policy,
    /// Threads per threadgroup (1 to 3 values).
    pub threadgroup: &'a [i64],
}

/// Checks one call: counts, per-argument dtypes and layouts, the grid (`n_threads`, by default
/// the first output's first axis) and the threadgroup.
pub fn plan_call(
    spec: &MetalKernelSpec<'_>,
    inputs: &[MetalArray],
    outputs: &[MetalArray],
    n_threads: Option<&[i64]>,
) -> Result<MetalCallPlan, MetalCheckError> {
    let kernel = spec.kernel;
    if inputs.len() != spec.inputs.len() {
        return Err(MetalCheckError::Type(format!(
            "MetalKernel '{kernel}': takes {} input(s) ({}), got {}",
            spec.inputs.len(),
            spec.inputs.join(", "),
            inputs.len()
        )));
    }
    if outputs.len() != spec.outputs.len() {
        return Err(MetalCheckError::Type(format!(
            "MetalKernel '{kernel}': out must hold {} array(s) ({}), got {}",
            spec.outputs.len(),
            spec.outputs.join(", "),
            outputs.len()
        )));
    }
    let ins = inputs
        .iter()
        .zip(spec.inputs)
        .map(|(a, n)| plan_array(kernel, "input", n, a, spec.float64, false))
        .collect::<Result<Vec<_>, _>>()?;
    let outs = outputs
        .iter()
        .zip(spec.outputs)
        .map(|(a, n)| plan_array(kernel, "output", n, a, spec.float64, true))
        .collect::<Result<Vec<_>, _>>()?;
    let grid = match n_threads {
        Some(n) => dims(kernel, "n_threads", n)?,
        None => {
            let first = outputs
                .first()
                .and_then(|o| o.shape.first())
                .copied()
                .unwrap_or(0);
            if first == 0 {
                [0, 1, 1]
            } else {
                dims(
                    kernel,
                    "n_threads (the first output's first axis)",
                    &[first],
                )?
            }
        }
    };
    let threadgroup = dims(kernel, "threadgroup", spec.threadgroup)?;
    let total: u64 = threadgroup.iter().map(|&t| u64::from(t)).product();
    if total > MAX_THREADS_PER_THREADGROUP {
        return Err(MetalCheckError::Shape(format!(
            "MetalKernel '{kernel}': a threadgroup of {threadgroup:?} has {total} threads; Apple \
GPUs allow at most {MAX_THREADS_PER_THREADGROUP}"
        )));
    }
    Ok(MetalCallPlan {
        inputs: ins,
        outputs: outs,
        grid,
        threadgroup,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(dtype: &str, shape: &[i64]) -> MetalArray {
        MetalArray {
            dtype: dtype.into(),
            shape: shape.to_vec(),
            c_contiguous: true,
            writeable: true,
        }
    }

    fn spec<'a>(
        inputs: &'a [String],
        outputs: &'a [String],
        f: Float64Policy,
    ) -> MetalKernelSpec<'a> {
        MetalKernelSpec {
            kernel: "k",
            inputs,
            outputs,
            float64: f,
            threadgroup: &[256],
        }
    }

    #[test]
    fn float64_is_an_error_or_a_cast() {
        let (i, o) = (vec!["x".to_string()], vec!["y".to_string()]);
        let err = plan_call(
            &spec(&i, &o, Float64Policy::Error),
            &[arr("float64", &[4])],
            &[arr("float32", &[4])],
            None,
        )
        .expect_err("the call is rejected");
        assert!(
            matches!(&err, MetalCheckError::Type(m) if m.contains("'k'") && m.contains("input 'x'"))
        );
        let p = plan_call(
            &spec(&i, &o, Float64Policy::Cast),
            &[arr("float64", &[4])],
            &[arr("float64", &[4])],
            None,
        )
        .expect("the call succeeds");
        assert!(p.inputs[0].cast_to_float32 && p.outputs[0].cast_to_float32);
        assert_eq!(p.grid, [4, 1, 1]);
        let err = plan_call(
            &spec(&i, &o, Float64Policy::Cast),
            &[arr("complex128", &[4])],
            &[arr("float32", &[4])],
            None,
        )
        .expect_err("the call is rejected");
        assert!(err.to_string().contains("complex128"));
    }

    #[test]
    fn counts_layouts_and_shapes_are_checked() {
        let (i, o) = (vec!["x".to_string()], vec!["y".to_string()]);
        let s = spec(&i, &o, Float64Policy::Error);
        assert!(plan_call(&s, &[], &[arr("float32", &[4])], None).is_err());
        let mut strided = arr("float32", &[4]);
        strided.c_contiguous = false;
        let p = plan_call(&s, &[strided.clone()], &[arr("float32", &[4])], None)
            .expect("the call succeeds");
        assert!(p.inputs[0].packed);
        assert!(plan_call(&s, &[arr("float32", &[4])], &[strided], None).is_err());
        let mut ro = arr("float32", &[4]);
        ro.writeable = false;
        assert!(plan_call(&s, &[arr("float32", &[4])], &[ro], None).is_err());
        assert!(matches!(
            plan_call(
                &s,
                &[arr("float32", &[4])],
                &[arr("float32", &[4])],
                Some(&[0])
            ),
            Err(MetalCheckError::Shape(_))
        ));
        let p = plan_call(
            &s,
            &[arr("int32", &[1])],
            &[arr("float32", &[4, 5])],
            Some(&[5, 4]),
        )
        .expect("the call succeeds");
        assert_eq!(p.grid, [5, 4, 1]);
        assert_eq!(p.inputs[0].msl_type, "int32_t");
        let big = MetalKernelSpec {
            threadgroup: &[64, 32],
            ..s
        };
        assert!(matches!(
            plan_call(&big, &[arr("float32", &[4])], &[arr("float32", &[4])], None),
            Err(MetalCheckError::Shape(_))
        ));
    }

    #[test]
    fn names_must_be_identifiers_and_distinct() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(check_names("k", &s(&["x"]), &s(&["y"])).is_ok());
        assert!(check_names("k", &s(&["x"]), &s(&[])).is_err());
        assert!(check_names("k", &s(&["x"]), &s(&["x"])).is_err());
        assert!(check_names("k", &s(&["1x"]), &s(&["y"])).is_err());
    }
}
