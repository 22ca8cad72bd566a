//! `__constant__` memory set from the host: which `__constant__` variables a CUDA source
//! declares ([`constant_declarations`]), and the check a value passes before it is copied into
//! one ([`check_value`]): the declared C type and the symbol's size, nothing cast or truncated.
//!
//! The compiled module (a CUDA module or an emulation library) says how many bytes a symbol
//! has; the source says its C type. A variable whose type is not in the scalar type map (a
//! struct, a vector type) is reported as such and cannot be set.

use std::collections::HashMap;

use crate::ctypes::dtype_of_ctype;
use crate::dtype::DType;
use crate::parser::lexer::{join, tokenize, TokKind, Token};

/// One `__constant__` variable declared at namespace scope in a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstantDecl {
    /// Its name (unqualified).
    pub name: String,
    /// Declared `const` or `constexpr` (its value may be folded into the code: it can be
    /// read but not set).
    pub is_const: bool,
    /// The declared C type as written (after typedefs of the same source are applied).
    pub ctype: String,
    /// The dtype of that C type, if it is in the scalar type map.
    pub dtype: Option<DType>,
    /// The array extents (`float c[3][4]`: `[Some(3), Some(4)]`; `None` where the extent is not
    /// a literal, such as a macro); empty for a scalar.
    pub dims: Vec<Option<usize>>,
}

impl ConstantDecl {
    /// The declared shape when every extent is a literal (`()` for a scalar).
    pub fn shape(&self) -> Option<Vec<usize>> {
        self.dims.iter().copied().collect()
    }
}

/// The `__constant__` variables declared in `source` at global scope (`extern "C"` blocks
/// included), in source order, each name once: those a module exports under their own name.
/// Declarations inside namespaces (whose symbols are mangled), functions or classes, `extern`
/// declarations, and text inside comments or preprocessor directives are not listed. Never
/// panics.
pub fn constant_declarations(source: &str) -> Vec<ConstantDecl> {
    let tokens = tokenize(source);
    let aliases = crate::parser::type_aliases_of(&tokens);
    let mut out: Vec<ConstantDecl> = Vec::new();
    // the enclosing braces: true for an `extern "C"` block, false for anything else (a
    // namespace, a function, a class, an initialiser)
    let mut scopes: Vec<bool> = Vec::new();
    let mut i = 0;
    while let Some(t) = tokens.get(i) {
        if t.is_punct("{") {
            scopes.push(brace_scope(&tokens, i));
            i += 1;
            continue;
        }
        if t.is_punct("}") {
            scopes.pop();
            i += 1;
            continue;
        }
        let at_global_scope = scopes.iter().all(|&extern_c| extern_c);
        if !(t.is_ident("__constant__") && at_global_scope) {
            i += 1;
            continue;
        }
        // the declaration runs from the start of the statement to the `;` at this level
        let start = statement_start(&tokens, i);
        let Some(end) = statement_end(&tokens, i) else {
            break;
        };
        let stmt = tokens.get(start..end).unwrap_or_default();
        i = end + 1;
        if stmt.iter().any(|t| t.is_ident("extern")) {
            continue;
        }
        for decl in parse_declaration(stmt, &aliases) {
            if !out.iter().any(|d| d.name == decl.name) {
                out.push(decl);
            }
        }
    }
    out
}

/// Whether the `{` at `at` opens an `extern "C"` block.
fn brace_scope(tokens: &[Token], at: usize) -> bool {
    let prev = |k: usize| at.checked_sub(k).and_then(|j| tokens.get(j));
    prev(2).is_some_and(|t| t.is_ident("extern")) && prev(1).is_some_and(|t| t.kind == TokKind::Str)
}

/// The first token of the statement that contains `at` (after the previous `;`, `{` or `}`).
fn statement_start(tokens: &[Token], at: usize) -> usize {
    let mut j = at;
    while j > 0 {
        match tokens.get(j - 1) {
            Some(t) if t.is_punct(";") || t.is_punct("{") || t.is_punct("}") => break,
            _ => j -= 1,
        }
    }
    j
}

