//! A small C/C++ lexer that keeps byte offsets, so the rewriter can edit the source in place.
//! Comments and whitespace are dropped; a preprocessor directive is one token.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Ident,
    Number,
    Str,
    Char,
    Punct,
    Directive,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Tok {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80
}

fn is_ident_char(b: u8) -> bool {
    is_ident_start(b) || b.is_ascii_digit()
}

/// Ends a quoted literal that starts at `i` (on the quote); returns the index after it.
fn skip_quoted(s: &[u8], mut i: usize, quote: u8) -> usize {
    i += 1;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            b'\n' => return i,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    s.len()
}

/// Ends a raw string `R"delim( ... )delim"`; `i` is on the opening quote.
fn skip_raw(s: &[u8], i: usize) -> usize {
    let Some(open) = s[i..].iter().position(|&b| b == b'(').map(|p| i + p) else {
        return s.len();
    };
    let delim = &s[i + 1..open];
    let mut j = open + 1;
    while j < s.len() {
        if s[j] == b')'
            && s[j + 1..].starts_with(delim)
            && s.get(j + 1 + delim.len()) == Some(&b'"')
        {
            return j + delim.len() + 2;
        }
        j += 1;
    }
    s.len()
}

pub(crate) fn lex(src: &str) -> Vec<Tok> {
    let s = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    while i < s.len() {
        let b = s[i];
        if b == b'\n' {
            line_start = true;
            i += 1;
            continue;
        }
        if b.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if b == b'\\' && s.get(i + 1) == Some(&b'\n') {
            i += 2;
            continue;
        }
        if b == b'/' && s.get(i + 1) == Some(&b'/') {
            while i < s.len() && s[i] != b'\n' {
                i += if s[i] == b'\\' { 2 } else { 1 };
            }
            continue;
        }
        if b == b'/' && s.get(i + 1) == Some(&b'*') {
            i += 2;
            while i < s.len() && !(s[i] == b'*' && s.get(i + 1) == Some(&b'/')) {
                i += 1;
            }
            i = (i + 2).min(s.len());
            continue;
        }
        let start = i;
        if b == b'#' && line_start {
            while i < s.len() && s[i] != b'\n' {
                if s[i] == b'\\' {
                    i += 2;
                } else if s[i] == b'/' && s.get(i + 1) == Some(&b'*') {
                    i += 2;
                    while i < s.len() && !(s[i] == b'*' && s.get(i + 1) == Some(&b'/')) {
                        i += 1;
                    }
                    i += 2;
                } else {
                    i += 1;
                }
            }
            i = i.min(s.len());
            out.push(Tok {
                kind: Kind::Directive,
                start,
                end: i,
            });
            continue;
        }
        line_start = false;
        let kind;
        if is_ident_start(b) {
            while i < s.len() && is_ident_char(s[i]) {
                i += 1;
            }
            let word = &s[start..i];
            if i < s.len() && (s[i] == b'"' || s[i] == b'\'') {
                let raw = word.ends_with(b"R");
                let prefix = if raw { &word[..word.len() - 1] } else { word };
                if matches!(prefix, b"" | b"u8" | b"u" | b"U" | b"L") {
                    if raw && s[i] == b'"' {
                        i = skip_raw(s, i);
                        out.push(Tok {
                            kind: Kind::Str,
                            start,
                            end: i,
                        });
                        continue;
                    }
                    if !raw {
                        let q = s[i];
                        i = skip_quoted(s, i, q);
                        out.push(Tok {
                            kind: if q == b'"' { Kind::Str } else { Kind::Char },
                            start,
                            end: i,
                        });
                        continue;
                    }
                }
            }
            kind = Kind::Ident;
        } else if b.is_ascii_digit() || (b == b'.' && s.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            i += 1;
            while i < s.len() {
                let c = s[i];
                let exponent_sign =
                    (c == b'+' || c == b'-') && matches!(s[i - 1], b'e' | b'E' | b'p' | b'P');
                if exponent_sign || is_ident_char(c) || c == b'.' || c == b'\'' {
                    i += 1;
                } else {
                    break;
                }
            }
            kind = Kind::Number;
        } else if b == b'"' {
            i = skip_quoted(s, i, b'"');
            kind = Kind::Str;
        } else if b == b'\'' {
            i = skip_quoted(s, i, b'\'');
            kind = Kind::Char;
        } else if b == b':' && s.get(i + 1) == Some(&b':') {
            i += 2;
            kind = Kind::Punct;
        } else {
            // One punctuation character (a UTF-8 continuation cannot start here: >= 0x80 is an
            // identifier character).
            i += 1;
            kind = Kind::Punct;
        }
        out.push(Tok {
            kind,
            start,
            end: i.min(s.len()),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(src: &str) -> Vec<&str> {
        lex(src).iter().map(|t| &src[t.start..t.end]).collect()
    }

    #[test]
    fn lexes_comments_strings_and_directives() {
        let src =
            "#include <a.h>\nint /* x */ a = 1.5e-3; // c\nconst char* s = \"a\\\"b\"; ns::f('c');";
        assert_eq!(
            texts(src),
            vec![
                "#include <a.h>",
                "int",
                "a",
                "=",
                "1.5e-3",
                ";",
                "const",
                "char",
                "*",
                "s",
                "=",
                "\"a\\\"b\"",
                ";",
                "ns",
                "::",
                "f",
                "(",
                "'c'",
                ")",
                ";"
            ]
        );
    }

    #[test]
    fn raw_strings_and_prefixes() {
        let src = "auto a = R\"x(q\"w)x\"; auto b = u8\"z\";";
        assert!(texts(src).contains(&"R\"x(q\"w)x\""));
        assert!(texts(src).contains(&"u8\"z\""));
    }
}
