use super::*;
use crate::dtype::DType;
use crate::signature::ParamKind;

fn sig(src: &str, name: &str) -> Signature {
    match parse_signature(src, name, &[], None) {
        Ok(s) => s,
        Err(e) => panic!("{name}: {e}"),
    }
}

fn sig_with(src: &str, name: &str, structs: &[&str], targs: Option<&[&str]>) -> Signature {
    let structs: Vec<String> = structs.iter().map(|s| s.to_string()).collect();
    let targs: Option<Vec<String>> = targs.map(|a| a.iter().map(|s| s.to_string()).collect());
    match parse_signature(src, name, &structs, targs.as_deref()) {
        Ok(s) => s,
        Err(e) => panic!("{name}: {e}"),
    }
}

fn err(src: &str, name: &str) -> SignatureError {
    err_with(src, name, &[], None)
}

fn err_with(src: &str, name: &str, structs: &[&str], targs: Option<&[&str]>) -> SignatureError {
    let structs: Vec<String> = structs.iter().map(|s| s.to_string()).collect();
    let targs: Option<Vec<String>> = targs.map(|a| a.iter().map(|s| s.to_string()).collect());
    match parse_signature(src, name, &structs, targs.as_deref()) {
        Ok(s) => panic!("{name} parsed, expected an error: {s:?}"),
        Err(e) => e,
    }
}

fn kinds(s: &Signature) -> Vec<ParamKind> {
    s.params.iter().map(|p| p.kind.clone()).collect()
}

fn decls(s: &Signature) -> Vec<&str> {
    s.params.iter().map(|p| p.decl.as_str()).collect()
}

fn ptr(d: DType, is_const: bool) -> ParamKind {
    ParamKind::Pointer {
        dtype: Some(d),
        is_const,
    }
}

/// The message names the kernel and contains every piece.
fn assert_msg(e: &SignatureError, pieces: &[&str]) {
    let m = e.to_string();
    for p in pieces {
        assert!(m.contains(p), "message {m:?} lacks {p:?}");
    }
}

// ---------------------------------------------------------------- kernel_names

#[test]
fn names_in_order_without_duplicates() {
    let src = r#"
        __global__ void b(int n);
        extern "C" __global__ void a(int n) {}
        __global__ void b(int n) {}
        template <typename T> __global__ void t(T* x) {}
    "#;
    assert_eq!(kernel_names(src), ["b", "a", "t"]);
}

#[test]
fn names_ignore_comments_strings_and_macros() {
    let src = r#"
        // __global__ void c1(int n) {}
        /* __global__ void c2(int n) {} */
        #define DECL __global__ void c3(int n)
        const char* s = "__global__ void c4(int n)";
        char c = '"'; const char* t = "\" __global__ void c5() \"";
        __global__ void real(int n) {}
    "#;
    assert_eq!(kernel_names(src), ["real"]);
}

#[test]
fn names_with_extern_c_block_and_specifiers() {
    let src = r#"
        extern "C" {
        static __global__ void s(int n) {}
        __global__ __forceinline__ void f2(int n) {}
        inline __global__ void __launch_bounds__(256) lb(int n) {}
        [[nodiscard]] __global__ void at(int n) {}
        }
    "#;
    assert_eq!(kernel_names(src), ["s", "f2", "lb", "at"]);
}

#[test]
fn names_of_nothing() {
    assert!(kernel_names("").is_empty());
    assert!(kernel_names("__global__").is_empty());
    assert!(kernel_names("__global__ void").is_empty());
    assert!(kernel_names("__global__ void (").is_empty());
    assert_eq!(kernel_names("__global__ void f("), ["f"]);
    assert!(kernel_names("int main() { return 0; }").is_empty());
}

// ---------------------------------------------------------------- scalars and pointers

