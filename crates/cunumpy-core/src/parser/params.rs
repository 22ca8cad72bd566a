//! One kernel parameter: from its tokens (after template substitution) to a [`Param`].

use super::decl::BUILTIN_TYPE_WORDS;
use super::error::SignatureError;
use super::lexer::{join, TokKind, Token};
use crate::ctypes::{dtype_of_ctype, strip_prefixes, QUALIFIERS};
use crate::signature::{Param, ParamKind};

/// Keywords that may precede a type name and do not change it.
const ELABORATORS: [&str; 4] = ["struct", "class", "enum", "typename"];

/// The qualifiers that are dropped from the normalised declaration.
const RESTRICT: [&str; 3] = ["__restrict__", "__restrict", "restrict"];

/// CUDA's half-precision, bfloat16, fp8 and cuComplex types (the other vector types are matched
/// by pattern in [`is_vector_type`]).
const HALF_LIKE: [&str; 13] = [
    "half",
    "half2",
    "__half",
    "__half2",
    "__half_raw",
    "__half2_raw",
    "nv_bfloat16",
    "nv_bfloat162",
    "__nv_bfloat16",
    "__nv_bfloat162",
    "cuComplex",
    "cuFloatComplex",
    "cuDoubleComplex",
];

/// Element names of CUDA's vector types (`float4`, `uchar2`, `longlong3`, `double4_16a`, …).
const VECTOR_BASES: [&str; 12] = [
    "char",
    "uchar",
    "short",
    "ushort",
    "int",
    "uint",
    "long",
    "ulong",
    "longlong",
    "ulonglong",
    "float",
    "double",
];

/// Is `name` one of CUDA's vector, half-precision or similar non-scalar builtin types?
pub(crate) fn is_vector_type(name: &str) -> bool {
    let name = strip_prefixes(name);
    if HALF_LIKE.contains(&name) || name == "dim3" || name.starts_with("__nv_fp8") {
        return true;
    }
    VECTOR_BASES.iter().any(|b| {
        name.strip_prefix(b).is_some_and(|rest| {
            let mut chars = rest.chars();
            matches!(chars.next(), Some('1'..='4'))
                && matches!(chars.as_str(), "" | "_16a" | "_32a")
        })
    })
}

/// `ArrayND` / `CArrayND` (optionally `cunumpy::`-qualified) with N in 1..=16: `(ndim, contiguous,
/// element tokens)`.
fn as_view(base: &[Token]) -> Option<(u8, bool, &[Token])> {
    let mut b = base;
    if b.first().is_some_and(|t| t.is_punct("::")) {
        b = b.get(1..)?;
    }
    if b.first().is_some_and(|t| t.is_ident("cunumpy"))
        && b.get(1).is_some_and(|t| t.is_punct("::"))
    {
        b = b.get(2..)?;
    }
    let name = b.first()?;
    if name.kind != TokKind::Ident || !b.get(1)?.is_punct("<") || !b.last()?.is_punct(">") {
        return None;
    }
    let (contiguous, rest) = match name.text.strip_prefix("CArray") {
        Some(r) => (true, r),
        None => (false, name.text.strip_prefix("Array")?),
    };
    let digits = rest.strip_suffix('D')?;
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) || digits.starts_with('0') {
        return None;
    }
    let ndim: u8 = digits.parse().ok()?;
    if !(1..=16).contains(&ndim) {
        return None;
    }
    let inner = b.get(2..b.len().checked_sub(1)?)?;
    Some((ndim, contiguous, inner))
}

/// The default value's text (`= …` at the top level), if any.
fn default_text(tokens: &[Token]) -> Option<String> {
    let before = strip_default(tokens).len();
    let rest = tokens.get(before + 1..)?;
    (before < tokens.len() && !rest.is_empty()).then(|| join(rest))
}

/// The tokens before a default value (`= …` at the top level).
fn strip_default(tokens: &[Token]) -> &[Token] {
    let mut depth = 0usize;
    let mut angles = 0usize;
    for (i, t) in tokens.iter().enumerate() {
        if t.kind != TokKind::Punct {
            continue;
        }
        match t.text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth = depth.saturating_sub(1),
            "<" if depth == 0 => angles += 1,
            ">" if depth == 0 => angles = angles.saturating_sub(1),
            "=" if depth == 0 && angles == 0 => return tokens.get(..i).unwrap_or_default(),
            _ => {}
        }
    }
    tokens
}

/// Parameter context for the error constructors.
pub(crate) struct Ctx<'a> {
    pub kernel: &'a str,
    pub index: usize,
    /// The parameter as written (before substitution), for messages.
    pub written: String,
    pub structs: &'a [String],
}

