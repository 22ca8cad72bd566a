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

/// A template parameter (`typename T`, `class T` or a non-type `int N`).
#[derive(Clone, Debug, PartialEq)]
pub struct TemplateParam {
    pub name: String,
    /// `None` for a type parameter, else the C type of a non-type parameter.
    pub value_type: Option<String>,
}