#[test]
fn every_scalar_type() {
    let src = "__global__ void k(bool a, char b, signed char c, unsigned char d, short e,
        unsigned short f, int g, unsigned h, long i, unsigned long long j, float l, double m,
        int8_t n, uint64_t o, size_t p, ptrdiff_t q, thrust::complex<float> r,
        cuda::std::complex<double> s, complex<double> t) {}";
    let s = sig(src, "k");
    use DType::*;
    let want = [
        Bool, Int8, Int8, UInt8, Int16, UInt16, Int32, UInt32, Int64, UInt64, Float32, Float64,
        Int8, UInt64, UInt64, Int64, Complex64, Complex128, Complex128,
    ];
    assert_eq!(
        kinds(&s),
        want.iter()
            .map(|d| ParamKind::Scalar(*d))
            .collect::<Vec<_>>()
    );
    assert_eq!(s.expression, "k");
    assert!(s.template_params.is_empty());
    assert_eq!(s.kernel, "k");
}

#[test]
fn qualifiers_and_pointers() {
    let src = "extern \"C\" __global__ void k(const double* __restrict__ x, double * const y,
        volatile int* __restrict z, float restrict_me[], const float w[16],
        double const* restrict v, const int n) {}";
    let s = sig(src, "k");
    assert_eq!(
        kinds(&s),
        [
            ptr(DType::Float64, true),
            ptr(DType::Float64, false),
            ptr(DType::Int32, false),
            ptr(DType::Float32, false),
            ptr(DType::Float32, true),
            ptr(DType::Float64, true),
            ParamKind::Scalar(DType::Int32),
        ]
    );
    assert_eq!(
        decls(&s),
        [
            "const double* x",
            "double* y",
            "volatile int* z",
            "float restrict_me[]",
            "const float w[16]",
            "const double* v",
            "const int n",
        ]
    );
    let names: Vec<&str> = s.params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["x", "y", "z", "restrict_me", "w", "v", "n"]);
}

#[test]
fn void_pointers_take_any_dtype() {
    let s = sig(
        "__global__ void k(void* a, const void* __restrict__ b) {}",
        "k",
    );
    assert_eq!(
        kinds(&s),
        [
            ParamKind::Pointer {
                dtype: None,
                is_const: false
            },
            ParamKind::Pointer {
                dtype: None,
                is_const: true
            },
        ]
    );
    assert_eq!(decls(&s), ["void* a", "const void* b"]);
}

#[test]
fn empty_and_void_parameter_lists() {
    assert!(sig("__global__ void k() {}", "k").params.is_empty());
    assert!(sig("__global__ void k(void) {}", "k").params.is_empty());
}

#[test]
fn default_values_are_accepted_and_ignored() {
    let s = sig(
        "__global__ void k(double* x, int n = 10, float a = (1 < 2) ? 1.f : 2.f) {}",
        "k",
    );
    assert_eq!(
        kinds(&s),
        [
            ptr(DType::Float64, false),
            ParamKind::Scalar(DType::Int32),
            ParamKind::Scalar(DType::Float32)
        ]
    );
    assert_eq!(decls(&s), ["double* x", "int n", "float a"]);
}

#[test]
fn comments_between_parameters() {
    let src = "__global__ void k(
        double* x, // the input
        /* the count */ int n,
        float /* inline */ a
    ) {}";
    assert_eq!(decls(&sig(src, "k")), ["double* x", "int n", "float a"]);
}

// ---------------------------------------------------------------- declaration forms

#[test]
fn launch_bounds_in_every_legal_place() {
    let src = r#"
        __launch_bounds__(256) __global__ void a(double* x) {}
        __global__ __launch_bounds__(256, 2) void b(double* x) {}
        __global__ void __launch_bounds__(MAX_THREADS, MIN_BLOCKS(2)) c(double* x) {}
        extern "C" __global__ void __launch_bounds__(128) d(double* x) {}
        template <int B> __global__ void __launch_bounds__(B) e(double* x) {}
    "#;
    for k in ["a", "b", "c", "d"] {
        assert_eq!(decls(&sig(src, k)), ["double* x"], "{k}");
    }
    assert_eq!(sig_with(src, "e", &[], Some(&["128"])).expression, "e<128>");
}