impl Ctx<'_> {
    fn unsupported(&self, reason: &str) -> SignatureError {
        SignatureError::UnsupportedDeclaration {
            kernel: self.kernel.to_string(),
            index: self.index,
            param: self.written.clone(),
            reason: reason.to_string(),
        }
    }
}

fn is_qualifier(t: &Token) -> bool {
    t.kind == TokKind::Ident && QUALIFIERS.contains(&t.text.as_str())
}

/// Parses one parameter. A default value (`= …`) is kept as text: a launch that leaves the
/// argument out applies it (`crate::args::ArgPlan::pack_default`).
pub(crate) fn parse_param(ctx: &Ctx<'_>, tokens: &[Token]) -> Result<Param, SignatureError> {
    let kernel = ctx.kernel.to_string();
    let index = ctx.index;
    let param = ctx.written.clone();
    let default = default_text(tokens);
    let tokens = strip_default(tokens);
    if tokens.is_empty() {
        return Err(ctx.unsupported("the parameter is empty"));
    }
    if tokens.iter().any(|t| t.is_punct("&")) {
        return Err(SignatureError::Reference {
            kernel,
            index,
            param,
        });
    }
    if tokens.iter().any(|t| t.is_punct(".")) {
        return Err(ctx.unsupported("variadic parameters (...) are not supported"));
    }
    if tokens.iter().any(|t| t.is_punct("(") || t.is_punct(")")) {
        return Err(
            ctx.unsupported("function pointers and parenthesised declarators are not supported")
        );
    }

    // Array suffixes `[]`, `[N]`: in a parameter list they declare a pointer.
    let mut end = tokens.len();
    let mut arrays = 0usize;
    while end > 0 && tokens.get(end - 1).is_some_and(|t| t.is_punct("]")) {
        let open = tokens
            .get(..end - 1)
            .unwrap_or_default()
            .iter()
            .rposition(|t| t.is_punct("["))
            .ok_or_else(|| ctx.unsupported("could not read the array brackets"))?;
        arrays += 1;
        end = open;
    }
    let array_suffix = tokens.get(end..).unwrap_or_default();
    if array_suffix
        .iter()
        .any(|t| !(t.is_punct("[") || t.is_punct("]") || t.is_word() || t.is_punct("*")))
        || tokens
            .get(..end)
            .unwrap_or_default()
            .iter()
            .any(|t| t.is_punct("[") || t.is_punct("]"))
    {
        return Err(ctx.unsupported("could not read the array brackets"));
    }
    let core: Vec<Token> = tokens
        .get(..end)
        .unwrap_or_default()
        .iter()
        .filter(|t| !(t.kind == TokKind::Ident && RESTRICT.contains(&t.text.as_str())))
        .cloned()
        .collect();

    // The name: a last identifier that is not a keyword of the type and has a type before it.
    let mut type_toks: &[Token] = &core;
    let mut name: Option<String> = None;
    if let Some((last, before)) = core.split_last() {
        let is_name = last.kind == TokKind::Ident
            && !is_qualifier(last)
            && !ELABORATORS.contains(&last.text.as_str())
            && !BUILTIN_TYPE_WORDS.contains(&last.text.as_str())
            && !before.last().is_some_and(|t| t.is_punct("::"))
            && before
                .iter()
                .any(|t| !(is_qualifier(t) || ELABORATORS.contains(&t.text.as_str())));
        if is_name {
            name = Some(last.text.clone());
            type_toks = before;
        }
    }

    // Pointee type, then `*`s (each maybe followed by `const`/`volatile`).
    let mut level = 0usize;
    let first_star = type_toks
        .iter()
        .position(|t| {
            if t.is_punct("<") {
                level += 1;
            } else if t.is_punct(">") {
                level = level.saturating_sub(1);
            }
            level == 0 && t.is_punct("*")
        })
        .unwrap_or(type_toks.len());
    let pre = type_toks.get(..first_star).unwrap_or_default();
    let post = type_toks.get(first_star..).unwrap_or_default();
    if post.iter().any(|t| !(t.is_punct("*") || is_qualifier(t))) {
        return Err(ctx.unsupported("could not read the declaration"));
    }
    let stars = post.iter().filter(|t| t.is_punct("*")).count();

    let mut angles = 0usize;
    let mut pointee_const = false;
    let mut pointee_volatile = false;
    let mut base: Vec<Token> = Vec::new();
    for t in pre {
        let top = angles == 0;
        if t.is_punct("<") {
            angles += 1;
        } else if t.is_punct(">") {
            angles = angles.saturating_sub(1);
        }
        if is_qualifier(t) {
            pointee_const |= top && t.text == "const";
            pointee_volatile |= top && t.text == "volatile";
            continue;
        }
        if top && t.kind == TokKind::Ident && ELABORATORS.contains(&t.text.as_str()) {
            continue;
        }
        if top
            && !(t.kind == TokKind::Ident || t.is_punct("::") || t.is_punct("<") || t.is_punct(">"))
        {
            return Err(ctx.unsupported("could not read the parameter's type"));
        }
        base.push(t.clone());
    }
    if base.is_empty() {
        return Err(ctx.unsupported("the parameter has no type"));
    }
    let base_text = join(&base);
    let depth = stars + arrays;

    let kind = resolve(ctx, &base, &base_text, depth, stars, pointee_const)?;

    let Some(name) = name else {
        return Err(SignatureError::UnnamedParam {
            kernel,
            index,
            param,
        });
    };
    let mut decl = String::new();
    if pointee_const {
        decl.push_str("const ");
    }
    if pointee_volatile {
        decl.push_str("volatile ");
    }
    decl.push_str(&base_text);
    decl.push_str(&"*".repeat(stars));
    decl.push(' ');
    decl.push_str(&name);
    decl.push_str(&join(array_suffix));
    Ok(Param {
        name,
        decl,
        kind,
        default,
    })
}

