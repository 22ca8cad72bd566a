//! The element and argument types a host kernel may use, read from Pyccel/Python annotations
//! (`'float[:,:]'`, `float`, `'Final[int32[:]]'`) or from the types of a sample call.

/// A scalar kind Pyccel knows (complex is not supported yet: refused by name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scalar {
    Bool,
    I32,
    I64,
    F32,
    F64,
}

impl Scalar {
    /// The C spelling.
    pub fn c(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I32 => "int",
            Scalar::I64 => "long long",
            Scalar::F32 => "float",
            Scalar::F64 => "double",
        }
    }

    pub fn is_int(self) -> bool {
        matches!(self, Scalar::Bool | Scalar::I32 | Scalar::I64)
    }

    /// The type of `a op b` for + - * (Python/NumPy promotion, C types).
    pub fn join(self, other: Scalar) -> Scalar {
        let (a, b) = (self.max(other), self.min(other));
        match (a, b) {
            (Scalar::F32, b) if b.is_int() => Scalar::F64,
            (Scalar::Bool, Scalar::Bool) => Scalar::I64,
            (a, _) if a.is_int() => Scalar::I64,
            (a, _) => a,
        }
    }
}

/// The type of a value in a kernel.
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    Scalar(Scalar),
    /// An array argument: element type and rank (C order).
    Array(Scalar, usize),
    /// A small fixed-size local array (`np.empty((3, 3))`): element type and extents.
    Local(Scalar, Vec<usize>),
    /// A local array whose extents are known only at run time (`np.zeros(p + 1)`): element
    /// type and rank; it reserves `CUNUMPY_PORT_LOCAL_CAP` elements per thread.
    LocalDyn(Scalar, usize),
    /// A struct argument (a `CudaStructArguments` class): its C name and fields, arrays being
    /// 1-D pointers (`p.x[i]`) or array views.
    Struct(String, Vec<(String, Ty)>),
    /// An array-view field of a struct (`CArrayND<T>`, as `CudaStruct` lays out a Pyccel
    /// class's `'float[:,:]'` attribute): element type and rank, indexed like an array argument.
    View(Scalar, usize),
    /// A strided view (`ArrayND<T>`) of some axes of a C-ordered array (`cx = args.cx[:, :, 0]`,
    /// an index on a trailing axis): element type and rank; a local name, read only.
    Strided(Scalar, usize),
}

impl Ty {
    pub fn scalar(&self) -> Scalar {
        match self {
            Ty::Scalar(s)
            | Ty::Array(s, _)
            | Ty::Local(s, _)
            | Ty::View(s, _)
            | Ty::Strided(s, _)
            | Ty::LocalDyn(s, _) => *s,
            Ty::Struct(..) => Scalar::I64,
        }
    }

    pub fn rank(&self) -> usize {
        match self {
            Ty::Scalar(_) => 0,
            Ty::Array(_, n) | Ty::View(_, n) | Ty::Strided(_, n) | Ty::LocalDyn(_, n) => *n,
            Ty::Local(_, d) => d.len(),
            Ty::Struct(..) => 0,
        }
    }

    /// The C parameter declaration of `name` with this type.
    /// Whether this is a view a local name holds (of another array's elements).
    pub fn is_view(&self) -> bool {
        matches!(self, Ty::View(..) | Ty::Strided(..))
    }

    pub fn c_param(&self, name: &str) -> String {
        match self {
            Ty::Scalar(s) => format!("{} {name}", s.c()),
            Ty::Struct(s, _) => format!("{s} {name}"),
            Ty::Strided(s, r) => format!("Array{r}D<{}> {name}", s.c()),
            _ => format!("CArray{}D<{}> {name}", self.rank(), self.scalar().c()),
        }
    }
}

/// The scalar named `base` (`float`, `float64`, `int32`, `bool`, ...).
pub fn scalar_named(base: &str) -> Result<Scalar, String> {
    Ok(match base {
        "float" | "float64" | "double" | "real" | "f8" => Scalar::F64,
        "float32" | "f4" => Scalar::F32,
        "int" | "int64" | "i8" => Scalar::I64,
        "int32" | "i4" => Scalar::I32,
        "bool" | "bool_" => Scalar::Bool,
        "complex" | "complex128" | "complex64" | "cfloat" | "cdouble" => {
            return Err(format!(
                "complex type '{base}' (complex kernels are not translated yet)"
            ))
        }
        other => return Err(format!("type '{other}'")),
    })
}

/// Reads an annotation: `float`, `'float[:,:]'`, `'Final[float[:]]'`, `'const int[:]'`,
/// `'float[:,:](order=C)'`.
pub fn parse_annotation(text: &str) -> Result<Ty, String> {
    if let Some(rest) = text.trim().strip_prefix("struct ") {
        return parse_struct(rest);
    }
    let mut t = text.trim().trim_matches(|c| c == '\'' || c == '"').trim();
    if let Some(inner) = t.strip_prefix("Final[").and_then(|r| r.strip_suffix(']')) {
        t = inner.trim();
    }
    if let Some(inner) = t.strip_prefix("const ") {
        t = inner.trim();
    }
    if let Some(pos) = t.find("(order=") {
        let order = &t[pos..];
        if !order.contains('C') {
            return Err(format!("'{text}' (only C-ordered arrays are translated)"));
        }
        t = t[..pos].trim();
    }
    match t.find('[') {
        None => Ok(Ty::Scalar(scalar_named(t)?)),
        Some(open) => {
            let dims = t[open..].trim_start_matches('[').trim_end_matches(']');
            if dims.split(',').any(|d| d.trim() != ":") {
                return Err(format!(
                    "'{text}' (array annotations look like 'float[:,:]')"
                ));
            }
            Ok(Ty::Array(
                scalar_named(t[..open].trim())?,
                dims.split(',').count(),
            ))
        }
    }
}

