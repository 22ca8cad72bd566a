//! Struct layouts against the host C++ compiler's `sizeof`/`alignof`/`offsetof` (x86-64 and the
//! CUDA device agree on these for every type cunumpy lays out). Skips when no `c++`/`$CXX` runs.
#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

use cunumpy_core::layout::{FieldSpec, StructLayout};

fn compiler() -> Option<String> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_string());
    let ok = Command::new(&cxx)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(cxx)
}

fn text(fields: &[(&str, &str)]) -> Vec<(String, FieldSpec)> {
    fields
        .iter()
        .map(|(n, t)| (n.to_string(), FieldSpec::Text(t.to_string())))
        .collect()
}

fn the_struct_set() -> Vec<StructLayout> {
    let char_double = StructLayout::new(
        "CharDouble",
        &text(&[("c", "char"), ("d", "double"), ("s", "short")]),
        &[],
    )
    .unwrap();
    let with_complex = StructLayout::new(
        "WithComplex",
        &text(&[
            ("n", "int"),
            ("z", "complex<double>"),
            ("b", "bool"),
            ("w", "complex<float>"),
            ("u", "unsigned char"),
        ]),
        &[],
    )
    .unwrap();
    let views = StructLayout::new(
        "Views",
        &text(&[
            ("flag", "bool"),
            ("a", "Array2D<double>"),
            ("c", "CArray3D<float>"),
            ("big", "Array5D<complex<double>>"),
            ("tail", "char"),
        ]),
        &[],
    )
    .unwrap();
    let arrays = StructLayout::new(
        "Arrays",
        &text(&[
            ("c", "char"),
            ("pos[3]", "float"),
            ("m", "double[2][3]"),
            ("k", "short[5]"),
            ("p", "const double*"),
            ("any", "void*"),
            ("zs[2]", "complex<double>"),
            ("last", "signed char"),
        ]),
        &[],
    )
    .unwrap();
    let nested = StructLayout::new(
        "Nested",
        &[
            ("c".to_string(), FieldSpec::Text("char".into())),
            ("inner".to_string(), FieldSpec::Text("WithComplex".into())),
            (
                "cd".to_string(),
                FieldSpec::Struct(char_double.clone(), vec![2]),
            ),
            ("v".to_string(), FieldSpec::Text("Views".into())),
            ("n".to_string(), FieldSpec::Text("unsigned short".into())),
        ],
        &[&with_complex, &views],
    )
    .unwrap();
    vec![char_double, with_complex, views, arrays, nested]
}

#[test]
fn layouts_agree_with_the_host_compiler() {
    let Some(cxx) = compiler() else {
        eprintln!("skipped: no host C++ compiler");
        return;
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let include = root.join("python/cunumpy/include");
    let shim = root.join("tests/cxx/headers/shim.h");
    let structs = the_struct_set();

    let mut src = String::from(
        "#include <cstddef>\n#include <cstdio>\n#include <cunumpy/array_view.cuh>\n\
         template <typename T> struct alignas(2 * sizeof(T)) complex { T re, im; };\n",
    );
    let mut expected = String::new();
    for s in &structs {
        src.push_str(&s.declaration());
    }
    src.push_str("#pragma GCC diagnostic ignored \"-Winvalid-offsetof\"\nint main() {\n");
    for s in &structs {
        let _ = writeln!(
            src,
            "    std::printf(\"{0} %zu %zu\\n\", sizeof({0}), alignof({0}));",
            s.name
        );
        let _ = writeln!(expected, "{} {} {}", s.name, s.size, s.alignment);
        for f in &s.fields {
            let _ = writeln!(
                src,
                "    std::printf(\"{0}.{1} %zu %zu\\n\", offsetof({0}, {1}), sizeof({0}::{1}));",
                s.name, f.name
            );
            let _ = writeln!(expected, "{}.{} {} {}", s.name, f.name, f.offset, f.size);
        }
    }
    src.push_str("}\n");

    let dir = std::env::temp_dir().join(format!("cunumpy-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cpp = dir.join("layout.cpp");
    let exe = dir.join("layout");
    std::fs::write(&cpp, &src).unwrap();
    let out = Command::new(&cxx)
        .args(["-std=c++17", "-w", "-I"])
        .arg(&include)
        .arg("-include")
        .arg(&shim)
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
    assert!(run.status.success());
    assert_eq!(String::from_utf8_lossy(&run.stdout), expected, "\n{src}");
}