#[test]
fn definition_wins_over_prototype() {
    let src = "__global__ void k(double*, int);\n__global__ void k(double* x, int n) { }";
    assert_eq!(decls(&sig(src, "k")), ["double* x", "int n"]);
}

#[test]
fn prototype_alone_is_used() {
    let src = "__global__ void k(double* x, int n);";
    assert_eq!(decls(&sig(src, "k")), ["double* x", "int n"]);
}

#[test]
fn void_before_global_is_fine() {
    let s = sig("static void __global__ k(int n) {}", "k");
    assert_eq!(decls(&s), ["int n"]);
}

#[test]
fn specifier_macros_are_ignored() {
    let src = "API_EXPORT __global__ void k(int n) {}";
    assert_eq!(decls(&sig(src, "k")), ["int n"]);
}

// ---------------------------------------------------------------- views and structs

#[test]
fn views_of_every_rank() {
    for n in 1..=16u8 {
        let src = format!(
            "__global__ void k(Array{n}D<double> a, CArray{n}D<const float> b, cunumpy::Array{n}D<int64_t> c) {{}}"
        );
        let s = sig(&src, "k");
        assert_eq!(
            kinds(&s),
            [
                ParamKind::View {
                    dtype: DType::Float64,
                    ndim: n,
                    contiguous: false
                },
                ParamKind::View {
                    dtype: DType::Float32,
                    ndim: n,
                    contiguous: true
                },
                ParamKind::View {
                    dtype: DType::Int64,
                    ndim: n,
                    contiguous: false
                },
            ]
        );
        assert_eq!(
            s.params.first().map(|p| p.decl.clone()),
            Some(format!("Array{n}D<double> a"))
        );
    }
}

#[test]
fn views_of_complex() {
    let s = sig(
        "__global__ void k(const Array2D<thrust::complex<double>> z) {}",
        "k",
    );
    assert_eq!(
        kinds(&s),
        [ParamKind::View {
            dtype: DType::Complex128,
            ndim: 2,
            contiguous: false
        }]
    );
}

#[test]
fn structs_by_value() {
    let src = "struct Particles { double* x; int n; };
        __global__ void k(Particles p, const struct Grid g, double* out) {}";
    let s = sig_with(src, "k", &["Particles", "struct Grid"], None);
    assert_eq!(
        kinds(&s),
        [
            ParamKind::Struct {
                name: "Particles".into()
            },
            ParamKind::Struct {
                name: "Grid".into()
            },
            ptr(DType::Float64, false),
        ]
    );
    assert_eq!(decls(&s), ["Particles p", "const Grid g", "double* out"]);
}

// ---------------------------------------------------------------- templates

#[test]
fn type_template_substituted() {
    let src = "template <typename T, class U>
        __global__ void axpy(T a, const T* x, U* y, int n) {}";
    let s = sig_with(src, "axpy", &[], Some(&["double", "float"]));
    assert_eq!(
        kinds(&s),
        [
            ParamKind::Scalar(DType::Float64),
            ptr(DType::Float64, true),
            ptr(DType::Float32, false),
            ParamKind::Scalar(DType::Int32),
        ]
    );
    assert_eq!(s.expression, "axpy<double, float>");
    assert_eq!(
        s.template_params,
        [
            TemplateParam {
                name: "T".into(),
                value_type: None
            },
            TemplateParam {
                name: "U".into(),
                value_type: None
            },
        ]
    );
    assert_eq!(
        decls(&s),
        ["double a", "const double* x", "float* y", "int n"]
    );
}

