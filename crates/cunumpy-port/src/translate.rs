//! The translation proper: one host kernel (a `def` of the module's syntax tree) and the
//! helpers it calls become a CUDA C source. Statements are emitted one by one, each under a
//! comment with the Python line it came from.

use crate::error::{PortError, PortErrorKind};
use crate::json::Json;
pub(crate) use crate::json::{const_int, name_of};
use crate::types::{parse_annotation, scalar_named, Scalar, Ty};
use std::collections::{BTreeMap, BTreeSet};

/// What `translate` needs besides the module's syntax tree.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The host kernel's name (a top-level `def` of the module).
    pub kernel: String,
    /// Types of arguments taken from a sample call (`float64[:,:]`, `int`), winning over the
    /// annotations; arguments without either are refused.
    pub arg_types: Vec<(String, String)>,
    /// The source line of the loop to run in parallel (default: the kernel's one top-level
    /// `for` loop).
    pub parallel_loop: Option<u32>,
}

impl Options {
    /// The options of `kernel` with its annotations' types and its one top-level loop.
    pub fn for_kernel(kernel: &str) -> Options {
        Options {
            kernel: kernel.into(),
            ..Options::default()
        }
    }
}

/// One array write of the parallel loop and how it was made safe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteDecision {
    pub array: String,
    pub line: u32,
    /// "owned" (indexed by the loop variable) or "atomic" (`+=`/`-=` made an atomic add).
    pub how: &'static str,
}

/// The generated source and what the translator decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translation {
    pub source: String,
    pub kernel: String,
    pub params: Vec<String>,
    pub loop_line: u32,
    pub loop_var: String,
    /// The loops collapsed into the parallel one (variable, line), outer first: empty when
    /// one iteration of the parallel loop is one thread.
    pub collapsed: Vec<(String, u32)>,
    /// The loop's trip count as a Python expression of the kernel's parameters (the launch
    /// shape `n_threads`), when it can be written so.
    pub n_threads: Option<String>,
    pub writes: Vec<WriteDecision>,
    pub helpers: Vec<String>,
}

pub(crate) type R<T> = Result<T, PortError>;

/// Written where a `zeros(...)` local is declared without its fill (`dead_fill`).
const DEAD_FILL_NOTE: &str =
    "// not filled with zeros: no read below can see them (each element it reads is written first)";

/// Written above the fill of an argument that the code after it partly overwrites
/// (`fill_prefix::partial_fills`).
pub(crate) const PARTIAL_FILL_NOTE: &str =
    "// filled only past the elements that the code below writes before any read of them";

/// Written where a `zeros(...)` local waits for its fill (`fill_prefix::deferred_fills`).
const DEFERRED_FILL_NOTE: &str =
    "// filled just before the call that first receives it, past what that call writes first";

/// Per-function state: the names and their types, in the order they are declared.
#[derive(Default)]
pub(crate) struct FnCx {
    pub(crate) name: String,
    pub(crate) vars: BTreeMap<String, Ty>,
    pub(crate) order: Vec<String>,
    pub(crate) params: BTreeSet<String>,
    /// Lines of the `name = zeros(...)` statements whose fill no read can see
    /// (`dead_fill::dead_zero_fills`): they declare the local without filling it.
    pub(crate) dead_fills: BTreeSet<u32>,
    /// Lines of the `p[:] = c` fills of an argument whose first elements the code after them
    /// writes before any read (`fill_prefix::partial_fills`), with where the fill that stays
    /// starts: they fill `p[start:]` only.
    pub(crate) partial_fills: BTreeMap<u32, Json>,
    /// Lines of the `a = zeros(n)` statements whose fill waits for the call that first
    /// receives `a` (`fill_prefix::deferred_fills`) -> that call's line, `a`, and where the fill
    /// that stays starts.
    pub(crate) deferred_fills: BTreeMap<u32, (u32, String, Json)>,
    /// Lines of the `a = zeros(n)` statements whose first elements the code after them writes
    /// before any read (`fill_prefix::local_partial_fills`) -> where their fill starts.
    pub(crate) local_partial_fills: BTreeMap<u32, Json>,
}

pub struct Translator<'a> {
    pub(crate) funcs: BTreeMap<String, &'a Json>,
    pub(crate) lines: Vec<&'a str>,
    /// alias -> "math" | "numpy", for `import numpy as np`.
    pub(crate) modules: BTreeMap<String, &'static str>,
    /// name -> (module, function) for `from math import sqrt`.
    pub(crate) from_imports: BTreeMap<String, (&'static str, String)>,
    pub(crate) helpers_done: BTreeMap<String, Ty>,
    pub(crate) helpers_busy: BTreeSet<String>,
    pub(crate) helper_src: Vec<String>,
    pub(crate) prelude: BTreeSet<&'static str>,
    pub(crate) atomic_used: bool,
    pub(crate) current: String,
    /// Struct name -> its scratch fields `(field, fill)`: arrays the Pyccel class's `__init__`
    /// allocates, which every thread keeps its own of (see `Translator::privatize`).
    pub(crate) scratch: BTreeMap<String, Vec<(String, String)>>,
    /// Helpers returning a tuple of scalars (`return span1, span2, span3`): the element types;
    /// in CUDA they return through out-parameters `cunumpy_ret<k>`.
    pub(crate) tuple_ret: BTreeMap<String, Vec<Scalar>>,
    /// (helper, parameter) whose `+=`/`-=` are atomic adds: the parallel loop passes it a
    /// shared array it only adds into (see `Translator::helper_accumulation`).
    pub(crate) atomic_params: BTreeSet<(String, String)>,
}

const MATH: &[(&str, &str)] = &[
    ("sqrt", "sqrt"),
    ("exp", "exp"),
    ("log", "log"),
    ("log10", "log10"),
    ("log2", "log2"),
    ("sin", "sin"),
    ("cos", "cos"),
    ("tan", "tan"),
    ("asin", "asin"),
    ("arcsin", "asin"),
    ("acos", "acos"),
    ("arccos", "acos"),
    ("atan", "atan"),
    ("arctan", "atan"),
    ("atan2", "atan2"),
    ("arctan2", "atan2"),
    ("sinh", "sinh"),
    ("cosh", "cosh"),
    ("tanh", "tanh"),
    ("fabs", "fabs"),
    ("hypot", "hypot"),
    ("erf", "erf"),
    ("pow", "pow"),
    ("power", "pow"),
    ("floor", "floor"),
    ("ceil", "ceil"),
    ("fmod", "fmod"),
];

pub(crate) const PRELUDE: &[(&str, &str)] = &[
    (
        "helper",
        "// Every helper below is inlined into the kernel: a helper that fills a caller's local\n\
         // 3x3 matrix (struphy's evaluation_kernels.df) then keeps it in registers; the compiler\n\
         // alone keeps such a large one as a call. On the H200 that took struphy's pull-backs\n\
         // and metric evaluations from 0.80x to 1.07x of their hand-written versions, at several\n\
         // times the compile time (kernel_evaluate: 9 s -> 81 s of NVRTC, cached after the first\n\
         // call). Compile with -DCUNUMPY_PORT_HELPER= to leave the choice to the compiler.\n\
         #ifndef CUNUMPY_PORT_HELPER\n#define CUNUMPY_PORT_HELPER __forceinline__\n#endif\n",
    ),
    (
        "registers",
        "// Built by GeneratedCuda.cuda_kernel(), this kernel launches in blocks of BLOCK_SIZE\n\
         // threads, and where it needs more registers a thread than MAX_REGISTERS it is compiled\n\
         // again with --maxrregcount (CudaKernel's block_size and max_registers; their values\n\
         // and the H200 figures behind them are in that method's module): a cap that lets one\n\
         // more block share an SM. Only such a kernel: ptxas takes a cap as its budget and\n\
         // raises one that needed fewer towards it.\n",
    ),
    (
        "trip",
        "// The trip count of a collapsed loop (a range that is empty gives no iterations).\n\
         __device__ __forceinline__ long long cunumpy_port_trip(long long n) { return n > 0 ? n : 0; }\n",
    ),
    (
        "mod",
        "// Python's % on integers: the result takes the sign of the divisor.\n\
         __device__ __forceinline__ long long cunumpy_port_mod(long long a, long long b) {\n    \
         long long r = a % b;\n    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}\n",
    ),
    (
        "fmod",
        "// Python's % on floats: the result takes the sign of the divisor.\n\
         __device__ __forceinline__ double cunumpy_port_fmod(double a, double b) {\n    \
         double r = fmod(a, b);\n    return (r != 0.0 && ((r < 0.0) != (b < 0.0))) ? r + b : r;\n}\n",
    ),
    (
        "floordiv",
        "// Python's // on integers: rounds toward minus infinity.\n\
         __device__ __forceinline__ long long cunumpy_port_floordiv(long long a, long long b) {\n    \
         long long q = a / b;\n    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n}\n",
    ),
    (
        "ffloordiv",
        "// Python's // on floats (exactly as CPython computes it).\n\
         __device__ __forceinline__ double cunumpy_port_ffloordiv(double a, double b) {\n    \
         double m = fmod(a, b);\n    double d = (a - m) / b;\n    \
         if (m != 0.0 && ((b < 0.0) != (m < 0.0))) d -= 1.0;\n    \
         double f = floor(d);\n    if (d - f > 0.5) f += 1.0;\n    return f;\n}\n",
    ),
    (
        "minmax",
        "template <class T> __device__ __forceinline__ T cunumpy_port_min(T a, T b) { return b < a ? b : a; }\n\
         template <class T> __device__ __forceinline__ T cunumpy_port_max(T a, T b) { return a < b ? b : a; }\n",
    ),
    (
        "localcap",
        "// Local arrays whose size is known only at run time (np.zeros(p + 1)) reserve this many\n\
         // elements per thread; a larger one stops the kernel with a message (raise it here).\n\
         #ifndef CUNUMPY_PORT_LOCAL_CAP\n#define CUNUMPY_PORT_LOCAL_CAP 64\n#endif\n\
         // -DCUNUMPY_PORT_CAP_TRAP_ONLY: on the GPU a check stops the kernel without the message\n\
         // (a bare __trap(), no call on the checks' path; the emulated device still prints it).\n\
         // It changes registers and speed, either way by up to 10% on struphy's kernels (H200).\n\
         #if defined(CUNUMPY_PORT_CAP_TRAP_ONLY) && defined(__CUDA_ARCH__)\n\
         __device__ __forceinline__ void cunumpy_port_cap_exceeded(const char*, long long) { __trap(); }\n\
         #else\n\
         // Not inlined: a printf at every check costs the kernel registers on its hot path (a\n\
         // struphy pusher: 167 registers with the printf inline, 126 with this call).\n\
         __device__ __noinline__ void cunumpy_port_cap_exceeded(const char* what, long long need) {\n    \
         printf(\"cunumpy: %s needs %lld elements; this kernel reserves %d per thread (raise CUNUMPY_PORT_LOCAL_CAP)\\n\", what, need, (int)CUNUMPY_PORT_LOCAL_CAP);\n    \
         __trap();\n}\n\
         #endif\n",
    ),
    (
        "ipow",
        "// Python's ** on integers (a non-negative exponent).\n\
         __device__ __forceinline__ long long cunumpy_port_ipow(long long a, long long b) {\n    \
         long long r = 1;\n    while (b-- > 0) r *= a;\n    return r;\n}\n",
    ),
];