/// The scratch fields of a struct type text (`struct S {...; bn1: scratch empty float64[:]}`):
/// `(field, fill)` with fill `empty`, `zeros` or `ones`, in order.
pub fn struct_scratch(text: &str) -> Vec<(String, String)> {
    let Some(body) = text
        .trim()
        .strip_prefix("struct ")
        .and_then(|r| r.split_once('{'))
        .map(|(_, b)| b.trim_end().trim_end_matches('}'))
    else {
        return Vec::new();
    };
    body.split(';')
        .filter_map(|f| {
            let (n, t) = f.split_once(':')?;
            let rest = t.trim().strip_prefix("scratch ")?;
            let (fill, _) = rest.trim().split_once(' ')?;
            Some((n.trim().to_string(), fill.to_string()))
        })
        .collect()
}

/// `Particles {x: float64[:]; n: int}`: a struct argument's C name and fields (as given by the
/// Python side from a `CudaStructArguments` class; array fields are 1-D pointers).
fn parse_struct(text: &str) -> Result<Ty, String> {
    let (name, rest) = text
        .split_once('{')
        .ok_or_else(|| format!("struct '{text}'"))?;
    let body = rest
        .trim_end()
        .strip_suffix('}')
        .ok_or_else(|| format!("struct '{text}'"))?;
    let mut fields = Vec::new();
    for f in body.split(';').map(str::trim).filter(|f| !f.is_empty()) {
        let (n, t) = f
            .split_once(':')
            .ok_or_else(|| format!("struct field '{f}'"))?;
        let t = t.trim();
        // `scratch empty float64[:]`: an array the class's __init__ allocates (a per-thread
        // local array of the generated kernel; see `struct_scratch`)
        let t = match t.strip_prefix("scratch ") {
            Some(rest) => match rest.trim().split_once(' ') {
                Some(("empty" | "zeros" | "ones", ann)) => match parse_annotation(ann)? {
                    Ty::Array(s, rank) => {
                        fields.push((n.trim().to_string(), Ty::View(s, rank)));
                        continue;
                    }
                    _ => return Err(format!("struct field '{f}' (scratch is an array)")),
                },
                _ => return Err(format!("struct field '{f}'")),
            },
            None => t,
        };
        let ty = match t.strip_prefix("view ") {
            Some(v) => match parse_annotation(v)? {
                Ty::Array(s, n) => Ty::View(s, n),
                _ => return Err(format!("struct field '{f}' (a view field is an array)")),
            },
            None => parse_annotation(t)?,
        };
        if matches!(ty, Ty::Array(_, n) if n > 1) || matches!(ty, Ty::Struct(..)) {
            return Err(format!(
                "struct field '{f}' (fields are scalars, 1-D pointers or array views)"
            ));
        }
        fields.push((n.trim().to_string(), ty));
    }
    Ok(Ty::Struct(name.trim().to_string(), fields))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_pyccel_annotations() {
        assert_eq!(parse_annotation("float").unwrap(), Ty::Scalar(Scalar::F64));
        assert_eq!(
            parse_annotation("'float[:,:]'").unwrap(),
            Ty::Array(Scalar::F64, 2)
        );
        assert_eq!(
            parse_annotation("Final[int32[:]]").unwrap(),
            Ty::Array(Scalar::I32, 1)
        );
        assert_eq!(
            parse_annotation("const float[:,:,:]").unwrap(),
            Ty::Array(Scalar::F64, 3)
        );
        assert!(parse_annotation("float[:,:](order=F)").is_err());
        assert!(parse_annotation("complex[:]")
            .unwrap_err()
            .contains("complex"));
        assert_eq!(Scalar::I64.join(Scalar::F64), Scalar::F64);
        assert_eq!(
            parse_annotation("struct P {x: float64[:]; n: int}").unwrap(),
            Ty::Struct(
                "P".into(),
                vec![
                    ("x".into(), Ty::Array(Scalar::F64, 1)),
                    ("n".into(), Ty::Scalar(Scalar::I64))
                ]
            )
        );
        assert_eq!(Scalar::Bool.join(Scalar::I32), Scalar::I64);
        assert_eq!(
            parse_annotation("struct D {cx: view float64[:,:,:]; k: int}").unwrap(),
            Ty::Struct(
                "D".into(),
                vec![
                    ("cx".into(), Ty::View(Scalar::F64, 3)),
                    ("k".into(), Ty::Scalar(Scalar::I64))
                ]
            )
        );
        assert!(parse_annotation("struct D {cx: float64[:,:]}").is_err());
        let text = "struct S {pn: view int64[:]; bn1: scratch empty float64[:]; b: scratch zeros float32[:,:]}";
        assert_eq!(
            parse_annotation(text).unwrap(),
            Ty::Struct(
                "S".into(),
                vec![
                    ("pn".into(), Ty::View(Scalar::I64, 1)),
                    ("bn1".into(), Ty::View(Scalar::F64, 1)),
                    ("b".into(), Ty::View(Scalar::F32, 2))
                ]
            )
        );
        assert_eq!(
            struct_scratch(text),
            vec![("bn1".into(), "empty".into()), ("b".into(), "zeros".into())]
        );
        assert!(parse_annotation("struct S {b: scratch full float64[:]}").is_err());
    }
}
