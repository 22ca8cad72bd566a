//! The signature parser against a corpus of real-world-style CUDA sources (`tests/corpus/*.cu`):
//! every kernel's name list and parsed signature, and every rejection.

use std::path::PathBuf;

use cunumpy_core::dtype::DType;
use cunumpy_core::parser::{kernel_names, parse_signature, SignatureError};
use cunumpy_core::signature::ParamKind;

fn corpus(file: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(file);
    match std::fs::read_to_string(&path) {
        Ok(s) => s,
        Err(e) => panic!("{}: {e}", path.display()),
    }
}

/// A compact spelling of a parameter kind: `float64`, `*const float64`, `*void`,
/// `Array2D<float64>`, `CArray1D<float32>`, `struct Grid`.
fn describe(kind: &ParamKind) -> String {
    match kind {
        ParamKind::Scalar(d) => d.name().to_string(),
        ParamKind::Pointer { dtype, is_const } => format!(
            "*{}{}",
            if *is_const { "const " } else { "" },
            dtype.map_or("void", |d| d.name())
        ),
        ParamKind::View {
            dtype,
            ndim,
            contiguous,
        } => format!(
            "{}Array{ndim}D<{}>",
            if *contiguous { "C" } else { "" },
            dtype.name()
        ),
        ParamKind::Struct { name } => format!("struct {name}"),
    }
}

struct Case {
    file: &'static str,
    kernel: &'static str,
    structs: &'static [&'static str],
    template_args: Option<&'static [&'static str]>,
    expression: &'static str,
    /// (decl, kind) per parameter.
    params: &'static [(&'static str, &'static str)],
}

const fn case(
    file: &'static str,
    kernel: &'static str,
    params: &'static [(&'static str, &'static str)],
) -> Case {
    Case {
        file,
        kernel,
        structs: &[],
        template_args: None,
        expression: kernel,
        params,
    }
}

const PARTICLE_STRUCTS: &[&str] = &["Particles", "FieldParams"];
const DEPOSIT_STRUCTS: &[&str] = &["Grid", "struct Markers"];