/// The `;` that ends the statement containing `at` (braces of an initialiser skipped).
fn statement_end(tokens: &[Token], at: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (j, t) in tokens.iter().enumerate().skip(at) {
        if t.is_punct("{") || t.is_punct("(") || t.is_punct("[") {
            depth += 1;
        } else if t.is_punct("}") || t.is_punct(")") || t.is_punct("]") {
            depth = depth.checked_sub(1)?;
        } else if t.is_punct(";") && depth == 0 {
            return Some(j);
        }
    }
    None
}

/// Words of a declaration that are not part of its type.
const NOT_TYPE: [&str; 9] = [
    "__constant__",
    "__device__",
    "static",
    "const",
    "volatile",
    "constexpr",
    "inline",
    "__managed__",
    "__restrict__",
];

/// The declarators of one `__constant__` statement (`float a[3] = {…}, b;`).
fn parse_declaration(stmt: &[Token], aliases: &HashMap<String, Vec<Token>>) -> Vec<ConstantDecl> {
    // split at top-level commas
    let mut parts: Vec<&[Token]> = Vec::new();
    let mut depth = 0usize;
    let mut from = 0;
    for (j, t) in stmt.iter().enumerate() {
        if t.is_punct("{") || t.is_punct("(") || t.is_punct("[") || t.is_punct("<") {
            depth += 1;
        } else if t.is_punct("}") || t.is_punct(")") || t.is_punct("]") || t.is_punct(">") {
            depth = depth.saturating_sub(1);
        } else if t.is_punct(",") && depth == 0 {
            parts.push(stmt.get(from..j).unwrap_or_default());
            from = j + 1;
        }
    }
    parts.push(stmt.get(from..).unwrap_or_default());
    let mut out = Vec::new();
    let mut type_tokens: Option<Vec<Token>> = None;
    let is_const = stmt
        .iter()
        .any(|t| t.is_ident("const") || t.is_ident("constexpr"));
    for (k, part) in parts.into_iter().enumerate() {
        // the declarator ends at `=` or `{` (an initialiser)
        let end = part
            .iter()
            .position(|t| t.is_punct("=") || t.is_punct("{"))
            .unwrap_or(part.len());
        let decl = part.get(..end).unwrap_or_default();
        // the name: the last identifier before the first `[`
        let bracket = decl
            .iter()
            .position(|t| t.is_punct("["))
            .unwrap_or(decl.len());
        let head = decl.get(..bracket).unwrap_or_default();
        let Some(name_at) = head.iter().rposition(|t| t.kind == TokKind::Ident) else {
            continue;
        };
        let Some(name) = head.get(name_at) else {
            continue;
        };
        if head
            .iter()
            .any(|t| t.is_punct("(") || t.is_punct("*") || t.is_punct("&"))
        {
            continue; // a function, or a pointer in constant memory: not a value to set
        }
        if k == 0 {
            let ty: Vec<Token> = head
                .get(..name_at)
                .unwrap_or_default()
                .iter()
                .filter(|t| !(t.kind == TokKind::Ident && NOT_TYPE.contains(&t.text.as_str())))
                .cloned()
                .collect();
            type_tokens = Some(ty);
        }
        let Some(ty) = type_tokens.as_ref().filter(|t| !t.is_empty()) else {
            continue;
        };
        let ty = resolve_aliases(ty, aliases);
        let mut dims = Vec::new();
        let mut j = bracket;
        while let Some(t) = decl.get(j) {
            if !t.is_punct("[") {
                break;
            }
            let close = (j + 1..decl.len()).find(|&c| decl.get(c).is_some_and(|t| t.is_punct("]")));
            let Some(close) = close else {
                break;
            };
            let inner = decl.get(j + 1..close).unwrap_or_default();
            dims.push(match inner {
                [n] if n.kind == TokKind::Number => parse_extent(&n.text),
                _ => None,
            });
            j = close + 1;
        }
        let ctype = join(&ty);
        out.push(ConstantDecl {
            name: name.text.clone(),
            is_const,
            dtype: dtype_of_ctype(&ctype),
            ctype,
            dims,
        });
    }
    out
}