#[test]
fn non_type_template_params_are_substituted() {
    let src = "template <typename T, int N, bool ADD>
        __global__ void k(T* x, const T y[N], ArrayND<T> v) {}";
    // ArrayND with N substituted: the view rank comes from the template argument.
    let src = src.replace("ArrayND<T>", "cunumpy::ArrayN<T>");
    let e = err_with(&src, "k", &[], Some(&["float", "3", "true"]));
    assert!(matches!(e, SignatureError::UnknownType { .. }), "{e}");

    let src = "template <typename T, int N, bool ADD>
        __global__ void k(T* x, const T y[N]) {}";
    let s = sig_with(src, "k", &[], Some(&["float", "3", "true"]));
    assert_eq!(decls(&s), ["float* x", "const float y[3]"]);
    assert_eq!(s.expression, "k<float, 3, true>");
    assert_eq!(
        s.template_params.get(1),
        Some(&TemplateParam {
            name: "N".into(),
            value_type: Some("int".into())
        })
    );
    assert_eq!(
        s.template_params.get(2).and_then(|t| t.value_type.clone()),
        Some("bool".into())
    );
}

#[test]
fn template_type_argument_may_be_a_struct_or_multiword() {
    let src = "template <typename P, typename I> __global__ void k(P p, I* idx) {}";
    let s = sig_with(
        src,
        "k",
        &["Particles"],
        Some(&["Particles", "unsigned long long"]),
    );
    assert_eq!(
        kinds(&s),
        [
            ParamKind::Struct {
                name: "Particles".into()
            },
            ptr(DType::UInt64, false)
        ]
    );
    assert_eq!(s.expression, "k<Particles, unsigned long long>");
    let s = sig_with(src, "k", &[], Some(&["thrust::complex<double>", "int"]));
    assert_eq!(
        s.params.first().map(|p| &p.kind),
        Some(&ParamKind::Scalar(DType::Complex128))
    );
    assert_eq!(s.expression, "k<thrust::complex<double>, int>");
}

#[test]
fn substitution_is_by_whole_word() {
    let src = "template <typename T> __global__ void k(T* x, Tx* y) {}";
    let e = err_with(src, "k", &[], Some(&["double"]));
    assert!(
        matches!(e, SignatureError::UnknownType { ref ctype, .. } if ctype == "Tx*"),
        "{e}"
    );
}

#[test]
fn template_defaults() {
    let src = "template <typename T, typename Acc = T, int B = 256>
        __global__ void k(const T* x, Acc* sum) {}";
    let s = sig_with(src, "k", &[], Some(&["float"]));
    assert_eq!(
        kinds(&s),
        [ptr(DType::Float32, true), ptr(DType::Float32, false)]
    );
    assert_eq!(s.expression, "k<float>");
    let s = sig_with(src, "k", &[], Some(&["float", "double"]));
    assert_eq!(
        kinds(&s),
        [ptr(DType::Float32, true), ptr(DType::Float64, false)]
    );
    assert_eq!(s.expression, "k<float, double>");
    let e = err_with(src, "k", &[], Some(&["float", "double", "1", "2"]));
    assert_msg(
        &e,
        &[
            "'k' is a template with 3 parameters",
            "pass them as template_args",
            "got 4",
        ],
    );
}

#[test]
fn template_header_with_nested_angles_and_parens() {
    let src = "template <typename T, int N = (4 > 2 ? 4 : 2), typename V = thrust::complex<T>>
        __global__ void k(V* z, T* x) {}";
    let s = sig_with(src, "k", &[], Some(&["double"]));
    assert_eq!(
        kinds(&s),
        [ptr(DType::Complex128, false), ptr(DType::Float64, false)]
    );
    assert_eq!(s.template_params.len(), 3);
}

// ---------------------------------------------------------------- rejections

#[test]
fn rejects_missing_kernel() {
    let e = err("__global__ void other(int n) {}", "f");
    assert_eq!(
        e.to_string(),
        "no __global__ function 'f' found in the CUDA source; it defines other"
    );
    assert_eq!(e.kernel(), "f");
    let e = err("__device__ int helper() { return 1; }", "f");
    assert!(
        e.to_string().ends_with("it defines no __global__ function"),
        "{e}"
    );
    // A commented-out kernel is not found either.
    let e = err("// __global__ void f(int n) {}", "f");
    assert!(matches!(e, SignatureError::NotFound { .. }));
    let e = err("const char* s = \"__global__ void f(int n) {}\";", "f");
    assert!(matches!(e, SignatureError::NotFound { .. }));
}

