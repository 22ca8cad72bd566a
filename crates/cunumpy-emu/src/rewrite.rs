//! Source rewriting: CUDA C made into host C++ the prelude can compile.
//!
//! Every edit keeps the number of lines, so the compiler's line numbers match the user's source.
//!
//! - `extern "C"` (and the braces of an `extern "C" { ... }` block) is removed: kernels become
//!   C++ functions, so a kernel may share a name with a C library function.
//! - `extern __shared__ T name[];` becomes a pointer to the block's dynamic shared memory (in a
//!   function) or an object that converts to one (at namespace scope).
//! - In a checked build, every pointer parameter `T* p` of a `__global__` function becomes
//!   `cunumpy_emu::checked_param_t<T> p`, a checked pointer, and `reinterpret_cast` becomes
//!   `cunumpy_emu::reinterpret_cast_`, which keeps a cast checked pointer checked.
//! - `a / b` and `a % b` (and `/=`, `%=`) outside preprocessor directives go through the
//!   prelude's division guard, so an integer division by zero or `INT_MIN / -1` gives what the
//!   GPU gives instead of killing the process with SIGFPE.

use crate::lexer::{lex, Kind, Tok};

const QUALIFIERS: [&str; 5] = [
    "const",
    "volatile",
    "__restrict__",
    "__restrict",
    "restrict",
];
const ATTRIBUTE_CALLS: [&str; 6] = [
    "__launch_bounds__",
    "__attribute__",
    "alignas",
    "__declspec",
    "decltype",
    "__align__",
];

/// Identifiers whose presence means the kernel needs fibers (barriers, warp intrinsics).
const SYNC_WORDS: [&str; 14] = [
    "cooperative_groups",
    "this_thread_block",
    "tiled_partition",
    "__syncthreads",
    "__syncwarp",
    "__shfl",
    "__ballot_sync",
    "__any_sync",
    "__all_sync",
    "__uni_sync",
    "__activemask",
    "__match_",
    "__reduce_",
    "__lanemask",
];

/// Whether some text mentions a barrier or warp intrinsic (conservative: comments count).
pub(crate) fn mentions_sync(text: &str) -> bool {
    SYNC_WORDS.iter().any(|w| text.contains(w))
}

/// The rewritten source and what was learned about the kernel.
pub(crate) struct Rewritten {
    pub source: String,
    /// Parameter names of the launched kernel (its first declaration with that name).
    pub param_names: Vec<String>,
}

struct Edit {
    start: usize,
    end: usize,
    text: String,
}

#[derive(Clone, Copy, PartialEq)]
enum Brace {
    Namespace,
    ExternC,
    Other,
}

struct Cursor<'a> {
    src: &'a str,
    toks: Vec<Tok>,
}

impl<'a> Cursor<'a> {
    fn text(&self, i: usize) -> &'a str {
        match self.toks.get(i) {
            Some(t) => &self.src[t.start..t.end],
            None => "",
        }
    }
    fn is(&self, i: usize, s: &str) -> bool {
        self.toks.get(i).is_some_and(|t| t.kind != Kind::Directive) && self.text(i) == s
    }
    fn kind(&self, i: usize) -> Option<Kind> {
        self.toks.get(i).map(|t| t.kind)
    }
    /// The index of the bracket matching the opening one at `i`.
    fn matching(&self, i: usize) -> Option<usize> {
        let open = self.text(i);
        let close = match open {
            "(" => ")",
            "[" => "]",
            "{" => "}",
            _ => return None,
        };
        let mut depth = 0usize;
        for j in i..self.toks.len() {
            if self.kind(j) != Some(Kind::Punct) {
                continue;
            }
            let t = self.text(j);
            if t == open {
                depth += 1;
            } else if t == close {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
        }
        None
    }
    fn join(&self, range: std::ops::Range<usize>) -> String {
        let mut out = String::new();
        for i in range {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(self.text(i));
        }
        out
    }
}

