//! The C type map: which NumPy dtype a C scalar type is, and back.
//!
//! The platform is LP64 (Linux and macOS on 64-bit machines): `long` is 64 bits, and a plain
//! `char` is taken as signed (it is on x86-64; the CUDA device side follows the host).

use crate::dtype::DType;
use crate::parser::lexer::{join, tokenize, TokKind};

/// Namespace prefixes that name the same types as the unprefixed spelling.
const PREFIXES: [&str; 5] = ["::", "thrust::", "cuda::std::", "cuda::", "std::"];

/// The qualifiers that do not change which dtype a type is.
pub(crate) const QUALIFIERS: [&str; 6] = [
    "const",
    "__grid_constant__",
    "volatile",
    "__restrict__",
    "__restrict",
    "restrict",
];

/// The dtype of a C scalar type, or `None` when it is not in the type map.
///
/// The input is a type's text such as `unsigned long long`, `int64_t`, `thrust::complex<double>`
/// or `cuda::std::complex<float>`. Whitespace is normalised, qualifiers (`const`, `volatile`,
/// `__restrict__`, …) are dropped, the prefixes `thrust::`, `cuda::std::` and `std::` are
/// removed, and the words of builtin integer types may come in any order (`long unsigned int`).
///
/// | C type | dtype |
/// |---|---|
/// | `bool` | bool |
/// | `char`, `signed char`, `int8_t` | int8 |
/// | `unsigned char`, `uint8_t` | uint8 |
/// | `short`, `short int`, `signed short`, `int16_t` | int16 |
/// | `unsigned short[ int]`, `uint16_t` | uint16 |
/// | `int`, `signed`, `signed int`, `int32_t` | int32 |
/// | `unsigned`, `unsigned int`, `uint32_t` | uint32 |
/// | `long[ int]`, `long long[ int]`, `int64_t`, `ptrdiff_t`, `ssize_t`, `intptr_t`, `clock_t` (a `long` on 64-bit Linux, as `clock()` returns it in CUDA) | int64 |
/// | `unsigned long[ int]`, `unsigned long long[ int]`, `uint64_t`, `size_t`, `uintptr_t` | uint64 |
/// | `float` | float32 |
/// | `double` | float64 |
/// | `complex<float>` | complex64 |
/// | `complex<double>` | complex128 |
///
/// `void` is not a dtype: a `void*` parameter takes any dtype, which the parser expresses as
/// `Pointer { dtype: None }`.
pub fn dtype_of_ctype(ctype: &str) -> Option<DType> {
    let tokens: Vec<_> = tokenize(ctype)
        .into_iter()
        .filter(|t| !(t.kind == TokKind::Ident && QUALIFIERS.contains(&t.text.as_str())))
        .collect();
    if tokens
        .iter()
        .any(|t| matches!(t.kind, TokKind::Str | TokKind::Char))
    {
        return None;
    }
    dtype_of_normalised(&join(&tokens))
}

/// The canonical C spelling of a dtype (the reverse of [`dtype_of_ctype`]): `bool`,
/// `signed char`, `unsigned char`, `short`, `unsigned short`, `int`, `unsigned int`,
/// `long long`, `unsigned long long`, `float`, `double`, `complex<float>`, `complex<double>`.
pub fn ctype_of(dtype: DType) -> &'static str {
    dtype.c_name()
}

/// Removes the namespace prefixes that do not change a type (`thrust::`, `cuda::std::`, …).
pub(crate) fn strip_prefixes(mut text: &str) -> &str {
    loop {
        let before = text;
        for p in PREFIXES {
            if let Some(rest) = text.strip_prefix(p) {
                text = rest;
            }
        }
        if text == before {
            return text;
        }
    }
}

fn dtype_of_normalised(text: &str) -> Option<DType> {
    let text = strip_prefixes(text.trim());
    if let Some(inner) = text
        .strip_prefix("complex<")
        .and_then(|r| r.strip_suffix('>'))
    {
        return match dtype_of_normalised(inner)? {
            DType::Float32 => Some(DType::Complex64),
            DType::Float64 => Some(DType::Complex128),
            _ => None,
        };
    }
    let named = match text {
        "bool" => Some(DType::Bool),
        "int8_t" => Some(DType::Int8),
        "uint8_t" => Some(DType::UInt8),
        "int16_t" => Some(DType::Int16),
        "uint16_t" => Some(DType::UInt16),
        "int32_t" => Some(DType::Int32),
        "uint32_t" => Some(DType::UInt32),
        "int64_t" | "ptrdiff_t" | "ssize_t" | "intptr_t" | "clock_t" => Some(DType::Int64),
        "uint64_t" | "size_t" | "uintptr_t" => Some(DType::UInt64),
        "float" => Some(DType::Float32),
        "double" => Some(DType::Float64),
        _ => None,
    };
    named.or_else(|| builtin_integer(text))
}

