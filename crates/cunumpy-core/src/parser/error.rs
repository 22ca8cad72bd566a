//! Why a kernel's signature cannot be checked.

/// A signature the parser will not check. Every message names the kernel, and a parameter
/// problem also names the parameter (its 0-based index and its text as written).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// No `__global__` function of that name (outside comments and literals); `found` are the
    /// `__global__` functions the source does define.
    #[error("no __global__ function '{kernel}' found in the CUDA source; {}", found_list(.found))]
    NotFound { kernel: String, found: Vec<String> },

    /// The declaration's parentheses (parameter list or `__launch_bounds__(...)`) do not close.
    #[error("unbalanced parentheses in the declaration of kernel '{kernel}'")]
    UnbalancedParentheses { kernel: String },

    /// A `__global__` function must return `void`.
    #[error("kernel '{kernel}' is declared to return '{return_type}'; a __global__ function must return void")]
    NonVoidReturn { kernel: String, return_type: String },

    /// A template kernel without `template_args`, or with the wrong number of them.
    /// `required` counts the parameters without a default value; `given` is `None` when no
    /// `template_args` were passed.
    #[error(
        "'{kernel}' is a template with {expected} parameters; pass them as template_args{}",
        arity_detail(*.required, *.expected, *.given)
    )]
    TemplateArity {
        kernel: String,
        expected: usize,
        required: usize,
        given: Option<usize>,
    },

    /// `template_args` for a kernel that is not a template.
    #[error("'{kernel}' is not a template, but template_args were given")]
    NotATemplate { kernel: String },

    /// A template argument that is not usable C++ text (empty, or containing `;`, braces or
    /// unbalanced brackets).
    #[error("template argument {index} of '{kernel}' ('{arg}') is not valid C++: {reason}")]
    InvalidTemplateArg {
        kernel: String,
        index: usize,
        arg: String,
        reason: String,
    },

    /// A template header the parser does not handle (parameter packs, template template
    /// parameters).
    #[error("cannot check the template kernel '{kernel}': {reason} ('{param}')")]
    UnsupportedTemplate {
        kernel: String,
        param: String,
        reason: String,
    },

    /// `T&`, `T&&`, `T (&a)[3]`: a kernel cannot take a reference to host memory.
    #[error("cannot check the kernel parameter '{param}' (argument {index}) of '{kernel}': references are not supported; pass a pointer (T*), an array view or a value")]
    Reference {
        kernel: String,
        index: usize,
        param: String,
    },

    /// `T**`, `T*[]`, `T a[][3]`.
    #[error("cannot check the kernel parameter '{param}' (argument {index}) of '{kernel}': unsupported type '{ctype}': pointers to pointers are not supported")]
    PointerToPointer {
        kernel: String,
        index: usize,
        param: String,
        ctype: String,
    },

    /// `float2`, `double4`, `int3`, `__half`, `half2`, `__nv_bfloat16`, … by value or pointer.
    #[error("cannot check the kernel parameter '{param}' (argument {index}) of '{kernel}': unsupported type '{ctype}': CUDA vector and half-precision types are not supported; use a pointer to the scalar type, or a struct")]
    VectorType {
        kernel: String,
        index: usize,
        param: String,
        ctype: String,
    },

    /// An identifier that is neither in the type map nor a listed struct: a macro, a typedef,
    /// an unlisted struct.
    #[error("cannot check the kernel parameter '{param}' (argument {index}) of '{kernel}': unsupported type '{ctype}': not a known C type nor a struct given in structs= (for a struct, describe it with cunumpy.arguments.CudaStruct(\"{}\", fields) and pass CudaKernel(..., structs=[that CudaStruct]); macros cannot be checked)", bare_type(.ctype))]
    UnknownType {
        kernel: String,
        index: usize,
        param: String,
        ctype: String,
    },

    /// A pointer to an `ArrayND<T>`/`CArrayND<T>` view, or a view of a non-scalar type.
    #[error("cannot check the kernel parameter '{param}' (argument {index}) of '{kernel}': array views take a scalar element type and are passed by value")]
    ViewNotByValue {
        kernel: String,
        index: usize,
        param: String,
    },

    /// A pointer to a listed struct.
    #[error("cannot check the kernel parameter '{param}' (argument {index}) of '{kernel}': structs can only be passed by value")]
    StructNotByValue {
        kernel: String,
        index: usize,
        param: String,
        struct_name: String,
    },

    /// A parameter without a name (`double*`): argument checks and their messages need one.
    #[error("cannot check the kernel parameter '{param}' (argument {index}) of '{kernel}': the parameter has no name; name every parameter of a checked kernel")]
    UnnamedParam {
        kernel: String,
        index: usize,
        param: String,
    },

    /// Any other declaration the parser cannot read: function pointers, `...`, `void x`,
    /// stray tokens.
    #[error(
        "cannot check the kernel parameter '{param}' (argument {index}) of '{kernel}': {reason}"
    )]
    UnsupportedDeclaration {
        kernel: String,
        index: usize,
        param: String,
        reason: String,
    },
}

fn arity_detail(required: usize, expected: usize, given: Option<usize>) -> String {
    let mut s = String::new();
    if required < expected {
        s.push_str(&format!(
            " ({} of them have defaults)",
            expected.saturating_sub(required)
        ));
    }
    if let Some(n) = given {
        s.push_str(&format!(", got {n}"));
    }
    s
}

/// The type's name without qualifiers and pointer stars: `Particle` for `const Particle*`.
fn bare_type(ctype: &str) -> String {
    ctype
        .split(|c: char| c.is_whitespace() || c == '*' || c == '&')
        .rfind(|w| !w.is_empty() && !matches!(*w, "const" | "volatile" | "struct" | "__restrict__"))
        .unwrap_or(ctype)
        .to_string()
}

/// `it defines a, b` or `it defines no __global__ function`.
fn found_list(found: &[String]) -> String {
    if found.is_empty() {
        "it defines no __global__ function".to_string()
    } else {
        format!("it defines {}", found.join(", "))
    }
}

impl SignatureError {
    /// The kernel the error is about.
    pub fn kernel(&self) -> &str {
        match self {
            SignatureError::NotFound { kernel, .. }
            | SignatureError::UnbalancedParentheses { kernel }
            | SignatureError::NonVoidReturn { kernel, .. }
            | SignatureError::TemplateArity { kernel, .. }
            | SignatureError::NotATemplate { kernel }
            | SignatureError::InvalidTemplateArg { kernel, .. }
            | SignatureError::UnsupportedTemplate { kernel, .. }
            | SignatureError::Reference { kernel, .. }
            | SignatureError::PointerToPointer { kernel, .. }
            | SignatureError::VectorType { kernel, .. }
            | SignatureError::UnknownType { kernel, .. }
            | SignatureError::ViewNotByValue { kernel, .. }
            | SignatureError::StructNotByValue { kernel, .. }
            | SignatureError::UnnamedParam { kernel, .. }
            | SignatureError::UnsupportedDeclaration { kernel, .. } => kernel,
        }
    }

    /// The 0-based index of the parameter the error is about, if it is about one.
    pub fn param_index(&self) -> Option<usize> {
        match self {
            SignatureError::Reference { index, .. }
            | SignatureError::PointerToPointer { index, .. }
            | SignatureError::VectorType { index, .. }
            | SignatureError::UnknownType { index, .. }
            | SignatureError::ViewNotByValue { index, .. }
            | SignatureError::StructNotByValue { index, .. }
            | SignatureError::UnnamedParam { index, .. }
            | SignatureError::UnsupportedDeclaration { index, .. } => Some(*index),
            _ => None,
        }
    }
}