fn resolve_aliases(ty: &[Token], aliases: &HashMap<String, Vec<Token>>) -> Vec<Token> {
    let mut cur = ty.to_vec();
    for _ in 0..8 {
        let mut next = Vec::with_capacity(cur.len());
        let mut changed = false;
        for t in &cur {
            match aliases.get(&t.text) {
                Some(rep) if t.kind == TokKind::Ident => {
                    next.extend(rep.iter().cloned());
                    changed = true;
                }
                _ => next.push(t.clone()),
            }
        }
        cur = next;
        if !changed {
            break;
        }
    }
    cur
}

/// A literal array extent (`16`, `0x10`, `16u`), or None.
fn parse_extent(text: &str) -> Option<usize> {
    let t = text
        .trim_end_matches(['u', 'U', 'l', 'L'])
        .replace('\'', "");
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return usize::from_str_radix(hex, 16).ok();
    }
    t.parse().ok()
}

/// Why a value cannot be copied into a `__constant__` variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConstantError {
    /// The name is not a `__constant__` variable of the module.
    #[error(
        "kernel '{kernel}': '{name}' is not a __constant__ variable of its module; {}",
        found_text(found)
    )]
    NotFound {
        kernel: String,
        name: String,
        found: Vec<String>,
    },
    /// The source declares the variable but the compiled module has no such symbol.
    #[error(
        "kernel '{kernel}': __constant__ '{name}' is declared in the source but is not in the \
         compiled module (a `static` variable that no kernel uses can be removed by the \
         compiler: declare it without `static`)"
    )]
    Missing { kernel: String, name: String },
    /// The variable is `const`: its value may be folded into the code.
    #[error(
        "kernel '{kernel}': __constant__ '{name}' is declared const, so the compiler may have \
         folded its value into the code and a new value would not be seen; declare it without \
         const to set it from the host"
    )]
    Const { kernel: String, name: String },
    /// The variable's declared type is not a scalar type cunumpy can check a value against.
    #[error(
        "kernel '{kernel}': __constant__ '{name}' is declared as '{ctype}', which is not a \
         scalar C type of cunumpy's type map (bool, integers, float, double, complex); only \
         such variables (and arrays of them) can be set or read"
    )]
    UnsupportedType {
        kernel: String,
        name: String,
        ctype: String,
    },
    /// The value's dtype is not the declared C type's.
    #[error(
        "kernel '{kernel}': __constant__ '{name}' is declared as '{ctype}' (dtype {expected}), \
         got a value of dtype {given}; convert it first (nothing is cast)"
    )]
    DType {
        kernel: String,
        name: String,
        ctype: String,
        expected: String,
        given: String,
    },
    /// The value has not as many elements as the variable.
    #[error(
        "kernel '{kernel}': __constant__ '{name}' ('{ctype}{dims}') holds {expected} element(s) \
         ({bytes} bytes), got {given} element(s); nothing is truncated or padded"
    )]
    Size {
        kernel: String,
        name: String,
        ctype: String,
        dims: String,
        expected: usize,
        bytes: usize,
        given: usize,
    },
    /// The module's symbol is not a whole number of elements of the declared type (a
    /// declaration the source scan read wrongly).
    #[error(
        "kernel '{kernel}': __constant__ '{name}' has {bytes} bytes in the compiled module, \
         which is not a whole number of '{ctype}' ({itemsize} bytes each)"
    )]
    Layout {
        kernel: String,
        name: String,
        ctype: String,
        bytes: usize,
        itemsize: usize,
    },
}

fn found_text(found: &[String]) -> String {
    if found.is_empty() {
        "the source declares no __constant__ variable at namespace scope".to_string()
    } else {
        format!("its __constant__ variables are: {}", found.join(", "))
    }
}