/// What the type `base` with `depth` levels of pointer is.
fn resolve(
    ctx: &Ctx<'_>,
    base: &[Token],
    base_text: &str,
    depth: usize,
    stars: usize,
    pointee_const: bool,
) -> Result<ParamKind, SignatureError> {
    let kernel = ctx.kernel.to_string();
    let index = ctx.index;
    let param = ctx.written.clone();
    if depth >= 2 {
        return Err(SignatureError::PointerToPointer {
            kernel,
            index,
            param,
            ctype: format!("{base_text}{}", "*".repeat(depth)),
        });
    }
    if let Some((ndim, contiguous, inner)) = as_view(base) {
        let inner_dtype = if inner
            .iter()
            .any(|t| matches!(t.kind, TokKind::Str | TokKind::Char))
        {
            None
        } else {
            dtype_of_ctype(&join(inner))
        };
        return match inner_dtype {
            Some(dtype) if depth == 0 => Ok(ParamKind::View {
                dtype,
                ndim,
                contiguous,
            }),
            _ => Err(SignatureError::ViewNotByValue {
                kernel,
                index,
                param,
            }),
        };
    }
    if let Some(dtype) = dtype_of_ctype(base_text) {
        return Ok(if depth == 0 {
            ParamKind::Scalar(dtype)
        } else {
            ParamKind::Pointer {
                dtype: Some(dtype),
                is_const: pointee_const,
            }
        });
    }
    if base_text == "void" {
        return if depth == 1 {
            Ok(ParamKind::Pointer {
                dtype: None,
                is_const: pointee_const,
            })
        } else {
            Err(ctx.unsupported("a parameter cannot have type 'void'"))
        };
    }
    let struct_name = base_text.strip_prefix("::").unwrap_or(base_text);
    if ctx.structs.iter().any(|s| s == struct_name) {
        return if depth == 0 {
            Ok(ParamKind::Struct {
                name: struct_name.to_string(),
            })
        } else {
            Err(SignatureError::StructNotByValue {
                kernel,
                index,
                param,
                struct_name: struct_name.to_string(),
            })
        };
    }
    let ctype = format!(
        "{base_text}{}{}",
        "*".repeat(stars),
        "[]".repeat(depth.saturating_sub(stars))
    );
    if is_vector_type(base_text) {
        return Err(SignatureError::VectorType {
            kernel,
            index,
            param,
            ctype,
        });
    }
    Err(SignatureError::UnknownType {
        kernel,
        index,
        param,
        ctype,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_types() {
        for v in [
            "float2",
            "double4",
            "int3",
            "uint1",
            "uchar4",
            "longlong2",
            "ulonglong4",
            "double4_16a",
            "__half",
            "half2",
            "__nv_bfloat16",
            "__nv_fp8_e4m3",
            "dim3",
            "cuDoubleComplex",
        ] {
            assert!(is_vector_type(v), "{v}");
        }
        for v in [
            "float", "int8_t", "uint32_t", "float5", "int", "REAL", "double2x",
        ] {
            assert!(!is_vector_type(v), "{v}");
        }
    }

    #[test]
    fn views() {
        let toks = super::super::lexer::tokenize("cunumpy::CArray16D<double>");
        let v = as_view(&toks);
        assert_eq!(v.map(|(n, c, _)| (n, c)), Some((16, true)));
        for bad in [
            "Array0D<double>",
            "Array17D<double>",
            "Array02D<double>",
            "ArrayD<int>",
        ] {
            let toks = super::super::lexer::tokenize(bad);
            assert!(as_view(&toks).is_none(), "{bad}");
        }
    }
}
