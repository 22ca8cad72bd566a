//! Finding `__global__` declarations in a token stream: the kernel's name, its parameter list,
//! its template header and its return type.

use super::lexer::{bracket_matches, tokenize, TokKind, Token};

/// Specifiers that may stand among a kernel's declaration specifiers and mean nothing to us.
const SPECIFIERS: [&str; 9] = [
    "static",
    "inline",
    "__inline__",
    "__forceinline__",
    "__noinline__",
    "extern",
    "constexpr",
    "__device__builtin__",
    "__host__",
];

/// Attribute-like specifiers followed by a parenthesised argument list.
const ATTRIBUTES: [&str; 7] = [
    "__launch_bounds__",
    "__maxnreg__",
    "__cluster_dims__",
    "__attribute__",
    "__declspec",
    "alignas",
    "__align__",
];

/// Keywords that spell a builtin type: the only words before `__global__` taken as part of the
/// return type (anything else there is a specifier macro and ignored).
pub(crate) const BUILTIN_TYPE_WORDS: [&str; 11] = [
    "void", "bool", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "auto",
];

/// How far the declaration scans go, in tokens: they stop there instead of walking a huge,
/// broken input (what lies further is not a declaration specifier anyway).
const SCAN_LIMIT: usize = 256;
/// The longest template header looked at, in tokens.
const TEMPLATE_HEADER_LIMIT: usize = 4096;

/// A tokenized source with its bracket pairs.
pub(crate) struct Source {
    pub tokens: Vec<Token>,
    matches: Vec<Option<usize>>,
}

/// One `__global__` declaration or definition.
#[derive(Clone, Debug)]
pub(crate) struct KernelDecl {
    pub name: String,
    /// Index of the `(` that opens the parameter list.
    pub open: usize,
    /// Index of the matching `)`, `None` if the list never closes.
    pub close: Option<usize>,
    /// Followed by a body `{ … }` (not just `;`).
    pub is_definition: bool,
    /// Indices of the template header's `<` and `>`, for a template.
    pub template: Option<(usize, usize)>,
    /// The return type's tokens (without specifiers, attributes and `__global__`).
    pub return_tokens: Vec<Token>,
}

impl Source {
    pub(crate) fn new(source: &str) -> Source {
        let tokens = tokenize(source);
        let matches = bracket_matches(&tokens);
        Source { tokens, matches }
    }

    pub(crate) fn tok(&self, i: usize) -> Option<&Token> {
        self.tokens.get(i)
    }

    fn is_punct_at(&self, i: usize, p: &str) -> bool {
        self.tok(i).is_some_and(|t| t.is_punct(p))
    }

    /// The bracket matching the one at `i`.
    pub(crate) fn matching(&self, i: usize) -> Option<usize> {
        self.matches.get(i).copied().flatten()
    }

