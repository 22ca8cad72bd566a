//! Reading Python objects into the core's argument values: CuPy arrays by a fast path,
//! anything with `__cuda_array_interface__` by the protocol, Python and NumPy scalars.

use cunumpy_core::args::{Arg, DeviceArray, Scalar, ScalarSource};
use cunumpy_core::dtype::DType;
use cunumpy_runtime::host::HostArray;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyCapsule, PyCapsuleMethods, PyComplex, PyDict, PyFloat, PyInt, PyTuple, PyType,
};
use std::ffi::{c_char, c_int, c_void};

/// What kind of object an argument is, decided once per argument.
pub enum Object {
    Scalar(Scalar, ScalarSource),
    Device(DeviceInfo),
    Host(String),
    Struct(String, Vec<u8>),
    Other(String),
    /// `None`: NULL for a pointer parameter.
    Null,
}

impl Object {
    /// The core's view of this argument (`device` stands in for arrays that do not say).
    pub fn as_arg(&self, device: i32) -> Arg<'_> {
        match self {
            Object::Scalar(s, src) => Arg::Scalar(*s, *src),
            Object::Device(info) => Arg::DeviceArray(DeviceArray {
                ptr: info.ptr,
                dtype: info.dtype.as_ref().copied().map_err(String::as_str),
                shape: &info.shape,
                strides: &info.strides,
                c_contiguous: info.c_contiguous,
                device: info.device.unwrap_or(device),
            }),
            Object::Host(t) => Arg::HostArray { type_name: t },
            Object::Struct(name, bytes) => Arg::Struct { name, bytes },
            Object::Other(t) => Arg::Other { type_name: t },
            Object::Null => Arg::Null,
        }
    }
}

/// A device array's facts, owned.
pub struct DeviceInfo {
    pub ptr: u64,
    pub dtype: Result<DType, String>,
    pub shape: Vec<i64>,
    pub strides: Vec<i64>,
    pub c_contiguous: bool,
    pub device: Option<i32>,
}

pub(crate) struct NumpyTypes {
    pub(crate) ndarray: Py<PyType>,
    pub(crate) generic: Py<PyType>,
    pub(crate) dtypes: Vec<(Py<PyAny>, DType)>,
}

static NUMPY: PyOnceLock<NumpyTypes> = PyOnceLock::new();
static CUPY_NDARRAY: PyOnceLock<Option<Py<PyType>>> = PyOnceLock::new();

pub(crate) fn numpy(py: Python<'_>) -> PyResult<&NumpyTypes> {
    NUMPY.get_or_try_init(py, || {
        let np = py.import("numpy")?;
        let dtype = np.getattr("dtype")?;
        let mut dtypes = Vec::new();
        for d in DType::ALL {
            dtypes.push((dtype.call1((d.name(),))?.unbind(), d));
        }
        Ok(NumpyTypes {
            ndarray: np.getattr("ndarray")?.cast_into::<PyType>()?.unbind(),
            generic: np.getattr("generic")?.cast_into::<PyType>()?.unbind(),
            dtypes,
        })
    })
}

