//! C struct layout with the CUDA ABI, and packing a struct value into its bytes.
//!
//! A [`StructLayout`] is built from `(field name, type)` pairs. A type is the text of a C type
//! that a kernel parameter may have (a scalar of the type map, `T*`, `void*`, `ArrayND<T>`,
//! `CArrayND<T>`), the name of an already laid-out struct, or any of those followed by array
//! extents (`double[3]`, or the name written `pos[3]`). Offsets follow the C rules with the
//! device's alignments: every scalar is aligned to its size, so `complex<double>` is 16-aligned
//! (NumPy aligns its complex128 to 8; a NumPy `align=True` dtype gets this wrong), pointers
//! and views to 8, a nested struct to its own alignment; the size is rounded up to the
//! struct's alignment.

use std::fmt::Write as _;

use crate::args::{pack_param_value, Arg, ArgError, ArgErrorKind};
use crate::dtype::DType;
use crate::parser::parse_signature;
use crate::signature::ParamKind;

/// A struct that cannot be laid out.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    #[error("invalid struct name {0:?}: a struct name must be a C identifier")]
    InvalidStructName(String),
    #[error("struct {struct_name}: invalid field name {field:?}: a field name must be a C identifier, optionally followed by array extents like [3]")]
    InvalidFieldName { struct_name: String, field: String },
    #[error("struct {struct_name}: duplicate field names {}", quoted(.names))]
    DuplicateFields {
        struct_name: String,
        names: Vec<String>,
    },
    #[error("struct {struct_name}: field '{field}' has an unsupported type {ctype:?}: {reason}")]
    UnsupportedType {
        struct_name: String,
        field: String,
        ctype: String,
        reason: String,
    },
    #[error("struct {0} has no fields (an empty struct has no portable C layout)")]
    Empty(String),
    #[error("struct {struct_name}: {what} {name:?} is a C/C++ keyword; the struct declared in CUDA C would not compile (rename it)")]
    Keyword {
        struct_name: String,
        what: &'static str,
        name: String,
    },
    #[error(
        "struct {struct_name}: field '{field}' is too large: {detail} overflows the address space"
    )]
    TooLarge {
        struct_name: String,
        field: String,
        detail: String,
    },
}

/// `'a', 'b'`.
fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// C and C++ keywords (and CUDA's alternative tokens) that cannot name a struct or a field.
const KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char16_t",
    "char32_t",
    "char8_t",
    "class",
    "compl",
    "concept",
    "const",
    "const_cast",
    "consteval",
    "constexpr",
    "constinit",
    "continue",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
    "_Bool",
    "_Complex",
];

fn is_keyword(s: &str) -> bool {
    KEYWORDS.contains(&s)
}

/// One laid-out field.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldLayout {
    pub name: String,
    /// What one element is: the kind a kernel parameter of that C type has (one size and
    /// alignment rule for both, [`ParamKind::size`]).
    pub kind: ParamKind,
    /// The layout of a nested struct (`kind` is then [`ParamKind::Struct`] of its name).
    pub nested: Option<Box<StructLayout>>,
    /// Array extents (`[3][2]` is `[3, 2]`); empty for a single element.
    pub extents: Vec<usize>,
    /// Byte offset from the start of the struct.
    pub offset: usize,
    /// Bytes of the whole field (all elements).
    pub size: usize,
}

impl FieldLayout {
    /// Number of elements (1 without extents).
    pub fn count(&self) -> usize {
        self.extents.iter().product()
    }

    /// Bytes of one element.
    pub fn element_size(&self) -> usize {
        self.kind
            .size(&|_| self.nested.as_ref().map(|s| s.size))
            .unwrap_or(0)
    }

    /// Alignment of one element on the device.
    pub fn alignment(&self) -> usize {
        self.kind
            .alignment(&|_| self.nested.as_ref().map(|s| s.alignment))
            .unwrap_or(1)
    }

    /// The member declaration: `double pos[3]`.
    pub fn declaration(&self) -> String {
        let mut s = format!("{} {}", self.kind.c_type(), self.name);
        for k in &self.extents {
            let _ = write!(s, "[{k}]");
        }
        s
    }
}

