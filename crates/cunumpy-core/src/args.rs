//! Argument plans: built once per kernel from its signature, they check, cast and pack each
//! call's arguments into the buffer that `cuLaunchKernel` (and the emulator) read.
//!
//! The binding turns each Python object into an [`Arg`] (reading only what the parameter
//! needs); everything decided about that value is decided here.

use crate::dtype::{DType, DTypeKind};
use crate::signature::{ParamKind, Signature};
use std::ffi::c_void;

/// Which Python exception an argument error maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgErrorKind {
    Type,
    Value,
    Overflow,
}

/// A rejected argument, with a message naming the kernel, the argument and its declaration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ArgError {
    pub kind: ArgErrorKind,
    pub message: String,
}

/// A scalar value as the caller gave it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i128),
    Float(f64),
    Complex(f64, f64),
}

/// Where a scalar came from: NumPy scalars keep their dtype and follow NumPy's safe casting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarSource {
    Python,
    NumPy(DType),
}

/// What the binding read from a device array.
#[derive(Clone, Copy, Debug)]
pub struct DeviceArray<'a> {
    pub ptr: u64,
    /// The dtype, or its NumPy name when cunumpy has no C type for it.
    pub dtype: Result<DType, &'a str>,
    pub shape: &'a [i64],
    /// Byte strides; only read for view parameters.
    pub strides: &'a [i64],
    pub c_contiguous: bool,
    pub device: i32,
}

/// One argument of a call.
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    Scalar(Scalar, ScalarSource),
    DeviceArray(DeviceArray<'a>),
    /// A host (NumPy) array: never copied, always refused for pointer parameters.
    HostArray {
        type_name: &'a str,
    },
    /// The packed bytes of a `CudaStruct` value.
    Struct {
        name: &'a str,
        bytes: &'a [u8],
    },
    Other {
        type_name: &'a str,
    },
    /// Python's `None`: a NULL pointer for a pointer parameter, refused for anything else.
    Null,
}

/// 16-byte aligned storage, so any by-value parameter can be read in place (the emulator
/// dereferences these slots as typed pointers).
#[derive(Clone, Copy, Default)]
#[repr(C, align(16))]
struct Slot([u8; 16]);

/// The launch buffer of one call: parameter values and the `void*` array pointing at them.
pub struct LaunchBuffer {
    slots: Vec<Slot>,
    pointers: Vec<*mut c_void>,
}

// SAFETY: the raw pointers point only into `slots`' own heap allocation, which moves with the
// buffer (moving a Vec does not move its heap data), so the buffer can go to another thread.
unsafe impl Send for LaunchBuffer {}

impl Clone for LaunchBuffer {
    /// A copy whose `void*` array points into the copy's own slots (a recorded launch keeps
    /// its own buffer, e.g. one node of a captured graph).
    fn clone(&self) -> Self {
        let slots = self.slots.clone();
        let mut copy = LaunchBuffer {
            pointers: Vec::with_capacity(self.pointers.len()),
            slots,
        };
        let old_base = self.slots.as_ptr() as usize;
        let new_base = copy.slots.as_mut_ptr();
        for p in &self.pointers {
            let offset_slots = (*p as usize).saturating_sub(old_base) / std::mem::size_of::<Slot>();
            copy.pointers
                .push(new_base.wrapping_add(offset_slots).cast::<c_void>());
        }
        copy
    }
}

impl LaunchBuffer {
    fn write(&mut self, first_slot: usize, bytes: &[u8]) {
        for (k, chunk) in bytes.chunks(16).enumerate() {
            if let Some(slot) = self.slots.get_mut(first_slot + k) {
                slot.0[..chunk.len()].copy_from_slice(chunk);
            }
        }
    }

