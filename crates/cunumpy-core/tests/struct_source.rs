//! A `CudaStruct`'s layout compared with the struct a kernel source declares (issue 21, item
//! 5): names, order, types, offsets, size; a mismatch names the field. The source struct's
//! offsets are also measured by the host C++ compiler's `offsetof`, independently of the
//! layout code (skipped without `c++`/`$CXX`).
#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;
use std::process::Command;

use cunumpy_core::layout::{FieldSpec, StructLayout};
use cunumpy_core::parser::{struct_definitions, StructDefinition};

fn layout(name: &str, fields: &[(&str, &str)]) -> StructLayout {
    let specs: Vec<(String, FieldSpec)> = fields
        .iter()
        .map(|(n, t)| (n.to_string(), FieldSpec::Text(t.to_string())))
        .collect();
    StructLayout::new(name, &specs, &[]).unwrap()
}

const SOURCE: &str = r#"
// struct P { int not_this; };   (a comment is not a definition)
#define N 3
struct P;                         // a forward declaration is not one either
struct P {
    char tag;
    double x, *y;                 // two declarators, the second a pointer
    int n[3];
    unsigned short s = 7;         // a default initialiser does not change the layout
};
__global__ void k(P p) {}
"#;

const P_FIELDS: &[(&str, &str)] = &[
    ("tag", "char"),
    ("x", "double"),
    ("y", "double*"),
    ("n[3]", "int"),
    ("s", "unsigned short"),
];

#[test]
fn the_reader_finds_data_members_only() {
    let defs = struct_definitions(SOURCE, "P");
    assert_eq!(defs.len(), 1, "{defs:?}");
    let StructDefinition::Members { members, skipped } = &defs[0] else {
        panic!("{defs:?}")
    };
    let got: Vec<(String, String, Vec<String>)> = members
        .iter()
        .map(|m| (m.name.clone(), m.ctype.clone(), m.extents.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("tag".into(), "char".into(), vec![]),
            ("x".into(), "double".into(), vec![]),
            ("y".into(), "double*".into(), vec![]),
            ("n".into(), "int".into(), vec!["3".into()]),
            ("s".into(), "unsigned short".into(), vec![]),
        ]
    );
    assert!(skipped.is_empty());
    let typedef = "typedef struct { float a; int b; } Q;";
    assert!(
        matches!(&struct_definitions(typedef, "Q")[..], [StructDefinition::Members { members, .. }] if members.len() == 2)
    );
    let methods = "struct R { double a; __device__ double twice() const { return 2 * a; } static const int K = 2; };";
    let [StructDefinition::Members { members, skipped }] = &struct_definitions(methods, "R")[..]
    else {
        panic!()
    };
    assert_eq!(members.len(), 1);
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    for (src, why) in [
        ("struct S : Base { int a; };", "base struct"),
        ("struct __align__(16) S { int a; };", "alignment attribute"),
        ("struct S { alignas(16) int a; };", "alignment attribute"),
        ("struct S { int a : 3; };", "bit field"),
        ("struct S { union { int a; float b; } u; };", "union"),
        ("struct S { virtual void f(); };", "virtual"),
    ] {
        let defs = struct_definitions(src, "S");
        assert!(
            matches!(&defs[..], [StructDefinition::Uncheckable { why: w }] if w.contains(why)),
            "{src}: {defs:?}"
        );
    }
}

