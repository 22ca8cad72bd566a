//! The parsed signature of a `__global__` function: what the argument plan checks against.
//!
//! The parser that builds it lives in `parser` (see `parse_signature`).

use crate::dtype::DType;

/// One `__global__` function's parameter list, after template substitution.
#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    /// The kernel's name as written (without template arguments).
    pub kernel: String,
    /// The parameters in order.
    pub params: Vec<Param>,
    /// The template parameters (empty when the kernel is not a template).
    pub template_params: Vec<TemplateParam>,
    /// The name to ask NVRTC for: `name` or `name<args>` for a template instance.
    pub expression: String,
}

/// One kernel parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// The parameter's name.
    pub name: String,
    /// The C declaration as written (normalised whitespace), for error messages.
    pub decl: String,
    pub kind: ParamKind,
    /// The C default value as written (`= 1.5f` gives `1.5f`), applied when a launch leaves
    /// the argument out.
    pub default: Option<String>,
}

/// What a parameter takes.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamKind {
    /// A scalar passed by value.
    Scalar(DType),
    /// `T*` (or `T[]`); `dtype` is `None` for `void*`.
    Pointer {
        dtype: Option<DType>,
        is_const: bool,
    },
    /// `ArrayND<T>` (strided, `contiguous == false`) or `CArrayND<T>` (C-contiguous).
    View {
        dtype: DType,
        ndim: u8,
        contiguous: bool,
    },
    /// A struct passed by value; its layout comes from a `CudaStruct` of that name.
    Struct { name: String },
}

/// What a kernel parameter or one element of a struct field is: one kind, one C spelling and
/// one size and alignment rule for both (a parameter is packed into the launch buffer with
/// [`ParamKind::size`] bytes; a field is laid out with the same size and
/// [`ParamKind::alignment`]). A struct's own size and alignment come from its layout, which
/// the caller names by the struct's name.
impl ParamKind {
    /// Bytes of one value: a scalar's itemsize, 8 for a pointer, a view's pointer and
    /// `ndim` extents (plus `ndim` strides unless C-contiguous), a struct's size as
    /// `struct_size` gives it (`None` when it knows no such struct).
    pub fn size(&self, struct_size: &dyn Fn(&str) -> Option<usize>) -> Option<usize> {
        Some(match self {
            ParamKind::Scalar(d) => d.itemsize(),
            ParamKind::Pointer { .. } => 8,
            ParamKind::View {
                ndim, contiguous, ..
            } => {
                let n = *ndim as usize;
                if *contiguous {
                    8 * (1 + n)
                } else {
                    8 * (1 + 2 * n)
                }
            }
            ParamKind::Struct { name } => struct_size(name)?,
        })
    }

    /// Alignment of one value on the device: a scalar's (every scalar is aligned to its size,
    /// `complex<double>` to 16), 8 for pointers and views, a struct's as `struct_alignment`
    /// gives it.
    pub fn alignment(&self, struct_alignment: &dyn Fn(&str) -> Option<usize>) -> Option<usize> {
        Some(match self {
            ParamKind::Scalar(d) => d.cuda_alignment(),
            ParamKind::Pointer { .. } | ParamKind::View { .. } => 8,
            ParamKind::Struct { name } => struct_alignment(name)?,
        })
    }

    /// The C spelling of the type, without a name: `double`, `const float*`,
    /// `CArray2D<double>`, the struct's name.
    pub fn c_type(&self) -> String {
        match self {
            ParamKind::Scalar(d) => d.c_name().to_string(),
            ParamKind::Pointer { dtype, is_const } => {
                let base = dtype.map_or("void", |d| d.c_name());
                if *is_const {
                    format!("const {base}*")
                } else {
                    format!("{base}*")
                }
            }
            ParamKind::View {
                dtype,
                ndim,
                contiguous,
            } => format!(
                "{}Array{ndim}D<{}>",
                if *contiguous { "C" } else { "" },
                dtype.c_name()
            ),
            ParamKind::Struct { name } => name.clone(),
        }
    }
}

/// A template parameter (`typename T`, `class T` or a non-type `int N`).
#[derive(Clone, Debug, PartialEq)]
pub struct TemplateParam {
    pub name: String,
    /// `None` for a type parameter, else the C type of a non-type parameter.
    pub value_type: Option<String>,
}