/// The last name of a kernel expression: `ns::k<float>` -> `k`.
pub(crate) fn base_name(expression: &str) -> &str {
    let head = expression.split('<').next().unwrap_or(expression).trim();
    head.rsplit("::").next().unwrap_or(head).trim()
}

pub(crate) fn rewrite(src: &str, kernel_base: &str, checked: bool) -> Rewritten {
    let c = Cursor {
        src,
        toks: lex(src),
    };
    let mut edits: Vec<Edit> = Vec::new();
    let mut braces: Vec<Brace> = Vec::new();
    let mut param_names: Option<Vec<String>> = None;
    let mut i = 0;
    while i < c.toks.len() {
        if c.kind(i) == Some(Kind::Directive) {
            i += 1;
            continue;
        }
        let t = c.text(i);
        match t {
            "{" => {
                let prev = i.checked_sub(1).map(|p| c.text(p)).unwrap_or("");
                let prev2 = i.checked_sub(2).map(|p| c.text(p)).unwrap_or("");
                let kind = if prev == "namespace" || prev2 == "namespace" {
                    Brace::Namespace
                } else {
                    Brace::Other
                };
                braces.push(kind);
            }
            "}" if braces.pop() == Some(Brace::ExternC) => edits.push(remove(&c, i, i)),
            "extern" if c.is(i + 1, "\"C\"") || c.is(i + 1, "\"C++\"") => {
                if c.is(i + 2, "{") {
                    edits.push(remove(&c, i, i + 2));
                    braces.push(Brace::ExternC);
                    i += 3;
                    continue;
                }
                edits.push(remove(&c, i, i + 1));
                i += 2;
                continue;
            }
            "extern" if c.is(i + 1, "__shared__") => {
                let in_function = braces.contains(&Brace::Other);
                if let Some((edit, next)) = dynamic_shared(&c, i, in_function) {
                    edits.push(edit);
                    i = next;
                    continue;
                }
            }
            "__global__" => {
                if let Some((name, open, close)) = kernel_params(&c, i) {
                    let params = split_params(&c, open + 1, close);
                    if name == kernel_base && param_names.is_none() {
                        param_names = Some(
                            params
                                .iter()
                                .map(|r| param_name(&c, r.clone()).unwrap_or_default())
                                .collect(),
                        );
                    }
                    if checked {
                        for r in &params {
                            if let Some(edit) = checked_param(&c, r.clone()) {
                                edits.push(edit);
                            }
                        }
                    }
                }
            }
            "/" | "%" if c.kind(i) == Some(Kind::Punct) && !c.is(i.wrapping_sub(1), "operator") => {
                // Integer division through the prelude's guard (see `div_tag` there): no SIGFPE.
                let tag = if t == "/" { "div_v" } else { "mod_v" };
                edits.push(Edit {
                    start: c.toks[i].start,
                    end: c.toks[i].end,
                    text: format!("*::cunumpy_emu::{tag}{t}"),
                });
            }
            "reinterpret_cast" if checked => edits.push(Edit {
                start: c.toks[i].start,
                end: c.toks[i].end,
                text: "::cunumpy_emu::reinterpret_cast_".to_string(),
            }),
            _ => {}
        }
        i += 1;
    }
    edits.sort_by_key(|e| e.start);
    let mut out = String::with_capacity(src.len() + 256);
    let mut at = 0;
    for e in edits {
        if e.start < at {
            continue; // overlapping edits cannot happen; keep the first
        }
        out.push_str(&src[at..e.start]);
        out.push_str(&e.text);
        at = e.end;
    }
    out.push_str(&src[at..]);
    Rewritten {
        source: out,
        param_names: param_names.unwrap_or_default(),
    }
}