    /// A buffer for an unchecked launch (`check_signature=False`): each value's bytes as given.
    pub fn from_raw_values(values: &[Vec<u8>]) -> LaunchBuffer {
        let firsts: Vec<usize> = values
            .iter()
            .scan(0usize, |next, v| {
                let first = *next;
                *next += v.len().div_ceil(16).max(1);
                Some(first)
            })
            .collect();
        let n_slots = values.iter().map(|v| v.len().div_ceil(16).max(1)).sum();
        let mut buffer = LaunchBuffer {
            slots: vec![Slot::default(); n_slots],
            pointers: Vec::with_capacity(values.len()),
        };
        for (value, first) in values.iter().zip(&firsts) {
            buffer.write(*first, value);
        }
        let base = buffer.slots.as_mut_ptr();
        for first in firsts {
            buffer
                .pointers
                .push(base.wrapping_add(first).cast::<c_void>());
        }
        buffer
    }

    /// The `void** kernelParams` of `cuLaunchKernel`: valid while `self` is alive and not
    /// modified.
    pub fn params(&mut self) -> *mut *mut c_void {
        self.pointers.as_mut_ptr()
    }

    /// The bytes of parameter `index` (for tests and the emulator's checks).
    pub fn bytes_of(&self, plan: &ArgPlan, index: usize) -> Vec<u8> {
        let Some(p) = plan.params.get(index) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(p.size);
        for k in 0..p.size.div_ceil(16) {
            if let Some(slot) = self.slots.get(p.first_slot + k) {
                out.extend_from_slice(&slot.0);
            }
        }
        out.truncate(p.size);
        out
    }
}

struct PlannedParam {
    label: String,
    /// The C declaration as written (`int n`), for the argument-count message.
    decl: String,
    kind: ParamKind,
    first_slot: usize,
    size: usize,
    default: Option<String>,
}

/// The per-kernel plan: one entry per parameter with its slot in the launch buffer.
pub struct ArgPlan {
    kernel: String,
    params: Vec<PlannedParam>,
    n_slots: usize,
}

fn error(kind: ArgErrorKind, message: String) -> ArgError {
    ArgError { kind, message }
}

impl ArgPlan {
    /// Builds the plan; `struct_size` gives the byte size of each by-value struct type.
    pub fn new(
        signature: &Signature,
        struct_size: &dyn Fn(&str) -> Option<usize>,
    ) -> Result<ArgPlan, ArgError> {
        let mut params = Vec::with_capacity(signature.params.len());
        let mut n_slots = 0;
        for (i, p) in signature.params.iter().enumerate() {
            let label = format!("{}(): argument {i} ({})", signature.kernel, p.decl);
            let size = p.kind.size(struct_size).ok_or_else(|| {
                error(
                    ArgErrorKind::Type,
                    format!(
                        "{label}: no CudaStruct describes this struct type; pass it in structs="
                    ),
                )
            })?;
            params.push(PlannedParam {
                label,
                decl: p.decl.clone(),
                kind: p.kind.clone(),
                first_slot: n_slots,
                size,
                default: p.default.clone(),
            });
            n_slots += size.div_ceil(16).max(1);
        }
        Ok(ArgPlan {
            kernel: signature.kernel.clone(),
            params,
            n_slots,
        })
    }

    pub fn kernel(&self) -> &str {
        &self.kernel
    }

    pub fn len(&self) -> usize {
        self.params.len()
    }

    pub fn is_empty(&self) -> bool {
        self.params.is_empty()
    }

    /// What parameter `index` takes (tells the binding what to read from the object).
    pub fn kind(&self, index: usize) -> Option<&ParamKind> {
        self.params.get(index).map(|p| &p.kind)
    }

    /// `k(): argument i (decl)`, the prefix of every message about that argument.
    pub fn label(&self, index: usize) -> &str {
        self.params.get(index).map_or("", |p| p.label.as_str())
    }

    /// A fresh launch buffer whose pointer array already points at the slots.
    pub fn new_buffer(&self) -> LaunchBuffer {
        let mut buffer = LaunchBuffer {
            slots: vec![Slot::default(); self.n_slots],
            pointers: Vec::with_capacity(self.params.len()),
        };
        let base = buffer.slots.as_mut_ptr();
        for p in &self.params {
            // Pointer arithmetic within the allocation (wrapping_add is safe; the slot
            // exists because n_slots covers every parameter).
            buffer
                .pointers
                .push(base.wrapping_add(p.first_slot).cast::<c_void>());
        }
        buffer
    }

