//! A forgiving C++ tokenizer: just enough of the language to find `__global__` declarations.
//!
//! Comments, preprocessor directives (with their `\` continuations), string and character
//! literals (including raw strings) never produce identifiers, so a `__global__` inside any of
//! them is invisible to the parser. Works on bytes, so it never slices inside a UTF-8 character,
//! and every access is bounds-checked: any input, however broken, gives a token list.

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TokKind {
    /// An identifier or keyword.
    Ident,
    /// A pp-number (`3`, `0x1F`, `1.5e-3f`, `1'000`).
    Number,
    /// A string literal; its text is not kept.
    Str,
    /// A character literal; its text is not kept.
    Char,
    /// Punctuation: `::` or a single character.
    Punct,
}

/// One token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    pub kind: TokKind,
    pub text: String,
}

impl Token {
    pub(crate) fn punct(text: &str) -> Token {
        Token {
            kind: TokKind::Punct,
            text: text.to_string(),
        }
    }

    /// Is this the punctuation `p`?
    pub(crate) fn is_punct(&self, p: &str) -> bool {
        self.kind == TokKind::Punct && self.text == p
    }

    /// Is this the identifier (or keyword) `w`?
    pub(crate) fn is_ident(&self, w: &str) -> bool {
        self.kind == TokKind::Ident && self.text == w
    }

    /// An identifier or a number: written with a space between two of them.
    pub(crate) fn is_word(&self) -> bool {
        matches!(self.kind, TokKind::Ident | TokKind::Number)
    }
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$' || b >= 0x80
}

fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

fn text_of(bytes: &[u8], start: usize, end: usize) -> String {
    String::from_utf8_lossy(bytes.get(start..end).unwrap_or_default()).into_owned()
}

struct Lexer<'a> {
    b: &'a [u8],
    i: usize,
}

