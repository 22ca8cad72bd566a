//! Finds the headers a source includes (transitively) in the given include directories, so
//! their contents can be part of the cache key. System headers (not found in those directories)
//! are covered by the compiler's version instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::lexer::{lex, Kind};

const MAX_HEADERS: usize = 4096;

/// The `#include` targets of a source: `(name, quoted)`.
fn include_targets(src: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for t in lex(src) {
        if t.kind != Kind::Directive {
            continue;
        }
        let line = src[t.start..t.end].trim_start_matches('#').trim_start();
        let Some(rest) = line.strip_prefix("include") else {
            continue;
        };
        let rest = rest.trim_start();
        let (close, quoted) = match rest.chars().next() {
            Some('"') => ('"', true),
            Some('<') => ('>', false),
            _ => continue,
        };
        if let Some(end) = rest[1..].find(close) {
            out.push((rest[1..1 + end].to_string(), quoted));
        }
    }
    out
}

/// Every header reachable from `source` through `dirs`, with its content, sorted by path.
pub(crate) fn collect_headers(source: &str, dirs: &[PathBuf]) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found: BTreeMap<PathBuf, Vec<u8>> = BTreeMap::new();
    let mut stack: Vec<(Option<PathBuf>, String)> = vec![(None, source.to_string())];
    while let Some((path, text)) = stack.pop() {
        let here = path
            .as_deref()
            .and_then(Path::parent)
            .map(Path::to_path_buf);
        for (name, quoted) in include_targets(&text) {
            let mut candidates: Vec<PathBuf> = Vec::new();
            if quoted {
                if let Some(h) = &here {
                    candidates.push(h.join(&name));
                }
            }
            candidates.extend(dirs.iter().map(|d| d.join(&name)));
            let Some(hit) = candidates.into_iter().find(|p| p.is_file()) else {
                continue;
            };
            let key = hit.canonicalize().unwrap_or(hit);
            if found.contains_key(&key) || found.len() >= MAX_HEADERS {
                continue;
            }
            let Ok(bytes) = std::fs::read(&key) else {
                continue;
            };
            stack.push((
                Some(key.clone()),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
            found.insert(key, bytes);
        }
    }
    found.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_includes_in_dirs() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("sub")).expect("mkdir");
        std::fs::write(dir.path().join("a.cuh"), "#include \"sub/b.cuh\"\n").expect("write");
        std::fs::write(dir.path().join("sub/b.cuh"), "#include \"c.cuh\"\nint b;").expect("write");
        std::fs::write(dir.path().join("sub/c.cuh"), "int c;").expect("write");
        let src = "#include <a.cuh>\n#include <stdio.h>\n// #include \"nope.h\"\n";
        let found = collect_headers(src, &[dir.path().to_path_buf()]);
        let names: Vec<String> = found
            .iter()
            .filter_map(|(p, _)| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
    }
}
