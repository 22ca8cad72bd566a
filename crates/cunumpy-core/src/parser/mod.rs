//! The CUDA `__global__` signature parser.
//!
//! [`kernel_names`] lists the kernels of a CUDA C++ source; [`parse_signature`] reads one
//! kernel's parameter list into a [`Signature`] that argument checks are built from, or says
//! precisely why it cannot be checked ([`SignatureError`]).
//!
//! What it understands:
//! - comments, string and character literals (raw strings too) and preprocessor directives are
//!   ignored, so a `__global__` inside any of them is not a kernel;
//! - `extern "C"` (also as a block `extern "C" { … }`), `static`, `inline`,
//!   `__forceinline__`, `[[attributes]]`, and `__launch_bounds__(…)`, `__maxnreg__(…)` and
//!   `__cluster_dims__(…)` before `__global__`, between it and `void`, or between `void` and
//!   the name;
//! - `template<…>` with type (`typename`/`class`) and non-type (`int N`, `bool B`) parameters,
//!   defaults included: `template_args` are substituted by whole word into the parameter list;
//! - the qualifiers `const`, `volatile`, `__restrict__`, `__restrict`, `restrict`;
//! - `T*`, `T* const`, `T[]` and `T[N]` (pointers), `void*` (any dtype), `ArrayND<T>` and
//!   `CArrayND<T>` views for N = 1..16 (also `cunumpy::`-qualified), structs by value (those
//!   named in `structs`, with or without the `struct` keyword), and the scalar type map of
//!   [`crate::ctypes::dtype_of_ctype`];
//! - default values `= …` are accepted and ignored: a checked launch always passes every
//!   argument.
//!
//! What it rejects, naming the kernel and the parameter: references (`T&`, `T&&`,
//! `T (&a)[3]`), pointers to pointers, vector and half types, unknown identifiers (macros,
//! typedefs, unlisted structs), pointers to views or structs, views of non-scalars, unnamed
//! parameters, function pointers, `...`, and a return type other than `void`.
//!
//! Neither function panics, whatever the input.

mod decl;
mod error;
pub(crate) mod lexer;
mod params;
mod structs;

use std::collections::{HashMap, HashSet};

use crate::signature::{Param, Signature, TemplateParam};
use decl::{split_top_level, KernelDecl, Source};
pub use error::SignatureError;
use lexer::{bracket_matches, join, tokenize, TokKind, Token};
pub use structs::{struct_definitions, SourceMember, StructDefinition};

/// Every `__global__` function's name, in source order, each once. Comments, literals and
/// preprocessor directives are ignored.
pub fn kernel_names(source: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    Source::new(source)
        .kernel_decls()
        .into_iter()
        .filter_map(|d| seen.insert(d.name.clone()).then_some(d.name))
        .collect()
}

/// Parses the signature of the `__global__` function `name` in `source`.
///
/// `structs` are the struct names the caller can pack (by-value parameters of those types become
/// [`crate::signature::ParamKind::Struct`]). `template_args` are the C++ texts of a template's
/// arguments, one per template parameter (`"double"`, `"3"`, `"true"`); trailing parameters
/// with defaults may be left out. When a kernel is declared several times, its definition is
/// used (else its first declaration).
pub fn parse_signature(
    source: &str,
    name: &str,
    structs: &[String],
    template_args: Option<&[String]>,
) -> Result<Signature, SignatureError> {
    let src = Source::new(source);
    let decls: Vec<KernelDecl> = src
        .kernel_decls()
        .into_iter()
        .filter(|d| d.name == name)
        .collect();
    let decl = decls
        .iter()
        .find(|d| d.is_definition)
        .or_else(|| decls.first())
        .ok_or_else(|| SignatureError::NotFound {
            kernel: name.to_string(),
            found: kernel_names(source),
        })?;
    let unbalanced = || SignatureError::UnbalancedParentheses {
        kernel: name.to_string(),
    };
    let close = decl.close.ok_or_else(unbalanced)?;
    let inner = src
        .tokens
        .get(decl.open + 1..close)
        .ok_or_else(unbalanced)?;
    if inner
        .iter()
        .any(|t| t.is_punct("{") || t.is_punct("}") || t.is_punct(";"))
    {
        return Err(unbalanced());
    }
    check_return_type(name, &decl.return_tokens)?;

    let header = match decl.template {
        Some((open, close)) => src.tokens.get(open + 1..close).unwrap_or_default(),
        None => &[],
    };
    let template = parse_template_header(name, header)?;
    let (substitutions, expression) = bind_template_args(name, &template, template_args)?;

    let structs: Vec<String> = structs.iter().map(|s| normalise_struct_name(s)).collect();
    let mut aliases = type_aliases(&src.tokens);
    for s in &structs {
        aliases.remove(s); // `typedef struct {...} P;` listed in structs stays the struct P
    }
    let mut params: Vec<Param> = Vec::new();
    let parts = split_top_level(inner);
    let no_params =
        inner.is_empty() || (inner.len() == 1 && inner.iter().all(|t| t.is_ident("void")));
    if !no_params {
        for (index, part) in parts.into_iter().enumerate() {
            let ctx = params::Ctx {
                kernel: name,
                index,
                written: join(part),
                structs: &structs,
            };
            let mut substituted = substitute(part, &substitutions);
            // typedefs and aliases of the same source, chains included (bounded: a cycle stops)
            for _ in 0..8 {
                let next = substitute(&substituted, &aliases);
                if next.len() == substituted.len()
                    && next.iter().zip(&substituted).all(|(a, b)| a.text == b.text)
                {
                    break;
                }
                substituted = next;
            }
            params.push(params::parse_param(&ctx, &substituted)?);
        }
    }
    Ok(Signature {
        kernel: name.to_string(),
        params,
        template_params: template.into_iter().map(|t| t.param).collect(),
        expression,
    })
}