#[test]
fn a_matching_struct_passes_and_every_kind_of_difference_names_the_field() {
    let p = layout("P", P_FIELDS);
    assert_eq!(p.source_mismatch(SOURCE, false), None);
    assert_eq!(p.source_mismatch("__global__ void k(P p) {}", false), None);

    let cases: &[(&[(&str, &str)], &str)] = &[
        (
            &[
                ("tag", "char"),
                ("y", "double*"),
                ("x", "double"),
                ("n[3]", "int"),
                ("s", "unsigned short"),
            ],
            "field 1 is 'x' (double x) in the CUDA source but 'y' (double* y) in the CudaStruct",
        ),
        (
            &[
                ("tag", "char"),
                ("x", "float"),
                ("y", "double*"),
                ("n[3]", "int"),
                ("s", "unsigned short"),
            ],
            "field 'x' is double x in the CUDA source but float x in the CudaStruct",
        ),
        (
            &[
                ("tag", "char"),
                ("x", "double"),
                ("y", "double*"),
                ("n[4]", "int"),
                ("s", "unsigned short"),
            ],
            "field 'n' is int n[3] in the CUDA source but int n[4] in the CudaStruct",
        ),
        (
            &[
                ("tag", "char"),
                ("x", "double"),
                ("y", "double*"),
                ("n[3]", "int"),
            ],
            "field 4 's' (unsigned short s) of the CUDA source is missing from the CudaStruct",
        ),
        (
            &[
                ("tag", "char"),
                ("x", "double"),
                ("y", "double*"),
                ("n[3]", "int"),
                ("s", "unsigned short"),
                ("z", "int"),
            ],
            "field 5 'z' (int z) of the CudaStruct is missing from the CUDA source",
        ),
    ];
    for (fields, expected) in cases {
        let ours = layout("P", fields);
        let got = ours.source_mismatch(SOURCE, true).unwrap_or_default();
        assert!(
            got.starts_with("struct P in the CUDA source does not match its CudaStruct: "),
            "{got}"
        );
        assert!(got.contains(expected), "{got}\nexpected: {expected}");
    }
    // const does not change the layout
    let c = layout("C", &[("p", "const double*")]);
    assert_eq!(c.source_mismatch("struct C { double* p; };", false), None);
    // lenient: a definition with member functions is compared on its data members
    let r = layout("R", &[("a", "double")]);
    let methods = "struct R { double a; __device__ double twice() const { return 2 * a; } };";
    assert_eq!(r.source_mismatch(methods, true), None);
    assert!(r
        .source_mismatch(methods, false)
        .is_some_and(|m| m.contains("cannot compare") && m.contains("twice")));
    let wrong = layout("R", &[("a", "float")]);
    assert!(wrong
        .source_mismatch(methods, true)
        .is_some_and(|m| m.contains("field 'a' is double a")));
    // a type a CudaStruct cannot describe is said, not ignored
    let v = layout("V", &[("a", "float")]);
    assert!(v
        .source_mismatch("struct V { float2 a; };", true)
        .is_some_and(|m| m.contains("cannot be compared") && m.contains("float2")));
}

fn compiler() -> Option<String> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_string());
    let ok = Command::new(&cxx)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(cxx)
}

/// `offsetof` and `sizeof` of the source's own struct, as the host compiler lays it out.
fn compiler_offsets(cxx: &str, source: &str, name: &str, fields: &[&str]) -> Vec<usize> {
    let mut src = format!("#include <cstddef>\n#include <cstdio>\n{source}\nint main() {{\n");
    for f in fields {
        let _ = writeln!(src, "    std::printf(\"%zu\\n\", offsetof({name}, {f}));");
    }
    let _ = writeln!(src, "    std::printf(\"%zu\\n\", sizeof({name}));\n}}");
    let dir = std::env::temp_dir().join(format!("cunumpy-struct-src-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cpp = dir.join("s.cpp");
    let exe = dir.join("s");
    std::fs::write(&cpp, &src).unwrap();
    let out = Command::new(cxx)
        .args(["-std=c++17", "-w", "-D__global__=", "-D__device__="])
        .arg(&cpp)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{src}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    String::from_utf8_lossy(&run.stdout)
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

#[test]
fn offsets_of_a_matching_struct_are_the_compilers() {
    let Some(cxx) = compiler() else {
        eprintln!("skipped: no host C++ compiler");
        return;
    };
    let p = layout("P", P_FIELDS);
    let names: Vec<&str> = p.fields.iter().map(|f| f.name.as_str()).collect();
    let measured = compiler_offsets(&cxx, SOURCE, "P", &names);
    let mut ours: Vec<usize> = p.fields.iter().map(|f| f.offset).collect();
    ours.push(p.size);
    assert_eq!(measured, ours);
    // A CudaStruct whose offsets differ from the compiler's is refused, naming the field:
    // `int n` where the source has `double n` moves nothing before it and fits the size, so
    // only the type check can catch it; the measured offsets show the bytes differ.
    let src2 = "struct T { char c; double d; int n; };";
    let t = layout("T", &[("c", "char"), ("d", "float"), ("n", "int")]);
    let measured = compiler_offsets(&cxx, src2, "T", &["c", "d", "n"]);
    let ours: Vec<usize> = t.fields.iter().map(|f| f.offset).chain([t.size]).collect();
    assert_ne!(
        measured, ours,
        "the compiler lays the source struct out differently"
    );
    let message = t.source_mismatch(src2, true).unwrap_or_default();
    assert!(
        message.contains("field 'd' is double d in the CUDA source but float d"),
        "{message}"
    );
}
