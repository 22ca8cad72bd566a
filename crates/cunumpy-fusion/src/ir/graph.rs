//! The traced graph: symbolic values (inputs with dtype and ndim, scalar parameters), typed
//! elementwise ops from the op table, casts and reductions. The builder type-checks every call
//! with NumPy 2 rules, inserts the casts the op loops need, and hash-conses nodes (common
//! subexpression elimination); `finish` removes dead nodes.

use crate::error::{FusionError, Result};
use crate::ir::ops::Op;
use crate::ir::promote::{result_is_weak, ArgType};
use cunumpy_core::dtype::{DType, DTypeKind};
use std::collections::{HashMap, HashSet};
use std::fmt;

/// A symbolic value of the graph being built (an index into its nodes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(pub u32);

impl Value {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceKind {
    Sum,
    Prod,
    Min,
    Max,
    Any,
    All,
    /// `sum / (count - ddof)`: `mean` is `ddof = 0`; `var` builds on it.
    Mean {
        ddof: u32,
    },
}

/// Every reduction a fused function may call by name (`xp.sum(a)`, `a.sum()`), with the name
/// it is traced under: the [`ReduceKind`]s (NumPy's `amin`/`amax` are `min`/`max`), and
/// `var`/`std`, which [`GraphBuilder::var`]/[`GraphBuilder::std`] build from them. The Python
/// tracer takes this list from here.
pub const REDUCTIONS: &[(&str, &str)] = &[
    ("sum", "sum"),
    ("prod", "prod"),
    ("min", "min"),
    ("max", "max"),
    ("amin", "min"),
    ("amax", "max"),
    ("mean", "mean"),
    ("var", "var"),
    ("std", "std"),
    ("any", "any"),
    ("all", "all"),
];

impl ReduceKind {
    pub fn name(self) -> &'static str {
        match self {
            ReduceKind::Sum => "sum",
            ReduceKind::Prod => "prod",
            ReduceKind::Min => "min",
            ReduceKind::Max => "max",
            ReduceKind::Any => "any",
            ReduceKind::All => "all",
            ReduceKind::Mean { .. } => "mean",
        }
    }

    /// Parses `"sum"`, `"prod"`, `"min"`/`"amin"`, `"max"`/`"amax"`, `"any"`, `"all"`,
    /// `"mean"` (the names of [`REDUCTIONS`] but `var` and `std`).
    pub fn from_name(name: &str) -> Option<ReduceKind> {
        let name = REDUCTIONS
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(name, |(_, traced)| traced);
        Some(match name {
            "sum" => ReduceKind::Sum,
            "prod" => ReduceKind::Prod,
            "min" => ReduceKind::Min,
            "max" => ReduceKind::Max,
            "any" => ReduceKind::Any,
            "all" => ReduceKind::All,
            "mean" => ReduceKind::Mean { ddof: 0 },
            _ => return None,
        })
    }

    /// (accumulator dtype, result dtype) for an argument dtype, as NumPy types the reduction
    /// (`sum` of small integers accumulates in int64/uint64; float32 sums accumulate in
    /// float64 and round to float32 at the end).
    pub fn types(self, arg: DType) -> (DType, DType) {
        let wide_int = |d: DType| match d.kind() {
            DTypeKind::Bool | DTypeKind::Signed => DType::Int64,
            DTypeKind::Unsigned => DType::UInt64,
            _ => d,
        };
        match self {
            ReduceKind::Sum | ReduceKind::Prod => match arg.kind() {
                DTypeKind::Float => (DType::Float64, arg),
                DTypeKind::Complex => (DType::Complex128, arg),
                _ => (wide_int(arg), wide_int(arg)),
            },
            ReduceKind::Min | ReduceKind::Max => (arg, arg),
            ReduceKind::Any | ReduceKind::All => (DType::Bool, DType::Bool),
            ReduceKind::Mean { .. } => match arg.kind() {
                DTypeKind::Float => (DType::Float64, arg),
                DTypeKind::Complex => (DType::Complex128, arg),
                _ => (DType::Float64, DType::Float64),
            },
        }
    }
}

/// Which axes a reduction runs over (NumPy's `axis=`: `None`, an int or a tuple; negative
/// values count from the end).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Axis {
    All,
    One(isize),
    Many(Vec<isize>),
}

