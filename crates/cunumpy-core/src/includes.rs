//! Include resolution and hashing: which header files a CUDA source pulls in, so their paths
//! and contents can go into a compile's cache key.
//!
//! The scan is a light preprocessor pass: comments are skipped (and string literals, so a `//`
//! inside a string is not a comment), line continuations are joined, and every
//! `#include "x"` / `#include <x>` line is taken, whatever `#if` it sits in (an unused header
//! only makes the key stricter). Headers not found in the given folders (`<cstdint>`,
//! `<cuda/std/complex>`, ...) are system headers and are ignored.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::cache_key::hex_digest;

/// How deep nested includes are followed before giving up (a guard, not a limit real code
/// reaches).
const MAX_DEPTH: usize = 256;

/// One `#include` directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncludeDirective {
    /// The name between the quotes or angle brackets.
    pub name: String,
    /// `true` for `#include "name"`, `false` for `#include <name>`.
    pub quoted: bool,
}

/// The header files `source` includes, directly or through other headers, each once, in the
/// order they are first reached (depth first).
///
/// `#include "x"` is looked up in `source_dir` (for a nested include: the including header's
/// folder), then `include_dirs`, then `angle_dirs`; `#include <x>` in `include_dirs`, then
/// `angle_dirs`. A header found nowhere is a system header and is skipped. Paths are
/// canonicalised when possible, so one file reached by two routes appears once.
pub fn resolve_includes(
    source: &str,
    source_dir: Option<&Path>,
    include_dirs: &[PathBuf],
    angle_dirs: &[PathBuf],
) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut seen = HashSet::new();
    visit(
        source,
        source_dir,
        include_dirs,
        angle_dirs,
        &mut found,
        &mut seen,
        0,
    );
    found
}

fn visit(
    source: &str,
    current_dir: Option<&Path>,
    include_dirs: &[PathBuf],
    angle_dirs: &[PathBuf],
    found: &mut Vec<PathBuf>,
    seen: &mut HashSet<PathBuf>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    for directive in include_directives(source) {
        let Some(path) = locate(&directive, current_dir, include_dirs, angle_dirs) else {
            continue;
        };
        if !seen.insert(path.clone()) {
            continue;
        }
        found.push(path.clone());
        let Ok(bytes) = fs::read(&path) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        visit(
            &text,
            path.parent(),
            include_dirs,
            angle_dirs,
            found,
            seen,
            depth + 1,
        );
    }
}

fn locate(
    directive: &IncludeDirective,
    current_dir: Option<&Path>,
    include_dirs: &[PathBuf],
    angle_dirs: &[PathBuf],
) -> Option<PathBuf> {
    let name = Path::new(&directive.name);
    let here = if directive.quoted { current_dir } else { None };
    here.into_iter()
        .chain(include_dirs.iter().map(PathBuf::as_path))
        .chain(angle_dirs.iter().map(PathBuf::as_path))
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .map(|path| fs::canonicalize(&path).unwrap_or(path))
}

/// The `#include` directives of a source, in order, ignoring those inside comments.
pub fn include_directives(source: &str) -> Vec<IncludeDirective> {
    let code = blank_comments(source);
    let mut out = Vec::new();
    let mut logical = String::new();
    for line in code.lines() {
        if let Some(head) = line.strip_suffix('\\') {
            logical.push_str(head);
            continue;
        }
        logical.push_str(line);
        if let Some(directive) = parse_include_line(&logical) {
            out.push(directive);
        }
        logical.clear();
    }
    if let Some(directive) = parse_include_line(&logical) {
        out.push(directive);
    }
    out
}

fn parse_include_line(line: &str) -> Option<IncludeDirective> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("include")?;
    // `#include_next` and `#includefoo` are not `#include`.
    if rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let rest = rest.trim_start();
    let (quoted, close) = match rest.chars().next()? {
        '"' => (true, '"'),
        '<' => (false, '>'),
        _ => return None, // a macro include: cannot be resolved without preprocessing
    };
    let body = &rest[1..];
    let end = body.find(close)?;
    let name = &body[..end];
    if name.is_empty() {
        return None;
    }
    Some(IncludeDirective {
        name: name.to_string(),
        quoted,
    })
}