impl Lexer<'_> {
    fn at(&self, k: usize) -> Option<u8> {
        self.b.get(self.i + k).copied()
    }

    fn starts_with(&self, s: &[u8]) -> bool {
        self.b.get(self.i..).is_some_and(|rest| rest.starts_with(s))
    }

    /// Is the lexer at a backslash that continues the line?
    fn line_continuation_len(&self) -> usize {
        if self.at(0) != Some(b'\\') {
            0
        } else if self.at(1) == Some(b'\n') {
            2
        } else if self.at(1) == Some(b'\r') && self.at(2) == Some(b'\n') {
            3
        } else {
            0
        }
    }

    /// After `//`: up to (not including) the end of the line, honouring `\` continuations.
    fn skip_line_comment(&mut self) {
        while let Some(c) = self.at(0) {
            let cont = self.line_continuation_len();
            if cont > 0 {
                self.i += cont;
            } else if c == b'\n' {
                return;
            } else {
                self.i += 1;
            }
        }
    }

    /// After `/*`: past the closing `*/`, or to the end of the input.
    fn skip_block_comment(&mut self) {
        self.i += 2;
        while self.i < self.b.len() {
            if self.starts_with(b"*/") {
                self.i += 2;
                return;
            }
            self.i += 1;
        }
    }

    /// At an opening quote: past the closing one. A literal that is not closed on its line ends
    /// at the line's end (a broken literal never swallows the rest of the file).
    fn skip_quoted(&mut self, quote: u8) {
        self.i += 1;
        while let Some(c) = self.at(0) {
            if c == b'\\' {
                self.i += 2;
            } else if c == quote {
                self.i += 1;
                return;
            } else if c == b'\n' {
                return;
            } else {
                self.i += 1;
            }
        }
        self.i = self.i.min(self.b.len());
    }

    /// At the `"` of a raw string `R"delim( ... )delim"`. Returns false (and moves nothing) when
    /// the delimiter is malformed, so the caller treats it as an ordinary string.
    fn skip_raw_string(&mut self) -> bool {
        let start = self.i + 1;
        let mut k = start;
        loop {
            match self.b.get(k) {
                Some(b'(') => break,
                Some(c) if k - start < 16 && !matches!(c, b' ' | b')' | b'\\' | b'\t' | b'\n') => {
                    k += 1
                }
                _ => return false,
            }
        }
        let mut close = Vec::with_capacity(k - start + 2);
        close.push(b')');
        close.extend_from_slice(self.b.get(start..k).unwrap_or_default());
        close.push(b'"');
        let body = k + 1;
        let rest = self.b.get(body..).unwrap_or_default();
        match rest
            .windows(close.len())
            .position(|w| w == close.as_slice())
        {
            Some(p) => self.i = body + p + close.len(),
            None => self.i = self.b.len(),
        }
        true
    }

    /// At a `#` that starts a line: past the directive, its continuations and the comments and
    /// literals inside it.
    fn skip_directive(&mut self) {
        while let Some(c) = self.at(0) {
            let cont = self.line_continuation_len();
            if cont > 0 {
                self.i += cont;
            } else if c == b'\n' {
                return;
            } else if self.starts_with(b"//") {
                self.skip_line_comment();
            } else if self.starts_with(b"/*") {
                self.skip_block_comment();
            } else if c == b'"' || c == b'\'' {
                self.skip_quoted(c);
            } else {
                self.i += 1;
            }
        }
    }

    fn number(&mut self) -> Token {
        let start = self.i;
        self.i += 1;
        while let Some(c) = self.at(0) {
            let prev = self.b.get(self.i - 1).copied().unwrap_or(b' ');
            let continues = is_ident_char(c)
                || c == b'.'
                || ((c == b'+' || c == b'-') && matches!(prev, b'e' | b'E' | b'p' | b'P'))
                || (c == b'\'' && self.at(1).is_some_and(|d| d.is_ascii_alphanumeric()));
            if continues {
                self.i += 1;
            } else {
                break;
            }
        }
        Token {
            kind: TokKind::Number,
            text: text_of(self.b, start, self.i),
        }
    }

    fn run(mut self) -> Vec<Token> {
        let mut out = Vec::new();
        let mut line_start = true;
        while let Some(c) = self.at(0) {
            if c == b'\n' {
                line_start = true;
                self.i += 1;
                continue;
            }
            if c.is_ascii_whitespace() {
                self.i += 1;
                continue;
            }
            let cont = self.line_continuation_len();
            if cont > 0 {
                self.i += cont;
                continue;
            }
            if self.starts_with(b"//") {
                self.skip_line_comment();
                continue;
            }
            if self.starts_with(b"/*") {
                self.skip_block_comment();
                continue;
            }
            if c == b'#' && line_start {
                self.skip_directive();
                continue;
            }
            line_start = false;
            if is_ident_start(c) {
                let start = self.i;
                while self.at(0).is_some_and(is_ident_char) {
                    self.i += 1;
                }
                let word = text_of(self.b, start, self.i);
                // Encoding prefixes and raw strings: u8"..", L'x', R"d(..)d".
                match self.at(0) {
                    Some(b'"') if matches!(word.as_str(), "R" | "LR" | "uR" | "UR" | "u8R") => {
                        if !self.skip_raw_string() {
                            self.skip_quoted(b'"');
                        }
                        out.push(Token {
                            kind: TokKind::Str,
                            text: String::new(),
                        });
                    }
                    Some(q @ (b'"' | b'\'')) if matches!(word.as_str(), "L" | "u" | "U" | "u8") => {
                        self.skip_quoted(q);
                        out.push(Token {
                            kind: if q == b'"' {
                                TokKind::Str
                            } else {
                                TokKind::Char
                            },
                            text: String::new(),
                        });
                    }
                    _ => out.push(Token {
                        kind: TokKind::Ident,
                        text: word,
                    }),
                }
                continue;
            }
            if c.is_ascii_digit() || (c == b'.' && self.at(1).is_some_and(|d| d.is_ascii_digit())) {
                out.push(self.number());
                continue;
            }
            if c == b'"' || c == b'\'' {
                self.skip_quoted(c);
                out.push(Token {
                    kind: if c == b'"' {
                        TokKind::Str
                    } else {
                        TokKind::Char
                    },
                    text: String::new(),
                });
                continue;
            }
            if self.starts_with(b"::") {
                self.i += 2;
                out.push(Token::punct("::"));
                continue;
            }
            self.i += 1;
            out.push(Token {
                kind: TokKind::Punct,
                text: char::from(c).to_string(),
            });
        }
        out
    }
}

/// Splits `source` into tokens, dropping comments, whitespace and preprocessor directives.
pub(crate) fn tokenize(source: &str) -> Vec<Token> {
    Lexer {
        b: source.as_bytes(),
        i: 0,
    }
    .run()
}