/// What a node is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// The `index`-th array argument.
    Input { index: usize },
    /// The `index`-th scalar parameter (a kernel parameter: new values never recompile).
    Scalar { index: usize },
    /// An op of the table; the arguments already have the op's loop dtypes.
    Op { op: Op, args: Vec<Value> },
    /// `astype` (and the casts the builder inserts).
    Cast { arg: Value },
    /// A reduction over sorted, distinct `axes` of the argument.
    Reduce {
        kind: ReduceKind,
        arg: Value,
        axes: Vec<usize>,
        keepdims: bool,
    },
    /// A basic index of the argument (`a[1:-1, None, 3]`): one `Slice` or `Int` per dimension
    /// of the argument, in order, with `NewAxis` anywhere (no `Ellipsis`). A view: the
    /// planner turns it into an index map of the loop that reads it, never a copy.
    View { arg: Value, items: Vec<IndexItem> },
    /// `arg` indexed along `axis` by an integer array (`a[idx]`, `a[:, idx]`): the result
    /// has `arg`'s dims before `axis`, then `index`'s, then `arg`'s after `axis`. Negative
    /// indices count from the end; an index out of range is an `IndexError`.
    Gather {
        arg: Value,
        index: Value,
        axis: usize,
    },
}

/// One item of a basic index, as Python spells it: `start:stop:step`, an integer (drops the
/// dimension), `None` (a new axis of length 1) or `...` (as many full slices as needed; the
/// builder expands it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexItem {
    Slice {
        start: Option<i64>,
        stop: Option<i64>,
        step: i64,
    },
    Int(i64),
    NewAxis,
    Ellipsis,
}

impl IndexItem {
    /// The full slice `:`.
    pub const ALL: IndexItem = IndexItem::Slice {
        start: None,
        stop: None,
        step: 1,
    };
}

impl fmt::Display for IndexItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let opt = |v: Option<i64>| v.map(|x| x.to_string()).unwrap_or_default();
        match self {
            IndexItem::Slice { start, stop, step } if *step == 1 => {
                write!(f, "{}:{}", opt(*start), opt(*stop))
            }
            IndexItem::Slice { start, stop, step } => {
                write!(f, "{}:{}:{step}", opt(*start), opt(*stop))
            }
            IndexItem::Int(i) => write!(f, "{i}"),
            IndexItem::NewAxis => write!(f, "None"),
            IndexItem::Ellipsis => write!(f, "..."),
        }
    }
}

/// One node: what it is, its dtype, its number of dimensions and whether it is weak (a Python
/// scalar or an operator result on Python scalars alone).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    pub kind: NodeKind,
    pub dtype: DType,
    pub ndim: usize,
    pub weak: bool,
}

/// Declared array argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InputDecl {
    pub dtype: DType,
    pub ndim: usize,
}

/// Declared scalar parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ScalarDecl {
    /// The C type the value is passed as: bool / int64 / float64 for Python scalars.
    pub dtype: DType,
    pub weak: bool,
}

/// A finished graph: nodes in topological order, inputs, scalars and outputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub inputs: Vec<InputDecl>,
    pub scalars: Vec<ScalarDecl>,
    pub outputs: Vec<Value>,
}

impl Graph {
    pub fn node(&self, v: Value) -> &Node {
        &self.nodes[v.index()]
    }
}

/// Builds a [`Graph`]; the tracer calls it once per operation on symbolic values.
#[derive(Default, Debug)]
pub struct GraphBuilder {
    nodes: Vec<Node>,
    inputs: Vec<InputDecl>,
    scalars: Vec<ScalarDecl>,
    outputs: Vec<Value>,
    memo: HashMap<Node, Value>,
    /// Values that are float16 to the user: computed in float32 and rounded to the nearest
    /// float16 value after every operation (as NumPy's float16 loops and CUDA's `__half`
    /// arithmetic do); the caller converts float16 arrays to float32 and back.
    half: HashSet<Value>,
}

fn is_complex(d: DType) -> bool {
    d.kind() == DTypeKind::Complex
}