/// A field as given: its name (possibly with extents) and its type.
#[derive(Clone, Debug)]
pub enum FieldSpec {
    /// A C type's text: scalar, pointer, view, or the name of one of the `known` structs;
    /// optionally followed by extents.
    Text(String),
    /// A nested struct, optionally with extents.
    Struct(StructLayout, Vec<usize>),
}

/// A struct's layout on the device.
#[derive(Clone, Debug, PartialEq)]
pub struct StructLayout {
    pub name: String,
    pub fields: Vec<FieldLayout>,
    pub size: usize,
    pub alignment: usize,
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Splits trailing `[K]` extents off a text: `("double", [3, 2])` for `"double[3][2]"`.
/// `None` when an extent is not a positive integer.
fn split_extents(text: &str) -> Option<(&str, Vec<usize>)> {
    let mut rest = text.trim();
    let mut extents = Vec::new();
    while let Some(body) = rest.strip_suffix(']') {
        let open = body.rfind('[')?;
        let k: usize = body.get(open + 1..)?.trim().parse().ok()?;
        if k == 0 {
            return None;
        }
        extents.push(k);
        rest = body.get(..open)?.trim_end();
    }
    extents.reverse();
    Some((rest, extents))
}

fn round_up(n: usize, align: usize) -> usize {
    n.div_ceil(align.max(1)) * align.max(1)
}

/// Parses a field type's text with the kernel-signature parser (so fields accept exactly the
/// spellings parameters do): the kind of one element and, for a struct, its layout among
/// `known` (the structs a field may name).
pub fn parse_field_type(
    text: &str,
    known: &[&StructLayout],
) -> Result<(ParamKind, Option<Box<StructLayout>>), String> {
    let names: Vec<String> = known.iter().map(|s| s.name.clone()).collect();
    let source = format!("__global__ void cunumpy_field({text} cunumpy_value) {{}}");
    let signature = parse_signature(&source, "cunumpy_field", &names, None).map_err(|e| {
        let message = e.to_string();
        // Keep the reason, not the fake kernel's name.
        match message.split_once(": ") {
            Some((_, reason)) if message.contains("cunumpy_field") => reason.to_string(),
            _ => message,
        }
    })?;
    let [param] = signature.params.as_slice() else {
        return Err("expected exactly one type".to_string());
    };
    let nested = match &param.kind {
        ParamKind::Struct { name } => Some(Box::new(
            known
                .iter()
                .find(|s| &s.name == name)
                .map(|s| (*s).clone())
                .ok_or_else(|| format!("unknown struct {name}"))?,
        )),
        _ => None,
    };
    Ok((param.kind.clone(), nested))
}

impl StructLayout {
    /// Lays out `fields` (`(name, spec)` pairs). `known` are the structs a text type may name.
    pub fn new(
        name: &str,
        fields: &[(String, FieldSpec)],
        known: &[&StructLayout],
    ) -> Result<StructLayout, LayoutError> {
        if !is_identifier(name) {
            return Err(LayoutError::InvalidStructName(name.to_string()));
        }
        if is_keyword(name) {
            return Err(LayoutError::Keyword {
                struct_name: name.to_string(),
                what: "the struct name",
                name: name.to_string(),
            });
        }
        if fields.is_empty() {
            return Err(LayoutError::Empty(name.to_string()));
        }
        let mut out = Vec::with_capacity(fields.len());
        let mut offset = 0usize;
        let mut alignment = 1usize;
        for (field_name, spec) in fields {
            let bad_name = || LayoutError::InvalidFieldName {
                struct_name: name.to_string(),
                field: field_name.clone(),
            };
            let (bare, mut extents) = split_extents(field_name).ok_or_else(bad_name)?;
            if !is_identifier(bare) {
                return Err(bad_name());
            }
            if is_keyword(bare) {
                return Err(LayoutError::Keyword {
                    struct_name: name.to_string(),
                    what: "the field name",
                    name: bare.to_string(),
                });
            }
            let unsupported = |ctype: &str, reason: String| LayoutError::UnsupportedType {
                struct_name: name.to_string(),
                field: bare.to_string(),
                ctype: ctype.to_string(),
                reason,
            };
            let (kind, nested) = match spec {
                FieldSpec::Text(text) => {
                    let (base, type_extents) = split_extents(text).ok_or_else(|| {
                        unsupported(text, "array extents must be positive integers".into())
                    })?;
                    extents.extend(type_extents);
                    parse_field_type(base, known).map_err(|reason| unsupported(text, reason))?
                }
                FieldSpec::Struct(s, more) => {
                    extents.extend(more.iter().copied());
                    if extents.contains(&0) {
                        return Err(unsupported(
                            &s.name,
                            "array extents must be positive".into(),
                        ));
                    }
                    (
                        ParamKind::Struct {
                            name: s.name.clone(),
                        },
                        Some(Box::new(s.clone())),
                    )
                }
            };
            let mut field = FieldLayout {
                name: bare.to_string(),
                kind,
                nested,
                extents,
                offset: 0,
                size: 0,
            };
            let align = field.alignment();
            let element_size = field.element_size();
            let too_large = |detail: String| LayoutError::TooLarge {
                struct_name: name.to_string(),
                field: bare.to_string(),
                detail,
            };
            let shown = field
                .extents
                .iter()
                .map(|e| format!("[{e}]"))
                .collect::<String>();
            let size = field
                .extents
                .iter()
                .try_fold(element_size, |acc, &e| acc.checked_mul(e))
                .filter(|&n| n <= isize::MAX as usize)
                .ok_or_else(|| too_large(format!("{element_size} bytes x {shown}")))?;
            offset = offset
                .checked_next_multiple_of(align.max(1))
                .filter(|o| {
                    o.checked_add(size)
                        .is_some_and(|end| end <= isize::MAX as usize)
                })
                .ok_or_else(|| too_large(format!("offset {offset} + {size} bytes")))?;
            alignment = alignment.max(align);
            field.offset = offset;
            field.size = size;
            out.push(field);
            offset += size;
        }
        let mut seen = std::collections::BTreeSet::new();
        let duplicates: Vec<String> = out
            .iter()
            .filter(|f| !seen.insert(f.name.as_str()))
            .map(|f| f.name.clone())
            .collect();
        if !duplicates.is_empty() {
            return Err(LayoutError::DuplicateFields {
                struct_name: name.to_string(),
                names: duplicates,
            });
        }
        Ok(StructLayout {
            name: name.to_string(),
            fields: out,
            size: round_up(offset, alignment),
            alignment,
        })
    }