pub(crate) fn err(
    kind: PortErrorKind,
    f: &str,
    line: u32,
    construct: &str,
    array: Option<&str>,
    msg: String,
) -> PortError {
    PortError {
        kind,
        function: f.to_string(),
        line,
        construct: construct.to_string(),
        array: array.map(str::to_string),
        message: msg,
    }
}

/// Whether an assignment target is a subscript with a slice (`out[a:b] = ...`), which the
/// slice translation (`slices.rs`) turns into an element loop.
pub(crate) fn has_slice(target: &Json) -> bool {
    target.kind() == "Subscript" && indices(target).iter().any(|i| i.kind() == "Slice")
}

/// The index expressions of a subscript (`a[i, j]` -> [i, j]).
pub(crate) fn indices(e: &Json) -> Vec<&Json> {
    let s = e.get("slice");
    if s.kind() == "Tuple" {
        s.get("elts").as_list().iter().collect()
    } else {
        vec![s]
    }
}

impl<'a> Translator<'a> {
    pub fn new(module: &'a Json, source: &'a str) -> Self {
        let mut t = Translator {
            funcs: BTreeMap::new(),
            lines: source.lines().collect(),
            modules: BTreeMap::new(),
            from_imports: BTreeMap::new(),
            helpers_done: BTreeMap::new(),
            helpers_busy: BTreeSet::new(),
            helper_src: Vec::new(),
            prelude: BTreeSet::new(),
            atomic_used: false,
            current: String::new(),
            scratch: BTreeMap::new(),
            tuple_ret: BTreeMap::new(),
            atomic_params: BTreeSet::new(),
        };
        for node in module.get("body").as_list() {
            match node.kind() {
                "FunctionDef" => {
                    if let Some(n) = node.get("name").as_str() {
                        t.funcs.insert(n.to_string(), node);
                    }
                }
                "Import" => {
                    for a in node.get("names").as_list() {
                        let full = a.get("name").as_str().unwrap_or("");
                        let alias = a.get("asname").as_str().unwrap_or(full);
                        if let Some(m) = module_kind(full) {
                            t.modules.insert(alias.to_string(), m);
                        }
                    }
                }
                "ImportFrom" => {
                    if let Some(m) = module_kind(node.get("module").as_str().unwrap_or("")) {
                        for a in node.get("names").as_list() {
                            let n = a.get("name").as_str().unwrap_or("");
                            let alias = a.get("asname").as_str().unwrap_or(n);
                            t.from_imports.insert(alias.to_string(), (m, n.to_string()));
                        }
                    }
                }
                _ => {}
            }
        }
        t
    }

    pub(crate) fn e(
        &self,
        kind: PortErrorKind,
        line: u32,
        construct: &str,
        array: Option<&str>,
        msg: String,
    ) -> PortError {
        err(kind, &self.current, line, construct, array, msg)
    }

    pub(crate) fn unsupported(&self, node: &Json, construct: &str, msg: String) -> PortError {
        self.e(
            PortErrorKind::Unsupported,
            node.line(),
            construct,
            None,
            msg,
        )
    }

    /// Whether the array key `p.field` names a scratch field of the struct `p` (per thread).
    pub(crate) fn is_scratch_key(&self, f: &FnCx, key: &str) -> bool {
        let Some((base, field)) = key.split_once('.') else {
            return false;
        };
        match f.vars.get(base) {
            Some(Ty::Struct(sname, _)) => self
                .scratch
                .get(sname)
                .is_some_and(|v| v.iter().any(|(n, _)| n == field)),
            _ => false,
        }
    }

    /// The C parameter declaration of `name`: a struct with scratch fields is passed to the
    /// body and the helpers as its per-thread version `<Struct>_thread`.
    pub(crate) fn c_param(&self, name: &str, t: &Ty) -> String {
        match t {
            Ty::Struct(s, _) if self.scratch.contains_key(s) => format!("{s}_thread {name}"),
            _ => t.c_param(name),
        }
    }

    /// The C parameter declaration of `name` in a helper (a `__device__` function): a struct
    /// by `const&`. By value, NVRTC (12.9 and 13.0) may read a kernel's struct parameter passed
    /// on to a helper through a local-memory address of the parameter (`cvta.param` then
    /// `cvta.to.local`), an out-of-bounds local read on the GPU that the emulator cannot show
    /// (struphy's push_eta_stage). By reference is also what Python does: a helper reads the
    /// fields and writes through the arrays; one that assigned a field of a `const&` struct
    /// would not compile (by value, the assignment was lost to the caller).
    pub(crate) fn helper_param(&self, name: &str, t: &Ty) -> String {
        match t {
            Ty::Struct(s, _) if self.scratch.contains_key(s) => format!("{s}_thread& {name}"),
            Ty::Struct(s, _) => format!("const {s}& {name}"),
            _ => t.c_param(name),
        }
    }

    pub(crate) fn comment(&self, line: u32, pad: &str) -> String {
        let text = self
            .lines
            .get((line as usize).wrapping_sub(1))
            .map(|l| l.trim())
            .unwrap_or("");
        format!("{pad}// L{line}: {text}\n")
    }

    // ---------------------------------------------------------------- types of expressions

    pub(crate) fn ty(&mut self, f: &FnCx, e: &Json) -> R<Ty> {
        Ok(self.expr(f, e)?.1)
    }

    /// The C text and type of an expression.
    pub(crate) fn expr(&mut self, f: &FnCx, e: &Json) -> R<(String, Ty)> {
        let sc = |s: Scalar| Ty::Scalar(s);
        match e.kind() {
            "Constant" => match e.get("value") {
                Json::Bool(b) => Ok((b.to_string(), sc(Scalar::Bool))),
                Json::Num(n) => {
                    if n.parse::<i64>().is_ok() {
                        Ok((n.clone(), sc(Scalar::I64)))
                    } else if n == "Infinity" {
                        Ok((
                            "__longlong_as_double(0x7ff0000000000000LL)".into(),
                            sc(Scalar::F64),
                        ))
                    } else {
                        let t = if n.contains(['.', 'e', 'E']) {
                            n.clone()
                        } else {
                            format!("{n}.0")
                        };
                        Ok((t, sc(Scalar::F64)))
                    }
                }
                _ => Err(self.unsupported(
                    e,
                    "constant",
                    "only int, float and bool constants are translated".into(),
                )),
            },
            "Name" => {
                let n = name_of(e).unwrap_or("");
                match f.vars.get(n) {
                    Some(Ty::Struct(..)) => Err(self.unsupported(
                        e,
                        "struct argument",
                        format!("the struct argument '{n}' used as a value (only its fields are translated)"),
                    )),
                    Some(t) => Ok((n.to_string(), t.clone())),
                    // `from numpy import pi` (or math): the constants
                    None if self.from_imports.get(n).is_some_and(|(_, r)| matches!(r.as_str(), "pi" | "e" | "inf")) => {
                        let c = match self.from_imports[n].1.as_str() {
                            "pi" => "3.141592653589793",
                            "e" => "2.718281828459045",
                            _ => "__longlong_as_double(0x7ff0000000000000LL)",
                        };
                        Ok((c.to_string(), sc(Scalar::F64)))
                    }
                    None => Err(self.unsupported(
                        e,
                        "name",
                        format!("'{n}' is not a parameter or a local variable of {}", f.name),
                    )),
                }
            }
            "Attribute" => {
                let attr = e.get("attr").as_str().unwrap_or("");
                let base = name_of(e.get("value")).unwrap_or("");
                if self.modules.contains_key(base) {
                    return match attr {
                        "pi" => Ok(("3.141592653589793".into(), sc(Scalar::F64))),
                        "e" => Ok(("2.718281828459045".into(), sc(Scalar::F64))),
                        "inf" => Ok((
                            "__longlong_as_double(0x7ff0000000000000LL)".into(),
                            sc(Scalar::F64),
                        )),
                        _ => Err(self.unsupported(
                            e,
                            "attribute",
                            format!("{base}.{attr} is not translated"),
                        )),
                    };
                }
                if let Some(Ty::Struct(sname, fields)) = f.vars.get(base) {
                    return match fields.iter().find(|(n, _)| n == attr) {
                        Some((_, Ty::Scalar(s))) => Ok((format!("{base}.{attr}"), sc(*s))),
                        Some(_) => Err(self.unsupported(
                            e,
                            "struct field",
                            format!("the array field '{base}.{attr}' used whole (index it)"),
                        )),
                        None => Err(self.unsupported(
                            e,
                            "struct field",
                            format!("struct {sname} ('{base}') has no field '{attr}'"),
                        )),
                    };
                }
                match (f.vars.get(base), attr) {
                    (Some(t), "size") if t.rank() > 0 => Ok((format!("{base}.size()"), sc(Scalar::I64))),
                    (Some(t), "ndim") if t.rank() > 0 => Ok((t.rank().to_string(), sc(Scalar::I64))),
                    _ => Err(self.unsupported(
                        e,
                        "attribute",
                        format!("attribute '.{attr}' of '{base}' (struct arguments are not translated yet)"),
                    )),
                }
            }
            "Subscript" => self.subscript(f, e),
            "BinOp" => self.binop(f, e),
            "UnaryOp" => {
                let (x, t) = self.expr(f, e.get("operand"))?;
                match e.get("op").kind() {
                    "USub" => Ok((
                        format!("-{x}"),
                        if t == sc(Scalar::Bool) {
                            sc(Scalar::I64)
                        } else {
                            t
                        },
                    )),
                    "UAdd" => Ok((x, t)),
                    "Not" => Ok((format!("!{x}"), sc(Scalar::Bool))),
                    other => {
                        Err(self.unsupported(e, "operator", format!("unary operator {other}")))
                    }
                }
            }
            "BoolOp" => {
                let op = if e.get("op").kind() == "And" {
                    " && "
                } else {
                    " || "
                };
                let mut parts = Vec::new();
                for v in e.get("values").as_list() {
                    parts.push(self.expr(f, v)?.0);
                }
                Ok((format!("({})", parts.join(op)), sc(Scalar::Bool)))
            }
            "Compare" => {
                let mut left = self.expr(f, e.get("left"))?.0;
                let mut parts = Vec::new();
                for (op, right) in e
                    .get("ops")
                    .as_list()
                    .iter()
                    .zip(e.get("comparators").as_list())
                {
                    let r = self.expr(f, right)?.0;
                    let o = match op.kind() {
                        "Lt" => "<",
                        "LtE" => "<=",
                        "Gt" => ">",
                        "GtE" => ">=",
                        "Eq" => "==",
                        "NotEq" => "!=",
                        other => {
                            return Err(self.unsupported(
                                e,
                                "comparison",
                                format!("comparison {other}"),
                            ))
                        }
                    };
                    parts.push(format!("{left} {o} {r}"));
                    left = r;
                }
                Ok((format!("({})", parts.join(" && ")), sc(Scalar::Bool)))
            }
            "IfExp" => {
                let c = self.expr(f, e.get("test"))?.0;
                let (a, ta) = self.expr(f, e.get("body"))?;
                let (b, tb) = self.expr(f, e.get("orelse"))?;
                let t = ta.scalar().join(tb.scalar());
                let t = if ta == tb { ta.scalar() } else { t };
                Ok((format!("({c} ? ({}){a} : ({}){b})", t.c(), t.c()), sc(t)))
            }
            "Call" => self.call(f, e),
            other => Err(self.unsupported(
                e,
                other,
                format!("the expression {other} is not translated"),
            )),
        }
    }

