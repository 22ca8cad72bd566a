//! `_core.StructLayout`: the core's C struct layout and value packing, for `cunumpy.arguments`.

use cunumpy_core::args::Arg;
use cunumpy_core::layout::{FieldSpec, FieldValue, StructLayout as CoreLayout};
use cunumpy_core::signature::ParamKind;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::arrays::{self, Object};
use crate::errors;

/// A struct's layout on the device (offsets, size, alignment) and the packer of its values.
#[pyclass(module = "cunumpy._core", name = "StructLayout", frozen)]
pub struct StructLayout {
    inner: CoreLayout,
}

/// `(name, spec)` where spec is a type's text or a `StructLayout`.
fn field_spec(item: &Bound<'_, PyAny>) -> PyResult<(String, FieldSpec)> {
    let (name, spec): (String, Bound<'_, PyAny>) = item.extract()?;
    if let Ok(nested) = spec.cast::<StructLayout>() {
        return Ok((
            name,
            FieldSpec::Struct(nested.get().inner.clone(), Vec::new()),
        ));
    }
    Ok((name, FieldSpec::Text(spec.extract()?)))
}

fn kind_name(kind: &ParamKind) -> &'static str {
    match kind {
        ParamKind::Scalar(_) => "scalar",
        ParamKind::Pointer { .. } => "pointer",
        ParamKind::View { .. } => "view",
        ParamKind::Struct { .. } => "struct",
    }
}

#[pymethods]
impl StructLayout {
    /// Lays out `fields`, a sequence of `(name, type)`: a C type's text (`"double"`,
    /// `"float*"`, `"Array2D<double>"`, `"int[3]"`, the name of a struct in `known`) or a
    /// `StructLayout`. A name may carry extents (`"pos[3]"`).
    #[new]
    #[pyo3(signature = (name, fields, known=Vec::new()))]
    fn new(
        py: Python<'_>,
        name: &str,
        fields: &Bound<'_, PyAny>,
        known: Vec<Py<StructLayout>>,
    ) -> PyResult<Self> {
        let specs = fields
            .try_iter()?
            .map(|item| field_spec(&item?))
            .collect::<PyResult<Vec<_>>>()?;
        let known: Vec<&CoreLayout> = known.iter().map(|k| &k.get().inner).collect();
        let inner =
            CoreLayout::new(name, &specs, &known).map_err(|e| errors::layout_error(py, e))?;
        Ok(StructLayout { inner })
    }

    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    #[getter]
    fn size(&self) -> usize {
        self.inner.size
    }

    #[getter]
    fn alignment(&self) -> usize {
        self.inner.alignment
    }

    #[getter]
    fn declaration(&self) -> String {
        self.inner.declaration()
    }

    #[getter]
    fn has_views(&self) -> bool {
        self.inner.has_views()
    }

    #[getter]
    fn has_complex(&self) -> bool {
        self.inner.has_complex()
    }

    /// One dict per field: name, ctype, kind (scalar/pointer/view/struct), dtype (NumPy name or
    /// None), ndim, contiguous, extents, offset, size, element_size, alignment, declaration,
    /// struct (the nested `StructLayout` or None).
    #[getter]
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for f in &self.inner.fields {
            let d = pyo3::types::PyDict::new(py);
            d.set_item("name", &f.name)?;
            d.set_item("ctype", f.kind.c_type())?;
            d.set_item("kind", kind_name(&f.kind))?;
            let (dtype, ndim, contiguous) = match &f.kind {
                ParamKind::Scalar(t) => (Some(t.name()), 0, false),
                ParamKind::Pointer { dtype, .. } => (dtype.map(|t| t.name()), 0, false),
                ParamKind::View {
                    dtype,
                    ndim,
                    contiguous,
                } => (Some(dtype.name()), *ndim, *contiguous),
                ParamKind::Struct { .. } => (None, 0, false),
            };
            d.set_item("dtype", dtype)?;
            d.set_item("ndim", ndim)?;
            d.set_item("contiguous", contiguous)?;
            d.set_item("extents", PyTuple::new(py, &f.extents)?)?;
            d.set_item("offset", f.offset)?;
            d.set_item("size", f.size)?;
            d.set_item("element_size", f.element_size())?;
            d.set_item("alignment", f.alignment())?;
            d.set_item("declaration", f.declaration())?;
            match &f.nested {
                Some(s) => d.set_item(
                    "struct",
                    Py::new(
                        py,
                        StructLayout {
                            inner: (**s).clone(),
                        },
                    )?,
                )?,
                None => d.set_item("struct", py.None())?,
            }
            out.append(d)?;
        }
        Ok(out)
    }

    /// What differs between this layout and the struct's definitions in `source` (names,
    /// order, types, offsets, size), or `None`; see `StructLayout::source_mismatch`.
    #[pyo3(signature = (source, lenient))]
    fn source_mismatch(&self, source: &str, lenient: bool) -> Option<String> {
        self.inner.source_mismatch(source, lenient)
    }

    /// The nested structs, innermost first, each once.
    fn dependencies(&self, py: Python<'_>) -> PyResult<Vec<Py<StructLayout>>> {
        self.inner
            .dependencies()
            .into_iter()
            .map(|inner| Py::new(py, StructLayout { inner }))
            .collect()
    }

    /// Packs one value per field (array fields: a sequence of elements) into the struct's
    /// bytes, checking each like a kernel argument; `device` is the device the value is for.
    fn pack<'py>(
        &self,
        py: Python<'py>,
        values: Vec<Bound<'py, PyAny>>,
        device: i32,
    ) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let mut objects: Vec<Vec<Object>> = Vec::with_capacity(values.len());
        for (index, (field, value)) in self.inner.fields.iter().zip(&values).enumerate() {
            let full = matches!(field.kind, ParamKind::View { .. });
            let label = self.inner.field_label(index);
            let named = |e: PyErr| crate::kernel::relabel(py, e, &label);
            if field.extents.is_empty() {
                objects.push(vec![arrays::read_object(value, full).map_err(named)?]);
            } else {
                let mut items = Vec::new();
                for item in value.try_iter().map_err(named)? {
                    items.push(arrays::read_object(&item.map_err(named)?, full).map_err(named)?);
                }
                objects.push(items);
            }
        }
        let field_values: Vec<FieldValue<'_>> = self
            .inner
            .fields
            .iter()
            .zip(&objects)
            .map(|(field, objs)| {
                let args: Vec<Arg<'_>> = objs.iter().map(|o| o.as_arg(device)).collect();
                match (field.extents.is_empty(), args.as_slice()) {
                    (true, [one]) => FieldValue::One(*one),
                    _ => FieldValue::Many(args),
                }
            })
            .collect();
        let bytes = self
            .inner
            .pack(&field_values, device)
            .map_err(|e| errors::arg_error(py, e))?;
        Ok(pyo3::types::PyBytes::new(py, &bytes))
    }

    fn __repr__(&self) -> String {
        format!(
            "StructLayout({}, size={}, alignment={})",
            self.inner.name, self.inner.size, self.inner.alignment
        )
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<StructLayout>()
}