/// `struct S`, ` S ` → `S`.
fn normalise_struct_name(s: &str) -> String {
    let toks: Vec<Token> = tokenize(s)
        .into_iter()
        .filter(|t| !(t.is_ident("struct") || t.is_ident("class")))
        .collect();
    let text = join(&toks);
    text.strip_prefix("::").unwrap_or(&text).to_string()
}

fn check_return_type(kernel: &str, tokens: &[Token]) -> Result<(), SignatureError> {
    let voids = tokens.iter().filter(|t| t.is_ident("void")).count();
    let other_types = tokens.iter().any(|t| {
        t.kind == TokKind::Ident
            && t.text != "void"
            && decl::BUILTIN_TYPE_WORDS.contains(&t.text.as_str())
    });
    let non_words = tokens.iter().any(|t| t.kind != TokKind::Ident);
    if voids == 1 && !other_types && !non_words {
        return Ok(());
    }
    let shown = if tokens.is_empty() {
        "no type".to_string()
    } else {
        join(tokens)
    };
    Err(SignatureError::NonVoidReturn {
        kernel: kernel.to_string(),
        return_type: shown,
    })
}

/// A template parameter and its default value's tokens.
struct TemplateSlot {
    param: TemplateParam,
    default: Option<Vec<Token>>,
}

fn parse_template_header(
    kernel: &str,
    header: &[Token],
) -> Result<Vec<TemplateSlot>, SignatureError> {
    let mut out = Vec::new();
    if header.is_empty() {
        return Ok(out);
    }
    for part in split_top_level(header) {
        let unsupported = |reason: &str| SignatureError::UnsupportedTemplate {
            kernel: kernel.to_string(),
            param: join(part),
            reason: reason.to_string(),
        };
        let eq = part.iter().position(|t| t.is_punct("="));
        let (decl, default) = match eq {
            Some(i) => (
                part.get(..i).unwrap_or_default(),
                Some(part.get(i + 1..).unwrap_or_default().to_vec()),
            ),
            None => (part, None),
        };
        if decl.iter().any(|t| t.is_punct(".")) {
            return Err(unsupported("template parameter packs are not supported"));
        }
        if decl.first().is_some_and(|t| t.is_ident("template")) {
            return Err(unsupported(
                "template template parameters are not supported",
            ));
        }
        if decl.is_empty() {
            return Err(unsupported("empty template parameter"));
        }
        let is_type_kw = |t: &Token| t.is_ident("typename") || t.is_ident("class");
        let (name, value_type) = match decl {
            [kw] if is_type_kw(kw) => (String::new(), None),
            [kw, n] if is_type_kw(kw) && n.kind == TokKind::Ident => (n.text.clone(), None),
            [.., last] if last.kind == TokKind::Ident && decl.len() >= 2 => {
                let ty = decl.get(..decl.len() - 1).unwrap_or_default();
                (last.text.clone(), Some(join(ty)))
            }
            _ => (String::new(), Some(join(decl))),
        };
        out.push(TemplateSlot {
            param: TemplateParam { name, value_type },
            default,
        });
    }
    Ok(out)
}