impl ConstantError {
    /// The kind of error, for the binding's exception class: `"not_found"`, `"type"` or
    /// `"size"`.
    pub fn kind(&self) -> &'static str {
        match self {
            ConstantError::NotFound { .. } | ConstantError::Missing { .. } => "not_found",
            ConstantError::Const { .. } => "type",
            ConstantError::UnsupportedType { .. } | ConstantError::DType { .. } => "type",
            ConstantError::Size { .. } | ConstantError::Layout { .. } => "size",
        }
    }
}

/// What a checked `__constant__` variable is: its declaration's dtype, its element count (from
/// the module's byte size) and the shape a read returns (the declared one when every extent
/// is a literal and agrees with the size, else one axis; `[]` for a scalar).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstantLayout {
    pub dtype: DType,
    pub count: usize,
    pub shape: Vec<usize>,
    pub bytes: usize,
}

/// The declaration of `name` among `decls`, or [`ConstantError::NotFound`].
pub fn find<'a>(
    kernel: &str,
    decls: &'a [ConstantDecl],
    name: &str,
) -> Result<&'a ConstantDecl, ConstantError> {
    decls
        .iter()
        .find(|d| d.name == name)
        .ok_or_else(|| ConstantError::NotFound {
            kernel: kernel.to_string(),
            name: name.to_string(),
            found: decls.iter().map(|d| d.name.clone()).collect(),
        })
}

/// The layout of `decl`, whose symbol has `symbol_bytes` bytes in the compiled module.
pub fn layout(
    kernel: &str,
    decl: &ConstantDecl,
    symbol_bytes: usize,
) -> Result<ConstantLayout, ConstantError> {
    let dtype = decl.dtype.ok_or_else(|| ConstantError::UnsupportedType {
        kernel: kernel.to_string(),
        name: decl.name.clone(),
        ctype: decl.ctype.clone(),
    })?;
    let itemsize = dtype.itemsize();
    if itemsize == 0 || symbol_bytes % itemsize != 0 {
        return Err(ConstantError::Layout {
            kernel: kernel.to_string(),
            name: decl.name.clone(),
            ctype: decl.ctype.clone(),
            bytes: symbol_bytes,
            itemsize,
        });
    }
    let count = symbol_bytes / itemsize;
    let shape = match decl.shape() {
        Some(s) if s.iter().product::<usize>() == count => s,
        _ if decl.dims.is_empty() && count == 1 => Vec::new(),
        _ => vec![count],
    };
    Ok(ConstantLayout {
        dtype,
        count,
        shape,
        bytes: symbol_bytes,
    })
}

/// Whether `decl` can be set at all (a scalar C type of the type map, not `const`): checked
/// before the module is asked for the symbol (a `const` one may not be in it).
pub fn check_settable(kernel: &str, decl: &ConstantDecl) -> Result<DType, ConstantError> {
    if decl.is_const {
        return Err(ConstantError::Const {
            kernel: kernel.to_string(),
            name: decl.name.clone(),
        });
    }
    decl.dtype.ok_or_else(|| ConstantError::UnsupportedType {
        kernel: kernel.to_string(),
        name: decl.name.clone(),
        ctype: decl.ctype.clone(),
    })
}