/// Removes tokens `a..=b`, keeping their newlines.
fn remove(c: &Cursor<'_>, a: usize, b: usize) -> Edit {
    let start = c.toks[a].start;
    let end = c.toks[b].end;
    Edit {
        start,
        end,
        text: "\n".repeat(c.src[start..end].matches('\n').count()),
    }
}

/// `extern __shared__ T name[];` starting at token `i`; returns the edit and the next token.
fn dynamic_shared(c: &Cursor<'_>, i: usize, in_function: bool) -> Option<(Edit, usize)> {
    let mut j = i + 2;
    let mut ty: Vec<usize> = Vec::new();
    let mut name = None;
    while j < c.toks.len() {
        let t = c.text(j);
        if t == ";" {
            break;
        }
        if ATTRIBUTE_CALLS.contains(&t) && c.is(j + 1, "(") {
            j = c.matching(j + 1)? + 1;
            continue;
        }
        if t == "[" {
            name = ty.pop();
            j = c.matching(j)? + 1;
            continue;
        }
        ty.push(j);
        j += 1;
    }
    let name = name?;
    if !c.is(j, ";") || ty.is_empty() || c.kind(name) != Some(Kind::Ident) {
        return None;
    }
    let ty_text: Vec<&str> = ty.iter().map(|&k| c.text(k)).collect();
    let ty_text = ty_text.join(" ");
    let name = c.text(name);
    let text = if in_function {
        format!("{ty_text}* const {name} = ::cunumpy_emu::dynamic_shared<{ty_text}>();")
    } else {
        format!("static ::cunumpy_emu::dynamic_shared_ref<{ty_text}> {name};")
    };
    let start = c.toks[i].start;
    let end = c.toks[j].end;
    let text = text + &"\n".repeat(c.src[start..end].matches('\n').count());
    Some((Edit { start, end, text }, j + 1))
}

/// From a `__global__` token: the function's name and its parameter list's parentheses.
fn kernel_params(c: &Cursor<'_>, i: usize) -> Option<(String, usize, usize)> {
    let mut j = i + 1;
    while j + 1 < c.toks.len() {
        let t = c.text(j);
        if t == ";" || t == "{" || c.kind(j) == Some(Kind::Directive) {
            return None;
        }
        if c.kind(j) == Some(Kind::Ident) && c.is(j + 1, "(") {
            if ATTRIBUTE_CALLS.contains(&t) {
                j = c.matching(j + 1)? + 1;
                continue;
            }
            let close = c.matching(j + 1)?;
            return Some((t.to_string(), j + 1, close));
        }
        j += 1;
    }
    None
}

/// Splits `open..close` at top-level commas (brackets and angle brackets nest).
fn split_params(c: &Cursor<'_>, open: usize, close: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = open;
    for j in open..close {
        match c.text(j) {
            "(" | "[" | "{" | "<" => depth += 1,
            ")" | "]" | "}" | ">" => depth -= 1,
            "," if depth == 0 => {
                out.push(start..j);
                start = j + 1;
            }
            _ => {}
        }
    }
    if start < close {
        out.push(start..close);
    }
    if out.len() == 1 && c.join(out[0].clone()) == "void" {
        out.clear();
    }
    out
}

fn param_name(c: &Cursor<'_>, r: std::ops::Range<usize>) -> Option<String> {
    let last = r.end.checked_sub(1)?;
    if r.is_empty() || c.kind(last) != Some(Kind::Ident) || QUALIFIERS.contains(&c.text(last)) {
        return None;
    }
    if r.len() == 1 {
        return None; // a type with no name
    }
    Some(c.text(last).to_string())
}