/// Writes tokens back as text with C-like spacing: `const double* x`, `Array2D<double>`,
/// `thrust::complex<float>`, `unsigned long long`.
pub(crate) fn join(tokens: &[Token]) -> String {
    let mut out = String::new();
    let mut prev: Option<&Token> = None;
    let mut prev2: Option<&Token> = None;
    for t in tokens {
        if let Some(p) = prev {
            let after_open = prev2.is_some_and(|q| q.is_punct("("));
            let space = (p.is_word() && t.is_word())
                || p.is_punct(",")
                || ((p.is_punct(">") || p.is_punct("]")) && t.is_word())
                || ((p.is_punct("*") || p.is_punct("&")) && t.is_word() && !after_open)
                || (p.is_word() && (t.is_punct("=") || t.is_punct("(")))
                || p.is_punct("=");
            if space {
                out.push(' ');
            }
        }
        match t.kind {
            TokKind::Str => out.push_str("\"…\""),
            TokKind::Char => out.push_str("'…'"),
            _ => out.push_str(&t.text),
        }
        prev2 = prev;
        prev = Some(t);
    }
    out
}

/// For every `(`, `[` and `{`, the index of its closer, and for every closer its opener; `None`
/// where unmatched. A closer that does not match the innermost open bracket is left unmatched.
pub(crate) fn bracket_matches(tokens: &[Token]) -> Vec<Option<usize>> {
    let mut matches = vec![None; tokens.len()];
    let mut stack: Vec<(usize, &str)> = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        if t.kind != TokKind::Punct {
            continue;
        }
        let closer = match t.text.as_str() {
            "(" => Some(")"),
            "[" => Some("]"),
            "{" => Some("}"),
            _ => None,
        };
        if let Some(c) = closer {
            stack.push((i, c));
            continue;
        }
        if matches!(t.text.as_str(), ")" | "]" | "}") {
            if let Some(&(open, want)) = stack.last() {
                if want == t.text {
                    stack.pop();
                    if let Some(slot) = matches.get_mut(open) {
                        *slot = Some(i);
                    }
                    if let Some(slot) = matches.get_mut(i) {
                        *slot = Some(open);
                    }
                }
            }
        }
    }
    matches
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idents(src: &str) -> Vec<String> {
        tokenize(src)
            .into_iter()
            .filter(|t| t.kind == TokKind::Ident)
            .map(|t| t.text)
            .collect()
    }

    #[test]
    fn comments_strings_and_directives_hide_identifiers() {
        let src = r#"
            // __global__ void a()
            /* __global__ void b() */
            #define K __global__ void c() \
                __global__ void d()
            const char* s = "__global__ void e()";
            char q = '"';
            auto r = R"x(__global__ void f() )" )x";
            auto w = u8"__global__";
            real
        "#;
        assert_eq!(
            idents(src),
            ["const", "char", "s", "char", "q", "auto", "r", "auto", "w", "real"]
        );
    }

    #[test]
    fn numbers_and_scope() {
        let toks = tokenize("a::b 1.5e-3f 1'000'000 0x1F");
        let texts: Vec<&str> = toks.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(texts, ["a", "::", "b", "1.5e-3f", "1'000'000", "0x1F"]);
    }

    #[test]
    fn hash_not_at_line_start_is_punctuation() {
        let toks = tokenize("a # b");
        assert_eq!(toks.len(), 3);
    }

    #[test]
    fn unterminated_things_end_cleanly() {
        assert!(tokenize("/* never closed __global__").is_empty());
        assert_eq!(idents("\"open\nx"), ["x"]);
        assert!(tokenize("R\"abc(never closed").len() == 1);
        let _ = tokenize("\\");
        let _ = tokenize("'");
        let _ = tokenize("é __global__ ü");
    }

    #[test]
    fn join_spacing() {
        let t = tokenize("const double * __restrict__ x");
        assert_eq!(join(&t), "const double* __restrict__ x");
        let t = tokenize("cuda :: std :: complex < float > z");
        assert_eq!(join(&t), "cuda::std::complex<float> z");
        let t = tokenize("double ( & a ) [ 3 ]");
        assert_eq!(join(&t), "double (&a)[3]");
    }

    #[test]
    fn brackets() {
        let t = tokenize("f(a[1], {b}) )");
        let m = bracket_matches(&t);
        assert_eq!(m.first().copied().flatten(), None);
        assert_eq!(m.get(1).copied().flatten(), Some(10));
        assert_eq!(m.get(11).copied().flatten(), None);
    }
}