/// Checks `template_args` against the header; returns the substitutions (template parameter
/// name → tokens) and the NVRTC name expression.
fn bind_template_args(
    kernel: &str,
    template: &[TemplateSlot],
    template_args: Option<&[String]>,
) -> Result<(HashMap<String, Vec<Token>>, String), SignatureError> {
    let mut subs: HashMap<String, Vec<Token>> = HashMap::new();
    if template.is_empty() {
        return match template_args {
            Some(_) => Err(SignatureError::NotATemplate {
                kernel: kernel.to_string(),
            }),
            None => Ok((subs, kernel.to_string())),
        };
    }
    let expected = template.len();
    let required = template
        .iter()
        .rposition(|t| t.default.is_none())
        .map_or(0, |i| i + 1);
    let arity = |given: Option<usize>| SignatureError::TemplateArity {
        kernel: kernel.to_string(),
        expected,
        required,
        given,
    };
    let args = template_args.ok_or_else(|| arity(None))?;
    if args.len() < required || args.len() > expected {
        return Err(arity(Some(args.len())));
    }
    let mut texts = Vec::with_capacity(args.len());
    for (i, slot) in template.iter().enumerate() {
        let tokens = match args.get(i) {
            Some(arg) => {
                let toks = check_template_arg(kernel, i, arg)?;
                texts.push(join(&toks));
                toks
            }
            None => substitute(slot.default.as_deref().unwrap_or_default(), &subs),
        };
        if !slot.param.name.is_empty() {
            subs.insert(slot.param.name.clone(), tokens);
        }
    }
    Ok((subs, format!("{kernel}<{}>", texts.join(", "))))
}

fn check_template_arg(kernel: &str, index: usize, arg: &str) -> Result<Vec<Token>, SignatureError> {
    let invalid = |reason: &str| SignatureError::InvalidTemplateArg {
        kernel: kernel.to_string(),
        index,
        arg: arg.to_string(),
        reason: reason.to_string(),
    };
    let toks = tokenize(arg);
    if toks.is_empty() {
        return Err(invalid("it is empty"));
    }
    if toks
        .iter()
        .any(|t| t.is_punct(";") || t.is_punct("{") || t.is_punct("}") || t.is_punct("#"))
    {
        return Err(invalid("it contains ';', '#' or braces"));
    }
    if toks.iter().any(|t| t.kind == TokKind::Str) {
        return Err(invalid("it contains a string literal"));
    }
    let matches = bracket_matches(&toks);
    let unbalanced = toks.iter().zip(&matches).any(|(t, m)| {
        matches!(t.text.as_str(), "(" | ")" | "[" | "]") && t.kind == TokKind::Punct && m.is_none()
    });
    if unbalanced {
        return Err(invalid("its brackets are unbalanced"));
    }
    Ok(toks)
}

/// Replaces every identifier that names a template parameter by its argument's tokens.
/// The type aliases of a source: `typedef T name;` and `using name = T;` (at any depth, the last
/// one of a name wins). Aliases of struct bodies, function pointers and arrays are left out
/// (their names stay what they are: a listed struct, or an unknown type).
/// The `typedef`s and `using` aliases of a token list (for the `__constant__` scan).
pub(crate) fn type_aliases_of(tokens: &[Token]) -> HashMap<String, Vec<Token>> {
    type_aliases(tokens)
}

fn type_aliases(tokens: &[Token]) -> HashMap<String, Vec<Token>> {
    let mut out = HashMap::new();
    let mut i = 0;
    while i < tokens.len() {
        let (start, using) = match tokens.get(i) {
            Some(t) if t.is_ident("typedef") => (i + 1, false),
            Some(t) if t.is_ident("using") => (i + 1, true),
            _ => {
                i += 1;
                continue;
            }
        };
        let Some(end) =
            (start..tokens.len()).find(|&j| tokens.get(j).is_some_and(|t| t.is_punct(";")))
        else {
            break;
        };
        let body = tokens.get(start..end).unwrap_or_default();
        i = end + 1;
        if body
            .iter()
            .any(|t| t.is_punct("{") || t.is_punct("}") || t.is_punct("(") || t.is_punct("["))
        {
            continue;
        }
        let (name, ty) = if using {
            match body {
                [n, eq, ty @ ..]
                    if n.kind == TokKind::Ident && eq.is_punct("=") && !ty.is_empty() =>
                {
                    (n.text.clone(), ty.to_vec())
                }
                _ => continue,
            }
        } else {
            match body.split_last() {
                Some((n, ty)) if n.kind == TokKind::Ident && !ty.is_empty() => {
                    (n.text.clone(), ty.to_vec())
                }
                _ => continue,
            }
        };
        if ty.iter().any(|t| t.text == name) {
            continue; // `typedef struct P P;`
        }
        out.insert(name, ty);
    }
    out
}

fn substitute(tokens: &[Token], subs: &HashMap<String, Vec<Token>>) -> Vec<Token> {
    let mut out = Vec::with_capacity(tokens.len());
    for (i, t) in tokens.iter().enumerate() {
        // `x.T` or `ns::T` are other names, not the template parameter.
        let qualified = i
            .checked_sub(1)
            .and_then(|p| tokens.get(p))
            .is_some_and(|p| p.is_punct("::") || p.is_punct("."));
        match subs.get(&t.text) {
            Some(rep) if t.kind == TokKind::Ident && !qualified => out.extend(rep.iter().cloned()),
            _ => out.push(t.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests;