/// The source with every comment replaced by spaces (newlines kept, so line structure stays).
/// String, character and raw string literals are copied as they are.
fn blank_comments(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let next = bytes.get(i + 1).copied();
        match c {
            b'/' if next == Some(b'/') => {
                // A line comment runs to the end of the line (a trailing backslash continues it).
                while i < bytes.len() && bytes[i] != b'\n' {
                    if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'\n') {
                        out.push(b' ');
                        out.push(b'\n');
                        i += 2;
                        continue;
                    }
                    out.push(b' ');
                    i += 1;
                }
            }
            b'/' if next == Some(b'*') => {
                out.extend_from_slice(b"  ");
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    out.push(if bytes[i] == b'\n' { b'\n' } else { b' ' });
                    i += 1;
                }
                if i < bytes.len() {
                    out.extend_from_slice(b"  ");
                    i += 2;
                }
            }
            b'R' if next == Some(b'"') && !prev_is_ident(bytes, i) => {
                i = copy_raw_string(bytes, i, &mut out);
            }
            b'"' | b'\'' => {
                i = copy_quoted(bytes, i, c, &mut out);
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn prev_is_ident(bytes: &[u8], i: usize) -> bool {
    // `u8R"..."`, `LR"..."` are raw strings too; only a longer identifier ending in R is not.
    let mut j = i;
    while j > 0 && (bytes[j - 1].is_ascii_alphanumeric() || bytes[j - 1] == b'_') {
        j -= 1;
    }
    !matches!(&bytes[j..i], b"" | b"u8" | b"u" | b"U" | b"L")
}

/// Copies a `"..."` or `'...'` literal starting at `start`; returns the index after it. An
/// unterminated literal ends at the end of the line.
fn copy_quoted(bytes: &[u8], start: usize, quote: u8, out: &mut Vec<u8>) -> usize {
    out.push(quote);
    let mut i = start + 1;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\\' && i + 1 < bytes.len() {
            out.push(c);
            out.push(bytes[i + 1]);
            i += 2;
            continue;
        }
        if c == b'\n' {
            return i;
        }
        out.push(c);
        i += 1;
        if c == quote {
            return i;
        }
    }
    i
}

/// Copies a raw string literal `R"delim(...)delim"` starting at the `R`; returns the index
/// after it.
fn copy_raw_string(bytes: &[u8], start: usize, out: &mut Vec<u8>) -> usize {
    let open = start + 2;
    let Some(paren) = bytes[open..]
        .iter()
        .take(17)
        .position(|&b| b == b'(')
        .map(|p| open + p)
    else {
        // Not a raw string after all: copy the `R` and go on.
        out.push(b'R');
        return start + 1;
    };
    let delim = &bytes[open..paren];
    let mut closing = Vec::with_capacity(delim.len() + 2);
    closing.push(b')');
    closing.extend_from_slice(delim);
    closing.push(b'"');
    let body_start = paren + 1;
    let end = bytes[body_start..]
        .windows(closing.len())
        .position(|w| w == closing.as_slice())
        .map(|p| body_start + p + closing.len())
        .unwrap_or(bytes.len());
    out.extend_from_slice(&bytes[start..end]);
    end
}