#[test]
fn rejects_unbalanced_parentheses() {
    for src in [
        "__global__ void f(double* x, int n",
        "__global__ void f(double* x, int n { }",
        "__global__ void f(double* x, (int n) {}",
    ] {
        let e = err(src, "f");
        assert!(
            matches!(e, SignatureError::UnbalancedParentheses { .. }),
            "{src}: {e}"
        );
        assert_msg(&e, &["unbalanced parentheses", "'f'"]);
    }
}

#[test]
fn rejects_references() {
    for (p, shown) in [
        ("double& x", "double& x"),
        ("const double & x", "const double& x"),
        ("double (&a)[3]", "double (&a)[3]"),
        ("double&& x", "double&& x"),
        ("Array1D<double>& v", "Array1D<double>& v"),
    ] {
        let src = format!("__global__ void f(int n, {p}) {{}}");
        let e = err(&src, "f");
        assert!(
            matches!(e, SignatureError::Reference { index: 1, .. }),
            "{p}: {e}"
        );
        assert_msg(
            &e,
            &["'f'", &format!("'{shown}'"), "references are not supported"],
        );
        assert_eq!(e.param_index(), Some(1));
    }
}

#[test]
fn rejects_pointers_to_pointers() {
    for (p, ctype) in [
        ("double** x", "double**"),
        ("const double* const* x", "double**"),
        ("float* x[]", "float**"),
        ("int x[][3]", "int**"),
    ] {
        let src = format!("__global__ void f({p}) {{}}");
        let e = err(&src, "f");
        assert!(
            matches!(e, SignatureError::PointerToPointer { .. }),
            "{p}: {e}"
        );
        assert_msg(
            &e,
            &[
                "'f'",
                &format!("unsupported type '{ctype}'"),
                "cannot check the kernel parameter",
            ],
        );
    }
}

#[test]
fn rejects_vector_types() {
    for (p, ctype) in [
        ("float2 v", "float2"),
        ("double4* v", "double4*"),
        ("int3 v", "int3"),
        ("__half h", "__half"),
        ("const half2* h", "half2*"),
        ("__nv_bfloat16* b", "__nv_bfloat16*"),
    ] {
        let src = format!("__global__ void f(double* x, {p}) {{}}");
        let e = err(&src, "f");
        assert!(matches!(e, SignatureError::VectorType { .. }), "{p}: {e}");
        assert_msg(
            &e,
            &[
                "'f'",
                &format!("'{p}'"),
                &format!("unsupported type '{ctype}'"),
                "vector",
            ],
        );
    }
}

#[test]
fn rejects_macros_and_unknown_types() {
    for (p, ctype) in [
        ("REAL* x", "REAL*"),
        ("real_t x", "real_t"),
        ("PARTICLE_ARGS", "PARTICLE_ARGS"),
        ("Unlisted s", "Unlisted"),
        ("long double x", "long double"),
        ("std::vector<double> v", "std::vector<double>"),
        ("Array17D<double> v", "Array17D<double>"),
        ("complex<int> z", "complex<int>"),
    ] {
        let src = format!("#define REAL double\n__global__ void f({p}) {{}}");
        let e = err(&src, "f");
        assert!(matches!(e, SignatureError::UnknownType { .. }), "{p}: {e}");
        assert_msg(
            &e,
            &[
                "'f'",
                &format!("'{p}'"),
                &format!("unsupported type '{ctype}'"),
                "macros",
            ],
        );
    }
}