    /// Checks the number of arguments after argument objects were flattened: every
    /// parameter, or fewer when each one left out has a C default value. Too few names every
    /// missing parameter without a default (index and declaration); too many says how many
    /// are extra.
    pub fn check_count(&self, given: usize) -> Result<(), ArgError> {
        let expected = self.params.len();
        if given == expected {
            return Ok(());
        }
        let all: Vec<&str> = self.params.iter().map(|p| p.decl.as_str()).collect();
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        let message = if given < expected {
            // parameters left out that have a C default value are filled in at the launch
            let missing: Vec<String> = self
                .params
                .iter()
                .enumerate()
                .skip(given)
                .filter(|(_, p)| p.default.is_none())
                .map(|(i, p)| format!("argument {i} ({})", p.decl))
                .collect();
            if missing.is_empty() {
                return Ok(());
            }
            format!(
                "{}(): missing {} argument{}: {}; the kernel takes {expected} argument{} ({}), got {given} \
                 (argument objects count as the values their __cuda_args__ gives)",
                self.kernel,
                missing.len(),
                plural(missing.len()),
                missing.join(", "),
                plural(expected),
                all.join(", "),
            )
        } else {
            format!(
                "{}(): {} argument{} too many: the kernel takes {expected} argument{} ({}), got {given} \
                 (argument objects count as the values their __cuda_args__ gives)",
                self.kernel,
                given - expected,
                plural(given - expected),
                plural(expected),
                all.join(", "),
            )
        };
        Err(error(ArgErrorKind::Type, message))
    }

    /// Checks argument `index` against its parameter and writes it into `buffer`.
    pub fn pack(
        &self,
        index: usize,
        arg: &Arg<'_>,
        device: i32,
        buffer: &mut LaunchBuffer,
    ) -> Result<(), ArgError> {
        let Some(p) = self.params.get(index) else {
            return self.check_count(index + 1);
        };
        match &p.kind {
            ParamKind::Scalar(dtype) => {
                let bytes = cast_scalar(&p.label, *dtype, arg)?;
                buffer.write(p.first_slot, &bytes[..dtype.itemsize()]);
            }
            ParamKind::Pointer { .. } if matches!(arg, Arg::Null) => {
                buffer.write(p.first_slot, &0u64.to_le_bytes());
            }
            ParamKind::Pointer { dtype, .. } => {
                let array = device_array(&p.label, arg, *dtype, device)?;
                if !array.c_contiguous {
                    return Err(error(
                        ArgErrorKind::Type,
                        format!(
                            "{} must be C-contiguous: a non-contiguous view (e.g. a[:, 0:3]) \
                             would be read as a flat buffer; use cupy.ascontiguousarray or \
                             cunumpy.as_device_array",
                            p.label
                        ),
                    ));
                }
                buffer.write(p.first_slot, &array.ptr.to_le_bytes());
            }
            ParamKind::View {
                dtype,
                ndim,
                contiguous,
            } => {
                let array = device_array(&p.label, arg, Some(*dtype), device)?;
                let words = pack_view(&p.label, &array, *dtype, *ndim, *contiguous)?;
                let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                buffer.write(p.first_slot, &bytes);
            }
            ParamKind::Struct { name } => match arg {
                Arg::Struct { name: given, bytes } if given == name && bytes.len() == p.size => {
                    buffer.write(p.first_slot, bytes);
                }
                other => {
                    return Err(error(
                        ArgErrorKind::Type,
                        format!(
                            "{} must be a value of struct {name} (created with that CudaStruct), \
                             got {}",
                            p.label,
                            describe(other)
                        ),
                    ))
                }
            },
        }
        Ok(())
    }
}