    /// Whether any field (nested structs included) is an `ArrayND`/`CArrayND` view.
    pub fn has_views(&self) -> bool {
        self.fields.iter().any(|f| match (&f.kind, &f.nested) {
            (ParamKind::View { .. }, _) => true,
            (_, Some(s)) => s.has_views(),
            _ => false,
        })
    }

    /// Whether any field (nested structs included) is a complex scalar.
    pub fn has_complex(&self) -> bool {
        self.fields.iter().any(|f| match (&f.kind, &f.nested) {
            (ParamKind::Scalar(d), _) => matches!(d, DType::Complex64 | DType::Complex128),
            (_, Some(s)) => s.has_complex(),
            _ => false,
        })
    }

    /// The nested structs this one uses, innermost first, each once (for headers).
    pub fn dependencies(&self) -> Vec<StructLayout> {
        let mut out: Vec<StructLayout> = Vec::new();
        for f in &self.fields {
            if let Some(s) = &f.nested {
                for dep in s.dependencies().into_iter().chain([(**s).clone()]) {
                    if !out.iter().any(|o| o.name == dep.name) {
                        out.push(dep);
                    }
                }
            }
        }
        out
    }

    /// The C declaration: `struct S {\n    double x;\n    int n;\n};\n`.
    pub fn declaration(&self) -> String {
        let mut s = format!("struct {} {{\n", self.name);
        for f in &self.fields {
            let _ = writeln!(s, "    {};", f.declaration());
        }
        s.push_str("};\n");
        s
    }

    /// The label of field `index` in error messages: `struct S: field 1 'n' (int n)`.
    pub fn field_label(&self, index: usize) -> String {
        match self.fields.get(index) {
            Some(f) => format!(
                "struct {}: field {index} '{}' ({})",
                self.name,
                f.name,
                f.declaration()
            ),
            None => format!("struct {}: field {index}", self.name),
        }
    }