/// `unsigned long int`, `short`, `signed char`, … in any word order.
fn builtin_integer(text: &str) -> Option<DType> {
    let (mut signed, mut unsigned, mut char_, mut short, mut int, mut long) = (0, 0, 0, 0, 0, 0);
    let mut words = 0;
    for w in text.split(' ') {
        words += 1;
        match w {
            "signed" => signed += 1,
            "unsigned" => unsigned += 1,
            "char" => char_ += 1,
            "short" => short += 1,
            "int" => int += 1,
            "long" => long += 1,
            _ => return None,
        }
    }
    let valid = words > 0
        && signed + unsigned <= 1
        && char_ <= 1
        && short <= 1
        && int <= 1
        && long <= 2
        && (char_ == 0 || short + int + long == 0)
        && (short == 0 || long == 0);
    if !valid {
        return None;
    }
    let u = unsigned == 1;
    Some(if char_ == 1 {
        if u {
            DType::UInt8
        } else {
            DType::Int8
        }
    } else if short == 1 {
        if u {
            DType::UInt16
        } else {
            DType::Int16
        }
    } else if long >= 1 {
        if u {
            DType::UInt64
        } else {
            DType::Int64
        }
    } else if u {
        DType::UInt32
    } else {
        DType::Int32
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_type_map() {
        let cases: &[(&str, DType)] = &[
            ("bool", DType::Bool),
            ("char", DType::Int8),
            ("signed char", DType::Int8),
            ("int8_t", DType::Int8),
            ("unsigned char", DType::UInt8),
            ("uint8_t", DType::UInt8),
            ("short", DType::Int16),
            ("short int", DType::Int16),
            ("int16_t", DType::Int16),
            ("unsigned short", DType::UInt16),
            ("unsigned short int", DType::UInt16),
            ("uint16_t", DType::UInt16),
            ("int", DType::Int32),
            ("signed", DType::Int32),
            ("signed int", DType::Int32),
            ("int32_t", DType::Int32),
            ("unsigned", DType::UInt32),
            ("unsigned int", DType::UInt32),
            ("uint32_t", DType::UInt32),
            ("long", DType::Int64),
            ("long int", DType::Int64),
            ("long long", DType::Int64),
            ("long long int", DType::Int64),
            ("int64_t", DType::Int64),
            ("ptrdiff_t", DType::Int64),
            ("ssize_t", DType::Int64),
            ("unsigned long", DType::UInt64),
            ("unsigned long int", DType::UInt64),
            ("unsigned long long", DType::UInt64),
            ("unsigned long long int", DType::UInt64),
            ("uint64_t", DType::UInt64),
            ("size_t", DType::UInt64),
            ("float", DType::Float32),
            ("double", DType::Float64),
            ("complex<float>", DType::Complex64),
            ("complex<double>", DType::Complex128),
            ("thrust::complex<float>", DType::Complex64),
            ("thrust::complex<double>", DType::Complex128),
            ("cuda::std::complex<float>", DType::Complex64),
            ("cuda::std::complex<double>", DType::Complex128),
        ];
        for &(c, d) in cases {
            assert_eq!(dtype_of_ctype(c), Some(d), "{c}");
        }
    }

    #[test]
    fn spelling_variants() {
        assert_eq!(dtype_of_ctype("long unsigned int"), Some(DType::UInt64));
        assert_eq!(dtype_of_ctype("  unsigned   long  "), Some(DType::UInt64));
        assert_eq!(dtype_of_ctype("const double"), Some(DType::Float64));
        assert_eq!(dtype_of_ctype("std::size_t"), Some(DType::UInt64));
        assert_eq!(dtype_of_ctype("::int32_t"), Some(DType::Int32));
        assert_eq!(
            dtype_of_ctype("thrust :: complex < double >"),
            Some(DType::Complex128)
        );
        assert_eq!(
            dtype_of_ctype("::cuda::std::complex<const float>"),
            Some(DType::Complex64)
        );
        assert_eq!(dtype_of_ctype("short signed"), Some(DType::Int16));
    }

    #[test]
    fn not_in_the_map() {
        for c in [
            "",
            "void",
            "long double",
            "long long long",
            "unsigned signed",
            "short long",
            "char int",
            "float2",
            "__half",
            "half",
            "complex<int>",
            "complex<complex<float>>",
            "REAL",
            "double*",
            "wchar_t",
            "\"double\"",
            "Array1D<double>",
        ] {
            assert_eq!(dtype_of_ctype(c), None, "{c}");
        }
    }

    #[test]
    fn reverse_map_round_trips() {
        for d in DType::ALL {
            assert_eq!(dtype_of_ctype(ctype_of(d)), Some(d));
        }
    }
}