impl ArgPlan {
    /// Writes parameter `index`'s C default value into `buffer`, checked as an argument of
    /// that value would be: a literal number, `true`/`false`, or `nullptr`/`NULL`/`0` for a
    /// pointer. A default that is not such a literal (a macro, an expression) is refused,
    /// naming the parameter, never dropped.
    pub fn pack_default(
        &self,
        index: usize,
        device: i32,
        buffer: &mut LaunchBuffer,
    ) -> Result<(), ArgError> {
        let Some(p) = self.params.get(index) else {
            return self.check_count(index + 1);
        };
        let missing = || {
            error(
                ArgErrorKind::Type,
                format!(
                    "{}: the argument is missing and has no default value",
                    p.label
                ),
            )
        };
        let text = p.default.as_deref().ok_or_else(missing)?;
        let arg = default_literal(text, &p.kind).ok_or_else(|| {
            error(
                ArgErrorKind::Value,
                format!(
                    "{}: the argument is missing and its C default `{text}` is not a literal \
                     cunumpy can read (a number, true/false, nullptr/NULL); pass the argument",
                    p.label
                ),
            )
        })?;
        self.pack(index, &arg, device, buffer)
    }
}

/// A C default value as an argument: integer and floating literals (with sign and suffixes;
/// a `float` parameter's value is rounded to float as C would), `true`/`false`, and
/// `nullptr`/`NULL`/`0` for pointers.
pub fn default_literal(text: &str, kind: &ParamKind) -> Option<Arg<'static>> {
    let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let t = t.trim_start_matches('(').trim_end_matches(')');
    if let ParamKind::Pointer { .. } = kind {
        return matches!(t, "nullptr" | "NULL" | "0" | "0L" | "0UL").then_some(Arg::Null);
    }
    let ParamKind::Scalar(dtype) = kind else {
        return None;
    };
    match t {
        "true" => return Some(Arg::Scalar(Scalar::Bool(true), ScalarSource::Python)),
        "false" => return Some(Arg::Scalar(Scalar::Bool(false), ScalarSource::Python)),
        _ => {}
    }
    let (negative, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let lower = body.to_ascii_lowercase();
    let is_hex = lower.starts_with("0x");
    let int_body = lower.trim_end_matches(['u', 'l']);
    let int = if is_hex {
        i128::from_str_radix(int_body.get(2..)?, 16).ok()
    } else if int_body.len() > 1
        && int_body.starts_with('0')
        && int_body.chars().all(|c| c.is_ascii_digit())
    {
        i128::from_str_radix(int_body.get(1..)?, 8).ok()
    } else if !int_body.is_empty() && int_body.chars().all(|c| c.is_ascii_digit()) {
        int_body.parse::<i128>().ok()
    } else {
        None
    };
    let value = match int {
        Some(v) => Scalar::Int(if negative { -v } else { v }),
        None => {
            let float_body = lower.strip_suffix(['f', 'l']).unwrap_or(&lower);
            if float_body.is_empty()
                || !float_body
                    .chars()
                    .all(|c| c.is_ascii_digit() || "+-.e".contains(c))
            {
                return None;
            }
            let x: f64 = float_body.parse().ok()?;
            Scalar::Float(if negative { -x } else { x })
        }
    };
    // an integer default of a floating parameter, or a double literal of a float one, is
    // converted as C converts it
    Some(match (value, dtype) {
        (Scalar::Float(x), DType::Float32) => {
            Arg::Scalar(Scalar::Float(f64::from(x as f32)), ScalarSource::Python)
        }
        (Scalar::Int(v), DType::Float32 | DType::Float64) => Arg::Scalar(
            Scalar::Float(if *dtype == DType::Float32 {
                f64::from(v as f32)
            } else {
                v as f64
            }),
            ScalarSource::Python,
        ),
        (v, _) => Arg::Scalar(v, ScalarSource::Python),
    })
}

/// Checks one value against a parameter kind (as a launch does) and returns its bytes
/// (`size` of them); used for the fields of struct values. `label` starts every message.
pub fn pack_param_value(
    label: &str,
    kind: &ParamKind,
    size: usize,
    arg: &Arg<'_>,
    device: i32,
) -> Result<Vec<u8>, ArgError> {
    let plan = ArgPlan {
        kernel: String::new(),
        params: vec![PlannedParam {
            label: label.to_string(),
            decl: label.to_string(),
            kind: kind.clone(),
            first_slot: 0,
            size,
            default: None,
        }],
        n_slots: size.div_ceil(16).max(1),
    };
    let mut buffer = plan.new_buffer();
    plan.pack(0, arg, device, &mut buffer)?;
    Ok(buffer.bytes_of(&plan, 0))
}