impl GraphBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    fn push(&mut self, node: Node) -> Value {
        if let Some(v) = self.memo.get(&node) {
            return *v;
        }
        let v = Value(self.nodes.len() as u32);
        self.memo.insert(node.clone(), v);
        self.nodes.push(node);
        v
    }

    fn get(&self, v: Value, op: &str) -> Result<&Node> {
        self.nodes
            .get(v.index())
            .ok_or_else(|| FusionError::UnknownValue {
                op: op.to_string(),
                value: v.0,
            })
    }

    /// Marks a float32 value (an input, a scalar parameter) as float16 to the user: every
    /// operation whose NumPy result is float16 rounds its float32 result to float16.
    pub fn mark_half(&mut self, v: Value) -> Result<()> {
        let n = self.get(v, "float16")?;
        if n.dtype != DType::Float32 {
            return Err(FusionError::Type {
                op: "float16".into(),
                types: vec![n.dtype],
                reason: "only a float32 value can stand for a float16 one".into(),
            });
        }
        self.half.insert(v);
        Ok(())
    }

    /// Whether a value is float16 to the user (see [`GraphBuilder::mark_half`]).
    pub fn is_half(&self, v: Value) -> bool {
        self.half.contains(&v)
    }

    /// `v` rounded to float16 (`astype(float16)`; a float16 value is returned as it is).
    pub fn to_half(&mut self, v: Value) -> Result<Value> {
        if self.is_half(v) {
            return Ok(v);
        }
        let f = self.astype(v, DType::Float32)?;
        let r = self.op(Op::RoundHalf, &[f])?;
        self.half.insert(r);
        Ok(r)
    }

    /// Whether NumPy's result of `op` on these arguments is float16, given that the float32
    /// stand-in computes in float32: the strong arguments are float16 or 8-bit (bool, int8,
    /// uint8), and at least one is float16 or the op is a float function (`sin(int8)` is
    /// float16 in NumPy).
    fn half_result(&self, op: Op, args: &[Value], out: DType) -> bool {
        if out != DType::Float32 {
            return false;
        }
        let operands = if op == Op::Where { &args[1..] } else { args };
        let mut any_half = false;
        let mut any_strong = false;
        for &a in operands {
            let n = &self.nodes[a.index()];
            if self.is_half(a) {
                any_half = true;
                any_strong = true;
            } else if !n.weak {
                any_strong = true;
                if !matches!(n.dtype, DType::Bool | DType::Int8 | DType::UInt8) {
                    return false;
                }
            }
        }
        any_strong && (any_half || op.def().rule == crate::ir::ops::Rule::FloatMath)
    }

    /// The dtype, ndim and weak flag of a value (the tracer exposes them as `.dtype`, `.ndim`).
    pub fn info(&self, v: Value) -> Result<ValueInfo> {
        let n = self.get(v, "info")?;
        Ok(ValueInfo {
            dtype: n.dtype,
            ndim: n.ndim,
            weak: n.weak,
        })
    }

    /// Declares the next array argument.
    pub fn input(&mut self, dtype: DType, ndim: usize) -> Result<Value> {
        let index = self.inputs.len();
        self.inputs.push(InputDecl { dtype, ndim });
        Ok(self.push(Node {
            kind: NodeKind::Input { index },
            dtype,
            ndim,
            weak: false,
        }))
    }

    /// Declares the next scalar parameter. A Python `bool`/`int`/`float` is weak, with dtype
    /// bool/int64/float64; a NumPy scalar is strong, with its own dtype.
    pub fn scalar(&mut self, dtype: DType, weak: bool) -> Result<Value> {
        let index = self.scalars.len();
        self.scalars.push(ScalarDecl { dtype, weak });
        Ok(self.push(Node {
            kind: NodeKind::Scalar { index },
            dtype,
            ndim: 0,
            weak,
        }))
    }

    /// Converts a value (`astype`); a weak value becomes strong. Complex to a real or
    /// integer dtype is refused (NumPy drops the imaginary part with a `ComplexWarning`; take
    /// `real`, `imag` or `absolute` explicitly instead).
    pub fn astype(&mut self, v: Value, dtype: DType) -> Result<Value> {
        let n = self.get(v, "astype")?.clone();
        if is_complex(n.dtype) && !is_complex(dtype) {
            return Err(FusionError::Type {
                op: "astype".into(),
                types: vec![n.dtype, dtype],
                reason: format!(
                    "cannot convert {} to {dtype}: it would drop the imaginary part (NumPy \
                     warns with ComplexWarning); use real(x), imag(x) or abs(x) first",
                    n.dtype
                ),
            });
        }
        if n.dtype == dtype && !n.weak && !self.is_half(v) {
            return Ok(v);
        }
        // (float16 to float32 is a cast node from the float16 value's float32 stand-in: the
        // same value, no longer rounded after each op)
        Ok(self.push(Node {
            kind: NodeKind::Cast { arg: v },
            dtype,
            ndim: n.ndim,
            weak: false,
        }))
    }

    /// Casts to a loop dtype, keeping weakness (an internal conversion, not `astype`).
    fn cast_for_loop(&mut self, v: Value, dtype: DType) -> Value {
        let n = &self.nodes[v.index()];
        if n.dtype == dtype {
            return v;
        }
        let (ndim, weak) = (n.ndim, n.weak);
        self.push(Node {
            kind: NodeKind::Cast { arg: v },
            dtype,
            ndim,
            weak,
        })
    }

    /// Applies an op of the table, by its NumPy name (`"add"`, `"arctan2"`, `"where"`, ...).
    pub fn op_by_name(&mut self, name: &str, args: &[Value]) -> Result<Value> {
        let op = Op::from_name(name).ok_or_else(|| FusionError::UnknownOp {
            op: name.to_string(),
        })?;
        self.op(op, args)
    }

    /// Applies an op of the table with NumPy 2 typing and broadcasting of ndims.
    pub fn op(&mut self, op: Op, args: &[Value]) -> Result<Value> {
        let def = op.def();
        // real and conjugate of a non-complex value are the value itself (NumPy returns it)
        if matches!(op, Op::Real | Op::Conj) && args.len() == 1 {
            let n = self.get(args[0], def.name)?;
            if !is_complex(n.dtype) {
                return Ok(args[0]);
            }
        }
        let mut types = Vec::with_capacity(args.len());
        let mut ndim = 0;
        for &a in args {
            let n = self.get(a, def.name)?;
            types.push(ArgType {
                dtype: n.dtype,
                weak: n.weak,
            });
            ndim = ndim.max(n.ndim);
        }
        let (loop_types, out) = op.signature(&types).map_err(|reason| FusionError::Type {
            op: def.name.to_string(),
            types: types.iter().map(|t| t.dtype).collect(),
            reason,
        })?;
        let weak = result_is_weak(def.operator, &types);
        let half = op != Op::RoundHalf && self.half_result(op, args, out);
        let cast: Vec<Value> = args
            .iter()
            .zip(&loop_types)
            .map(|(&a, &t)| self.cast_for_loop(a, t))
            .collect();
        let v = self.push(Node {
            kind: NodeKind::Op { op, args: cast },
            dtype: out,
            ndim,
            weak,
        });
        if half {
            let r = self.op(Op::RoundHalf, &[v])?;
            self.half.insert(r);
            return Ok(r);
        }
        Ok(v)
    }

    fn normalize_axes(&self, what: &str, ndim: usize, axis: &Axis) -> Result<Vec<usize>> {
        let raw: Vec<isize> = match axis {
            Axis::All => return Ok((0..ndim).collect()),
            Axis::One(a) => vec![*a],
            Axis::Many(v) => v.clone(),
        };
        let mut out = Vec::with_capacity(raw.len());
        for a in raw {
            let n = ndim as isize;
            let norm = if a < 0 { a + n } else { a };
            if norm < 0 || norm >= n {
                return Err(FusionError::Axis {
                    op: what.to_string(),
                    axis: a,
                    ndim,
                });
            }
            let norm = norm as usize;
            if out.contains(&norm) {
                return Err(FusionError::DuplicateAxis {
                    op: what.to_string(),
                    axis: a,
                });
            }
            out.push(norm);
        }
        out.sort_unstable();
        Ok(out)
    }

    /// A reduction (`sum`, `prod`, `min`, `max`, `any`, `all`, `mean`) over `axis`.
    pub fn reduce(
        &mut self,
        kind: ReduceKind,
        v: Value,
        axis: &Axis,
        keepdims: bool,
    ) -> Result<Value> {
        let n = self.get(v, kind.name())?.clone();
        if is_complex(n.dtype) && matches!(kind, ReduceKind::Any | ReduceKind::All) {
            return Err(FusionError::UnsupportedDType {
                op: kind.name().to_string(),
                dtype: n.dtype,
            });
        }
        let axes = self.normalize_axes(kind.name(), n.ndim, axis)?;
        let (_, out) = kind.types(n.dtype);
        let ndim = if keepdims {
            n.ndim
        } else {
            n.ndim - axes.len()
        };
        let r = self.push(Node {
            kind: NodeKind::Reduce {
                kind,
                arg: v,
                axes,
                keepdims,
            },
            dtype: out,
            ndim,
            weak: false,
        });
        if self.is_half(v) && out == DType::Float32 {
            let h = self.op(Op::RoundHalf, &[r])?;
            self.half.insert(h);
            return Ok(h);
        }
        Ok(r)
    }

    /// `var(v, axis, ddof, keepdims)`, NumPy's two-pass definition:
    /// `mean(square(v - mean(v, axis, keepdims=True)), axis, keepdims) * n / (n - ddof)`.
    pub fn var(&mut self, v: Value, axis: &Axis, ddof: u32, keepdims: bool) -> Result<Value> {
        let n = self.get(v, "var")?;
        if is_complex(n.dtype) {
            // NumPy's complex var is the mean of |v - mean|**2 (a real result)
            return Err(FusionError::UnsupportedDType {
                op: "var".into(),
                dtype: n.dtype,
            });
        }
        let m = self.reduce(ReduceKind::Mean { ddof: 0 }, v, axis, true)?;
        let d = self.op(Op::Sub, &[v, m])?;
        let sq = self.op(Op::Mul, &[d, d])?;
        self.reduce(ReduceKind::Mean { ddof }, sq, axis, keepdims)
    }

    /// `std(v, axis, ddof, keepdims)` = `sqrt(var(...))`.
    pub fn std(&mut self, v: Value, axis: &Axis, ddof: u32, keepdims: bool) -> Result<Value> {
        let n = self.get(v, "std")?;
        if is_complex(n.dtype) {
            return Err(FusionError::UnsupportedDType {
                op: "std".into(),
                dtype: n.dtype,
            });
        }
        let var = self.var(v, axis, ddof, keepdims)?;
        self.op(Op::Sqrt, &[var])
    }

    /// A basic index of `v` (`v[1:-1, None, ...]`): slices, integers, new axes and at most
    /// one `...`; dimensions the items do not name are taken whole. A view (no copy).
    pub fn index(&mut self, v: Value, items: &[IndexItem]) -> Result<Value> {
        let n = self.get(v, "index")?.clone();
        let named = items
            .iter()
            .filter(|i| matches!(i, IndexItem::Slice { .. } | IndexItem::Int(_)))
            .count();
        let ellipses = items
            .iter()
            .filter(|i| matches!(i, IndexItem::Ellipsis))
            .count();
        let bad = |reason: String| FusionError::Index {
            op: "index".into(),
            reason,
        };
        if ellipses > 1 {
            return Err(bad(
                "an index can only have a single ellipsis ('...')".into()
            ));
        }
        if named > n.ndim {
            return Err(bad(format!(
                "too many indices for array: array is {}-dimensional, but {named} were indexed",
                n.ndim
            )));
        }
        if items
            .iter()
            .any(|i| matches!(i, IndexItem::Slice { step: 0, .. }))
        {
            return Err(FusionError::Arguments {
                what: "index".into(),
                expected: "a slice step other than zero".into(),
                got: "step 0".into(),
            });
        }
        let mut full = Vec::with_capacity(items.len() + n.ndim);
        for it in items {
            if *it == IndexItem::Ellipsis {
                full.extend(std::iter::repeat_n(IndexItem::ALL, n.ndim - named));
            } else {
                full.push(*it);
            }
        }
        if ellipses == 0 {
            full.extend(std::iter::repeat_n(IndexItem::ALL, n.ndim - named));
        }
        if full.iter().all(|i| *i == IndexItem::ALL) {
            return Ok(v);
        }
        let ndim = full
            .iter()
            .filter(|i| matches!(i, IndexItem::Slice { .. } | IndexItem::NewAxis))
            .count();
        Ok(self.push(Node {
            kind: NodeKind::View {
                arg: v,
                items: full,
            },
            dtype: n.dtype,
            ndim,
            weak: false,
        }))
    }

    /// `v` indexed along `axis` by the integer array `index` (`v[idx]` is axis 0): one pass,
    /// no copy of `v`; bounds are checked when the plan runs.
    pub fn gather(&mut self, v: Value, index: Value, axis: usize) -> Result<Value> {
        let n = self.get(v, "gather")?.clone();
        let ix = self.get(index, "gather")?.clone();
        if !matches!(ix.dtype.kind(), DTypeKind::Signed | DTypeKind::Unsigned) {
            return Err(FusionError::Type {
                op: "gather".into(),
                types: vec![n.dtype, ix.dtype],
                reason: "indexes with an array that is not of an integer dtype (a boolean mask \
                         gives a shape that depends on the data; use where() instead)"
                    .into(),
            });
        }
        if axis >= n.ndim {
            return Err(FusionError::Index {
                op: "gather".into(),
                reason: format!(
                    "too many indices for array: array is {}-dimensional, but {} were indexed",
                    n.ndim,
                    axis + 1
                ),
            });
        }
        Ok(self.push(Node {
            kind: NodeKind::Gather {
                arg: v,
                index,
                axis,
            },
            dtype: n.dtype,
            ndim: n.ndim - 1 + ix.ndim,
            weak: false,
        }))
    }

    /// Marks a value as the next output; returns its output index.
    pub fn output(&mut self, v: Value) -> Result<usize> {
        self.get(v, "output")?;
        self.outputs.push(v);
        Ok(self.outputs.len() - 1)
    }

    /// Finishes the graph: removes nodes no output depends on (dead code) and renumbers.
    pub fn finish(self) -> Result<Graph> {
        if self.outputs.is_empty() {
            return Err(FusionError::NoOutputs);
        }
        let mut live = vec![false; self.nodes.len()];
        for o in &self.outputs {
            live[o.index()] = true;
        }
        for i in (0..self.nodes.len()).rev() {
            if !live[i] {
                continue;
            }
            for a in node_args(&self.nodes[i].kind) {
                live[a.index()] = true;
            }
        }
        let mut remap = vec![Value(u32::MAX); self.nodes.len()];
        let mut nodes = Vec::new();
        for (i, mut n) in self.nodes.into_iter().enumerate() {
            if !live[i] {
                continue;
            }
            match &mut n.kind {
                NodeKind::Op { args, .. } => {
                    for a in args.iter_mut() {
                        *a = remap[a.index()];
                    }
                }
                NodeKind::Cast { arg }
                | NodeKind::Reduce { arg, .. }
                | NodeKind::View { arg, .. } => {
                    *arg = remap[arg.index()];
                }
                NodeKind::Gather { arg, index, .. } => {
                    *arg = remap[arg.index()];
                    *index = remap[index.index()];
                }
                NodeKind::Input { .. } | NodeKind::Scalar { .. } => {}
            }
            remap[i] = Value(nodes.len() as u32);
            nodes.push(n);
        }
        Ok(Graph {
            nodes,
            inputs: self.inputs,
            scalars: self.scalars,
            outputs: self.outputs.iter().map(|o| remap[o.index()]).collect(),
        })
    }
}