    /// At a `<`: the index of its `>`, skipping bracketed groups; `None` when it does not close
    /// within `limit` tokens or a `;`/`{`/`}` comes first.
    pub(crate) fn skip_angles(&self, open: usize, limit: usize) -> Option<usize> {
        let mut depth = 0usize;
        let mut i = open;
        while i < open.saturating_add(limit) {
            let t = self.tok(i)?;
            if t.kind == TokKind::Punct {
                match t.text.as_str() {
                    "<" => depth += 1,
                    ">" => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return Some(i);
                        }
                    }
                    "(" | "[" => {
                        i = self.matching(i)?;
                    }
                    ";" | "{" | "}" | ")" | "]" => return None,
                    _ => {}
                }
            }
            i += 1;
        }
        None
    }

    /// If the `>` at `close` ends a template header `template < … >`, the index of its `<`.
    fn template_header_ending_at(&self, close: usize) -> Option<usize> {
        let mut depth = 0usize;
        let mut i = close;
        for _ in 0..TEMPLATE_HEADER_LIMIT {
            let t = self.tok(i)?;
            if t.kind == TokKind::Punct {
                match t.text.as_str() {
                    ">" => depth += 1,
                    "<" => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            let before = self.tok(i.checked_sub(1)?)?;
                            return before.is_ident("template").then_some(i);
                        }
                    }
                    ")" | "]" => i = self.matching(i)?,
                    ";" | "{" | "}" | "(" | "[" => return None,
                    _ => {}
                }
            } else if t.is_ident("__global__") {
                return None;
            }
            i = i.checked_sub(1)?;
        }
        None
    }

    /// Every `__global__` declaration, in source order.
    pub(crate) fn kernel_decls(&self) -> Vec<KernelDecl> {
        self.tokens
            .iter()
            .enumerate()
            .filter(|(_, t)| t.is_ident("__global__"))
            .filter_map(|(g, _)| self.decl_at(g))
            .collect()
    }

    /// The declaration whose `__global__` is at token `g`, if it is one.
    fn decl_at(&self, g: usize) -> Option<KernelDecl> {
        let (template, return_tokens) = self.scan_back(g);
        let mut after: Vec<Token> = Vec::new();
        let mut j = g + 1;
        for _ in 0..SCAN_LIMIT {
            let t = self.tok(j)?;
            match t.kind {
                TokKind::Str => j += 1,
                TokKind::Ident => {
                    let next = self.tok(j + 1);
                    if t.text == "__global__" {
                        // The next declaration began: this one had no name.
                        return None;
                    } else if SPECIFIERS.contains(&t.text.as_str()) {
                        j += 1;
                    } else if ATTRIBUTES.contains(&t.text.as_str())
                        && next.is_some_and(|n| n.is_punct("("))
                    {
                        j = self.matching(j + 1)? + 1;
                    } else if BUILTIN_TYPE_WORDS.contains(&t.text.as_str())
                        && next.is_some_and(|n| n.is_punct("("))
                    {
                        return None;
                    } else if next.is_some_and(|n| n.is_punct("(")) {
                        return Some(self.finish(t, j + 1, template, return_tokens, after));
                    } else if next.is_some_and(|n| n.is_punct("<")) {
                        let close = self.skip_angles(j + 1, SCAN_LIMIT)?;
                        if self.is_punct_at(close + 1, "(") {
                            // An explicit specialisation `f<double>(...)`.
                            return Some(self.finish(t, close + 1, template, return_tokens, after));
                        }
                        after.extend(self.tokens.get(j..=close)?.iter().cloned());
                        j = close + 1;
                    } else {
                        after.push(t.clone());
                        j += 1;
                    }
                }
                TokKind::Punct if t.is_punct("[") && self.is_punct_at(j + 1, "[") => {
                    j = self.matching(j)? + 1;
                }
                TokKind::Punct if t.is_punct("*") || t.is_punct("&") || t.is_punct("::") => {
                    after.push(t.clone());
                    j += 1;
                }
                _ => return None,
            }
        }
        // A declaration this long is not one.
        None
    }

    fn finish(
        &self,
        name: &Token,
        open: usize,
        template: Option<(usize, usize)>,
        mut return_tokens: Vec<Token>,
        mut after: Vec<Token>,
    ) -> KernelDecl {
        // A qualified name `ns::f`: the qualifiers are not part of the return type.
        while after.last().is_some_and(|t| t.is_punct("::")) {
            after.pop();
            if after.last().is_some_and(|t| t.kind == TokKind::Ident) {
                after.pop();
            }
        }
        return_tokens.extend(after);
        let close = self.matching(open);
        let mut is_definition = false;
        if let Some(c) = close {
            let mut k = c + 1;
            for _ in 0..32 {
                match self.tok(k) {
                    Some(t) if t.is_punct("{") => {
                        is_definition = true;
                        break;
                    }
                    Some(t) if t.is_punct(";") || t.is_punct("}") => break,
                    Some(t) if t.is_punct("(") => match self.matching(k) {
                        Some(m) => k = m + 1,
                        None => break,
                    },
                    Some(_) => k += 1,
                    None => break,
                }
            }
        }
        KernelDecl {
            name: name.text.clone(),
            open,
            close,
            is_definition,
            template,
            return_tokens,
        }
    }

    /// Walks back from `__global__` over the declaration specifiers before it (`static`,
    /// `extern "C"`, `__launch_bounds__(…)`, `[[…]]`, specifier macros, return type words) to a
    /// template header. Returns the header's `<`/`>` indices and the builtin type words met.
    fn scan_back(&self, g: usize) -> (Option<(usize, usize)>, Vec<Token>) {
        let mut words = Vec::new();
        let mut k = g;
        let mut template = None;
        for _ in 0..SCAN_LIMIT {
            let Some(i) = k.checked_sub(1) else { break };
            let Some(t) = self.tok(i) else { break };
            match t.kind {
                TokKind::Str => k = i,
                TokKind::Ident => {
                    if t.text == "template" || t.text == "__global__" {
                        break;
                    }
                    if BUILTIN_TYPE_WORDS.contains(&t.text.as_str()) {
                        words.push(t.clone());
                    }
                    k = i;
                }
                TokKind::Punct if t.text == ">" => {
                    template = self.template_header_ending_at(i).map(|open| (open, i));
                    break;
                }
                TokKind::Punct if t.text == ")" => {
                    let attr = self.matching(i).and_then(|open| {
                        let name = self.tok(open.checked_sub(1)?)?;
                        ATTRIBUTES.contains(&name.text.as_str()).then_some(open - 1)
                    });
                    match attr {
                        Some(a) => k = a,
                        None => break,
                    }
                }
                TokKind::Punct if t.text == "]" => {
                    // `[[attribute]]`: `]` `]` closing `[` `[`.
                    let outer = self.matching(i);
                    let inner = i.checked_sub(1).and_then(|p| self.matching(p));
                    match (outer, inner) {
                        (Some(o), Some(n)) if n == o + 1 && self.is_punct_at(i - 1, "]") => k = o,
                        _ => break,
                    }
                }
                _ => break,
            }
        }
        words.reverse();
        (template, words)
    }
}