#[test]
fn rejects_views_by_pointer_or_of_non_scalars() {
    for p in [
        "Array2D<double>* v",
        "CArray1D<float> v[]",
        "Array1D<float2> v",
        "Array3D<Particles> v",
        "Array1D<double*> v",
    ] {
        let src = format!("__global__ void f({p}) {{}}");
        let e = err_with(&src, "f", &["Particles"], None);
        assert!(
            matches!(e, SignatureError::ViewNotByValue { .. }),
            "{p}: {e}"
        );
        assert_msg(
            &e,
            &[
                "'f'",
                "array views take a scalar element type and are passed by value",
            ],
        );
    }
}

#[test]
fn rejects_pointers_to_structs() {
    for p in ["Particles* p", "const struct Particles* p", "Particles p[]"] {
        let src = format!("__global__ void f({p}) {{}}");
        let e = err_with(&src, "f", &["Particles"], None);
        assert!(
            matches!(e, SignatureError::StructNotByValue { .. }),
            "{p}: {e}"
        );
        assert_msg(
            &e,
            &[
                "'f'",
                &format!("'{p}'"),
                "structs can only be passed by value",
            ],
        );
    }
}

#[test]
fn rejects_template_arity() {
    let src = "template <typename T, int N> __global__ void f(T* x) {}";
    let e = err(src, "f");
    assert_eq!(
        e.to_string(),
        "'f' is a template with 2 parameters; pass them as template_args"
    );
    let e = err_with(src, "f", &[], Some(&["double"]));
    assert_eq!(
        e.to_string(),
        "'f' is a template with 2 parameters; pass them as template_args, got 1"
    );
}

#[test]
fn rejects_template_args_on_a_non_template() {
    let e = err_with("__global__ void f(int n) {}", "f", &[], Some(&["double"]));
    assert_eq!(
        e.to_string(),
        "'f' is not a template, but template_args were given"
    );
}

#[test]
fn rejects_bad_template_args() {
    let src = "template <typename T> __global__ void f(T* x) {}";
    for a in ["", "  ", "double; int", "foo(", "x{}"] {
        let e = err_with(src, "f", &[], Some(&[a]));
        assert!(
            matches!(e, SignatureError::InvalidTemplateArg { index: 0, .. }),
            "{a:?}: {e}"
        );
        assert_msg(&e, &["template argument 0 of 'f'"]);
    }
}

#[test]
fn rejects_unsupported_templates() {
    let e = err_with(
        "template <typename... Ts> __global__ void f(Ts... xs) {}",
        "f",
        &[],
        Some(&["double"]),
    );
    assert!(
        matches!(e, SignatureError::UnsupportedTemplate { .. }),
        "{e}"
    );
    assert_msg(&e, &["'f'", "parameter packs"]);
    let e = err(
        "template <template <typename> class C> __global__ void f(int n) {}",
        "f",
    );
    assert_msg(&e, &["'f'", "template template parameters"]);
}

#[test]
fn rejects_non_void_return() {
    for (src, ret) in [
        ("__global__ int f(int n) {}", "int"),
        ("__global__ void* f(int n) {}", "void*"),
        ("__global__ double f(int n) {}", "double"),
        ("__global__ REAL f(int n) {}", "REAL"),
        ("int __global__ f(int n) {}", "int"),
    ] {
        let e = err(src, "f");
        assert!(
            matches!(e, SignatureError::NonVoidReturn { .. }),
            "{src}: {e}"
        );
        assert_msg(&e, &["'f'", &format!("'{ret}'"), "must return void"]);
    }
}

#[test]
fn rejects_unnamed_parameters() {
    for (p, idx) in [
        ("double*", 0),
        ("const int", 0),
        ("unsigned long long", 0),
        ("Array2D<double>", 0),
        ("Particles", 0),
    ] {
        let src = format!("__global__ void f({p}, int n) {{}}");
        let e = err_with(&src, "f", &["Particles"], None);
        assert!(
            matches!(e, SignatureError::UnnamedParam { index, .. } if index == idx),
            "{p}: {e}"
        );
        assert_msg(&e, &["'f'", &format!("'{p}'"), "has no name"]);
    }
}