/// CuPy's ndarray type, once CuPy has been imported by someone (never imports it).
pub(crate) fn cupy_ndarray(py: Python<'_>) -> Option<&Bound<'_, PyType>> {
    if let Some(found) = CUPY_NDARRAY.get(py) {
        return found.as_ref().map(|t| t.bind(py));
    }
    let modules = py.import("sys").ok()?.getattr("modules").ok()?;
    let cupy = modules.get_item("cupy").ok()?;
    let ndarray = cupy
        .getattr("ndarray")
        .ok()
        .and_then(|t| t.cast_into::<PyType>().ok())
        .map(Bound::unbind);
    let _ = CUPY_NDARRAY.set(py, ndarray);
    CUPY_NDARRAY.get(py)?.as_ref().map(|t| t.bind(py))
}

/// Whether `obj` is exactly a `cupy.ndarray` (not a subclass, not another library's array).
pub fn is_exact_cupy_array(obj: &Bound<'_, PyAny>) -> bool {
    cupy_ndarray(obj.py()).is_some_and(|t| obj.get_type().is(t))
}

/// Whether `obj` is a CuPy array (exact type first: the common case costs one compare).
pub fn is_cupy_array(obj: &Bound<'_, PyAny>) -> bool {
    match cupy_ndarray(obj.py()) {
        Some(t) => obj.get_type().is(t) || obj.is_instance(t).unwrap_or(false),
        None => false,
    }
}

/// Maps a NumPy dtype object to a [`DType`] (identity first, then by name).
pub fn dtype_of(obj: &Bound<'_, PyAny>) -> PyResult<Result<DType, String>> {
    let np = numpy(obj.py())?;
    for (d, dtype) in &np.dtypes {
        if obj.is(d.bind(obj.py())) {
            return Ok(Ok(*dtype));
        }
    }
    let native: bool = obj.getattr(intern!(obj.py(), "isnative"))?.extract()?;
    let name: String = obj.str()?.extract()?;
    if !native {
        return Ok(Err(format!("{name} (non-native byte order)")));
    }
    Ok(DType::from_name(&name).ok_or(name))
}

fn typestr_dtype(typestr: &str) -> Result<DType, String> {
    let order = typestr.chars().next().unwrap_or('|');
    let body = typestr.get(1..).unwrap_or("");
    if order == '>' {
        return Err(format!("{typestr} (big-endian)"));
    }
    let dtype = match body {
        "b1" => DType::Bool,
        "i1" => DType::Int8,
        "u1" => DType::UInt8,
        "i2" => DType::Int16,
        "u2" => DType::UInt16,
        "i4" => DType::Int32,
        "u4" => DType::UInt32,
        "i8" => DType::Int64,
        "u8" => DType::UInt64,
        "f4" => DType::Float32,
        "f8" => DType::Float64,
        "c8" => DType::Complex64,
        "c16" => DType::Complex128,
        _ => return Err(typestr.to_string()),
    };
    Ok(dtype)
}

fn c_strides(shape: &[i64], itemsize: i64) -> Vec<i64> {
    let mut strides = vec![itemsize; shape.len()];
    for axis in (0..shape.len().saturating_sub(1)).rev() {
        strides[axis] = strides[axis + 1] * shape[axis + 1].max(1);
    }
    strides
}

/// What [`read_cupy`] reads beyond pointer, device, dtype and contiguity.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fields {
    /// Nothing more (a kernel argument's pointer).
    Pointer,
    /// The shape (a fused call's signature).
    Shape,
    /// Shape and strides (views need both).
    ShapeStrides,
}

/// The one reader of CuPy arrays, for every caller (kernel launches, fused calls, `out=`
/// targets): pointer, device, dtype and contiguity, and `fields` more.
pub(crate) fn read_cupy(obj: &Bound<'_, PyAny>, fields: Fields) -> PyResult<DeviceInfo> {
    let py = obj.py();
    let data = obj.getattr(intern!(py, "data"))?;
    let ptr: u64 = data.getattr(intern!(py, "ptr"))?.extract()?;
    let device: i32 = data.getattr(intern!(py, "device_id"))?.extract()?;
    let dtype = dtype_of(&obj.getattr(intern!(py, "dtype"))?)?;
    let c_contiguous = obj.getattr(intern!(py, "_c_contiguous"))?.is_truthy()?;
    let shape = match fields {
        Fields::Pointer => Vec::new(),
        Fields::Shape | Fields::ShapeStrides => obj.getattr(intern!(py, "shape"))?.extract()?,
    };
    let strides = match fields {
        Fields::ShapeStrides => obj.getattr(intern!(py, "strides"))?.extract()?,
        Fields::Pointer | Fields::Shape => Vec::new(),
    };
    Ok(DeviceInfo {
        ptr,
        dtype,
        shape,
        strides,
        c_contiguous,
        device: Some(device),
    })
}

