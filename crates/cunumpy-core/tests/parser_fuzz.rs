//! Fuzzing the signature parser: `kernel_names` and `parse_signature` must never panic, on
//! random bytes, on random token soups, and on random mutations of the corpus
//! (`tests/corpus/*.cu`). About 2000 cases in all, a few seconds.

use std::path::PathBuf;
use std::sync::OnceLock;

use cunumpy_core::parser::{kernel_names, parse_signature};
use proptest::prelude::*;

fn corpus() -> &'static [String] {
    static CORPUS: OnceLock<Vec<String>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "cu"))
            .collect();
        paths.sort();
        paths
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .collect()
    })
}

/// Runs everything the parser offers on `src`: the names, and each name's signature with and
/// without structs and template arguments. Only panics matter; results are checked for basic
/// consistency.
fn exercise(src: &str, extra_name: &str, targs: &[String]) {
    let names = kernel_names(src);
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "duplicate names");
    let structs = ["Particles".to_string(), "Grid".to_string()];
    for name in names.iter().map(String::as_str).chain([extra_name]) {
        for (s, t) in [
            (&[][..], None),
            (&structs[..], Some(targs)),
            (&structs[..], Some(&[][..])),
        ] {
            match parse_signature(src, name, s, t) {
                Ok(sig) => {
                    assert_eq!(sig.kernel, name);
                    assert!(
                        names.iter().any(|n| n == name),
                        "parsed a kernel not listed"
                    );
                    for p in &sig.params {
                        assert!(!p.name.is_empty());
                        assert!(p.decl.contains(&p.name));
                    }
                }
                Err(e) => {
                    assert_eq!(e.kernel(), name);
                    assert!(e.to_string().contains(name));
                }
            }
        }
    }
}

const TOKENS: &[&str] = &[
    "__global__",
    "void",
    "template",
    "typename",
    "class",
    "int",
    "double",
    "float",
    "unsigned",
    "long",
    "const",
    "__restrict__",
    "struct",
    "Particles",
    "extern",
    "\"C\"",
    "static",
    "__launch_bounds__",
    "Array2D",
    "CArray16D",
    "cunumpy",
    "thrust",
    "complex",
    "float2",
    "T",
    "N",
    "f",
    "k",
    "x",
    "n",
    "(",
    ")",
    "<",
    ">",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    "*",
    "&",
    "&&",
    "::",
    "=",
    "...",
    "3",
    "0x1F",
    "'",
    "\"",
    "//",
    "/*",
    "*/",
    "#",
    "\n",
    "\\",
    "R\"(",
    ")\"",
    "[[",
    "]]",
    "é",
    "\u{0}",
];

/// A mutation of a source text, applied at a fraction of its length.
#[derive(Clone, Debug)]
enum Mutation {
    Delete(f64, usize),
    Insert(f64, String),
    Duplicate(f64, usize),
    Truncate(f64),
    Swap(f64, f64, usize),
}

fn at(s: &str, frac: f64) -> usize {
    let mut i = ((s.len() as f64) * frac) as usize;
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn end_at(s: &str, start: usize, len: usize) -> usize {
    let mut j = start.saturating_add(len).min(s.len());
    while !s.is_char_boundary(j) {
        j -= 1;
    }
    j
}

fn apply(mut s: String, m: &Mutation) -> String {
    match m {
        Mutation::Delete(f, len) => {
            let i = at(&s, *f);
            let j = end_at(&s, i, *len);
            s.replace_range(i..j, "");
        }
        Mutation::Insert(f, text) => {
            let i = at(&s, *f);
            s.insert_str(i, text);
        }
        Mutation::Duplicate(f, len) => {
            let i = at(&s, *f);
            let j = end_at(&s, i, *len);
            let piece = s[i..j].to_string();
            s.insert_str(j, &piece);
        }
        Mutation::Truncate(f) => {
            let i = at(&s, *f);
            s.truncate(i);
        }
        Mutation::Swap(f, g, len) => {
            let i = at(&s, *f);
            let j = end_at(&s, i, *len);
            let piece = s[i..j].to_string();
            s.replace_range(i..j, "");
            let k = at(&s, *g);
            s.insert_str(k, &piece);
        }
    }
    s
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let token = prop::sample::select(TOKENS).prop_map(|t| format!(" {t} "));
    prop_oneof![
        (0.0..1.0f64, 1..40usize).prop_map(|(f, n)| Mutation::Delete(f, n)),
        (0.0..1.0f64, token).prop_map(|(f, t)| Mutation::Insert(f, t)),
        (0.0..1.0f64, ".{0,8}").prop_map(|(f, t)| Mutation::Insert(f, t)),
        (0.0..1.0f64, 1..200usize).prop_map(|(f, n)| Mutation::Duplicate(f, n)),
        (0.0..1.0f64).prop_map(Mutation::Truncate),
        (0.0..1.0f64, 0.0..1.0f64, 1..80usize).prop_map(|(f, g, n)| Mutation::Swap(f, g, n)),
    ]
}

fn template_args() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop_oneof![
            prop::sample::select(vec![
                "double",
                "float",
                "int",
                "3",
                "true",
                "unsigned long long",
                "thrust::complex<float>",
                "Particles",
                "",
                "(",
                ";",
                "a>b",
            ])
            .prop_map(String::from),
            ".{0,6}",
        ],
        0..4,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let src = String::from_utf8_lossy(&bytes).into_owned();
        exercise(&src, "f", &["double".to_string()]);
    }

    #[test]
    fn random_token_soup_never_panics(
        toks in prop::collection::vec(prop::sample::select(TOKENS), 0..80),
        targs in template_args(),
    ) {
        let src = toks.join(" ");
        exercise(&src, "f", &targs);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn corpus_mutations_never_panic(
        file in 0..64usize,
        mutations in prop::collection::vec(mutation(), 1..6),
        targs in template_args(),
    ) {
        let files = corpus();
        prop_assume!(!files.is_empty());
        let Some(original) = files.get(file % files.len()) else { return Ok(()) };
        let src = mutations.iter().fold(original.clone(), apply);
        exercise(&src, "push_eta", &targs);
    }
}

/// Pathological but large inputs: the scans are bounded, so these stay fast.
#[test]
fn large_pathological_inputs() {
    let inputs = [
        "__global__ ".repeat(20_000),
        "template < ".repeat(20_000) + "__global__ void f(int n) {}",
        "__global__ void f( ".repeat(5_000),
        "( ".repeat(20_000) + "__global__ void f(int n) {}",
        "__launch_bounds__(1) ".repeat(10_000) + "__global__ void f(int n) {}",
        "__global__ void k(int n) {}\n".repeat(5_000),
        format!("__global__ void f({}int n) {{}}", "int a, ".repeat(10_000)),
        "template <typename T> ".repeat(2_000) + "__global__ void f(T x) {}",
    ];
    for src in &inputs {
        let start = std::time::Instant::now();
        let _ = kernel_names(src);
        let _ = parse_signature(src, "f", &[], Some(&["int".to_string()]));
        let _ = parse_signature(src, "f", &[], None);
        let took = start.elapsed();
        assert!(
            took.as_secs() < 10,
            "{took:?} for {}…",
            &src[..40.min(src.len())]
        );
    }
}