    /// Packs one value per field (in field order) into the struct's bytes. Each element is
    /// checked like a kernel parameter of the element's type (`device` is the device the
    /// value is for); array fields take one argument per element, in C order.
    pub fn pack(&self, values: &[FieldValue<'_>], device: i32) -> Result<Vec<u8>, ArgError> {
        if values.len() != self.fields.len() {
            return Err(ArgError {
                kind: ArgErrorKind::Type,
                message: format!(
                    "struct {} has {} fields, got {} values",
                    self.name,
                    self.fields.len(),
                    values.len()
                ),
            });
        }
        let mut bytes = vec![0u8; self.size];
        for (index, (field, value)) in self.fields.iter().zip(values).enumerate() {
            let label = self.field_label(index);
            let elements: &[Arg<'_>] = match value {
                FieldValue::One(arg) if field.extents.is_empty() => std::slice::from_ref(arg),
                FieldValue::Many(args) if !field.extents.is_empty() => args,
                FieldValue::One(_) => {
                    return Err(ArgError {
                        kind: ArgErrorKind::Type,
                        message: format!(
                            "{label} is an array of {} elements and takes a sequence of that \
                             length",
                            field.count()
                        ),
                    })
                }
                FieldValue::Many(_) => {
                    return Err(ArgError {
                        kind: ArgErrorKind::Type,
                        message: format!("{label} takes one value, got a sequence"),
                    })
                }
            };
            if elements.len() != field.count() {
                return Err(ArgError {
                    kind: ArgErrorKind::Value,
                    message: format!(
                        "{label} takes {} elements, got {}",
                        field.count(),
                        elements.len()
                    ),
                });
            }
            let element_size = field.element_size();
            let kind = &field.kind;
            for (k, arg) in elements.iter().enumerate() {
                let element_label = if field.extents.is_empty() {
                    label.clone()
                } else {
                    format!("{label}, element {k}")
                };
                let packed = pack_param_value(&element_label, kind, element_size, arg, device)?;
                let start = field.offset + k * element_size;
                if let Some(dst) = bytes.get_mut(start..start + element_size) {
                    dst.copy_from_slice(&packed[..element_size.min(packed.len())]);
                }
            }
        }
        Ok(bytes)
    }
}

/// The type of a field as compared with a source definition: `const` does not change the
/// layout, so `const double*` and `double*` agree.
fn compared_type(f: &FieldLayout) -> String {
    let mut text = f.kind.c_type().replace("const ", "");
    for k in &f.extents {
        let _ = write!(text, "[{k}]");
    }
    text
}

impl StructLayout {
    /// Compares this layout with every definition of the struct in `source` (a kernel's
    /// source with its headers): field names, order, types, offsets and the size. `None` when
    /// they agree or the source does not define the struct; else what differs, naming the
    /// first field that does. A definition the reader cannot lay out (a base struct, an
    /// alignment attribute, a bit field), or one with member functions, is reported only when
    /// `lenient` is false (a kernel's `structs=` are checked leniently).
    pub fn source_mismatch(&self, source: &str, lenient: bool) -> Option<String> {
        use crate::parser::{struct_definitions, StructDefinition};
        let known = self.dependencies();
        let known: Vec<&StructLayout> = known.iter().collect();
        for definition in struct_definitions(source, &self.name) {
            let members = match definition {
                StructDefinition::Members { skipped, .. } if !lenient && !skipped.is_empty() => {
                    return Some(format!(
                        "cannot compare the definition of struct {} in the CUDA source with its \
                         CudaStruct: members {skipped:?} are not plain data members",
                        self.name
                    ))
                }
                StructDefinition::Members { members, .. } => members,
                StructDefinition::Uncheckable { why } => {
                    if lenient {
                        continue;
                    }
                    return Some(format!(
                        "cannot compare the definition of struct {} in the CUDA source with its \
                         CudaStruct: {why}",
                        self.name
                    ));
                }
            };
            let fields: Vec<(String, FieldSpec)> = members
                .iter()
                .map(|m| {
                    let extents: String = m.extents.iter().map(|e| format!("[{e}]")).collect();
                    (
                        m.name.clone(),
                        FieldSpec::Text(format!("{}{extents}", m.ctype)),
                    )
                })
                .collect();
            let declared = |m: &crate::parser::SourceMember| {
                let extents: String = m.extents.iter().map(|e| format!("[{e}]")).collect();
                format!("{} {}{extents}", m.ctype, m.name)
            };
            let theirs = match StructLayout::new(&self.name, &fields, &known) {
                Ok(layout) => layout,
                Err(e) => {
                    return Some(format!(
                        "the definition of struct {} in the CUDA source cannot be compared with \
                         its CudaStruct: {e}",
                        self.name
                    ))
                }
            };
            let n = self.fields.len().max(theirs.fields.len());
            for i in 0..n {
                let ours = self.fields.get(i);
                let src = theirs.fields.get(i);
                let problem = match (ours, src) {
                    (Some(o), Some(s)) if o.name != s.name => format!(
                        "field {i} is '{}' ({}) in the CUDA source but '{}' ({}) in the \
                         CudaStruct (names and order must match)",
                        s.name,
                        members.get(i).map_or_else(|| s.declaration(), declared),
                        o.name,
                        o.declaration()
                    ),
                    (Some(o), Some(s)) if compared_type(o) != compared_type(s) => format!(
                        "field '{}' is {} in the CUDA source but {} in the CudaStruct",
                        o.name,
                        members.get(i).map_or_else(|| s.declaration(), declared),
                        o.declaration()
                    ),
                    (Some(o), Some(s)) if o.offset != s.offset => format!(
                        "field '{}' is at offset {} in the CUDA source but {} in the CudaStruct",
                        o.name, s.offset, o.offset
                    ),
                    (Some(o), None) => format!(
                        "field {i} '{}' ({}) of the CudaStruct is missing from the CUDA source",
                        o.name,
                        o.declaration()
                    ),
                    (None, Some(s)) => format!(
                        "field {i} '{}' ({}) of the CUDA source is missing from the CudaStruct",
                        s.name,
                        members.get(i).map_or_else(|| s.declaration(), declared)
                    ),
                    _ => continue,
                };
                return Some(format!(
                    "struct {} in the CUDA source does not match its CudaStruct: {problem}; the \
                     CudaStruct is:\n{}",
                    self.name,
                    self.declaration()
                ));
            }
            if theirs.size != self.size {
                return Some(format!(
                    "struct {} in the CUDA source does not match its CudaStruct: its size is {} \
                     bytes in the CUDA source but {} in the CudaStruct",
                    self.name, theirs.size, self.size
                ));
            }
        }
        None
    }
}

/// The value of one field: one argument, or one per element of an array field.
#[derive(Clone, Debug)]
pub enum FieldValue<'a> {
    One(Arg<'a>),
    Many(Vec<Arg<'a>>),
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::args::{DeviceArray, Scalar, ScalarSource};

    fn text(fields: &[(&str, &str)]) -> Vec<(String, FieldSpec)> {
        fields
            .iter()
            .map(|(n, t)| (n.to_string(), FieldSpec::Text(t.to_string())))
            .collect()
    }

    fn layout(name: &str, fields: &[(&str, &str)]) -> StructLayout {
        StructLayout::new(name, &text(fields), &[]).unwrap()
    }

    fn offsets(s: &StructLayout) -> Vec<usize> {
        s.fields.iter().map(|f| f.offset).collect()
    }

    #[test]
    fn keywords_and_overflowing_sizes_are_refused() {
        let err = |name: &str, fields: &[(&str, &str)]| {
            StructLayout::new(name, &text(fields), &[])
                .unwrap_err()
                .to_string()
        };
        assert!(
            err("S", &[("class", "double")]).contains("field name \"class\" is a C/C++ keyword")
        );
        assert!(err("S", &[("int", "int")]).contains("keyword"));
        assert!(err("struct", &[("a", "int")]).contains("struct name"));
        let big = err("S", &[("a", "double[4611686018427387904]")]);
        assert!(big.contains("field 'a' is too large"), "{big}");
        let big = err(
            "S",
            &[
                ("a", "double[576460752303423488]"),
                ("b", "double[576460752303423488]"),
            ],
        );
        assert!(big.contains("field 'b' is too large"), "{big}");
        assert_eq!(layout("S", &[("a", "double[1024]")]).size, 8192);
    }

    #[test]
    fn the_reference_particle_struct() {
        let s = layout(
            "P",
            &[
                ("x", "double*"),
                ("n", "int"),
                ("charge", "double"),
                ("alive", "bool*"),
                ("ids", "long long*"),
                ("weight", "float"),
            ],
        );
        assert_eq!(offsets(&s), [0, 8, 16, 24, 32, 40]);
        assert_eq!((s.size, s.alignment), (48, 8));
    }

    #[test]
    fn complex_double_is_16_aligned() {
        let s = layout("C", &[("n", "int"), ("c", "complex<double>")]);
        assert_eq!(offsets(&s), [0, 16]);
        assert_eq!((s.size, s.alignment), (32, 16));
        let f = layout("F", &[("n", "char"), ("c", "thrust::complex<float>")]);
        assert_eq!(offsets(&f), [0, 8]);
        assert_eq!((f.size, f.alignment), (16, 8));
    }

    #[test]
    fn char_then_double_and_tail_padding() {
        let s = layout("S", &[("c", "char"), ("d", "double"), ("e", "short")]);
        assert_eq!(offsets(&s), [0, 8, 16]);
        assert_eq!(s.size, 24);
    }

    #[test]
    fn views_and_arrays() {
        let s = layout(
            "V",
            &[
                ("flag", "bool"),
                ("a", "Array2D<double>"),
                ("b", "CArray3D<float>"),
                ("pos[3]", "float"),
                ("m", "int[2][2]"),
            ],
        );
        assert_eq!(offsets(&s), [0, 8, 48, 80, 92]);
        assert_eq!(s.size, 112);
        assert_eq!(s.fields[4].extents, [2, 2]);
        assert!(s.has_views());
        assert!(s.declaration().contains("    float pos[3];\n"));
        assert!(s.declaration().contains("    int m[2][2];\n"));
        assert!(s.declaration().contains("    Array2D<double> a;\n"));
    }

    #[test]
    fn nested_structs_by_name_and_by_value() {
        let inner = layout("Inner", &[("c", "char"), ("z", "complex<double>")]);
        assert_eq!((inner.size, inner.alignment), (32, 16));
        let outer = StructLayout::new(
            "Outer",
            &[
                ("k".to_string(), FieldSpec::Text("int".into())),
                ("i".to_string(), FieldSpec::Text("Inner".into())),
                (
                    "more".to_string(),
                    FieldSpec::Struct(inner.clone(), vec![2]),
                ),
            ],
            &[&inner],
        )
        .unwrap();
        assert_eq!(offsets(&outer), [0, 16, 48]);
        assert_eq!((outer.size, outer.alignment), (112, 16));
        assert_eq!(outer.dependencies().len(), 1);
        assert!(outer.has_complex());
    }

    #[test]
    fn errors_name_the_struct_and_field() {
        let e = StructLayout::new("S", &text(&[("x", "float4")]), &[]).unwrap_err();
        assert!(e.to_string().contains("struct S: field 'x'"), "{e}");
        let e = StructLayout::new("S", &text(&[("x", "Unknown")]), &[]).unwrap_err();
        assert!(matches!(e, LayoutError::UnsupportedType { .. }), "{e}");
        let e = StructLayout::new("1S", &text(&[("x", "int")]), &[]).unwrap_err();
        assert_eq!(e, LayoutError::InvalidStructName("1S".into()));
        let e = StructLayout::new("S", &text(&[("x", "int"), ("x", "float")]), &[]).unwrap_err();
        assert!(matches!(e, LayoutError::DuplicateFields { .. }));
        let e = StructLayout::new("S", &text(&[("x[0]", "int")]), &[]).unwrap_err();
        assert!(matches!(e, LayoutError::InvalidFieldName { .. }));
        let e = StructLayout::new("S", &text(&[("x", "int&")]), &[]).unwrap_err();
        assert!(e.to_string().contains("int&"), "{e}");
        assert!(StructLayout::new("S", &[], &[]).is_err());
    }

    fn py_float(x: f64) -> Arg<'static> {
        Arg::Scalar(Scalar::Float(x), ScalarSource::Python)
    }

    #[test]
    fn pack_scalars_pointers_views_and_arrays() {
        let s = layout(
            "S",
            &[
                ("c", "char"),
                ("z", "complex<double>"),
                ("p", "double*"),
                ("v", "Array1D<double>"),
                ("w[2]", "float"),
            ],
        );
        let shape = [5i64];
        let strides = [16i64];
        let view = DeviceArray {
            ptr: 0x1000,
            dtype: Ok(DType::Float64),
            shape: &shape,
            strides: &strides,
            c_contiguous: false,
            device: 0,
        };
        let flat = DeviceArray {
            c_contiguous: true,
            strides: &[8],
            ptr: 0x2000,
            ..view
        };
        let values = [
            FieldValue::One(Arg::Scalar(Scalar::Int(-3), ScalarSource::Python)),
            FieldValue::One(Arg::Scalar(
                Scalar::Complex(1.5, -2.0),
                ScalarSource::Python,
            )),
            FieldValue::One(Arg::DeviceArray(flat)),
            FieldValue::One(Arg::DeviceArray(view)),
            FieldValue::Many(vec![py_float(0.5), py_float(2.0)]),
        ];
        let bytes = s.pack(&values, 0).unwrap();
        assert_eq!(bytes.len(), s.size);
        assert_eq!(bytes[0], (-3i8) as u8);
        assert!(bytes[1..16].iter().all(|&b| b == 0));
        assert_eq!(&bytes[16..24], &1.5f64.to_le_bytes());
        assert_eq!(&bytes[24..32], &(-2.0f64).to_le_bytes());
        assert_eq!(&bytes[32..40], &0x2000u64.to_le_bytes());
        assert_eq!(&bytes[40..48], &0x1000u64.to_le_bytes());
        assert_eq!(&bytes[48..56], &5u64.to_le_bytes());
        assert_eq!(&bytes[56..64], &2u64.to_le_bytes());
        assert_eq!(&bytes[64..68], &0.5f32.to_le_bytes());
        assert_eq!(&bytes[68..72], &2.0f32.to_le_bytes());
    }

    #[test]
    fn pack_errors_name_the_struct_and_field() {
        let s = layout("S", &[("n", "int"), ("w[2]", "float")]);
        let e = s
            .pack(
                &[
                    FieldValue::One(Arg::Scalar(Scalar::Int(1 << 40), ScalarSource::Python)),
                    FieldValue::Many(vec![py_float(0.0), py_float(1.0)]),
                ],
                0,
            )
            .unwrap_err();
        assert_eq!(e.kind, ArgErrorKind::Overflow);
        assert!(
            e.message.starts_with("struct S: field 0 'n' (int n)"),
            "{}",
            e.message
        );
        let e = s
            .pack(
                &[
                    FieldValue::One(Arg::Scalar(Scalar::Int(1), ScalarSource::Python)),
                    FieldValue::Many(vec![py_float(0.0)]),
                ],
                0,
            )
            .unwrap_err();
        assert!(
            e.message.contains("takes 2 elements, got 1"),
            "{}",
            e.message
        );
        let e = s
            .pack(
                &[
                    FieldValue::One(py_float(1.0)),
                    FieldValue::Many(vec![py_float(0.0), py_float(1.0)]),
                ],
                0,
            )
            .unwrap_err();
        assert!(e.message.contains("field 0 'n'"), "{}", e.message);
    }

    #[test]
    fn pack_nested_struct_values_by_bytes() {
        let inner = layout("Inner", &[("a", "int"), ("b", "double")]);
        let outer = StructLayout::new(
            "Outer",
            &[
                ("c".to_string(), FieldSpec::Text("char".into())),
                ("i".to_string(), FieldSpec::Struct(inner.clone(), vec![])),
            ],
            &[],
        )
        .unwrap();
        let inner_bytes = inner
            .pack(
                &[
                    FieldValue::One(Arg::Scalar(Scalar::Int(7), ScalarSource::Python)),
                    FieldValue::One(py_float(2.5)),
                ],
                0,
            )
            .unwrap();
        let bytes = outer
            .pack(
                &[
                    FieldValue::One(Arg::Scalar(Scalar::Int(1), ScalarSource::Python)),
                    FieldValue::One(Arg::Struct {
                        name: "Inner",
                        bytes: &inner_bytes,
                    }),
                ],
                0,
            )
            .unwrap();
        assert_eq!(&bytes[8..24], &inner_bytes[..]);
        let e = outer
            .pack(
                &[
                    FieldValue::One(Arg::Scalar(Scalar::Int(1), ScalarSource::Python)),
                    FieldValue::One(py_float(1.0)),
                ],
                0,
            )
            .unwrap_err();
        assert!(
            e.message.contains("must be a value of struct Inner"),
            "{}",
            e.message
        );
    }
}