/// A short hash of the files' contents, in order: SHA-256 over each file's length (`u64`,
/// little-endian) and bytes, as the first 16 hex digits.
pub fn include_hash(paths: &[PathBuf]) -> Result<String, io::Error> {
    let mut hasher = Sha256::new();
    for path in paths {
        let content = fs::read(path)?;
        hasher.update((content.len() as u64).to_le_bytes());
        hasher.update(&content);
    }
    let mut hex = hex_digest(&hasher.finalize());
    hex.truncate(16);
    Ok(hex)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A temporary folder removed on drop (the core crate has no tempfile dependency).
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> Self {
            static COUNTER: AtomicU64 = AtomicU64::new(0);
            let dir = std::env::temp_dir().join(format!(
                "cunumpy-includes-{}-{}",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            TempDir(fs::canonicalize(&dir).unwrap())
        }

        fn write(&self, rel: &str, text: &str) -> PathBuf {
            let path = self.0.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, text).unwrap();
            path
        }

        fn path(&self, rel: &str) -> PathBuf {
            self.0.join(rel)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn directives_are_found_and_comments_ignored() {
        let src = r#"
#include "a.cuh"
  #  include   <b/c.cuh>
// #include "commented.cuh"
/* #include "block.cuh"
   #include "block2.cuh" */
const char* s = "// not a comment"; #include "not-at-line-start.cuh"
#include_next <skip.h>
#define X 1 /* comment */
#include \
    "continued.cuh"
#include MACRO_HEADER
#include "d.cuh" // trailing comment
"#;
        let names: Vec<(String, bool)> = include_directives(src)
            .into_iter()
            .map(|d| (d.name, d.quoted))
            .collect();
        assert_eq!(
            names,
            vec![
                ("a.cuh".to_string(), true),
                ("b/c.cuh".to_string(), false),
                ("continued.cuh".to_string(), true),
                ("d.cuh".to_string(), true),
            ]
        );
    }

    #[test]
    fn strings_do_not_start_comments() {
        let src = "const char* a = \"/*\";\n#include \"x.cuh\"\nconst char* b = \"*/\";\n";
        let names: Vec<String> = include_directives(src)
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(names, vec!["x.cuh"]);
        let raw = "auto r = R\"xy(/* )\" )xy\";\n#include \"y.cuh\"\n";
        let names: Vec<String> = include_directives(raw)
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(names, vec!["y.cuh"]);
    }

    #[test]
    fn quoted_includes_search_source_dir_then_include_then_angle_dirs() {
        let t = TempDir::new();
        let in_src = t.write("src/local.cuh", "");
        t.write("inc/local.cuh", ""); // shadowed by src/
        let in_inc = t.write("inc/only_inc.cuh", "");
        let in_angle = t.write("angle/only_angle.cuh", "");
        let source = "#include \"local.cuh\"\n#include \"only_inc.cuh\"\n#include \"only_angle.cuh\"\n#include \"missing.cuh\"\n";
        let found = resolve_includes(
            source,
            Some(&t.path("src")),
            &[t.path("inc")],
            &[t.path("angle")],
        );
        assert_eq!(found, vec![in_src, in_inc, in_angle]);
    }

    #[test]
    fn angle_includes_skip_the_source_dir_and_ignore_system_headers() {
        let t = TempDir::new();
        t.write("src/h.cuh", "");
        let in_inc = t.write("inc/h.cuh", "");
        let shipped = t.write("pkg/cunumpy/index.cuh", "");
        let source = "#include <h.cuh>\n#include <cunumpy/index.cuh>\n#include <cstdint>\n#include <cuda/std/complex>\n";
        let found = resolve_includes(
            source,
            Some(&t.path("src")),
            &[t.path("inc")],
            &[t.path("pkg")],
        );
        assert_eq!(found, vec![in_inc, shipped]);
        // Without a matching folder an angle include is a system header.
        assert!(resolve_includes("#include <h.cuh>\n", Some(&t.path("src")), &[], &[]).is_empty());
    }

    #[test]
    fn nested_includes_are_followed_relative_to_the_including_header() {
        let t = TempDir::new();
        let top = t.write(
            "inc/lib/top.cuh",
            "#pragma once\n#include \"detail/impl.cuh\"\n#include <common.cuh>\n",
        );
        let impl_ = t.write("inc/lib/detail/impl.cuh", "#include \"../sibling.cuh\"\n");
        let sibling = t.write("inc/lib/sibling.cuh", "// #include \"nope.cuh\"\n");
        let common = t.write("inc/common.cuh", "#include \"lib/top.cuh\"\n"); // a cycle
        let found = resolve_includes(
            "#include <lib/top.cuh>\n#include \"lib/sibling.cuh\"\n",
            None,
            &[t.path("inc")],
            &[],
        );
        assert_eq!(found, vec![top, impl_, sibling, common]);
    }

    #[test]
    fn one_file_reached_twice_appears_once() {
        let t = TempDir::new();
        let a = t.write("inc/a.cuh", "#include \"b.cuh\"\n");
        let b = t.write("inc/b.cuh", "");
        let found = resolve_includes(
            "#include \"a.cuh\"\n#include \"b.cuh\"\n#include \"./a.cuh\"\n#include \"sub/../b.cuh\"\n",
            Some(&t.path("inc")),
            &[],
            &[],
        );
        assert_eq!(found, vec![a, b]);
    }

    #[test]
    fn no_source_dir_uses_the_include_dirs() {
        let t = TempDir::new();
        let h = t.write("inc/h.cuh", "");
        let found = resolve_includes("#include \"h.cuh\"\n", None, &[t.path("inc")], &[]);
        assert_eq!(found, vec![h]);
    }

    #[test]
    fn hash_follows_content_and_order() {
        let t = TempDir::new();
        let a = t.write("a", "ab");
        let b = t.write("b", "c");
        let h1 = include_hash(&[a.clone(), b.clone()]).unwrap();
        assert_eq!(h1.len(), 16);
        assert!(h1.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(h1, include_hash(&[a.clone(), b.clone()]).unwrap());
        assert_ne!(h1, include_hash(&[b.clone(), a.clone()]).unwrap());
        // Lengths delimit files: "ab"+"c" differs from "a"+"bc".
        let a2 = t.write("a2", "a");
        let b2 = t.write("b2", "bc");
        assert_ne!(h1, include_hash(&[a2, b2]).unwrap());
        fs::write(&b, "d").unwrap();
        assert_ne!(h1, include_hash(&[a.clone(), b]).unwrap());
        assert!(include_hash(&[t.path("missing")]).is_err());
        assert_eq!(include_hash(&[]).unwrap().len(), 16);
    }

    #[test]
    fn never_panics_on_odd_input() {
        for src in [
            "#include",
            "#include \"",
            "#include <",
            "#include \"\"",
            "/*",
            "R\"",
            "R\"abc",
            "\"\\",
            "#\\",
            "'\\",
            "é#include \"x\"",
        ] {
            let _ = include_directives(src);
            let _ = resolve_includes(src, None, &[], &[]);
        }
    }
}