/// A short description of an argument for error messages.
pub fn describe(arg: &Arg<'_>) -> String {
    match arg {
        Arg::Scalar(s, ScalarSource::NumPy(d)) => format!("a {d} scalar {}", show(s)),
        Arg::Scalar(s, ScalarSource::Python) => format!("{} {}", scalar_type(s), show(s)),
        Arg::DeviceArray(a) => format!(
            "a device array of dtype {} and shape {:?}",
            a.dtype.map_or_else(|n| n.to_string(), |d| d.to_string()),
            a.shape
        ),
        Arg::HostArray { type_name } => format!("a host array ({type_name})"),
        Arg::Struct { name, .. } => format!("a value of struct {name}"),
        Arg::Other { type_name } => format!("a value of type {type_name}"),
        Arg::Null => "None (accepted only for a pointer parameter, as NULL)".to_string(),
    }
}

fn scalar_type(s: &Scalar) -> &'static str {
    match s {
        Scalar::Bool(_) => "bool",
        Scalar::Int(_) => "int",
        Scalar::Float(_) => "float",
        Scalar::Complex(..) => "complex",
    }
}

fn show(s: &Scalar) -> String {
    match s {
        Scalar::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        Scalar::Int(v) => v.to_string(),
        Scalar::Float(x) => format!("{x:?}"),
        Scalar::Complex(re, im) => format!("({re:?}{im:+?}j)"),
    }
}

fn device_array<'a>(
    label: &str,
    arg: &Arg<'a>,
    want: Option<DType>,
    device: i32,
) -> Result<DeviceArray<'a>, ArgError> {
    let array = match arg {
        Arg::DeviceArray(a) => *a,
        Arg::HostArray { type_name } => {
            return Err(error(
                ArgErrorKind::Type,
                format!(
                    "{label} must be a CuPy array, got {type_name}; arrays are never copied to \
                     the device (use cunumpy.to_cupy to copy it explicitly)"
                ),
            ))
        }
        other => {
            return Err(error(
                ArgErrorKind::Type,
                format!("{label} must be a device array, got {}", describe(other)),
            ))
        }
    };
    if let Some(want) = want {
        if array.dtype != Ok(want) {
            let got = array
                .dtype
                .map_or_else(|n| n.to_string(), |d| d.to_string());
            return Err(error(
                ArgErrorKind::Type,
                format!("{label} must have dtype {want}, got {got}"),
            ));
        }
    }
    if array.device != device {
        return Err(error(
            ArgErrorKind::Value,
            format!(
                "{label} is on device {}, but the kernel launches on device {device}",
                array.device
            ),
        ));
    }
    Ok(array)
}

/// The words of an `ArrayND<T>` (data, shape, strides in elements) or `CArrayND<T>` (data,
/// shape) view.
fn pack_view(
    label: &str,
    array: &DeviceArray<'_>,
    dtype: DType,
    ndim: u8,
    contiguous: bool,
) -> Result<Vec<u64>, ArgError> {
    let n = ndim as usize;
    if array.shape.len() != n {
        return Err(error(
            ArgErrorKind::Type,
            format!("{label} must be a {n}D array, got {}D", array.shape.len()),
        ));
    }
    let mut words = Vec::with_capacity(1 + 2 * n);
    words.push(array.ptr);
    words.extend(array.shape.iter().map(|&s| s as u64));
    if contiguous {
        if !array.c_contiguous {
            return Err(error(
                ArgErrorKind::Type,
                format!(
                    "{label} must be C-contiguous: got a view with strides {:?}; declare the \
                     parameter as Array{n}D to take strided views, or pass \
                     cupy.ascontiguousarray(...) and copy the result back",
                    array.strides
                ),
            ));
        }
        return Ok(words);
    }
    let itemsize = dtype.itemsize() as i64;
    let strides: Vec<i64> = if array.c_contiguous && array.strides.len() != n {
        // C order: compute element strides from the shape.
        let mut s = vec![1i64; n];
        for axis in (0..n.saturating_sub(1)).rev() {
            s[axis] = s[axis + 1] * array.shape[axis + 1].max(1);
        }
        s
    } else {
        if array.strides.len() != n {
            return Err(error(
                ArgErrorKind::Type,
                format!(
                    "{label}: the array reports {} strides for {n} dimensions",
                    array.strides.len()
                ),
            ));
        }
        let mut s = Vec::with_capacity(n);
        for &b in array.strides {
            if b % itemsize != 0 {
                return Err(error(
                    ArgErrorKind::Type,
                    format!(
                        "{label}: strides {:?} are not multiples of the element size {itemsize}",
                        array.strides
                    ),
                ));
            }
            s.push(b / itemsize);
        }
        s
    };
    words.extend(strides.iter().map(|&s| s as u64));
    Ok(words)
}