/// The `stream` entry of a `__cuda_array_interface__` (`None` when absent or `None`).
fn interface_stream(iface: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    let Ok(iface) = iface.cast::<PyDict>() else {
        return Ok(None);
    };
    match iface.get_item("stream")? {
        Some(s) if !s.is_none() => Ok(Some(s.extract()?)),
        _ => Ok(None),
    }
}

/// Reads `__cuda_array_interface__` (PyTorch tensors, Numba arrays, ...).
fn read_interface(iface: &Bound<'_, PyAny>) -> PyResult<DeviceInfo> {
    let py = iface.py();
    let iface = iface.cast::<PyDict>()?;
    let get = |key: &str| -> PyResult<Bound<'_, PyAny>> {
        iface.get_item(key)?.ok_or_else(|| {
            crate::errors::raise(
                py,
                "KernelArgumentTypeError",
                format!("__cuda_array_interface__ has no {key:?}"),
            )
        })
    };
    let shape: Vec<i64> = get("shape")?.extract()?;
    let typestr: String = get("typestr")?.extract()?;
    let data = get("data")?;
    let data = data.cast::<PyTuple>()?;
    let ptr: u64 = data.get_item(0)?.extract()?;
    let dtype = typestr_dtype(&typestr);
    let itemsize = dtype.as_ref().map_or(1, |d| d.itemsize() as i64);
    let expected = c_strides(&shape, itemsize);
    let (strides, c_contiguous) = match iface.get_item(intern!(py, "strides"))? {
        Some(s) if !s.is_none() => {
            let s: Vec<i64> = s.extract()?;
            let c = s
                .iter()
                .zip(&expected)
                .zip(&shape)
                .all(|((a, b), n)| a == b || *n <= 1);
            (s, c)
        }
        _ => (expected, true),
    };
    Ok(DeviceInfo {
        ptr,
        dtype,
        shape,
        strides,
        c_contiguous,
        device: None,
    })
}

/// NumPy's `PyArrayInterface`, what an `__array_struct__` capsule points at (a stable ABI:
/// the array interface protocol, version 3).
#[repr(C)]
struct ArrayInterface {
    two: c_int,
    nd: c_int,
    typekind: c_char,
    itemsize: c_int,
    flags: c_int,
    shape: *const isize,
    strides: *const isize,
    data: *mut c_void,
    descr: *mut c_void,
}

const ARRAY_C_CONTIGUOUS: c_int = 0x0001;
const ARRAY_ALIGNED: c_int = 0x0100;
const ARRAY_NOTSWAPPED: c_int = 0x0200;
const ARRAY_WRITEABLE: c_int = 0x0400;