/// Checks a value of dtype `given` (its NumPy name) with `given_count` elements against the
/// variable `decl` whose symbol has `symbol_bytes` bytes: the dtype must be the declared one
/// and the element count the symbol's, exactly.
pub fn check_value(
    kernel: &str,
    decl: &ConstantDecl,
    symbol_bytes: usize,
    given: &str,
    given_count: usize,
) -> Result<ConstantLayout, ConstantError> {
    check_settable(kernel, decl)?;
    let layout = layout(kernel, decl, symbol_bytes)?;
    if DType::from_name(given) != Some(layout.dtype) {
        return Err(ConstantError::DType {
            kernel: kernel.to_string(),
            name: decl.name.clone(),
            ctype: decl.ctype.clone(),
            expected: layout.dtype.name().to_string(),
            given: given.to_string(),
        });
    }
    if given_count != layout.count {
        let dims: String = decl
            .dims
            .iter()
            .map(|d| d.map_or("[?]".to_string(), |n| format!("[{n}]")))
            .collect();
        return Err(ConstantError::Size {
            kernel: kernel.to_string(),
            name: decl.name.clone(),
            ctype: decl.ctype.clone(),
            dims,
            expected: layout.count,
            bytes: layout.bytes,
            given: given_count,
        });
    }
    Ok(layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = r#"
typedef unsigned int uint;
#define N 8
__constant__ float scale;
__constant__ double coeffs[4] = {1, 2, 3, 4};
static __constant__ uint table[2][3], extra;
__constant__ int by_macro[N];
namespace ns { __constant__ float inner; }
namespace { __constant__ short anon; }
extern "C" { __constant__ long long in_c; }
struct P { float x; };
__constant__ P p;
extern __constant__ float declared_only[4];
__constant__ const int folded = 3;
__global__ void k(float* out) {
    __shared__ float s[4];
    out[0] = scale * coeffs[1];
}
// __constant__ float in_comment;
"#;

    #[test]
    fn finds_namespace_scope_constants() {
        let d = constant_declarations(SRC);
        let names: Vec<&str> = d.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            ["scale", "coeffs", "table", "extra", "by_macro", "in_c", "p", "folded"]
        );
        assert!(d[7].is_const && !d[0].is_const);
        assert_eq!(d[0].dtype, Some(DType::Float32));
        assert!(d[0].dims.is_empty());
        assert_eq!(d[1].dims, vec![Some(4)]);
        assert_eq!(d[2].dtype, Some(DType::UInt32), "typedef applied");
        assert_eq!(d[2].dims, vec![Some(2), Some(3)]);
        assert_eq!(d[3].dtype, Some(DType::UInt32));
        assert!(d[3].dims.is_empty());
        assert_eq!(d[4].dims, vec![None]);
        assert_eq!(d[5].dtype, Some(DType::Int64));
        assert_eq!(d[6].dtype, None);
    }

    #[test]
    fn broken_sources_do_not_panic() {
        for src in [
            "__constant__",
            "__constant__ float",
            "__constant__ float x[",
            "}} __constant__ int a; {{",
            "namespace { __constant__ int a[3",
            "__constant__ = ;",
        ] {
            let _ = constant_declarations(src);
        }
    }

    #[test]
    fn checks_dtype_and_size() {
        let d = constant_declarations(SRC);
        let coeffs = find("k", &d, "coeffs").expect("accepted");
        let l = check_value("k", coeffs, 32, "float64", 4).expect("accepted");
        assert_eq!(l.shape, vec![4]);
        let e = check_value("k", coeffs, 32, "float32", 4).expect_err("refused");
        assert_eq!(e.kind(), "type");
        assert!(e.to_string().contains("kernel 'k'") && e.to_string().contains("float32"));
        let e = check_value("k", coeffs, 32, "float64", 3).expect_err("refused");
        assert_eq!(e.kind(), "size");
        assert!(e.to_string().contains("holds 4 element(s)"), "{e}");
        let e = find("k", &d, "nope").expect_err("refused");
        assert_eq!(e.kind(), "not_found");
        assert!(e.to_string().contains("scale, coeffs"), "{e}");
        let p = find("k", &d, "p").expect("accepted");
        assert_eq!(layout("k", p, 4).expect_err("refused").kind(), "type");
        let scale = find("k", &d, "scale").expect("accepted");
        assert_eq!(
            layout("k", scale, 4).expect("accepted").shape,
            Vec::<usize>::new()
        );
        let by_macro = find("k", &d, "by_macro").expect("accepted");
        assert_eq!(layout("k", by_macro, 32).expect("accepted").shape, vec![8]);
        assert_eq!(
            layout("k", by_macro, 30).expect_err("refused").kind(),
            "size"
        );
        let table = find("k", &d, "table").expect("accepted");
        assert_eq!(layout("k", table, 24).expect("accepted").shape, vec![2, 3]);
        assert!(find("k", &d, "inner").is_err(), "namespaced: not listed");
        let folded = find("k", &d, "folded").expect("accepted");
        assert_eq!(
            check_value("k", folded, 4, "int32", 1)
                .expect_err("refused")
                .kind(),
            "type"
        );
    }
}