const CASES: &[Case] = &[
    // particles_push.cu
    case(
        "particles_push.cu",
        "push_eta",
        &[
            ("double* markers", "*float64"),
            ("const double* velocities", "*const float64"),
            ("const double dt", "float64"),
            ("const int n_markers", "int32"),
        ],
    ),
    Case {
        structs: PARTICLE_STRUCTS,
        ..case(
            "particles_push.cu",
            "push_v_with_efield",
            &[
                ("Particles p", "struct Particles"),
                ("const FieldParams params", "struct FieldParams"),
                ("const double dt", "float64"),
            ],
        )
    },
    Case {
        structs: PARTICLE_STRUCTS,
        ..case(
            "particles_push.cu",
            "push_vxb",
            &[
                ("Particles p", "struct Particles"),
                ("const double* b_field", "*const float64"),
                ("double dt", "float64"),
                ("long long n_steps", "int64"),
            ],
        )
    },
    // stencil_views.cu
    case(
        "stencil_views.cu",
        "laplace_2d",
        &[
            ("const Array2D<double> u", "Array2D<float64>"),
            ("Array2D<double> out", "Array2D<float64>"),
            ("double h", "float64"),
        ],
    ),
    case(
        "stencil_views.cu",
        "copy_1d",
        &[
            ("cunumpy::CArray1D<float> dst", "CArray1D<float32>"),
            ("cunumpy::Array1D<float> src", "Array1D<float32>"),
        ],
    ),
    case(
        "stencil_views.cu",
        "kinetic_5d",
        &[
            ("Array5D<double> f", "Array5D<float64>"),
            ("CArray3D<double> rho", "CArray3D<float64>"),
            ("const CArray1D<double> weights", "CArray1D<float64>"),
        ],
    ),
    case(
        "stencil_views.cu",
        "high_rank",
        &[
            ("Array16D<int32_t> a16", "Array16D<int32>"),
            ("CArray15D<uint8_t> c15", "CArray15D<uint8>"),
            ("Array8D<bool> mask", "Array8D<bool>"),
            ("Array4D<thrust::complex<double>> z4", "Array4D<complex128>"),
        ],
    ),
    Case {
        template_args: Some(&["float"]),
        expression: "scale_view<float>",
        ..case(
            "stencil_views.cu",
            "scale_view",
            &[
                ("Array3D<float> a", "Array3D<float32>"),
                ("const float factor", "float32"),
            ],
        )
    },
    // reductions.cu
    Case {
        template_args: Some(&["double", "256", "true"]),
        expression: "block_sum<double, 256, true>",
        ..case(
            "reductions.cu",
            "block_sum",
            &[
                ("const double* in", "*const float64"),
                ("double* out", "*float64"),
                ("const size_t n", "uint64"),
            ],
        )
    },
    Case {
        template_args: Some(&["float"]),
        expression: "dot<float>",
        ..case(
            "reductions.cu",
            "dot",
            &[
                ("const float* x", "*const float32"),
                ("const float* y", "*const float32"),
                ("float* result", "*float32"),
                ("int n", "int32"),
            ],
        )
    },
    Case {
        template_args: Some(&["float", "double", "512"]),
        expression: "dot<float, double, 512>",
        ..case(
            "reductions.cu",
            "dot",
            &[
                ("const float* x", "*const float32"),
                ("const float* y", "*const float32"),
                ("double* result", "*float64"),
                ("int n", "int32"),
            ],
        )
    },
    Case {
        template_args: Some(&["double"]),
        expression: "histogram<double>",
        ..case(
            "reductions.cu",
            "histogram",
            &[
                ("const double* values", "*const float64"),
                ("unsigned int* counts", "*uint32"),
                ("double lo", "float64"),
                ("double hi", "float64"),
                ("int n_bins", "int32"),
                ("int n", "int32"),
            ],
        )
    },
    Case {
        template_args: Some(&["int", "8"]),
        expression: "fixed_window<int, 8>",
        ..case(
            "reductions.cu",
            "fixed_window",
            &[
                ("const int window[8]", "*const int32"),
                ("int* out", "*int32"),
                ("ptrdiff_t stride", "int64"),
            ],
        )
    },
    Case {
        template_args: Some(&["long long", "thrust::complex<float>"]),
        expression: "segment_sum<long long, thrust::complex<float>>",
        ..case(
            "reductions.cu",
            "segment_sum",
            &[
                ("const long long* segments", "*const int64"),
                ("const thrust::complex<float>* values", "*const complex64"),
                ("thrust::complex<float>* out", "*complex64"),
                ("long long n_segments", "int64"),
            ],
        )
    },
    // fft_complex.cu
    case(
        "fft_complex.cu",
        "twiddle",
        &[
            ("thrust::complex<double>* data", "*complex128"),
            ("const int n", "int32"),
            ("const double sign", "float64"),
        ],
    ),
    case(
        "fft_complex.cu",
        "scale_c64",
        &[
            ("cuda::std::complex<float>* z", "*complex64"),
            ("cuda::std::complex<float> alpha", "complex64"),
            ("unsigned long n", "uint64"),
        ],
    ),
    case(
        "fft_complex.cu",
        "mixed",
        &[
            ("complex<float> a", "complex64"),
            ("const complex<double>* b", "*const complex128"),
            ("::thrust::complex<float>* c", "*complex64"),
        ],
    ),
    // strings_and_macros.cu
    case(
        "strings_and_macros.cu",
        "real_after_strings",
        &[("double* x", "*float64"), ("int n", "int32")],
    ),
    case(
        "strings_and_macros.cu",
        "attr_macro_between",
        &[("int n", "int32")],
    ),
    case(
        "strings_and_macros.cu",
        "spread_over_lines",
        &[("float* x", "*float32"), ("unsigned n", "uint32")],
    ),
    // mixed_scalars.cu
    case(
        "mixed_scalars.cu",
        "all_ints",
        &[
            ("int8_t a", "int8"),
            ("uint8_t b", "uint8"),
            ("int16_t c", "int16"),
            ("uint16_t d", "uint16"),
            ("int32_t e", "int32"),
            ("uint32_t f", "uint32"),
            ("int64_t g", "int64"),
            ("uint64_t h", "uint64"),
        ],
    ),
    case(
        "mixed_scalars.cu",
        "c_spellings",
        &[
            ("char a", "int8"),
            ("signed char b", "int8"),
            ("unsigned char c", "uint8"),
            ("short d", "int16"),
            ("short int e", "int16"),
            ("unsigned short f", "uint16"),
            ("unsigned short int g", "uint16"),
            ("signed h", "int32"),
            ("signed int i", "int32"),
            ("unsigned j", "uint32"),
            ("unsigned int k", "uint32"),
            ("long l", "int64"),
            ("long int m", "int64"),
            ("long long n", "int64"),
            ("long long int o", "int64"),
            ("unsigned long p", "uint64"),
            ("unsigned long long q", "uint64"),
            ("long unsigned int r", "uint64"),
            ("bool s", "bool"),
        ],
    ),
    case(
        "mixed_scalars.cu",
        "sizes",
        &[
            ("size_t n", "uint64"),
            ("ptrdiff_t d", "int64"),
            ("ssize_t s", "int64"),
            ("std::size_t m", "uint64"),
        ],
    ),
    case(
        "mixed_scalars.cu",
        "floats",
        &[
            ("float a", "float32"),
            ("double b", "float64"),
            ("const float c", "float32"),
            ("volatile double* d", "*float64"),
        ],
    ),
    case(
        "mixed_scalars.cu",
        "untyped_buffers",
        &[
            ("void* raw", "*void"),
            ("const void* craw", "*const void"),
            ("size_t nbytes", "uint64"),
        ],
    ),
    case(
        "mixed_scalars.cu",
        "with_defaults",
        &[
            ("double* x", "*float64"),
            ("int n", "int32"),
            ("double alpha", "float64"),
        ],
    ),
    case(
        "mixed_scalars.cu",
        "prototype_only",
        &[
            ("const float* in", "*const float32"),
            ("float* out", "*float32"),
            ("int n", "int32"),
        ],
    ),
    // deposit.cu
    Case {
        structs: DEPOSIT_STRUCTS,
        ..case(
            "deposit.cu",
            "deposit_charge",
            &[
                ("const Markers m", "struct Markers"),
                ("const Grid grid", "struct Grid"),
                ("double* rho", "*float64"),
            ],
        )
    },
    Case {
        structs: DEPOSIT_STRUCTS,
        ..case(
            "deposit.cu",
            "deposit_current",
            &[
                ("Markers m", "struct Markers"),
                ("Grid grid", "struct Grid"),
                ("double* jx", "*float64"),
                ("double* jy", "*float64"),
                ("double* jz", "*float64"),
            ],
        )
    },
];