/// Casts a scalar argument to the parameter's type or explains why it cannot.
fn cast_scalar(label: &str, target: DType, arg: &Arg<'_>) -> Result<[u8; 16], ArgError> {
    let (value, source) = match arg {
        Arg::Scalar(v, s) => (*v, *s),
        other => {
            return Err(error(
                ArgErrorKind::Type,
                format!("{label} takes a scalar, got {}", describe(other)),
            ))
        }
    };
    let lossy = |what: String| {
        error(
            ArgErrorKind::Type,
            format!("{label} cannot take {what} without losing information"),
        )
    };
    // NumPy scalars other than integers follow NumPy's "safe" casting.
    if let ScalarSource::NumPy(from) = source {
        let by_value = matches!(from.kind(), DTypeKind::Signed | DTypeKind::Unsigned)
            && matches!(
                target.kind(),
                DTypeKind::Signed | DTypeKind::Unsigned | DTypeKind::Float
            );
        if !by_value && from != target && !safe_cast(from, target) {
            return Err(lossy(format!("a {from} scalar")));
        }
    }
    let mut out = [0u8; 16];
    match target.kind() {
        DTypeKind::Bool => match value {
            Scalar::Bool(b) => out[0] = b as u8,
            _ => {
                return Err(error(
                    ArgErrorKind::Type,
                    format!("{label} takes only True or False, got {}", describe(arg)),
                ))
            }
        },
        DTypeKind::Signed | DTypeKind::Unsigned => {
            let v = match value {
                Scalar::Bool(b) => b as i128,
                Scalar::Int(v) => v,
                Scalar::Float(_) | Scalar::Complex(..) => {
                    return Err(lossy(describe(arg)));
                }
            };
            let (lo, hi) = target.int_range().unwrap_or((0, 0));
            if v < lo || v > hi {
                return Err(error(
                    ArgErrorKind::Overflow,
                    format!("{label}: {v} is out of range [{lo}, {hi}]"),
                ));
            }
            let bytes = v.to_le_bytes();
            out[..target.itemsize()].copy_from_slice(&bytes[..target.itemsize()]);
        }
        DTypeKind::Float | DTypeKind::Complex => {
            let (re, im) = match value {
                Scalar::Bool(_) => {
                    return Err(error(
                        ArgErrorKind::Type,
                        format!("{label} cannot take a value of type bool"),
                    ))
                }
                Scalar::Int(v) => (int_to_float(label, v, target)?, 0.0),
                Scalar::Float(x) => (x, 0.0),
                Scalar::Complex(re, im) => {
                    if target.kind() != DTypeKind::Complex {
                        return Err(lossy(describe(arg)));
                    }
                    (re, im)
                }
            };
            let single = matches!(target, DType::Float32 | DType::Complex64);
            if single {
                for part in [re, im] {
                    if part.is_finite() && part.abs() > f32::MAX as f64 {
                        return Err(error(
                            ArgErrorKind::Overflow,
                            format!("{label}: {part:?} overflows {}", target.c_name()),
                        ));
                    }
                }
                out[..4].copy_from_slice(&(re as f32).to_le_bytes());
                out[4..8].copy_from_slice(&(im as f32).to_le_bytes());
            } else {
                out[..8].copy_from_slice(&re.to_le_bytes());
                out[8..16].copy_from_slice(&im.to_le_bytes());
            }
        }
    }
    Ok(out)
}