/// The one reader of host (NumPy) arrays, for every caller: `__array_struct__` (a capsule, no
/// dict or strings to build). None when the object has none or it is not what can be used as
/// is (not C-contiguous, aligned, native, writable when `writable`, or of another dtype), so
/// the caller declines or falls back to `__array_interface__` and its error messages.
pub(crate) fn read_numpy(obj: &Bound<'_, PyAny>, writable: bool) -> PyResult<Option<HostArray>> {
    let py = obj.py();
    let Ok(capsule) = obj.getattr(intern!(py, "__array_struct__")) else {
        return Ok(None);
    };
    let Ok(capsule) = capsule.cast_into::<PyCapsule>() else {
        return Ok(None);
    };
    let Ok(ptr) = capsule.pointer_checked(None) else {
        return Ok(None);
    };
    // SAFETY: an `__array_struct__` capsule (NumPy's, or any object following the array
    // interface protocol) points at a `PyArrayInterface` that stays valid while the capsule
    // lives (it keeps the array referenced); `capsule` is alive for this whole function, and
    // the `two` field is checked before anything else is trusted.
    let ai = unsafe { &*(ptr.as_ptr() as *const ArrayInterface) };
    let need = ARRAY_C_CONTIGUOUS
        | ARRAY_ALIGNED
        | ARRAY_NOTSWAPPED
        | if writable { ARRAY_WRITEABLE } else { 0 };
    if ai.two != 2 || ai.nd < 0 || ai.flags & need != need || (ai.nd > 0 && ai.shape.is_null()) {
        return Ok(None);
    }
    let nd = ai.nd as usize;
    let shape: Vec<usize> = if nd == 0 {
        Vec::new()
    } else {
        // SAFETY: `shape` points at `nd` dimensions (the protocol), non-null (checked), alive
        // with the capsule.
        let dims = unsafe { std::slice::from_raw_parts(ai.shape, nd) };
        if dims.iter().any(|&d| d < 0) {
            return Ok(None);
        }
        dims.iter().map(|&d| d as usize).collect()
    };
    let _ = (ai.strides, ai.descr);
    // native byte order (NOTSWAPPED above), so kind and size name the dtype
    let dtype = match (ai.typekind as u8, ai.itemsize) {
        (b'b', 1) => DType::Bool,
        (b'i', 1) => DType::Int8,
        (b'u', 1) => DType::UInt8,
        (b'i', 2) => DType::Int16,
        (b'u', 2) => DType::UInt16,
        (b'i', 4) => DType::Int32,
        (b'u', 4) => DType::UInt32,
        (b'i', 8) => DType::Int64,
        (b'u', 8) => DType::UInt64,
        (b'f', 4) => DType::Float32,
        (b'f', 8) => DType::Float64,
        (b'c', 8) => DType::Complex64,
        (b'c', 16) => DType::Complex128,
        _ => return Ok(None),
    };
    let len = shape.iter().product();
    let ptr = ai.data as usize;
    if ptr == 0 && len > 0 {
        return Ok(None);
    }
    Ok(Some(HostArray {
        ptr,
        len,
        dtype,
        shape,
    }))
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    let t = obj.get_type();
    let module = t
        .module()
        .map(|m| m.to_string())
        .unwrap_or_else(|_| "builtins".into());
    let name = t.name().map(|n| n.to_string()).unwrap_or_default();
    if module == "builtins" {
        name
    } else {
        format!("{module}.{name}")
    }
}

/// Python's own scalars. Exact types only: NumPy's float64, complex128 and bool_ subclass or
/// mimic them but carry a dtype, so they are read as NumPy scalars.
fn python_scalar(obj: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    if obj.is_exact_instance_of::<PyFloat>() {
        return Ok(Some(Scalar::Float(obj.extract()?)));
    }
    if obj.is_exact_instance_of::<PyInt>() {
        if let Ok(v) = obj.extract::<i64>() {
            return Ok(Some(Scalar::Int(v as i128)));
        }
        return match obj.extract::<i128>() {
            Ok(v) => Ok(Some(Scalar::Int(v))),
            Err(_) => Err(crate::errors::raise(
                obj.py(),
                "KernelArgumentOverflowError",
                format!("the integer {obj} does not fit any C integer type"),
            )),
        };
    }
    if obj.is_exact_instance_of::<PyBool>() {
        return Ok(Some(Scalar::Bool(obj.is_truthy()?)));
    }
    if obj.is_exact_instance_of::<PyComplex>() {
        let c = obj.cast::<PyComplex>()?;
        return Ok(Some(Scalar::Complex(c.real(), c.imag())));
    }
    Ok(None)
}

/// Subclasses of Python's scalar types that are not NumPy scalars (read by value).
fn python_scalar_subclass(obj: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    if obj.is_instance_of::<PyBool>() {
        return Ok(Some(Scalar::Bool(obj.is_truthy()?)));
    }
    if obj.is_instance_of::<PyInt>() {
        return match obj.extract::<i128>() {
            Ok(v) => Ok(Some(Scalar::Int(v))),
            Err(_) => Err(crate::errors::raise(
                obj.py(),
                "KernelArgumentOverflowError",
                format!("the integer {obj} does not fit any C integer type"),
            )),
        };
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Some(Scalar::Float(obj.extract()?)));
    }
    if let Ok(c) = obj.cast::<PyComplex>() {
        return Ok(Some(Scalar::Complex(c.real(), c.imag())));
    }
    Ok(None)
}