#[test]
fn corpus_signatures() {
    for c in CASES {
        let src = corpus(c.file);
        let structs: Vec<String> = c.structs.iter().map(|s| s.to_string()).collect();
        let targs: Option<Vec<String>> = c
            .template_args
            .map(|a| a.iter().map(|s| s.to_string()).collect());
        let sig = match parse_signature(&src, c.kernel, &structs, targs.as_deref()) {
            Ok(s) => s,
            Err(e) => panic!("{}: {}: {e}", c.file, c.kernel),
        };
        assert_eq!(sig.kernel, c.kernel);
        assert_eq!(sig.expression, c.expression, "{}: {}", c.file, c.kernel);
        let got: Vec<(String, String)> = sig
            .params
            .iter()
            .map(|p| (p.decl.clone(), describe(&p.kind)))
            .collect();
        let want: Vec<(String, String)> = c
            .params
            .iter()
            .map(|(d, k)| (d.to_string(), k.to_string()))
            .collect();
        assert_eq!(got, want, "{}: {}", c.file, c.kernel);
        for p in &sig.params {
            assert!(p.decl.ends_with(&p.name) || p.decl.contains(&format!(" {}[", p.name)));
        }
    }
}

#[test]
fn corpus_kernel_names() {
    let expected: &[(&str, &[&str])] = &[
        (
            "particles_push.cu",
            &["push_eta", "push_v_with_efield", "push_vxb"],
        ),
        (
            "stencil_views.cu",
            &[
                "laplace_2d",
                "copy_1d",
                "kinetic_5d",
                "high_rank",
                "scale_view",
            ],
        ),
        (
            "reductions.cu",
            &[
                "block_sum",
                "dot",
                "histogram",
                "fixed_window",
                "segment_sum",
            ],
        ),
        (
            "fft_complex.cu",
            &["twiddle", "scale_c64", "mixed", "uses_typedef"],
        ),
        (
            "strings_and_macros.cu",
            &[
                "real_after_strings",
                "with_macro_param",
                "attr_macro_between",
                "spread_over_lines",
            ],
        ),
        (
            "mixed_scalars.cu",
            &[
                "all_ints",
                "c_spellings",
                "sizes",
                "floats",
                "untyped_buffers",
                "with_defaults",
                "prototype_only",
            ],
        ),
        (
            "deposit.cu",
            &["deposit_charge", "deposit_current", "deposit_bad"],
        ),
        (
            "rejected.cu",
            &[
                "vec_float2",
                "vec_double4",
                "vec_int3",
                "half_scale",
                "half_pair",
                "cu_complex",
                "ref_scalar",
                "ref_array",
                "ref_rvalue",
                "ptr_ptr",
                "ptr_array",
                "macro_type",
                "macro_params",
                "view_pointer",
                "view_of_vector",
                "unnamed",
                "callback",
                "returns_int",
                "needs_args",
            ],
        ),
    ];
    let mut total = 0;
    for (file, names) in expected {
        assert_eq!(kernel_names(&corpus(file)), *names, "{file}");
        total += names.len();
    }
    assert!(total >= 30);
    // Every corpus file is covered here.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cu"))
        .collect();
    files.sort();
    let mut listed: Vec<String> = expected.iter().map(|(f, _)| f.to_string()).collect();
    listed.sort();
    assert_eq!(files, listed);
}