/// `const T* __restrict__ name` -> `::cunumpy_emu::checked_param_t<const T> name`.
fn checked_param(c: &Cursor<'_>, r: std::ops::Range<usize>) -> Option<Edit> {
    if (r.start..r.end).any(|j| c.text(j) == "(" || c.text(j) == "[" || c.text(j) == "=") {
        return None;
    }
    let name_at = r.end.checked_sub(1)?;
    let name = param_name(c, r.clone())?;
    let mut j = name_at;
    let mut pointer_cv: Vec<&str> = Vec::new();
    while j > r.start {
        j -= 1;
        let t = c.text(j);
        if t == "*" {
            if j == r.start {
                return None;
            }
            let pointee = c.join(r.start..j);
            let cv = if pointer_cv.is_empty() {
                String::new()
            } else {
                pointer_cv.join(" ") + " "
            };
            let start = c.toks[r.start].start;
            let end = c.toks[name_at].end;
            let newlines = c.src[start..end].matches('\n').count();
            return Some(Edit {
                start,
                end,
                text: format!("{cv}::cunumpy_emu::checked_param_t<{pointee}> {name}")
                    + &"\n".repeat(newlines),
            });
        }
        if t == "const" || t == "volatile" {
            pointer_cv.push(t);
        } else if !QUALIFIERS.contains(&t) {
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_extern_c_and_keeps_lines() {
        let src = "extern \"C\" {\n__global__ void k(float* x) { x[0] = 1; }\n}\nextern \"C\" __global__ void j() {}";
        let r = rewrite(src, "k", false);
        assert!(!r.source.contains("extern"));
        assert_eq!(r.source.lines().count(), src.lines().count());
        assert_eq!(r.param_names, vec!["x".to_string()]);
        assert_eq!(r.source.matches('{').count(), r.source.matches('}').count());
    }

    #[test]
    fn rewrites_pointer_params_in_checked_builds() {
        let src = "template <class T> __global__ void __launch_bounds__(256) k(const T* __restrict__ a,\n float * const b, int n, void* v, Vec<int, 2>* w) {}";
        let r = rewrite(src, "k", true);
        assert!(r
            .source
            .contains("::cunumpy_emu::checked_param_t<const T> a"));
        assert!(r
            .source
            .contains("const ::cunumpy_emu::checked_param_t<float> b"));
        assert!(r.source.contains("int n"));
        assert!(r.source.contains("checked_param_t<void> v"));
        assert!(r.source.contains("checked_param_t<Vec < int , 2 >> w"));
        assert_eq!(r.param_names, vec!["a", "b", "n", "v", "w"]);
        assert_eq!(r.source.lines().count(), src.lines().count());
    }

    #[test]
    fn rewrites_dynamic_shared() {
        let src = "extern __shared__ float g[];\n__global__ void k() { extern __shared__ __align__(16) double s[]; }";
        let r = rewrite(src, "k", false);
        assert!(r
            .source
            .contains("static ::cunumpy_emu::dynamic_shared_ref<float> g;"));
        assert!(r
            .source
            .contains("double* const s = ::cunumpy_emu::dynamic_shared<double>();"));
    }

    #[test]
    fn guards_division_but_not_operator_names_or_directives() {
        let src = "#define H (8 / 2)\nstruct V { int x; };\nV operator/(V a, int b) { return V{a.x / b}; }\n__global__ void k(int* q, int n) { q[0] = n / 3 % 2; q[1] /= n; q[2] %= n; }";
        let r = rewrite(src, "k", false);
        assert!(r.source.contains("#define H (8 / 2)"));
        assert!(r.source.contains("V operator/(V a"));
        assert!(r.source.contains("a.x *::cunumpy_emu::div_v/ b"));
        assert!(r
            .source
            .contains("n *::cunumpy_emu::div_v/ 3 *::cunumpy_emu::mod_v% 2"));
        assert!(r.source.contains("q[1] *::cunumpy_emu::div_v/= n"));
        assert!(r.source.contains("q[2] *::cunumpy_emu::mod_v%= n"));
        assert_eq!(r.source.lines().count(), src.lines().count());
    }

    #[test]
    fn base_names() {
        assert_eq!(base_name("ns::k<float, 3>"), "k");
        assert_eq!(base_name(" axpy "), "axpy");
    }
}