    /// The array whose shape `e` is: `a` for `a.shape`, and for `shape(a)` / `np.shape(a)`
    /// with NumPy's `shape`.
    pub(crate) fn shape_base<'j>(&self, e: &'j Json) -> Option<&'j str> {
        if e.kind() == "Attribute" && e.get("attr").as_str() == Some("shape") {
            return name_of(e.get("value"));
        }
        if e.kind() != "Call" || !e.get("keywords").as_list().is_empty() {
            return None;
        }
        let func = e.get("func");
        let numpy_shape = match func.kind() {
            "Name" => self
                .from_imports
                .get(name_of(func).unwrap_or(""))
                .is_some_and(|(m, n)| *m == "numpy" && n == "shape"),
            "Attribute" => {
                func.get("attr").as_str() == Some("shape")
                    && self.modules.get(name_of(func.get("value")).unwrap_or("")) == Some(&"numpy")
            }
            _ => false,
        };
        match e.get("args").as_list() {
            [x] if numpy_shape => name_of(x),
            _ => None,
        }
    }

    /// `p.field.shape[k]` / `shape(p.field)[k]` of an array field of a struct (a helper's
    /// `n_cols = shape(markers)[0]` once `markers = args_markers.markers` is inlined).
    fn field_shape(&self, f: &FnCx, e: &Json) -> Option<(String, Ty)> {
        let value = e.get("value");
        let x = if value.kind() == "Attribute" && value.get("attr").as_str() == Some("shape") {
            value.get("value")
        } else if value.kind() == "Call"
            && value.get("keywords").as_list().is_empty()
            && name_of(value.get("func")).is_some_and(|n| {
                self.from_imports
                    .get(n)
                    .is_some_and(|(m, fname)| *m == "numpy" && fname == "shape")
            })
        {
            match value.get("args").as_list() {
                [x] => x,
                _ => return None,
            }
        } else {
            return None;
        };
        let (key, t) = struct_field(f, x)?;
        let rank = t.rank() as i64;
        let k = const_int(e.get("slice"))?;
        let k = if k < 0 { k + rank } else { k };
        (rank > 0 && (0..rank).contains(&k))
            .then(|| (format!("{key}.shape[{k}]"), Ty::Scalar(Scalar::I64)))
    }

    pub(crate) fn subscript(&mut self, f: &FnCx, e: &Json) -> R<(String, Ty)> {
        if let Some(r) = self.field_shape(f, e) {
            return Ok(r);
        }
        let value = e.get("value");
        // a.shape[k], shape(a)[k]
        if let Some(base) = self.shape_base(value) {
            let rank = f.vars.get(base).map(Ty::rank).unwrap_or(0);
            // a negative axis counts from the end, as in Python
            let axis = const_int(e.get("slice")).map(|k| if k < 0 { k + rank as i64 } else { k });
            return match axis {
                Some(k) if rank > 0 && k >= 0 && (k as usize) < rank => {
                    Ok((extent(f, base, k as usize), Ty::Scalar(Scalar::I64)))
                }
                _ => Err(self.unsupported(
                    e,
                    "shape",
                    format!("'{base}.shape[...]' needs a constant axis of an array"),
                )),
            };
        }
        if let Some((key, s)) = struct_field_array(f, value) {
            let idx = indices(e);
            if idx.len() != 1 {
                return Err(self.e(
                    PortErrorKind::Unsupported,
                    e.line(),
                    "subscript",
                    Some(&key),
                    format!(
                        "'{key}' is a 1-D pointer field but is indexed with {}",
                        idx.len()
                    ),
                ));
            }
            if const_int(idx[0]).is_some_and(|v| v < 0) {
                return Err(self.e(
                    PortErrorKind::Unsupported,
                    e.line(),
                    "negative index",
                    Some(&key),
                    format!("negative index into the pointer field '{key}' (its length is not known in the kernel)"),
                ));
            }
            let (x, ti) = self.expr(f, idx[0])?;
            if !ti.scalar().is_int() || ti.rank() > 0 {
                return Err(self.e(
                    PortErrorKind::Unsupported,
                    e.line(),
                    "index",
                    Some(&key),
                    format!("index of '{key}' is not an integer"),
                ));
            }
            return Ok((format!("{key}[{}]", strip_parens(&x)), Ty::Scalar(s)));
        }
        let view = struct_field(f, value).filter(|(_, t)| matches!(t, Ty::View(..)));
        let (base, t): (&str, Ty) = match &view {
            Some((key, t)) => (key.as_str(), t.clone()),
            None => {
                let base = name_of(value).ok_or_else(|| {
                    self.unsupported(
                        e,
                        "subscript",
                        "only arrays named by a variable can be indexed".into(),
                    )
                })?;
                let t = f.vars.get(base).cloned().ok_or_else(|| {
                    self.unsupported(e, "name", format!("'{base}' is not defined"))
                })?;
                (base, t)
            }
        };
        let idx = indices(e);
        if t.rank() == 0 {
            return Err(self.unsupported(
                e,
                "subscript",
                format!("'{base}' is a scalar, not an array"),
            ));
        }
        if idx.len() != t.rank() {
            return Err(self.e(PortErrorKind::Unsupported, e.line(), "subscript", Some(base),
                format!("'{base}' has {} dimensions but is indexed with {} (array views and slices are not translated)", t.rank(), idx.len())));
        }
        let mut parts = Vec::new();
        for (axis, i) in idx.into_iter().enumerate() {
            if i.kind() == "Slice" {
                return Err(self.e(
                    PortErrorKind::Unsupported,
                    e.line(),
                    "slice",
                    Some(base),
                    format!("slice of '{base}' (write the loop out)"),
                ));
            }
            if let Some(c) = const_int(i).filter(|v| *v < 0) {
                // a[-1] is a[n - 1], as in Python (n the extent of that axis)
                parts.push(format!("{} - {}", extent(f, base, axis), -c));
                continue;
            }
            let (x, ti) = self.expr(f, i)?;
            if !ti.scalar().is_int() || ti.rank() > 0 {
                return Err(self.e(
                    PortErrorKind::Unsupported,
                    e.line(),
                    "index",
                    Some(base),
                    format!("index of '{base}' is not an integer"),
                ));
            }
            parts.push(x);
        }
        Ok((
            format!("{base}({})", parts.join(", ")),
            Ty::Scalar(t.scalar()),
        ))
    }

    pub(crate) fn binop(&mut self, f: &FnCx, e: &Json) -> R<(String, Ty)> {
        let (a, ta) = self.expr(f, e.get("left"))?;
        let (b, tb) = self.expr(f, e.get("right"))?;
        if ta.rank() > 0 || tb.rank() > 0 {
            return Err(self.unsupported(
                e,
                "array arithmetic",
                "whole-array arithmetic (write the loop out)".into(),
            ));
        }
        let (sa, sb) = (ta.scalar(), tb.scalar());
        let j = sa.join(sb);
        let sc = Ty::Scalar;
        let op = e.get("op").kind();
        Ok(match op {
            "Add" | "Sub" | "Mult" => {
                let o = match op {
                    "Add" => "+",
                    "Sub" => "-",
                    _ => "*",
                };
                (format!("({a} {o} {b})"), sc(j))
            }
            "Div" => {
                if j.is_int() {
                    (format!("((double){a} / (double){b})"), sc(Scalar::F64))
                } else {
                    (format!("({a} / {b})"), sc(j))
                }
            }
            "FloorDiv" => {
                if let Some(k) = power_of_two(e.get("right")).filter(|_| j.is_int()) {
                    // floor division by 2^k is the arithmetic shift, for either sign of a
                    // (the general form costs a division and two tests in a hot loop:
                    // struphy's find_span halves its interval with `// 2`)
                    (format!("((long long)({a}) >> {k})"), sc(Scalar::I64))
                } else if j.is_int() {
                    self.prelude.insert("floordiv");
                    (format!("cunumpy_port_floordiv({a}, {b})"), sc(Scalar::I64))
                } else {
                    self.prelude.insert("ffloordiv");
                    (format!("cunumpy_port_ffloordiv({a}, {b})"), sc(Scalar::F64))
                }
            }
            "Mod" => {
                if let Some(k) = power_of_two(e.get("right")).filter(|_| j.is_int()) {
                    // Python's a % 2^k is in [0, 2^k) for either sign of a: the low bits
                    (
                        format!("((long long)({a}) & {})", (1i64 << k) - 1),
                        sc(Scalar::I64),
                    )
                } else if j.is_int() {
                    self.prelude.insert("mod");
                    (format!("cunumpy_port_mod({a}, {b})"), sc(Scalar::I64))
                } else {
                    self.prelude.insert("fmod");
                    (format!("cunumpy_port_fmod({a}, {b})"), sc(Scalar::F64))
                }
            }
            "Pow" => {
                if j.is_int() {
                    if const_int(e.get("right")).is_some_and(|v| v < 0) {
                        return Err(self.unsupported(
                            e,
                            "power",
                            "integer ** negative integer".into(),
                        ));
                    }
                    self.prelude.insert("ipow");
                    (format!("cunumpy_port_ipow({a}, {b})"), sc(Scalar::I64))
                } else if const_int(e.get("right")) == Some(2) {
                    (format!("({a} * {a})"), sc(j))
                } else {
                    (format!("pow((double){a}, (double){b})"), sc(Scalar::F64))
                }
            }
            other => {
                return Err(self.unsupported(e, "operator", format!("binary operator {other}")))
            }
        })
    }

    pub(crate) fn call(&mut self, f: &FnCx, e: &Json) -> R<(String, Ty)> {
        let out = self.call_any(f, e)?;
        if let Some(n) = name_of(e.get("func")).filter(|n| self.tuple_ret.contains_key(*n)) {
            return Err(self.unsupported(
                e,
                "call",
                format!("{n}() returns a tuple: only `a, b = {n}(...)` is translated"),
            ));
        }
        Ok(out)
    }

    /// A call (see `call`), a helper returning a tuple included (its text then lacks the
    /// out-parameters, which `a, b = f(...)` adds).
    pub(crate) fn call_any(&mut self, f: &FnCx, e: &Json) -> R<(String, Ty)> {
        let func = e.get("func");
        let args = e.get("args").as_list();
        if !e.get("keywords").as_list().is_empty() {
            return Err(self.unsupported(
                e,
                "call",
                "keyword arguments in calls are not translated".into(),
            ));
        }
        let (module, name): (Option<&'static str>, String) = match func.kind() {
            "Name" => {
                let n = name_of(func).unwrap_or("").to_string();
                match self.from_imports.get(&n) {
                    Some((m, real)) => (Some(*m), real.clone()),
                    None => (None, n),
                }
            }
            "Attribute" => {
                let base = name_of(func.get("value")).unwrap_or("");
                let method = func.get("attr").as_str().unwrap_or("");
                if matches!(method, "conjugate" | "conj")
                    && args.is_empty()
                    && !self.modules.contains_key(base)
                {
                    // Complex kernels are refused by type, so this is the conjugate of a real.
                    let (x, t) = self.expr(f, func.get("value"))?;
                    if t.rank() == 0 {
                        return Ok((x, t));
                    }
                }
                match self.modules.get(base) {
                    Some(m) => (
                        Some(*m),
                        func.get("attr").as_str().unwrap_or("").to_string(),
                    ),
                    None if !base.is_empty() && !f.vars.contains_key(base) => {
                        return Err(self.unsupported(
                            e,
                            "helper from another module",
                            format!("{base}.{method}(): functions of other modules are not translated yet (port that one by hand, or bring it into this module)"),
                        ))
                    }
                    None => {
                        return Err(self.unsupported(
                            e,
                            "call",
                            format!("method call .{method}()"),
                        ))
                    }
                }
            }
            _ => return Err(self.unsupported(e, "call", "this call".into())),
        };
        let helper_call = module.is_none() && self.funcs.contains_key(&name);
        if helper_call {
            self.check_atomic_args(f, &name, args, e.line())?;
            for (k, a) in args.iter().enumerate() {
                if let Some(v) = name_of(a)
                    .filter(|v| f.vars.get(*v).is_some_and(Ty::is_view) && !f.params.contains(*v))
                {
                    if self.helper_writes(&name, k, &mut BTreeSet::new()) {
                        return Err(self.e(PortErrorKind::Unsupported, e.line(), "write through a view", Some(v),
                            format!("passes '{v}', a view of another array's elements, to {name}(), which writes it")));
                    }
                }
            }
        }
        let mut xs = Vec::new();
        for a in args {
            // a struct argument passed on to a helper (by value: its arrays are the same)
            match name_of(a).and_then(|n| f.vars.get(n)) {
                Some(t @ Ty::Struct(..)) if helper_call => {
                    xs.push((name_of(a).unwrap_or("").to_string(), t.clone()))
                }
                _ => match struct_field(f, a) {
                    // an array-view field of a struct passed to a helper: the view itself
                    Some((key, t @ Ty::View(..))) if helper_call => xs.push((key, t)),
                    _ => xs.push(self.expr(f, a)?),
                },
            }
        }
        let scalar_args = |t: &Translator, xs: &[(String, Ty)]| -> R<()> {
            if xs.iter().any(|(_, t)| t.rank() > 0) {
                return Err(t.unsupported(
                    e,
                    "call",
                    format!("{name}() of an array (write the loop out)"),
                ));
            }
            Ok(())
        };
        if module.is_none() && !self.funcs.contains_key(&name) {
            match name.as_str() {
                "int" | "float" if xs.len() == 1 => {
                    scalar_args(self, &xs)?;
                    let s = if name == "int" { Scalar::I64 } else { Scalar::F64 };
                    return Ok((format!("(({})({}))", s.c(), xs[0].0), Ty::Scalar(s)));
                }
                "abs" if xs.len() == 1 => {
                    scalar_args(self, &xs)?;
                    let s = xs[0].1.scalar();
                    let c = if s.is_int() { "llabs" } else { "fabs" };
                    return Ok((format!("{c}({})", xs[0].0), Ty::Scalar(if s.is_int() { Scalar::I64 } else { s })));
                }
                "min" | "max" if xs.len() == 2 => {
                    scalar_args(self, &xs)?;
                    self.prelude.insert("minmax");
                    let s = xs[0].1.scalar().join(xs[1].1.scalar());
                    return Ok((format!("cunumpy_port_{name}<{}>({}, {})", s.c(), xs[0].0, xs[1].0), Ty::Scalar(s)));
                }
                "len" if xs.len() == 1 && xs[0].1.rank() > 0 => {
                    return Ok((extent(f, &xs[0].0, 0), Ty::Scalar(Scalar::I64)));
                }
                _ => return Err(self.unsupported(e, "call", format!("{name}() is not a function of this module nor a math/numpy scalar function"))),
            }
        }
        if module == Some("numpy")
            && matches!(name.as_str(), "mod" | "remainder")
            && args.len() == 2
        {
            // NumPy's mod is Python's %: the sign of the divisor
            let fake = Json::Obj(BTreeMap::from([
                ("_t".to_string(), Json::Str("BinOp".into())),
                ("_line".to_string(), Json::Num(e.line().to_string())),
                ("left".to_string(), args[0].clone()),
                (
                    "op".to_string(),
                    Json::Obj(BTreeMap::from([(
                        "_t".to_string(),
                        Json::Str("Mod".into()),
                    )])),
                ),
                ("right".to_string(), args[1].clone()),
            ]));
            return self.binop(f, &fake);
        }
        if module == Some("numpy") && name == "size" && xs.len() == 1 && xs[0].1.rank() > 0 {
            return Ok((format!("{}.size()", xs[0].0), Ty::Scalar(Scalar::I64)));
        }
        if let Some(m) = module {
            scalar_args(self, &xs)?;
            let c = match (m, name.as_str()) {
                (_, "abs" | "absolute") => "fabs",
                _ => MATH
                    .iter()
                    .find(|(p, _)| *p == name)
                    .map(|(_, c)| *c)
                    .ok_or_else(|| {
                        self.unsupported(e, "call", format!("{m}.{name}() is not translated"))
                    })?,
            };
            if matches!(name.as_str(), "min" | "max" | "minimum" | "maximum") {
                return Err(self.unsupported(e, "call", format!("{m}.{name}()")));
            }
            let text = format!(
                "{c}({})",
                xs.iter()
                    .map(|(x, _)| x.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            // math.floor/ceil return Python ints; numpy's return floats.
            if m == "math" && matches!(name.as_str(), "floor" | "ceil") {
                return Ok((format!("((long long){text})"), Ty::Scalar(Scalar::I64)));
            }
            let all_f32 = xs.iter().all(|(_, t)| t.scalar() == Scalar::F32);
            return Ok((
                text,
                Ty::Scalar(if all_f32 { Scalar::F32 } else { Scalar::F64 }),
            ));
        }
        // A function of this module: a __device__ function.
        let tys: Vec<Ty> = xs.iter().map(|(_, t)| t.clone()).collect();
        let ret = self.helper(&name, &tys, e.line())?;
        let text = format!(
            "{name}({})",
            xs.iter()
                .map(|(x, _)| x.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        Ok((text, ret))
    }

    // ---------------------------------------------------------------- functions

    /// The parameters of `def` with their types: annotation, else `given` (a sample call or
    /// the call site).
    pub(crate) fn params(
        &self,
        def: &Json,
        given: &dyn Fn(usize, &str) -> Option<Ty>,
    ) -> R<Vec<(String, Ty)>> {
        let fname = def.get("name").as_str().unwrap_or("");
        let a = def.get("args");
        if !a.get("vararg").eq(&Json::Null)
            || !a.get("kwarg").eq(&Json::Null)
            || !a.get("kwonlyargs").as_list().is_empty()
        {
            return Err(err(
                PortErrorKind::Unsupported,
                fname,
                def.line(),
                "parameters",
                None,
                "*args, **kwargs and keyword-only parameters are not translated".into(),
            ));
        }
        let mut out = Vec::new();
        for (k, p) in a.get("args").as_list().iter().enumerate() {
            let n = p.get("arg").as_str().unwrap_or("").to_string();
            let t = match given(k, &n) {
                Some(t) => t,
                None => {
                    let ann = p.get("annotation");
                    let text = match ann.kind() {
                        "Constant" => ann.get("value").as_str().unwrap_or("").to_string(),
                        "Name" => name_of(ann).unwrap_or("").to_string(),
                        "" => {
                            return Err(err(PortErrorKind::Input, fname, def.line(), "parameter", Some(&n),
                                format!("parameter '{n}' has no type: annotate it ('float[:,:]', 'int', ...) or give a sample call")))
                        }
                        _ => return Err(err(PortErrorKind::Unsupported, fname, def.line(), "annotation", Some(&n), format!("the annotation of '{n}'"))),
                    };
                    parse_annotation(&text).map_err(|m| {
                        err(
                            PortErrorKind::Unsupported,
                            fname,
                            def.line(),
                            "annotation",
                            Some(&n),
                            format!("parameter '{n}': {m}"),
                        )
                    })?
                }
            };
            out.push((n, t));
        }
        Ok(out)
    }

    /// Translates helper `name` for arguments of types `tys` (once), returning its return type.
    pub(crate) fn helper(&mut self, name: &str, tys: &[Ty], line: u32) -> R<Ty> {
        if let Some(t) = self.helpers_done.get(name) {
            return Ok(t.clone());
        }
        if self.helpers_busy.contains(name) {
            return Err(self.e(
                PortErrorKind::Unsupported,
                line,
                "recursion",
                None,
                format!("recursive call of {name}()"),
            ));
        }
        let def = *self.funcs.get(name).ok_or_else(|| {
            self.e(
                PortErrorKind::Unsupported,
                line,
                "call",
                None,
                format!("{name}()"),
            )
        })?;
        self.helpers_busy.insert(name.to_string());
        let outer = std::mem::replace(&mut self.current, name.to_string());
        let params = self.params(def, &|k, _| tys.get(k).cloned())?;
        if params.len() != tys.len() {
            return Err(self.e(
                PortErrorKind::Input,
                line,
                "call",
                None,
                format!(
                    "{name}() takes {} arguments, called with {}",
                    params.len(),
                    tys.len()
                ),
            ));
        }
        let mut f = self.function(name, &params, def.get("body").as_list())?;
        // The return type: the annotation, else the type of the first `return value`.
        let ret = match def.get("returns").kind() {
            "" => None,
            "Constant" | "Name" => {
                let r = def.get("returns");
                let text = r.get("value").as_str().or_else(|| name_of(r)).unwrap_or("");
                if text == "None" {
                    None
                } else {
                    Some(parse_annotation(text).map_err(|m| {
                        self.e(
                            PortErrorKind::Unsupported,
                            def.line(),
                            "annotation",
                            None,
                            format!("return type: {m}"),
                        )
                    })?)
                }
            }
            _ => {
                return Err(self.e(
                    PortErrorKind::Unsupported,
                    def.line(),
                    "annotation",
                    None,
                    "return annotation".into(),
                ))
            }
        };
        // `return a, b, c` (struphy's get_spans): scalars returned through out-parameters
        let mut tuple: Option<Vec<Scalar>> = None;
        if ret.is_none() {
            if let Some(r) =
                first_return_value(def.get("body").as_list()).filter(|r| r.kind() == "Tuple")
            {
                // the types of every `return a, b` joined (`return n - 1, 0.5`, `return i, x`)
                let mut ts: Vec<Scalar> = Vec::new();
                let mut all = Vec::new();
                return_values(def.get("body").as_list(), &mut all);
                for v in all.into_iter().filter(|v| v.kind() == "Tuple") {
                    for (k, x) in v.get("elts").as_list().iter().enumerate() {
                        let t = self.ty(&f, x)?;
                        if t.rank() > 0 {
                            return Err(self.e(
                                PortErrorKind::Unsupported,
                                r.line(),
                                "return",
                                None,
                                "returning a tuple with an array in it".into(),
                            ));
                        }
                        match ts.get_mut(k) {
                            Some(old) if *old != t.scalar() => *old = old.join(t.scalar()),
                            Some(_) => {}
                            None => ts.push(t.scalar()),
                        }
                    }
                }
                self.tuple_ret.insert(name.to_string(), ts.clone());
                tuple = Some(ts);
            }
        }
        let ret = match ret {
            Some(t) => Some(t),
            None if tuple.is_some() => None,
            None => self.first_return(&f, def.get("body").as_list())?,
        };
        if ret.as_ref().is_some_and(|t| t.rank() > 0) {
            return Err(self.e(
                PortErrorKind::Unsupported,
                def.line(),
                "return",
                None,
                "returning an array".into(),
            ));
        }
        let body = self.block(&mut f, def.get("body").as_list(), 1, None)?;
        let ret_c = ret.as_ref().map(|t| t.scalar().c()).unwrap_or("void");
        let mut ps: Vec<String> = params
            .iter()
            .map(|(n, t)| self.helper_param(n, t))
            .collect();
        for (k, t) in tuple.iter().flatten().enumerate() {
            ps.push(format!("{}* cunumpy_ret{k}", t.c()));
        }
        let mut src = self.comment(def.line(), "");
        src.push_str(&format!(
            "CUNUMPY_PORT_HELPER __device__ {ret_c} {name}({}) {{\n",
            ps.join(", ")
        ));
        src.push_str(&self.decls(&f, "    "));
        src.push_str(&body);
        src.push_str("}\n");
        self.helper_src.push(src);
        self.prelude.insert("helper");
        let ret = ret.unwrap_or(Ty::Scalar(Scalar::Bool));
        self.current = outer;
        self.helpers_busy.remove(name);
        self.helpers_done.insert(name.to_string(), ret.clone());
        Ok(ret)
    }

    pub(crate) fn first_return(&mut self, f: &FnCx, body: &[Json]) -> R<Option<Ty>> {
        for s in body {
            if s.kind() == "Return" && s.get("value") != &Json::Null {
                return Ok(Some(self.ty(f, s.get("value"))?));
            }
            for key in ["body", "orelse"] {
                if let Some(t) = self.first_return(f, s.get(key).as_list())? {
                    return Ok(Some(t));
                }
            }
        }
        Ok(None)
    }

    /// A function's names and types: the parameters, then every local, typed by its
    /// assignments (repeated until nothing changes, so `x = 0` then `x = x + 0.5` is a double).
    pub(crate) fn function(
        &mut self,
        name: &str,
        params: &[(String, Ty)],
        body: &[Json],
    ) -> R<FnCx> {
        let mut f = FnCx {
            name: name.to_string(),
            dead_fills: crate::dead_fill::dead_zero_fills(body, &self.funcs)
                .into_iter()
                .chain(crate::fill_triangle::dead_table_fills(body))
                .collect(),
            partial_fills: crate::fill_prefix::partial_fills(body),
            ..FnCx::default()
        };
        f.local_partial_fills = crate::fill_prefix::local_partial_fills(body);
        f.deferred_fills = crate::fill_prefix::deferred_fills(body, &self.funcs)
            .into_iter()
            .filter(|(line, _)| !f.dead_fills.contains(line))
            .collect();
        for (n, t) in params {
            f.vars.insert(n.clone(), t.clone());
            f.params.insert(n.clone());
        }
        let helpers_before = self.helper_src.len();
        for _ in 0..8 {
            let before = f.vars.clone();
            let mut assigns = Vec::new();
            collect_assigns(body, &mut assigns);
            for (target, value, for_loop) in assigns {
                self.infer(&mut f, target, value, for_loop)?;
            }
            if before == f.vars {
                break;
            }
        }
        // Inference may have translated helpers with provisional types; they are kept (types
        // of helper arguments are fixed by their first call).
        let _ = helpers_before;
        Ok(f)
    }

    pub(crate) fn infer(
        &mut self,
        f: &mut FnCx,
        target: &Json,
        value: Option<&Json>,
        for_loop: bool,
    ) -> R<()> {
        let bind = |f: &mut FnCx, n: &str, t: Ty| {
            if f.params.contains(n) {
                return;
            }
            match f.vars.get(n) {
                None => {
                    f.vars.insert(n.to_string(), t);
                    f.order.push(n.to_string());
                }
                Some(Ty::Scalar(old)) if t.rank() == 0 => {
                    let j = if *old == t.scalar() {
                        *old
                    } else {
                        old.join(t.scalar())
                    };
                    f.vars.insert(n.to_string(), Ty::Scalar(j));
                }
                Some(_) => {}
            }
        };
        if for_loop {
            if let Some(n) = name_of(target) {
                bind(f, n, Ty::Scalar(Scalar::I64));
            }
            return Ok(());
        }
        let Some(value) = value else { return Ok(()) };
        match target.kind() {
            "Name" => {
                let n = name_of(target).unwrap_or("");
                if let Some(t) = self.local_array(value)? {
                    bind(f, n, t);
                } else if let Some((_, t, _)) = self.row_view(f, value) {
                    bind(f, n, t);
                } else if let Some((_, t, _)) = self.strided_view(f, value) {
                    bind(f, n, t);
                } else if let Some((_, t @ Ty::View(..))) = struct_field(f, value) {
                    // `b1 = args.bn1`: a local view of a struct's array-view field
                    bind(f, n, t);
                } else if let Ok(t) = self.ty(f, value) {
                    bind(f, n, t);
                }
            }
            "Tuple" => {
                let elts = target.get("elts").as_list();
                if value.kind() == "Tuple" {
                    for (t, v) in elts.iter().zip(value.get("elts").as_list()) {
                        if let (Some(n), Ok(ty)) = (name_of(t), self.ty(f, v)) {
                            bind(f, n, ty);
                        }
                    }
                } else if self.shape_base(value).is_some() {
                    for t in elts {
                        if let Some(n) = name_of(t) {
                            bind(f, n, Ty::Scalar(Scalar::I64));
                        }
                    }
                } else if value.kind() == "Call" {
                    if let Some(h) =
                        name_of(value.get("func")).filter(|h| self.funcs.contains_key(*h))
                    {
                        let h = h.to_string();
                        if self.call_any(f, value).is_ok() {
                            if let Some(ts) = self.tuple_ret.get(&h).cloned() {
                                for (t, s) in elts.iter().zip(ts) {
                                    if let Some(n) = name_of(t) {
                                        bind(f, n, Ty::Scalar(s));
                                    }
                                }
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// `np.empty((3, 3))`, `np.zeros(3, dtype=int)`, `empty(3, dtype=float)` (after `from
    /// numpy import empty`): a small fixed-size local array.
    pub(crate) fn local_array(&self, v: &Json) -> R<Option<Ty>> {
        if v.kind() != "Call" {
            return Ok(None);
        }
        let func = v.get("func");
        let (module, fname): (Option<&str>, String) = match func.kind() {
            "Attribute" => (
                self.modules
                    .get(name_of(func.get("value")).unwrap_or(""))
                    .copied(),
                func.get("attr").as_str().unwrap_or("").to_string(),
            ),
            "Name" => match self.from_imports.get(name_of(func).unwrap_or("")) {
                Some((m, real)) => (Some(*m), real.clone()),
                None => (None, String::new()),
            },
            _ => (None, String::new()),
        };
        let fname = fname.as_str();
        if module != Some("numpy") || !matches!(fname, "empty" | "zeros" | "ones") {
            return Ok(None);
        }
        let args = v.get("args").as_list();
        let shape = args.first().ok_or_else(|| {
            self.unsupported(v, "local array", "np.empty() without a shape".into())
        })?;
        let dims: Vec<Option<i64>> = if shape.kind() == "Tuple" {
            shape.get("elts").as_list().iter().map(const_int).collect()
        } else {
            vec![const_int(shape)]
        };
        if dims.iter().any(|d| d.is_some_and(|d| d <= 0)) {
            return Err(self.unsupported(
                v,
                "local array",
                format!("np.{fname}() with a shape that is not positive"),
            ));
        }
        let dynamic = dims.iter().any(Option::is_none);
        let mut s = Scalar::F64;
        let dtype_arg = args.get(1).or_else(|| {
            v.get("keywords")
                .as_list()
                .iter()
                .find(|k| k.get("arg").as_str() == Some("dtype"))
                .map(|k| k.get("value"))
        });
        if let Some(d) = dtype_arg {
            let text = match d.kind() {
                "Name" => name_of(d).unwrap_or("").to_string(),
                "Attribute" => d.get("attr").as_str().unwrap_or("").to_string(),
                "Constant" => d.get("value").as_str().unwrap_or("").to_string(),
                _ => String::new(),
            };
            s = scalar_named(&text)
                .map_err(|m| self.unsupported(v, "local array", format!("dtype: {m}")))?;
        }
        if dynamic {
            return Ok(Some(Ty::LocalDyn(s, dims.len())));
        }
        Ok(Some(Ty::Local(
            s,
            dims.into_iter().map(|d| d.unwrap_or(1) as usize).collect(),
        )))
    }

    /// `a[i, :]`, `a[i, j, :, :]` (leading indices, then whole trailing axes) of an array
    /// argument or an array-view field: (the array's C name, the view's type, the leading
    /// indices).
    pub(crate) fn row_view(&self, f: &FnCx, e: &Json) -> Option<(String, Ty, Vec<Json>)> {
        if e.kind() != "Subscript" {
            return None;
        }
        let (base, t) = view_base(f, e.get("value"))?;
        let ix = indices(e);
        let lead: Vec<Json> = ix
            .iter()
            .take_while(|i| i.kind() != "Slice")
            .map(|i| (*i).clone())
            .collect();
        let rest = &ix[lead.len()..];
        if lead.is_empty()
            || rest.is_empty()
            || !rest.iter().all(|i| is_whole_axis(i))
            || lead.len() + rest.len() > t.rank()
        {
            return None;
        }
        if lead.iter().any(|i| const_int(i).is_some_and(|v| v < 0)) {
            return None;
        }
        let r = t.rank() - lead.len();
        Some((base, Ty::View(t.scalar(), r), lead))
    }

    /// `a[:, :, k]`, `a[i, :, k]` (whole axes and integer indices, an index after a whole axis,
    /// so no trailing-axes view) of a C-ordered array argument or array-view field: (the
    /// array's C name, the strided view's type, per axis the index or `None` for a whole axis).
    pub(crate) fn strided_view<'j>(
        &self,
        f: &FnCx,
        e: &'j Json,
    ) -> Option<(String, Ty, Vec<Option<&'j Json>>)> {
        if e.kind() != "Subscript" || self.row_view(f, e).is_some() {
            return None;
        }
        let (base, t) = view_base(f, e.get("value"))?;
        let ix = indices(e);
        if ix.len() != t.rank() {
            return None;
        }
        let mut pattern = Vec::new();
        for i in ix {
            if is_whole_axis(i) {
                pattern.push(None);
            } else if i.kind() == "Slice" || const_int(i).is_some_and(|v| v < 0) {
                return None;
            } else {
                pattern.push(Some(i));
            }
        }
        let kept = pattern.iter().filter(|p| p.is_none()).count();
        if kept == 0 || kept == pattern.len() {
            return None;
        }
        Some((base, Ty::Strided(t.scalar(), kept), pattern))
    }

    /// `x = np.zeros((p + 1, q))` with run-time extents: the local's view takes them, checked
    /// against the per-thread reserve, then it is filled.
    fn dynamic_local(
        &mut self,
        f: &FnCx,
        s: &Json,
        n: &str,
        sc: Scalar,
        rank: usize,
        pad: &str,
    ) -> R<String> {
        let value = s.get("value");
        let shape = value
            .get("args")
            .as_list()
            .first()
            .cloned()
            .unwrap_or(Json::Null);
        let dims: Vec<Json> = if shape.kind() == "Tuple" {
            shape.get("elts").as_list().to_vec()
        } else {
            vec![shape]
        };
        let mut ext = Vec::new();
        for d in &dims {
            let (x, t) = self.expr(f, d)?;
            if !t.scalar().is_int() || t.rank() > 0 {
                return Err(self.unsupported(
                    s,
                    "local array",
                    format!("an extent of '{n}' that is not an integer"),
                ));
            }
            ext.push(format!("(long long)({})", strip_parens(&x)));
        }
        self.prelude.insert("localcap");
        let func = value.get("func");
        let fname = match func.kind() {
            "Name" => self
                .from_imports
                .get(name_of(func).unwrap_or(""))
                .map(|(_, real)| real.as_str())
                .unwrap_or(""),
            _ => func.get("attr").as_str().unwrap_or(""),
        };
        let c = sc.c();
        let mut out = self.comment(s.line(), pad);
        out.push_str(&format!(
            "{pad}{n} = CArray{rank}D<{c}>{{{n}_data, {{{}}}}};\n",
            ext.join(", ")
        ));
        out.push_str(&format!(
            "{pad}if ({n}.size() < 0 || {n}.size() > CUNUMPY_PORT_LOCAL_CAP) {{\n{pad}    cunumpy_port_cap_exceeded(\"{}: local array '{n}' (line {})\", (long long){n}.size());\n{pad}}}\n",
            self.current,
            s.line()
        ));
        if fname == "zeros" && f.dead_fills.contains(&s.line()) {
            out.push_str(&format!("{pad}{DEAD_FILL_NOTE}\n"));
        } else if fname == "zeros" && f.deferred_fills.contains_key(&s.line()) {
            out.push_str(&format!("{pad}{DEFERRED_FILL_NOTE}\n"));
        } else if let Some(start) = f
            .local_partial_fills
            .get(&s.line())
            .filter(|_| fname == "zeros")
        {
            let (from, _) = self.expr(f, &start.clone())?;
            out.push_str(&format!("{pad}{PARTIAL_FILL_NOTE}\n"));
            out.push_str(&format!("{pad}for (long long cunumpy_f = {from}; cunumpy_f < {n}.size(); ++cunumpy_f) {n}_data[cunumpy_f] = ({c})0;\n"));
        } else if fname != "empty" {
            let fill = if fname == "zeros" { "0" } else { "1" };
            out.push_str(&format!("{pad}for (long long cunumpy_f = 0; cunumpy_f < {n}.size(); ++cunumpy_f) {n}_data[cunumpy_f] = ({c}){fill};\n"));
        }
        Ok(out)
    }

    /// Declarations of a function's locals (C needs them before any block uses them).
    pub(crate) fn decls(&self, f: &FnCx, pad: &str) -> String {
        let mut out = String::new();
        for n in &f.order {
            match &f.vars[n] {
                Ty::Scalar(s) => out.push_str(&format!("{pad}{} {n};\n", s.c())),
                Ty::View(s, rank) => {
                    out.push_str(&format!("{pad}CArray{rank}D<{}> {n};\n", s.c()));
                }
                Ty::Strided(s, rank) => {
                    out.push_str(&format!("{pad}Array{rank}D<{}> {n};\n", s.c()));
                }
                Ty::LocalDyn(s, rank) => {
                    let zeros = vec!["0"; *rank].join(", ");
                    out.push_str(&format!(
                        "{pad}{} {n}_data[CUNUMPY_PORT_LOCAL_CAP];\n{pad}CArray{rank}D<{}> {n} = {{{n}_data, {{{zeros}}}}};\n",
                        s.c(), s.c()
                    ));
                }
                Ty::Local(s, dims) => {
                    let total: usize = dims.iter().product();
                    let ext: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
                    out.push_str(&format!(
                        "{pad}{} {n}_data[{total}];\n{pad}CArray{}D<{}> {n} = {{{n}_data, {{{}}}}};\n",
                        s.c(), dims.len(), s.c(), ext.join(", ")
                    ));
                }
                Ty::Array(..) | Ty::Struct(..) => {}
            }
        }
        out
    }

    // ---------------------------------------------------------------- statements

    /// Statements at indentation `depth`; `par` is the parallel loop's context when inside it.
    pub(crate) fn block(
        &mut self,
        f: &mut FnCx,
        body: &[Json],
        depth: usize,
        par: Option<&Par>,
    ) -> R<String> {
        let mut out = String::new();
        for s in body {
            out.push_str(&self.stmt(f, s, depth, par)?);
        }
        Ok(out)
    }

    pub(crate) fn stmt(
        &mut self,
        f: &mut FnCx,
        s: &Json,
        depth: usize,
        par: Option<&Par>,
    ) -> R<String> {
        let fills = self.deferred_fills_before(f, s, depth)?;
        Ok(fills + &self.stmt_itself(f, s, depth, par)?)
    }

    /// The fills that wait for this statement's call (`FnCx::deferred_fills`): each local it
    /// receives, from where the call stops writing it.
    fn deferred_fills_before(&mut self, f: &mut FnCx, s: &Json, depth: usize) -> R<String> {
        let pad = "    ".repeat(depth);
        let waiting: Vec<(String, Json)> = f
            .deferred_fills
            .values()
            .filter(|(call, _, _)| *call == s.line())
            .map(|(_, a, start)| (a.clone(), start.clone()))
            .collect();
        let mut out = String::new();
        for (a, start) in waiting {
            let Some(Ty::LocalDyn(sc, _)) = f.vars.get(&a).cloned() else {
                continue;
            };
            let (from, _) = self.expr(f, &start)?;
            out.push_str(&format!(
                "{pad}// the zeros of '{a}' that the call below does not write first\n\
                 {pad}for (long long cunumpy_f = {from}; cunumpy_f < {a}.size(); ++cunumpy_f) {a}_data[cunumpy_f] = ({})0;\n",
                sc.c()
            ));
        }
        Ok(out)
    }

    fn stmt_itself(
        &mut self,
        f: &mut FnCx,
        s: &Json,
        depth: usize,
        par: Option<&Par>,
    ) -> R<String> {
        let pad = "    ".repeat(depth);
        let kind = s.kind();
        // Docstrings and `pass` make no code.
        if kind == "Pass" || (kind == "Expr" && s.get("value").kind() == "Constant") {
            return Ok(String::new());
        }
        // A local view (`row = a[i, :]`) is read only: a write through it would escape the
        // race proof, which sees the array only where the view is made.
        let targets: Vec<&Json> = match kind {
            "Assign" => s.get("targets").as_list().iter().collect(),
            "AugAssign" => vec![s.get("target")],
            _ => vec![],
        };
        for t in targets {
            if let Some(v) = local_view_written(f, t) {
                return Err(self.e(PortErrorKind::Unsupported, s.line(), "write through a view", Some(&v),
                    format!("writes through '{v}', a view of another array's elements (write into that array instead)")));
            }
        }
        let slice_target = match kind {
            "Assign" => s.get("targets").as_list().iter().any(has_slice),
            "AugAssign" => has_slice(s.get("target")),
            _ => false,
        };
        if slice_target {
            if let Some(start) = f.partial_fills.get(&s.line()).cloned() {
                return self.partial_fill(f, s, start, depth, par);
            }
            return self.slice_assign(f, s, depth, par);
        }
        let mut out = if matches!(kind, "If" | "For" | "While") {
            String::new()
        } else {
            self.comment(s.line(), &pad)
        };
        match kind {
            "Assign" => {
                let targets = s.get("targets").as_list();
                if targets.len() != 1 {
                    return Err(self.unsupported(
                        s,
                        "assignment",
                        "chained assignment a = b = ...".into(),
                    ));
                }
                let (target, value) = (&targets[0], s.get("value"));
                match target.kind() {
                    "Name" => {
                        let n = name_of(target).unwrap_or("");
                        if let Some(Ty::LocalDyn(sc, rank)) = self.local_array(value)?.as_ref() {
                            if let Some(Ty::Local(_, dims)) =
                                f.vars.get(n).filter(|_| !f.params.contains(n))
                            {
                                return Err(self.unsupported(
                                    s,
                                    "assignment",
                                    format!("'{n}' is allocated with a size known only at run time here and with shape {dims:?} before (give each its own name)"),
                                ));
                            }
                            return self.dynamic_local(f, s, n, *sc, *rank, &pad);
                        }
                        if let Some(Ty::Local(sc, dims)) = self.local_array(value)?.as_ref() {
                            // the buffer and the extents (`extent`) are those of the first allocation
                            let declared = f.vars.get(n).filter(|_| !f.params.contains(n));
                            if let Some(t) =
                                declared.filter(|t| !matches!(t, Ty::Local(_, d) if d == dims))
                            {
                                let before = match t {
                                    Ty::Local(_, d) => format!("with shape {d:?}"),
                                    _ => "as another kind of array".to_string(),
                                };
                                return Err(self.unsupported(
                                    s,
                                    "assignment",
                                    format!("'{n}' is allocated with shape {dims:?} here and {before} before (give each its own name)"),
                                ));
                            }
                            let total: usize = dims.iter().product();
                            let func = value.get("func");
                            let fname = match func.kind() {
                                "Name" => self
                                    .from_imports
                                    .get(name_of(func).unwrap_or(""))
                                    .map(|(_, real)| real.as_str())
                                    .unwrap_or(""),
                                _ => func.get("attr").as_str().unwrap_or(""),
                            };
                            if fname == "zeros" && f.dead_fills.contains(&s.line()) {
                                out.push_str(&format!("{pad}{DEAD_FILL_NOTE}\n"));
                            } else if fname != "empty" {
                                let fill = if fname == "zeros" { "0" } else { "1" };
                                out.push_str(&format!("{pad}for (int k = 0; k < {total}; ++k) {n}_data[k] = ({}){fill};\n", sc.c()));
                            } else {
                                out.truncate(0);
                            }
                            return Ok(out);
                        }
                        if f.params.contains(n) && f.vars.get(n).is_some_and(|t| t.rank() > 0) {
                            return Err(self.unsupported(
                                s,
                                "assignment",
                                format!("rebinding array parameter '{n}'"),
                            ));
                        }
                        if let Some(Ty::Local(_, dims)) = f.vars.get(n) {
                            return Err(self.unsupported(
                                s,
                                "assignment",
                                format!("rebinding local array '{n}' (allocated with shape {dims:?}) to another array"),
                            ));
                        }
                        if matches!(f.vars.get(n), Some(Ty::View(..))) && !f.params.contains(n) {
                            if let Some((base, Ty::View(sc, r), lead)) = self.row_view(f, value) {
                                // a view of the trailing axes: the array's own elements
                                let mut lead_c = Vec::new();
                                for i in &lead {
                                    let (x, ti) = self.expr(f, i)?;
                                    if !ti.scalar().is_int() || ti.rank() > 0 {
                                        return Err(self.unsupported(
                                            s,
                                            "index",
                                            format!("index of '{base}' is not an integer"),
                                        ));
                                    }
                                    lead_c.push(format!("(long long)({})", strip_parens(&x)));
                                }
                                let total = base_rank(f, &base);
                                let mut off = String::from("0");
                                for (d, i) in lead_c.iter().enumerate() {
                                    off = format!("({off}) * {base}.shape[{d}] + {i}");
                                }
                                let tail: Vec<String> = (lead.len()..total)
                                    .map(|d| format!("{base}.shape[{d}]"))
                                    .collect();
                                for d in lead.len()..total {
                                    off = format!("({off}) * {base}.shape[{d}]");
                                }
                                out.push_str(&format!(
                                    "{pad}{n} = CArray{r}D<{}>{{{base}.data + {off}, {{{}}}}};\n",
                                    sc.c(),
                                    tail.join(", ")
                                ));
                                return Ok(out);
                            }
                        }
                        if let Some(Ty::Strided(sc, r)) =
                            f.vars.get(n).filter(|_| !f.params.contains(n)).cloned()
                        {
                            if let Some((base, _, pattern)) = self.strided_view(f, value) {
                                // the kept axes of a C-ordered array: its own elements
                                let total = pattern.len();
                                let cstride = |d: usize| -> String {
                                    let v: Vec<String> = (d + 1..total)
                                        .map(|k| format!("{base}.shape[{k}]"))
                                        .collect();
                                    if v.is_empty() {
                                        "1".into()
                                    } else {
                                        v.join(" * ")
                                    }
                                };
                                let mut off = Vec::new();
                                let (mut shape, mut strides) = (Vec::new(), Vec::new());
                                for (d, p) in pattern.iter().enumerate() {
                                    match p {
                                        Some(i) => {
                                            let (x, ti) = self.expr(f, i)?;
                                            if !ti.scalar().is_int() || ti.rank() > 0 {
                                                return Err(self.unsupported(
                                                    s,
                                                    "index",
                                                    format!("index of '{base}' is not an integer"),
                                                ));
                                            }
                                            off.push(format!(
                                                "(long long)({}) * {}",
                                                strip_parens(&x),
                                                cstride(d)
                                            ));
                                        }
                                        None => {
                                            shape.push(format!("{base}.shape[{d}]"));
                                            strides.push(cstride(d));
                                        }
                                    }
                                }
                                debug_assert_eq!(shape.len(), r);
                                out.push_str(&format!(
                                    "{pad}{n} = Array{r}D<{}>{{{base}.data + {}, {{{}}}, {{{}}}}};\n",
                                    sc.c(),
                                    off.join(" + "),
                                    shape.join(", "),
                                    strides.join(", ")
                                ));
                                return Ok(out);
                            }
                        }
                        if let Some(Ty::View(sc, r)) =
                            f.vars.get(n).filter(|_| !f.params.contains(n))
                        {
                            if let Some((key, ft)) = struct_field(f, value) {
                                // `b1 = args.bn1`: the view itself (the same elements)
                                if ft != Ty::View(*sc, *r) {
                                    return Err(self.unsupported(s, "struct field",
                                        format!("'{n}' is bound to views of different types ('{key}' is not a {}-D view of {})", r, sc.c())));
                                }
                                out.push_str(&format!("{pad}{n} = {key};\n"));
                                return Ok(out);
                            }
                        }
                        let (x, t) = self.expr(f, value)?;
                        if t.rank() > 0 {
                            return Err(self.unsupported(
                                s,
                                "assignment",
                                format!("'{n}' would be an array view (not translated)"),
                            ));
                        }
                        out.push_str(&format!("{pad}{n} = {};\n", strip_parens(&x)));
                    }
                    "Subscript" => {
                        let (lhs, _) = self.subscript(f, target)?;
                        let (x, _) = self.expr(f, value)?;
                        out.push_str(&format!("{pad}{lhs} = {};\n", strip_parens(&x)));
                    }
                    "Tuple" => {
                        let elts = target.get("elts").as_list();
                        if let Some(base) = self.shape_base(value) {
                            for (k, t) in elts.iter().enumerate() {
                                let n = name_of(t).unwrap_or("");
                                out.push_str(&format!("{pad}{n} = {};\n", extent(f, base, k)));
                            }
                        } else if value.kind() == "Tuple"
                            && value.get("elts").as_list().len() == elts.len()
                        {
                            // Python evaluates every right-hand side first.
                            let mut vals = Vec::new();
                            for v in value.get("elts").as_list() {
                                vals.push(self.expr(f, v)?);
                            }
                            let inner = format!("{pad}    ");
                            out.push_str(&format!("{pad}{{\n"));
                            for (k, (x, t)) in vals.iter().enumerate() {
                                out.push_str(&format!(
                                    "{inner}{} cunumpy_tmp{k} = {x};\n",
                                    t.scalar().c()
                                ));
                            }
                            for (k, t) in elts.iter().enumerate() {
                                let n = name_of(t).ok_or_else(|| {
                                    self.unsupported(s, "assignment", "tuple target".into())
                                })?;
                                out.push_str(&format!("{inner}{n} = cunumpy_tmp{k};\n"));
                            }
                            out.push_str(&format!("{pad}}}\n"));
                        } else if let Some(ts) = name_of(value.get("func"))
                            .filter(|_| value.kind() == "Call")
                            .and_then(|h| self.funcs.contains_key(h).then_some(h))
                            .map(str::to_string)
                            .and_then(|h| {
                                // translates the helper, so its tuple is known
                                let _ = self.call_any(f, value);
                                self.tuple_ret.get(&h).cloned()
                            })
                        {
                            // `a, b, c = f(...)`: f returns through out-parameters
                            if ts.len() != elts.len() {
                                return Err(self.unsupported(
                                    s,
                                    "assignment",
                                    format!("{} names for a tuple of {}", elts.len(), ts.len()),
                                ));
                            }
                            let (x, _) = self.call_any(f, value)?;
                            let inner = format!("{pad}    ");
                            out.push_str(&format!("{pad}{{\n"));
                            let mut outs = Vec::new();
                            for (k, t) in ts.iter().enumerate() {
                                out.push_str(&format!("{inner}{} cunumpy_tmp{k};\n", t.c()));
                                outs.push(format!("&cunumpy_tmp{k}"));
                            }
                            let open = x.find('(').unwrap_or(x.len());
                            let sep = if x[open..].starts_with("()") {
                                ""
                            } else {
                                ", "
                            };
                            let call = format!(
                                "{}{sep}{})",
                                x.strip_suffix(')').unwrap_or(&x),
                                outs.join(", ")
                            );
                            out.push_str(&format!("{inner}{call};\n"));
                            for (k, t) in elts.iter().enumerate() {
                                let n = name_of(t).ok_or_else(|| {
                                    self.unsupported(s, "assignment", "tuple target".into())
                                })?;
                                out.push_str(&format!("{inner}{n} = cunumpy_tmp{k};\n"));
                            }
                            out.push_str(&format!("{pad}}}\n"));
                        } else {
                            return Err(self.unsupported(
                                s,
                                "assignment",
                                "tuple assignment from something other than a tuple, .shape or a function returning a tuple"
                                    .into(),
                            ));
                        }
                    }
                    _ => {
                        return Err(self.unsupported(
                            s,
                            "assignment",
                            "this assignment target".into(),
                        ))
                    }
                }
            }
            "AugAssign" => {
                let target = s.get("target");
                let op = s.get("op").kind();
                let (lhs, lt) = match target.kind() {
                    "Name" => self.expr(f, target)?,
                    "Subscript" => self.subscript(f, target)?,
                    _ => {
                        return Err(self.unsupported(
                            s,
                            "assignment",
                            "this assignment target".into(),
                        ))
                    }
                };
                let (x, _) = self.expr(f, s.get("value"))?;
                let x = strip_parens(&x).to_string();
                let array = if target.kind() == "Subscript" {
                    array_key(f, target.get("value"))
                } else {
                    None
                };
                let atomic = array.is_some_and(|a| par.is_some_and(|p| p.atomic.contains(&a)))
                    || (matches!(op, "Add" | "Sub") && self.atomic_in_helper(f, target));
                if atomic {
                    let v = if op == "Sub" { format!("-({x})") } else { x };
                    self.atomic_used = true;
                    out.push_str(&format!(
                        "{pad}cunumpy_atomic_add(&{lhs}, ({})({v}));\n",
                        lt.scalar().c()
                    ));
                } else {
                    let rhs = match op {
                        "Add" | "Sub" | "Mult" | "Div" => {
                            let o = match op {
                                "Add" => "+",
                                "Sub" => "-",
                                "Mult" => "*",
                                _ => "/",
                            };
                            if op == "Div" && lt.scalar().is_int() {
                                return Err(self.unsupported(
                                    s,
                                    "assignment",
                                    "integer /= (the result would be a float)".into(),
                                ));
                            }
                            format!("{lhs} {o}= {x};")
                        }
                        "Mod" | "FloorDiv" => {
                            let fake = Json::Obj(BTreeMap::from([
                                ("_t".to_string(), Json::Str("BinOp".into())),
                                ("_line".to_string(), Json::Num(s.line().to_string())),
                                ("left".to_string(), target.clone()),
                                ("op".to_string(), s.get("op").clone()),
                                ("right".to_string(), s.get("value").clone()),
                            ]));
                            format!("{lhs} = {};", self.binop(f, &fake)?.0)
                        }
                        other => {
                            return Err(self.unsupported(
                                s,
                                "operator",
                                format!("augmented operator {other}"),
                            ))
                        }
                    };
                    out.push_str(&format!("{pad}{rhs}\n"));
                }
            }
            "If" => {
                out.push_str(&self.comment(s.line(), &pad));
                let c = self.expr(f, s.get("test"))?.0;
                out.push_str(&format!("{pad}if ({}) {{\n", strip_parens(&c)));
                out.push_str(&self.block(f, s.get("body").as_list(), depth + 1, par)?);
                let orelse = s.get("orelse").as_list();
                if !orelse.is_empty() {
                    out.push_str(&format!("{pad}}} else {{\n"));
                    out.push_str(&self.block(f, orelse, depth + 1, par)?);
                }
                out.push_str(&format!("{pad}}}\n"));
            }
            "While" => {
                out.push_str(&self.comment(s.line(), &pad));
                if !s.get("orelse").as_list().is_empty() {
                    return Err(self.unsupported(s, "while/else", "while ... else".into()));
                }
                let c = self.expr(f, s.get("test"))?.0;
                out.push_str(&format!("{pad}while ({}) {{\n", strip_parens(&c)));
                out.push_str(&self.block(f, s.get("body").as_list(), depth + 1, par)?);
                out.push_str(&format!("{pad}}}\n"));
            }
            "For" => {
                out.push_str(&self.comment(s.line(), &pad));
                let (var, start, stop, step) = self.range(f, s)?;
                let cmp = if step.starts_with('-') { ">" } else { "<" };
                out.push_str(&format!(
                    "{pad}for ({var} = {start}; {var} {cmp} {stop}; {var} += {step}) {{\n"
                ));
                out.push_str(&self.block(f, s.get("body").as_list(), depth + 1, par)?);
                out.push_str(&format!("{pad}}}\n"));
            }
            "Break" | "Continue" => out.push_str(&format!("{pad}{};\n", kind.to_lowercase())),
            "Return" => {
                if s.get("value") == &Json::Null {
                    out.push_str(&format!("{pad}return;\n"));
                } else if let Some(ts) = self.tuple_ret.get(&f.name).cloned() {
                    let v = s.get("value");
                    let elts = v.get("elts").as_list();
                    if v.kind() != "Tuple" || elts.len() != ts.len() {
                        return Err(self.unsupported(
                            s,
                            "return",
                            format!(
                                "{}() returns a tuple of {} elsewhere; every return must",
                                f.name,
                                ts.len()
                            ),
                        ));
                    }
                    for (k, x) in elts.iter().enumerate() {
                        let x = self.expr(f, x)?.0;
                        out.push_str(&format!("{pad}*cunumpy_ret{k} = {};\n", strip_parens(&x)));
                    }
                    out.push_str(&format!("{pad}return;\n"));
                } else {
                    let x = self.expr(f, s.get("value"))?.0;
                    out.push_str(&format!("{pad}return {x};\n"));
                }
            }
            "Expr" => {
                let v = s.get("value");
                if v.kind() != "Call" {
                    return Err(self.unsupported(
                        s,
                        "expression",
                        "an expression statement that is not a call".into(),
                    ));
                }
                let x = self.expr(f, v)?.0;
                out.push_str(&format!("{pad}{x};\n"));
            }
            other => {
                return Err(self.unsupported(
                    s,
                    other,
                    format!("the statement {other} is not translated"),
                ))
            }
        }
        Ok(out)
    }

    /// `for v in range(...)`: (variable, start, stop, step) as C text; the step must be a
    /// constant so the loop's direction is known.
    pub(crate) fn range(&mut self, f: &FnCx, s: &Json) -> R<(String, String, String, String)> {
        let var = name_of(s.get("target"))
            .ok_or_else(|| {
                self.unsupported(
                    s,
                    "for",
                    "a for loop over something other than one variable".into(),
                )
            })?
            .to_string();
        let it = s.get("iter");
        if it.kind() != "Call"
            || name_of(it.get("func")) != Some("range")
            || !s.get("orelse").as_list().is_empty()
        {
            return Err(self.unsupported(
                s,
                "for",
                "a for loop not over range(...) (or with an else)".into(),
            ));
        }
        let args = it.get("args").as_list();
        let mut xs = Vec::new();
        for a in args {
            let (x, t) = self.expr(f, a)?;
            if !t.scalar().is_int() || t.rank() > 0 {
                return Err(self.unsupported(s, "for", "range() of a non-integer".into()));
            }
            xs.push(x);
        }
        let (start, stop, step) = match xs.len() {
            1 => ("0".to_string(), xs[0].clone(), "1".to_string()),
            2 => (xs[0].clone(), xs[1].clone(), "1".to_string()),
            3 => {
                let c = const_int(&args[2]).filter(|c| *c != 0).ok_or_else(|| {
                    self.unsupported(
                        s,
                        "for",
                        "range() with a step that is not a non-zero integer constant".into(),
                    )
                })?;
                (xs[0].clone(), xs[1].clone(), c.to_string())
            }
            _ => {
                return Err(self.unsupported(
                    s,
                    "for",
                    "range() with no or too many arguments".into(),
                ))
            }
        };
        Ok((var, start, stop, step))
    }
}

/// The value of the first `return value` of a body (nested blocks included).
fn first_return_value(body: &[Json]) -> Option<&Json> {
    for s in body {
        if s.kind() == "Return" && s.get("value") != &Json::Null {
            return Some(s.get("value"));
        }
        for key in ["body", "orelse"] {
            if let Some(v) = first_return_value(s.get(key).as_list()) {
                return Some(v);
            }
        }
    }
    None
}

/// The values of every `return value` of a body (nested blocks included), in order.
fn return_values<'j>(body: &'j [Json], out: &mut Vec<&'j Json>) {
    for s in body {
        if s.kind() == "Return" && s.get("value") != &Json::Null {
            out.push(s.get("value"));
        }
        for key in ["body", "orelse"] {
            return_values(s.get(key).as_list(), out);
        }
    }
}

/// The local view a subscript target writes through (`row[k] = ...`), if any.
fn local_view_written(f: &FnCx, target: &Json) -> Option<String> {
    if target.kind() != "Subscript" {
        return None;
    }
    let n = name_of(target.get("value"))?;
    (f.vars.get(n).is_some_and(Ty::is_view) && !f.params.contains(n)).then(|| n.to_string())
}

/// The extent of axis `k` of the array named `base`, as C: the number itself for a local array
/// of fixed shape (`empty((3, 3))`), so that the compiler sees the trip count of every loop
/// over it, unrolls it and keeps the array in registers (read from the view, NVRTC left such
/// loops rolled and the arrays in local memory: a struphy pusher lost a third of its speed);
/// `base.shape[k]` otherwise.
pub(crate) fn extent(f: &FnCx, base: &str, k: usize) -> String {
    match f.vars.get(base) {
        Some(Ty::Local(_, dims)) if !f.params.contains(base) && k < dims.len() => {
            dims[k].to_string()
        }
        _ => format!("{base}.shape[{k}]"),
    }
}

/// `k` when `e` is the integer constant 2^k (1 <= 2^k <= 2^62).
fn power_of_two(e: &Json) -> Option<u32> {
    const_int(e)
        .filter(|v| *v > 0 && v.count_ones() == 1 && *v <= 1 << 62)
        .map(|v| v.trailing_zeros())
}

/// The rank of the array named by `key` (an argument, a local, `p.field`).
fn base_rank(f: &FnCx, key: &str) -> usize {
    key_type(f, key)
        .0
        .max(f.vars.get(key).map(Ty::rank).unwrap_or(0))
}

/// `(a < b)` -> `a < b` (the condition of an `if` has its own parentheses).
pub(crate) fn strip_parens(c: &str) -> &str {
    match c.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
        Some(inner) if balanced(inner) => inner,
        _ => c,
    }
}

/// Whether `s` has balanced parentheses (so outer ones may be dropped).
fn balanced(s: &str) -> bool {
    let mut depth = 0i32;
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0
}

fn module_kind(name: &str) -> Option<&'static str> {
    match name {
        "math" => Some("math"),
        "numpy" => Some("numpy"),
        _ => None,
    }
}

/// Every (target, value, is-for-loop-target) of a block, in source order.
pub(crate) fn collect_assigns<'j>(
    body: &'j [Json],
    out: &mut Vec<(&'j Json, Option<&'j Json>, bool)>,
) {
    for s in body {
        match s.kind() {
            "Assign" => {
                for t in s.get("targets").as_list() {
                    out.push((t, Some(s.get("value")), false));
                }
            }
            "AnnAssign" => out.push((s.get("target"), Some(s.get("value")), false)),
            "For" => out.push((s.get("target"), None, true)),
            _ => {}
        }
        for key in ["body", "orelse"] {
            collect_assigns(s.get(key).as_list(), out);
        }
    }
}

/// `p.x` where `p` is a struct argument and `x` one of its 1-D pointer fields: ("p.x",
/// element type).
pub(crate) fn struct_field_array(f: &FnCx, value: &Json) -> Option<(String, Scalar)> {
    struct_field(f, value).and_then(|(k, t)| match t {
        Ty::Array(s, _) => Some((k, s)),
        _ => None,
    })
}

/// `p.x` where `p` is a struct argument and `x` one of its array fields (a 1-D pointer or an
/// array view): ("p.x", its type).
pub(crate) fn struct_field(f: &FnCx, value: &Json) -> Option<(String, Ty)> {
    if value.kind() != "Attribute" {
        return None;
    }
    let base = name_of(value.get("value"))?;
    let attr = value.get("attr").as_str()?;
    match f.vars.get(base) {
        Some(Ty::Struct(_, fields)) => fields.iter().find_map(|(n, t)| match t {
            Ty::Array(..) | Ty::View(..) if n == attr => {
                Some((format!("{base}.{attr}"), t.clone()))
            }
            _ => None,
        }),
        _ => None,
    }
}

/// The array a subscript's base names, as the proof keys it: an array argument (`rho`) or an
/// array field of a struct argument (`p.x`); None for local arrays and anything else.
pub(crate) fn array_key(f: &FnCx, value: &Json) -> Option<String> {
    if let Some((key, _)) = struct_field(f, value) {
        return Some(key);
    }
    let n = name_of(value)?;
    matches!(f.vars.get(n), Some(Ty::Array(..))).then(|| n.to_string())
}

/// The rank and element type of an array key (see `array_key`).
pub(crate) fn key_type(f: &FnCx, key: &str) -> (usize, Scalar) {
    match key.split_once('.') {
        Some((base, field)) => match f.vars.get(base) {
            Some(Ty::Struct(_, fields)) => fields
                .iter()
                .find(|(n, _)| n == field)
                .map(|(_, t)| (t.rank().max(1), t.scalar()))
                .unwrap_or((1, Scalar::F64)),
            _ => (1, Scalar::F64),
        },
        None => f
            .vars
            .get(key)
            .map(|t| (t.rank(), t.scalar()))
            .unwrap_or((0, Scalar::F64)),
    }
}

/// The parallel loop: the arrays whose `+=`/`-=` became atomic adds.
pub struct Par {
    pub atomic: BTreeSet<String>,
}

/// The array a view subscript reads: an array-view field of a struct, or an array argument or
/// view local (its C name and type).
fn view_base(f: &FnCx, value: &Json) -> Option<(String, Ty)> {
    match struct_field(f, value) {
        Some((k, t @ Ty::View(..))) => Some((k, t)),
        Some(_) => None,
        None => {
            let n = name_of(value)?;
            match f.vars.get(n) {
                Some(t @ (Ty::Array(..) | Ty::View(..))) => Some((n.to_string(), t.clone())),
                _ => None,
            }
        }
    }
}

/// `:` (a whole axis: a slice with no bound and no step).
fn is_whole_axis(i: &Json) -> bool {
    i.kind() == "Slice"
        && matches!(i.get("lower"), Json::Null)
        && matches!(i.get("upper"), Json::Null)
        && matches!(i.get("step"), Json::Null)
}