/// The arguments of a node.
pub fn node_args(k: &NodeKind) -> Vec<Value> {
    match k {
        NodeKind::Op { args, .. } => args.clone(),
        NodeKind::Cast { arg } | NodeKind::Reduce { arg, .. } | NodeKind::View { arg, .. } => {
            vec![*arg]
        }
        NodeKind::Gather { arg, index, .. } => vec![*arg, *index],
        NodeKind::Input { .. } | NodeKind::Scalar { .. } => vec![],
    }
}

/// What the tracer needs to know about a symbolic value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueInfo {
    pub dtype: DType,
    pub ndim: usize,
    pub weak: bool,
}

impl fmt::Display for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, n) in self.nodes.iter().enumerate() {
            let what = match &n.kind {
                NodeKind::Input { index } => format!("input {index}"),
                NodeKind::Scalar { index } => format!("scalar {index}"),
                NodeKind::Op { op, args } => format!(
                    "{}({})",
                    op.name(),
                    args.iter()
                        .map(|a| format!("%{}", a.0))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                NodeKind::Cast { arg } => format!("astype(%{}, {})", arg.0, n.dtype),
                NodeKind::Reduce {
                    kind,
                    arg,
                    axes,
                    keepdims,
                } => format!(
                    "{}(%{}, axes={:?}, keepdims={})",
                    kind.name(),
                    arg.0,
                    axes,
                    keepdims
                ),
                NodeKind::View { arg, items } => format!(
                    "%{}[{}]",
                    arg.0,
                    items
                        .iter()
                        .map(|i| i.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                NodeKind::Gather { arg, index, axis } => {
                    format!("take(%{}, %{}, axis={axis})", arg.0, index.0)
                }
            };
            writeln!(
                f,
                "%{i} = {what} : {}[{}d]{}",
                n.dtype,
                n.ndim,
                if n.weak { " weak" } else { "" }
            )?;
        }
        let outs: Vec<String> = self.outputs.iter().map(|o| format!("%{}", o.0)).collect();
        writeln!(f, "outputs: {}", outs.join(", "))
    }
}