type Check = fn(&SignatureError) -> bool;
/// (file, kernel, structs, expected error, message pieces)
type Rejection = (
    &'static str,
    &'static str,
    &'static [&'static str],
    Check,
    &'static [&'static str],
);

#[test]
fn corpus_rejections() {
    let cases: &[Rejection] = &[
        (
            "strings_and_macros.cu",
            "with_macro_param",
            &[],
            |e| matches!(e, SignatureError::UnknownType { .. }),
            &["'REAL* x'", "unsupported type 'REAL*'", "macros"],
        ),
        (
            "strings_and_macros.cu",
            "fake_in_string",
            &[],
            |e| matches!(e, SignatureError::NotFound { .. }),
            &["no __global__ function 'fake_in_string' found in the CUDA source"],
        ),
        (
            "strings_and_macros.cu",
            "fake_multiline",
            &[],
            |e| matches!(e, SignatureError::NotFound { .. }),
            &["'fake_multiline'"],
        ),
        (
            "strings_and_macros.cu",
            "fake_in_raw",
            &[],
            |e| matches!(e, SignatureError::NotFound { .. }),
            &["'fake_in_raw'"],
        ),
        (
            "deposit.cu",
            "deposit_bad",
            &["Markers"],
            |e| matches!(e, SignatureError::StructNotByValue { .. }),
            &["'const Markers* m'", "structs can only be passed by value"],
        ),
        (
            "particles_push.cu",
            "push_v_with_efield",
            &[],
            |e| matches!(e, SignatureError::UnknownType { .. }),
            &["'Particles p'", "unsupported type 'Particles'"],
        ),
        (
            "rejected.cu",
            "vec_float2",
            &[],
            |e| matches!(e, SignatureError::VectorType { .. }),
            &["'float2* xy'", "'float2*'"],
        ),
        (
            "rejected.cu",
            "vec_double4",
            &[],
            |e| matches!(e, SignatureError::VectorType { .. }),
            &["'const double4 q'"],
        ),
        (
            "rejected.cu",
            "vec_int3",
            &[],
            |e| matches!(e, SignatureError::VectorType { .. }),
            &["'int3 idx'"],
        ),
        (
            "rejected.cu",
            "half_scale",
            &[],
            |e| matches!(e, SignatureError::VectorType { index: 0, .. }),
            &["'__half* h'"],
        ),
        (
            "rejected.cu",
            "half_pair",
            &[],
            |e| matches!(e, SignatureError::VectorType { .. }),
            &["'half2* h'"],
        ),
        (
            "rejected.cu",
            "cu_complex",
            &[],
            |e| matches!(e, SignatureError::VectorType { .. }),
            &["'cuDoubleComplex* z'"],
        ),
        (
            "rejected.cu",
            "ref_scalar",
            &[],
            |e| matches!(e, SignatureError::Reference { .. }),
            &["'double& out'", "references"],
        ),
        (
            "rejected.cu",
            "ref_array",
            &[],
            |e| matches!(e, SignatureError::Reference { index: 0, .. }),
            &["'const double (&coeffs)[3]'", "references"],
        ),
        (
            "rejected.cu",
            "ref_rvalue",
            &[],
            |e| matches!(e, SignatureError::Reference { .. }),
            &["'double&& tmp'"],
        ),
        (
            "rejected.cu",
            "ptr_ptr",
            &[],
            |e| matches!(e, SignatureError::PointerToPointer { .. }),
            &["'double** rows'", "unsupported type 'double**'"],
        ),
        (
            "rejected.cu",
            "ptr_array",
            &[],
            |e| matches!(e, SignatureError::PointerToPointer { .. }),
            &["'float* rows[]'", "unsupported type 'float**'"],
        ),
        (
            "rejected.cu",
            "macro_type",
            &[],
            |e| matches!(e, SignatureError::UnknownType { .. }),
            &["'REAL* x'"],
        ),
        (
            "rejected.cu",
            "macro_params",
            &[],
            |e| matches!(e, SignatureError::UnknownType { .. }),
            &["'ARGS'"],
        ),
        (
            "rejected.cu",
            "view_pointer",
            &[],
            |e| matches!(e, SignatureError::ViewNotByValue { .. }),
            &[
                "'cunumpy::Array2D<double>* v'",
                "array views take a scalar element type and are passed by value",
            ],
        ),
        (
            "rejected.cu",
            "view_of_vector",
            &[],
            |e| matches!(e, SignatureError::ViewNotByValue { .. }),
            &["'cunumpy::Array1D<float2> v'"],
        ),
        (
            "rejected.cu",
            "unnamed",
            &[],
            |e| matches!(e, SignatureError::UnnamedParam { index: 0, .. }),
            &["'double*'", "no name"],
        ),
        (
            "rejected.cu",
            "callback",
            &[],
            |e| matches!(e, SignatureError::UnsupportedDeclaration { .. }),
            &["'void (*f)(double)'", "function pointers"],
        ),
        (
            "rejected.cu",
            "returns_int",
            &[],
            |e| matches!(e, SignatureError::NonVoidReturn { .. }),
            &["'int'", "must return void"],
        ),
        (
            "rejected.cu",
            "needs_args",
            &[],
            |e| matches!(e, SignatureError::TemplateArity { expected: 1, .. }),
            &["'needs_args' is a template with 1 parameters; pass them as template_args"],
        ),
    ];
    // a typedef of the same source is resolved (it was refused before issue 21)
    let src = corpus("fft_complex.cu");
    let s = parse_signature(&src, "uses_typedef", &[], None).expect("typedef resolved");
    assert_eq!(
        s.params[0].kind,
        ParamKind::Pointer {
            dtype: Some(DType::Complex128),
            is_const: false
        }
    );
    for (file, kernel, structs, check, pieces) in cases {
        let src = corpus(file);
        let structs: Vec<String> = structs.iter().map(|s| s.to_string()).collect();
        let e = match parse_signature(&src, kernel, &structs, None) {
            Ok(s) => panic!("{file}: {kernel} parsed: {s:?}"),
            Err(e) => e,
        };
        assert!(check(&e), "{file}: {kernel}: unexpected {e:?}");
        let msg = e.to_string();
        assert!(msg.contains(&format!("'{kernel}'")), "{msg}");
        for p in *pieces {
            assert!(msg.contains(p), "{file}: {kernel}: {msg:?} lacks {p:?}");
        }
    }
}