/// An integer into a float parameter must survive the round trip exactly.
fn int_to_float(label: &str, v: i128, target: DType) -> Result<f64, ArgError> {
    let exact = match target {
        DType::Float32 | DType::Complex64 => {
            let f = v as f32;
            f.is_finite() && (f as f64).abs() < 1.7e38 && f as i128 == v
        }
        _ => {
            let f = v as f64;
            f.abs() < 1.7e38 && f as i128 == v
        }
    };
    if !exact {
        return Err(error(
            ArgErrorKind::Value,
            format!(
                "{label}: the integer {v} cannot be represented exactly as {}; convert it \
                 explicitly if the rounding is intended",
                target.c_name()
            ),
        ));
    }
    Ok(v as f64)
}

/// NumPy's `can_cast(from, to, "safe")` for the dtypes of the type map.
pub fn safe_cast(from: DType, to: DType) -> bool {
    use DTypeKind::*;
    if from == to {
        return true;
    }
    let (fk, tk) = (from.kind(), to.kind());
    match (fk, tk) {
        (Bool, _) => true,
        (_, Bool) => false,
        (Signed, Signed) | (Unsigned, Unsigned) => to.itemsize() >= from.itemsize(),
        (Unsigned, Signed) => to.itemsize() > from.itemsize(),
        (Signed, Unsigned) => false,
        (Signed | Unsigned, Float) => {
            // float32 holds int8/16 exactly, float64 up to 32-bit integers.
            (to == DType::Float32 && from.itemsize() <= 2)
                || (to == DType::Float64 && from.itemsize() <= 4)
        }
        (Signed | Unsigned, Complex) => {
            (to == DType::Complex64 && from.itemsize() <= 2)
                || (to == DType::Complex128 && from.itemsize() <= 4)
        }
        (Float, Float) => to.itemsize() >= from.itemsize(),
        (Float, Complex) => to.itemsize() >= 2 * from.itemsize(),
        (Complex, Complex) => to.itemsize() >= from.itemsize(),
        _ => false,
    }
}