/// Splits tokens at top-level commas (outside `()`, `[]`, `{}` and `<>`).
pub(crate) fn split_top_level(tokens: &[Token]) -> Vec<&[Token]> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut angles = 0usize;
    let mut start = 0;
    for (i, t) in tokens.iter().enumerate() {
        if t.kind != TokKind::Punct {
            continue;
        }
        match t.text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth = depth.saturating_sub(1),
            "<" if depth == 0 => angles += 1,
            ">" if depth == 0 => angles = angles.saturating_sub(1),
            "," if depth == 0 && angles == 0 => {
                out.push(tokens.get(start..i).unwrap_or_default());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(tokens.get(start..).unwrap_or_default());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(src: &str) -> Vec<String> {
        Source::new(src)
            .kernel_decls()
            .into_iter()
            .map(|d| d.name)
            .collect()
    }

    #[test]
    fn launch_bounds_in_every_place() {
        let src = "
            __launch_bounds__(256) __global__ void a(int n) {}
            __global__ __launch_bounds__(256, 2) void b(int n) {}
            __global__ void __launch_bounds__(MAX_T, (MIN_B)) c(int n) {}
            extern \"C\" __global__ void __launch_bounds__(128) d(int n);
        ";
        assert_eq!(names(src), ["a", "b", "c", "d"]);
    }

    #[test]
    fn template_header_is_found_through_specifiers() {
        let src = "template <typename T, int N = (3 > 2)> static __launch_bounds__(64) __global__ void k(T* x) {}";
        let s = Source::new(src);
        let d = s.kernel_decls();
        let t = d.first().and_then(|d| d.template);
        assert!(t.is_some());
    }

    #[test]
    fn definition_versus_prototype() {
        let s = Source::new("__global__ void f(int n); __global__ void f(int n) { }");
        let d = s.kernel_decls();
        assert_eq!(d.len(), 2);
        assert!(!d.first().is_some_and(|d| d.is_definition));
        assert!(d.get(1).is_some_and(|d| d.is_definition));
    }

    #[test]
    fn split_respects_nesting() {
        let t = tokenize("A<int, 3> a, double (*f)(int, int), int c[2]");
        let parts = split_top_level(&t);
        assert_eq!(parts.len(), 3);
    }

    #[test]
    fn qualified_names_and_return_tokens() {
        let s = Source::new("__global__ void ns::f(int n) {} __global__ int g() {}");
        let d = s.kernel_decls();
        assert_eq!(d.first().map(|d| d.return_tokens.len()), Some(1));
        assert_eq!(d.get(1).map(|d| d.name.as_str()), Some("g"));
    }
}