/// A Python scalar (bool, int, float, complex, or a subclass of one of them that is not a
/// NumPy scalar), or None: the one scalar reader of kernel launches and fused calls.
pub fn scalar(obj: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    match python_scalar(obj)? {
        Some(s) => Ok(Some(s)),
        None => python_scalar_subclass(obj),
    }
}

/// Classifies an argument. `full` asks for the shape and strides of device arrays.
pub fn read_object(obj: &Bound<'_, PyAny>, full: bool) -> PyResult<Object> {
    let py = obj.py();
    if obj.is_none() {
        return Ok(Object::Null);
    }
    if let Some(s) = python_scalar(obj)? {
        return Ok(Object::Scalar(s, ScalarSource::Python));
    }
    if is_cupy_array(obj) {
        let fields = if full {
            Fields::ShapeStrides
        } else {
            Fields::Pointer
        };
        return Ok(Object::Device(read_cupy(obj, fields)?));
    }
    let np = numpy(py)?;
    if obj.is_instance(np.generic.bind(py))? {
        let dtype = dtype_of(&obj.getattr(intern!(py, "dtype"))?)?;
        let item = obj.call_method0(intern!(py, "item"))?;
        let value = match python_scalar(&item)? {
            Some(v) => Some(v),
            None => python_scalar_subclass(&item)?,
        };
        return Ok(match (dtype, value) {
            (Ok(d), Some(s)) => Object::Scalar(s, ScalarSource::NumPy(d)),
            (Err(name), _) => Object::Other(format!("numpy scalar of dtype {name}")),
            (Ok(d), None) => Object::Other(format!("numpy scalar of dtype {d}")),
        });
    }
    if obj.is_instance(np.ndarray.bind(py))? {
        return Ok(Object::Host(type_name(obj)));
    }
    if let Some(s) = python_scalar_subclass(obj)? {
        return Ok(Object::Scalar(s, ScalarSource::Python));
    }
    if let Ok(iface) = obj.getattr(intern!(py, "__cuda_array_interface__")) {
        let info = read_interface(&iface)?;
        let stream = interface_stream(&iface)?;
        if let Some(problem) = cunumpy_core::args::interface_problem(info.ptr, &info.shape, stream)
        {
            // Refused before any launch: the parameter's error names kernel and argument.
            return Ok(Object::Other(format!(
                "{} with a __cuda_array_interface__ {problem}",
                type_name(obj)
            )));
        }
        return Ok(Object::Device(info));
    }
    if let Ok(method) = obj.getattr(intern!(py, "__cuda_struct__")) {
        let (name, bytes): (String, Vec<u8>) = method.call0()?.extract()?;
        return Ok(Object::Struct(name, bytes));
    }
    if obj.hasattr(intern!(py, "__array_interface__"))? {
        return Ok(Object::Host(type_name(obj)));
    }
    Ok(Object::Other(type_name(obj)))
}

/// The shape of an array-like argument (anything with `.shape` and `.dtype`), for inferring
/// `n_threads`.
pub fn array_shape(obj: &Bound<'_, PyAny>) -> Option<Vec<i64>> {
    let py = obj.py();
    if python_scalar(obj).ok().flatten().is_some() {
        return None;
    }
    if obj.hasattr(intern!(py, "dtype")).ok()? {
        return obj.getattr(intern!(py, "shape")).ok()?.extract().ok();
    }
    let iface = obj.getattr(intern!(py, "__cuda_array_interface__")).ok()?;
    iface.get_item("shape").ok()?.extract().ok()
}