/// What is wrong with a `__cuda_array_interface__` before any launch uses it, or `None`.
///
/// A NULL data pointer is only valid for an empty array; a negative extent is never valid; the
/// `stream` entry (version 3) must be absent/`None` or a stream handle, and 0 is disallowed by
/// the protocol because it is ambiguous (1 is the legacy default stream, 2 the per-thread one).
pub fn interface_problem(ptr: u64, shape: &[i64], stream: Option<i64>) -> Option<String> {
    let dims = shape
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let shown = if shape.len() == 1 {
        format!("({dims},)")
    } else {
        format!("({dims})")
    };
    if let Some(d) = shape.iter().find(|&&d| d < 0) {
        return Some(format!(
            "whose shape {shown} has a negative extent ({d}); extents must be >= 0"
        ));
    }
    if ptr == 0 && !shape.contains(&0) {
        return Some(format!(
            "whose data pointer is NULL although its shape {shown} is not empty"
        ));
    }
    match stream {
        Some(0) => Some(
            "whose stream is 0, which the protocol disallows (use 1 for the legacy default \
             stream, 2 for the per-thread default stream, or a stream handle)"
                .to_string(),
        ),
        Some(s) if s < 0 => Some(format!(
            "whose stream {s} is negative; expected a stream handle (or None)"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod interface_tests {
    use super::interface_problem;

    #[test]
    fn null_negative_and_stream_zero_are_problems() {
        assert!(interface_problem(0, &[4], None)
            .is_some_and(|m| m.contains("NULL") && m.contains("(4,)")));
        assert!(interface_problem(0, &[0], None).is_none());
        assert!(interface_problem(0, &[3, 0], None).is_none());
        assert!(interface_problem(64, &[-4], None).is_some_and(|m| m.contains("-4")));
        assert!(interface_problem(64, &[4], Some(0)).is_some_and(|m| m.contains("stream is 0")));
        assert!(interface_problem(64, &[4], Some(-3)).is_some());
        assert!(interface_problem(64, &[4], Some(1)).is_none());
        assert!(interface_problem(64, &[2, 2], None).is_none());
    }
}

#[cfg(test)]
mod null_tests {
    use super::*;
    use crate::parser::parse_signature;

    #[test]
    fn none_is_null_for_pointers_only() {
        let sig = parse_signature(
            "__global__ void k(float* a, const int* b, int n) {}",
            "k",
            &[],
            None,
        )
        .expect("parses");
        let plan = ArgPlan::new(&sig, &|_| None).expect("plan");
        let mut buffer = plan.new_buffer();
        buffer.write(plan.params[0].first_slot, &7u64.to_le_bytes());
        plan.pack(0, &Arg::Null, 0, &mut buffer)
            .expect("NULL for float*");
        assert_eq!(buffer.bytes_of(&plan, 0), 0u64.to_le_bytes().to_vec());
        plan.pack(1, &Arg::Null, 0, &mut buffer)
            .expect("NULL for const int*");
        let err = plan
            .pack(2, &Arg::Null, 0, &mut buffer)
            .expect_err("None for an int");
        assert!(
            err.message.contains("argument 2 (int n)"),
            "{}",
            err.message
        );
        assert!(err.message.contains("None"), "{}", err.message);
    }
}

#[cfg(test)]
mod default_tests {
    use super::*;
    use crate::parser::parse_signature;

    #[test]
    fn c_default_values_are_applied_or_refused_by_name() {
        let src = "#define SCALE 3\n__global__ void k(float* x, int n, float a = 0.1f, \
                   double b = -2, unsigned m = 0x10u, bool on = true, int* p = nullptr, \
                   int s = SCALE) {}";
        let sig = parse_signature(src, "k", &[], None).expect("parses");
        assert_eq!(sig.params[2].default.as_deref(), Some("0.1f"));
        let plan = ArgPlan::new(&sig, &|_| None).expect("plan");
        let mut buffer = plan.new_buffer();
        // two given, the rest have defaults
        plan.check_count(2).expect("defaults fill in");
        let err = plan.check_count(1).expect_err("n has no default");
        assert!(
            err.message
                .contains("missing 1 argument: argument 1 (int n);"),
            "{}",
            err.message
        );
        for i in 2..7 {
            plan.pack_default(i, 0, &mut buffer)
                .expect("literal default");
        }
        assert_eq!(buffer.bytes_of(&plan, 2), 0.1f32.to_le_bytes().to_vec());
        assert_eq!(buffer.bytes_of(&plan, 3), (-2f64).to_le_bytes().to_vec());
        assert_eq!(buffer.bytes_of(&plan, 4), 16u32.to_le_bytes().to_vec());
        assert_eq!(buffer.bytes_of(&plan, 5), vec![1u8]);
        assert_eq!(buffer.bytes_of(&plan, 6), 0u64.to_le_bytes().to_vec());
        // a macro default is not guessed: refused, naming the parameter
        let err = plan.pack_default(7, 0, &mut buffer).expect_err("macro");
        assert!(
            err.message.contains("argument 7 (int s)") && err.message.contains("`SCALE`"),
            "{}",
            err.message
        );
    }
}

#[cfg(test)]
mod buffer_tests {
    use super::LaunchBuffer;

    /// The value each `void*` of a buffer points at, read back through the pointer array.
    fn read_back(buffer: &mut LaunchBuffer, sizes: &[usize]) -> Vec<Vec<u8>> {
        let params = buffer.params();
        sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                // SAFETY: `params` has one pointer per value, each into the buffer's own slots,
                // which hold at least `n` bytes for value `i`.
                unsafe { std::slice::from_raw_parts(*params.add(i) as *const u8, n).to_vec() }
            })
            .collect()
    }

    #[test]
    fn a_clone_points_into_its_own_slots() {
        let values = vec![vec![1u8; 8], vec![2u8; 24], vec![3u8; 4]];
        let original = LaunchBuffer::from_raw_values(&values);
        let mut copy = original.clone();
        drop(original);
        assert_eq!(read_back(&mut copy, &[8, 24, 4]), values);
        let slots = copy.slots.as_ptr() as usize;
        let end = slots + copy.slots.len() * 16;
        assert!(copy
            .pointers
            .iter()
            .all(|p| (slots..end).contains(&(*p as usize))));
    }
}