#[test]
fn rejects_other_declarators() {
    for (p, why) in [
        ("void (*cb)(int)", "function pointers"),
        ("double (*a)[3]", "function pointers"),
        ("int n, ...", "variadic"),
        ("void v", "'void'"),
        ("int n,", "empty"),
    ] {
        let src = format!("__global__ void f({p}) {{}}");
        let e = err(&src, "f");
        assert!(
            matches!(e, SignatureError::UnsupportedDeclaration { .. }),
            "{p}: {e}"
        );
        assert_msg(&e, &["'f'", why]);
    }
}

#[test]
fn error_messages_name_the_parameter_as_written() {
    let src = "template <typename T> __global__ void f(T** __restrict__ x) {}";
    let e = err_with(src, "f", &[], Some(&["double"]));
    assert_eq!(
        e.to_string(),
        "cannot check the kernel parameter 'T** __restrict__ x' (argument 0) of 'f': \
         unsupported type 'double**': pointers to pointers are not supported"
    );
}

#[test]
fn never_panics_on_odd_fragments() {
    let fragments = [
        "",
        "(",
        ")",
        "<",
        ">",
        "template",
        "template<",
        "template<>",
        "__global__ void f(",
        "__global__ void f<",
        "__global__ void f<(",
        "__global__ void f<>(",
        "template<typename T",
        "__global__ void f(T",
        "__global__ void f(,)",
        "__global__ void f(=)",
        "__global__ void f([)",
        "__global__ void f(])",
        "__global__ void f(*)",
        "__global__ void f(const)",
        "__global__ void f(::)",
        "__global__ void f(Array1D<)",
        "__global__ void f(Array1D<> a)",
        "__global__ void f(a[)",
        "__global__ __launch_bounds__(",
        "__launch_bounds__) __global__ void f()",
        "]] __global__ void f()",
        "[[ __global__ void f()",
        "R\"(",
        "'",
        "\"",
        "/*",
        "#",
        "\\",
        "template <typename T = > __global__ void f(T x) {}",
        "template <=> __global__ void f() {}",
        "template <int> __global__ void f() {}",
    ];
    for a in fragments {
        for b in fragments {
            let src = format!("{a} {b}");
            let _ = kernel_names(&src);
            let _ = parse_signature(&src, "f", &[], None);
            let _ = parse_signature(&src, "f", &["S".into()], Some(&["int".into()]));
        }
    }
}

#[test]
fn typedefs_and_aliases_of_the_same_source_are_resolved() {
    let src = r#"
    typedef unsigned int uint;
    typedef uint count_t;            // a chain
    using real = double;
    typedef struct { float x, y; } P; // a struct body: left alone
    using namespace std;
    extern "C" __global__ void k(uint* a, const count_t n, real* r, real s, P p) {}
    "#;
    let s = sig_with(src, "k", &["P"], None);
    assert_eq!(
        kinds(&s),
        vec![
            ParamKind::Pointer {
                dtype: Some(DType::UInt32),
                is_const: false
            },
            ParamKind::Scalar(DType::UInt32),
            ParamKind::Pointer {
                dtype: Some(DType::Float64),
                is_const: false
            },
            ParamKind::Scalar(DType::Float64),
            ParamKind::Struct {
                name: "P".to_string()
            },
        ]
    );
    // a typedef of itself or a cycle does not hang
    let cyc = "typedef A B; typedef B A; __global__ void c(A x) {}";
    assert!(
        matches!(err(cyc, "c"), SignatureError::UnknownType { .. }),
        "{}",
        err(cyc, "c")
    );
}

#[test]
fn grid_constant_is_a_qualifier() {
    let src = "struct Q { int n; };\n__global__ void g(const __grid_constant__ Q q, __grid_constant__ const int n, float* x) {}";
    let s = sig_with(src, "g", &["Q"], None);
    assert_eq!(kinds(&s)[1], ParamKind::Scalar(DType::Int32));
    assert_eq!(s.params.len(), 3);
}
