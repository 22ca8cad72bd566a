//! CUDA C code generation. Every plan kernel becomes one (or, for a split reduction, two)
//! plain `extern "C" __global__` functions with grid-stride loops, 32-bit indexing when every
//! size allows it, sizes and strides as parameters (the source depends only on dtypes, the
//! broadcast pattern, the index width and, for a reduction, its strategy (for short rows the
//! lanes per row), so new sizes and new scalar values seldom recompile),
//! and deterministic reductions: warp shuffles in a fixed tree, per-block partials combined in
//! a fixed order by a second launch, no atomics.

use crate::codegen::dialect::{
    acc_ctype, acc_dtype, c_type as ctype, combine, init_value, is_complex, op_expression,
};
use crate::ir::graph::ReduceKind;
use crate::plan::{contiguous_istrides, Geometry};
use crate::plan::{
    Body, Launch, LeafSrc, Operand, Param, ParamValue, Plan, Program, RedBody, RegKind, Space,
    Strategy,
};
use cunumpy_core::dtype::DType;
use cunumpy_core::signature::ParamKind;
use std::fmt::Write as _;

mod tiles;

/// Whether a program calls a math-library function (a long computation per element).
fn calls_math(prog: &Program) -> bool {
    prog.regs
        .iter()
        .any(|r| matches!(r.kind, RegKind::Op { op, .. } if op.calls_math_library()))
}

/// The parameters of one launch, collected while its body is generated.
struct Params {
    list: Vec<Param>,
}

/// A pointer parameter to elements of `dtype`.
fn pointer(dtype: DType, is_const: bool) -> ParamKind {
    ParamKind::Pointer {
        dtype: Some(dtype),
        is_const,
    }
}

/// The C type of a launch parameter as the generated kernel declares it (`const double*`,
/// `int`, `cn_c64`, ...).
pub fn param_c_type(p: &Param) -> String {
    match &p.kind {
        ParamKind::Scalar(d) => ctype(*d).to_string(),
        ParamKind::Pointer {
            dtype: Some(d),
            is_const,
        } => format!("{}{}*", if *is_const { "const " } else { "" }, ctype(*d)),
        ParamKind::Pointer {
            dtype: None,
            is_const,
        } => format!("{}void*", if *is_const { "const " } else { "" }),
        // the planner makes only scalars and pointers
        ParamKind::View { .. } | ParamKind::Struct { .. } => String::new(),
    }
}

impl Params {
    /// Adds an integer parameter known at plan time; a name already taken by another value
    /// (two views of one array with different strides) gets a suffix. Returns the name used.
    fn add_int(&mut self, name: &str, dtype: DType, v: i64) -> String {
        let mut k = 1;
        loop {
            let n = if k == 1 {
                name.to_string()
            } else {
                format!("{name}_{k}")
            };
            match self.list.iter().find(|p| p.name == n) {
                None => {
                    self.list.push(Param {
                        name: n.clone(),
                        kind: ParamKind::Scalar(dtype),
                        value: ParamValue::Int(v),
                    });
                    return n;
                }
                Some(p) if p.value == ParamValue::Int(v) => return n,
                Some(_) => k += 1,
            }
        }
    }

    fn add(&mut self, name: &str, kind: ParamKind, value: ParamValue) {
        if !self.list.iter().any(|p| p.name == name) {
            self.list.push(Param {
                name: name.to_string(),
                kind,
                value,
            });
        }
    }
    /// Puts the parameters in their launch order: arrays read, arrays written (and
    /// workspace), scalar parameters, then sizes and strides.
    fn sort(&mut self) {
        self.list.sort_by_key(|p| {
            match (
                &p.value,
                matches!(p.kind, ParamKind::Pointer { is_const: true, .. }),
            ) {
                (
                    ParamValue::Input(_) | ParamValue::Output(_) | ParamValue::Workspace { .. },
                    true,
                ) => 0,
                (
                    ParamValue::Input(_) | ParamValue::Output(_) | ParamValue::Workspace { .. },
                    false,
                ) => 1,
                (ParamValue::Scalar(_), _) => 2,
                (ParamValue::Int(_), _) => 3,
            }
        });
    }

    fn signature(&mut self) -> String {
        self.sort();
        self.list
            .iter()
            .map(|p| {
                if matches!(p.kind, ParamKind::Pointer { .. }) {
                    format!("    {} __restrict__ {}", param_c_type(p), p.name)
                } else {
                    format!("    const {} {}", param_c_type(p), p.name)
                }
            })
            .collect::<Vec<_>>()
            .join(",\n")
    }
}

struct Gen<'p> {
    plan: &'p Plan,
    geometry: &'p Geometry,
    /// The kernel being generated.
    ki: usize,
    idx: &'static str,
}

impl Gen<'_> {
    /// The dtype of the index type (`int` or `long long`).
    fn idx_dtype(&self) -> DType {
        if self.idx == "int" {
            DType::Int32
        } else {
            DType::Int64
        }
    }

    fn index_param(&self, ps: &mut Params, name: &str, v: usize) {
        let d = if self.idx == "int" {
            DType::Int32
        } else {
            DType::Int64
        };
        ps.add(name, ParamKind::Scalar(d), ParamValue::Int(v as i64));
    }

    /// The index expression of a leaf at a point whose linear index is `lin` and whose
    /// coordinates (when needed) are `<prefix><j>`: `lin` for a leaf contiguous over the
    /// space, else its strides, plus its offset (a slice not starting at 0).
    #[allow(clippy::too_many_arguments)]
    fn leaf_index(
        &self,
        ps: &mut Params,
        l: &crate::plan::Leaf,
        p: &str,
        lin: &str,
        prefix: &str,
        stride_param: &str,
        contiguous: &[isize],
        prefix_reg: &str,
    ) -> String {
        let all: Vec<usize> = (0..contiguous.len()).collect();
        let base = if l.strides.iter().all(|&s| s == 0) {
            None
        } else if l.strides == contiguous {
            Some(lin.to_string())
        } else {
            Some(self.offset(ps, &l.strides, &all, prefix, stride_param))
        };
        let off = (l.offset != 0)
            .then(|| ps.add_int(&format!("o{p}"), self.idx_dtype(), l.offset as i64));
        let mut terms: Vec<String> = off.into_iter().chain(base).collect();
        for &(r, st) in &l.dynamic {
            let idx = self.idx;
            if st == 1 {
                terms.push(format!("({idx}){prefix_reg}{r}"));
            } else {
                let sp = ps.add_int(&format!("g{p}"), self.idx_dtype(), st as i64);
                terms.push(format!("({idx}){prefix_reg}{r} * {sp}"));
            }
        }
        if terms.is_empty() {
            "0".into()
        } else {
            terms.join(" + ")
        }
    }

    /// Pointer name and parameter for an array read by a leaf.
    fn read_ptr(&self, ps: &mut Params, src: LeafSrc, dtype: DType) -> Option<String> {
        let (name, value) = match src {
            LeafSrc::Input(i) => (format!("in{i}"), ParamValue::Input(i)),
            LeafSrc::Output(i) => (format!("out{i}"), ParamValue::Output(i)),
            LeafSrc::Buffer(b) => (
                format!("buf{b}"),
                ParamValue::Workspace {
                    offset: self.geometry.offsets[b],
                },
            ),
            LeafSrc::Scalar(_) | LeafSrc::Reduced(_) => return None,
        };
        ps.add(&name, pointer(dtype, true), value);
        Some(name)
    }

    fn write_ptr(&self, ps: &mut Params, dst: Operand, dtype: DType) -> String {
        let (name, value) = match dst {
            Operand::Output(i) => (format!("out{i}"), ParamValue::Output(i)),
            Operand::Buffer(b) => (
                format!("buf{b}"),
                ParamValue::Workspace {
                    offset: self.geometry.offsets[b],
                },
            ),
            Operand::Input(i) => (format!("in{i}"), ParamValue::Input(i)),
            Operand::Scalar(i) => (format!("s{i}"), ParamValue::Scalar(i)),
        };
        ps.add(&name, pointer(dtype, false), value);
        name
    }

    /// Emits `c<j>` coordinates of `lin` over the given dims of a space (outermost first).
    #[allow(clippy::too_many_arguments)]
    fn coords(
        &self,
        ps: &mut Params,
        out: &mut String,
        ind: &str,
        lin: &str,
        prefix: &str,
        dims_param: &str,
        space: &Space,
        which: &[usize],
    ) {
        if which.is_empty() {
            return;
        }
        if which.len() == 1 {
            let _ = writeln!(out, "{ind}const {} {prefix}{} = {lin};", self.idx, which[0]);
            return;
        }
        let _ = writeln!(out, "{ind}{} {prefix}tmp = {lin};", self.idx);
        for (pos, &j) in which.iter().enumerate().rev() {
            if pos == 0 {
                let _ = writeln!(out, "{ind}const {} {prefix}{j} = {prefix}tmp;", self.idx);
            } else {
                let d = format!("{dims_param}{j}");
                self.index_param(ps, &d, space.dims[j]);
                if self.idx == "int" {
                    // a division by a size is a multiply-high and a shift (`fast_divisor`):
                    // a 32-bit division by a value known only at run time is a long sequence
                    // per element, on every element of a 2-D stencil
                    let (magic, shift) = fast_divisor(space.dims[j]);
                    let dm = format!("{d}m");
                    let ds = format!("{d}s");
                    ps.add(
                        &dm,
                        ParamKind::Scalar(DType::UInt32),
                        ParamValue::Int(magic.into()),
                    );
                    ps.add(
                        &ds,
                        ParamKind::Scalar(DType::Int32),
                        ParamValue::Int(shift.into()),
                    );
                    let _ = writeln!(
                        out,
                        "{ind}const int {prefix}q{j} = (int)((__umulhi((unsigned){prefix}tmp, {dm}) + (unsigned){prefix}tmp) >> {ds});"
                    );
                    let _ = writeln!(
                        out,
                        "{ind}const int {prefix}{j} = {prefix}tmp - {prefix}q{j} * {d}; {prefix}tmp = {prefix}q{j};"
                    );
                } else {
                    let _ = writeln!(
                        out,
                        "{ind}const {} {prefix}{j} = {prefix}tmp % {d}; {prefix}tmp /= {d};",
                        self.idx
                    );
                }
            }
        }
    }

    /// Offset expression of a leaf over some dims: sum of coordinate * stride, with the
    /// leaf's innermost non-broadcast dim (stride 1 for a C-contiguous array) unscaled.
    fn offset(
        &self,
        ps: &mut Params,
        strides: &[isize],
        dims: &[usize],
        prefix: &str,
        stride_param: &str,
    ) -> String {
        let last_nonzero = strides.iter().rposition(|&s| s != 0);
        let mut terms = Vec::new();
        for &j in dims {
            let s = strides[j];
            if s == 0 {
                continue;
            }
            if Some(j) == last_nonzero && s == 1 {
                terms.push(format!("{prefix}{j}"));
            } else {
                let p = ps.add_int(&format!("{stride_param}_{j}"), self.idx_dtype(), s as i64);
                terms.push(format!("{prefix}{j} * {p}"));
            }
        }
        if terms.is_empty() {
            "0".into()
        } else {
            terms.join(" + ")
        }
    }

    /// Emits the registers of a program. `load(reg, leaf)` gives the expression of a leaf.
    fn emit_prog(
        &self,
        ps: &mut Params,
        out: &mut String,
        ind: &str,
        prog: &Program,
        rprefix: &str,
        mut load: impl FnMut(&mut Params, usize, &crate::plan::Leaf, DType) -> String,
    ) {
        // Every load first, then the arithmetic: the loads of one element are all in flight
        // before a long computation (exp, sin) starts, which the compiler does not arrange by
        // itself across math-library calls (H200, exp(-a*a)*sin(b)+c: 3552 -> ~4390 GB/s).
        // (a gathered leaf, `a[idx]`, loads after the index it depends on)
        let plain_leaf = |r: &crate::plan::Reg| match &r.kind {
            RegKind::Leaf(l) => l.dynamic.is_empty(),
            _ => false,
        };
        let leaves_first = prog
            .regs
            .iter()
            .enumerate()
            .filter(|(_, r)| plain_leaf(r))
            .chain(prog.regs.iter().enumerate().filter(|(_, r)| !plain_leaf(r)));
        for (i, reg) in leaves_first {
            let t = ctype(reg.dtype);
            let e = match &reg.kind {
                RegKind::Leaf(l) => match l.src {
                    LeafSrc::Scalar(s) => {
                        let name = format!("s{s}");
                        ps.add(&name, ParamKind::Scalar(reg.dtype), ParamValue::Scalar(s));
                        name
                    }
                    LeafSrc::Reduced(j) => format!("red{j}"),
                    _ => load(ps, i, l, reg.dtype),
                },
                RegKind::Op { op, args } => op_expression(*op, args, rprefix),
                RegKind::Cast { arg } => format!("({t})({rprefix}{arg})"),
                RegKind::Index { arg, len, axis } => {
                    // NumPy's IndexError has no device counterpart: an index out of range
                    // prints what NumPy would say and traps (docs/kernel-fusion.md). The
                    // length is a parameter: a new size does not recompile.
                    let a = format!("{rprefix}{arg}");
                    let unsigned =
                        prog.regs[*arg].dtype.kind() == cunumpy_core::dtype::DTypeKind::Unsigned;
                    let kernel = &self.plan.kernels[self.ki].name;
                    let r = format!("{rprefix}{i}");
                    let n = ps.add_int(&format!("len{axis}"), DType::Int64, *len as i64);
                    let say = |value: &str, fmt: &str| {
                        format!(
                            "{{ printf(\"fuse: {kernel}: index %{fmt} is out of bounds for axis \
                             {axis} with size %lld\\n\", {value}, {n}); __trap(); }}"
                        )
                    };
                    let _ = writeln!(out, "{ind}long long {r} = (long long)({a});");
                    if unsigned {
                        let _ = writeln!(
                            out,
                            "{ind}if ((unsigned long long)({a}) >= (unsigned long long){n}) {}",
                            say(&format!("(unsigned long long)({a})"), "llu")
                        );
                    } else {
                        let _ = writeln!(out, "{ind}if ({r} < 0) {r} += {n};");
                        let _ = writeln!(
                            out,
                            "{ind}if ({r} < 0 || {r} >= {n}) {}",
                            say(&format!("(long long)({a})"), "lld")
                        );
                    }
                    continue;
                }
            };
            let _ = writeln!(out, "{ind}const {t} {rprefix}{i} = {e};");
        }
    }

    fn elementwise(
        &self,
        name: &str,
        space: &Space,
        prog: &Program,
        stores: &[crate::plan::Store],
    ) -> (String, Launch) {
        let mut ps = Params { list: Vec::new() };
        let n = space.size();
        let idx = self.idx;
        let all: Vec<usize> = (0..space.dims.len()).collect();
        let contiguous = contiguous_istrides(&space.dims);
        let needs_coords = prog.regs.iter().any(|r| match &r.kind {
            RegKind::Leaf(l) => {
                !matches!(l.src, LeafSrc::Scalar(_))
                    && l.strides != contiguous
                    && l.strides.iter().any(|&s| s != 0)
            }
            _ => false,
        });
        let mut body = String::new();
        let ind = "        ";
        if needs_coords {
            self.coords(&mut ps, &mut body, ind, "i", "c", "d", space, &all);
        }
        // the arrays streamed from memory: several shifted views of one array (a stencil's
        // u[2:], u[1:-1], u[:-2]) are one stream, their neighbours' loads hit the cache
        let mut streamed: Vec<LeafSrc> = Vec::new();
        self.emit_prog(&mut ps, &mut body, ind, prog, "r", |ps, _, l, dt| {
            let p = self.read_ptr(ps, l.src, dt).unwrap_or_default();
            if l.strides.iter().any(|&s| s != 0) && !streamed.contains(&l.src) {
                streamed.push(l.src);
            }
            let off = self.leaf_index(ps, l, &p, "i", "c", &format!("st{p}"), &contiguous, "r");
            format!("{p}[{off}]")
        });
        for s in stores {
            let dt = prog.regs[s.reg].dtype;
            let p = self.write_ptr(&mut ps, s.dst, dt);
            let _ = writeln!(body, "{ind}{p}[i] = r{};", s.reg);
        }
        self.index_param(&mut ps, "n", n);
        let mut src = String::new();
        let _ = writeln!(
            src,
            "extern \"C\" __global__ void {name}(\n{})\n{{",
            ps.signature()
        );
        // A grid that covers the array, each thread taking `per_thread` elements a block apart
        // (coalesced), all loads in flight before any arithmetic. Kernels streaming one or two
        // arrays take two elements per thread, which keeps enough bytes in flight per SM (H200,
        // `a - s`: 3781 GB/s with one element per thread, 4175 with two, memcpy 4180); kernels
        // streaming more arrays have enough with one (a*b+c*d-2.5*a: 4413 GB/s, cupy.fuse
        // 4386). The loop only runs a second trip when the array outgrows the largest grid.
        // Math-library calls (exp, sin, ...) are long dependent chains: two elements per
        // thread give the compiler two independent ones to interleave. Shifted views of one
        // array (a stencil) count as one stream: their loads after the first hit the cache
        // (H200, 1-D three-point stencil: 0.84x the copy rate with one element per thread).
        let per_thread: usize = if streamed.len() <= 2 || calls_math(prog) {
            2
        } else {
            1
        };
        if per_thread == 1 {
            let _ = writeln!(
                src,
                "    const {idx} stride = ({idx})blockDim.x * ({idx})gridDim.x;"
            );
            let _ = writeln!(
                src,
                "    for ({idx} i = ({idx})blockIdx.x * ({idx})blockDim.x + ({idx})threadIdx.x; i < n; i += stride) {{"
            );
            src.push_str(&body);
            src.push_str("    }\n}\n");
        } else {
            let u = per_thread;
            let deeper =
                |extra: &str| -> String { body.lines().map(|l| format!("{extra}{l}\n")).collect() };
            let _ = writeln!(
                src,
                "    const {idx} stride = ({idx})blockDim.x * ({idx})gridDim.x * {u};"
            );
            let _ = writeln!(
                src,
                "    for ({idx} base = ({idx})blockIdx.x * ({idx})blockDim.x * {u} + ({idx})threadIdx.x; base < n; base += stride) {{"
            );
            let _ = writeln!(
                src,
                "        if (base + {} * ({idx})blockDim.x < n) {{",
                u - 1
            );
            let _ = writeln!(src, "#pragma unroll");
            let _ = writeln!(src, "            for (int u = 0; u < {u}; ++u) {{");
            let _ = writeln!(
                src,
                "                const {idx} i = base + u * ({idx})blockDim.x;"
            );
            src.push_str(&deeper("        "));
            src.push_str("            }\n        } else {\n");
            let _ = writeln!(src, "            for (int u = 0; u < {u}; ++u) {{");
            let _ = writeln!(
                src,
                "                const {idx} i = base + u * ({idx})blockDim.x;"
            );
            let _ = writeln!(src, "                if (i < n) {{");
            src.push_str(&deeper("            "));
            src.push_str("                }\n            }\n        }\n    }\n}\n");
        }
        let b = self.plan.options.block;
        let grid = grid_for(n, b as usize * per_thread, i32::MAX as usize);
        (
            src,
            Launch {
                name: name.to_string(),
                grid,
                block: b,
                shared_bytes: 0,
                params: ps.list,
            },
        )
    }

    fn max_grid(&self) -> usize {
        (self.geometry.sm_count as usize * (2048 / self.plan.options.block.max(32) as usize)).max(1)
    }

    /// Main-phase loads and the accumulate statements of a reduction, inside the k loop.
    fn red_main(&self, ps: &mut Params, rb: &RedBody, ind: &str) -> (String, String) {
        let kd: Vec<usize> = (0..rb.space.dims.len())
            .filter(|&j| !rb.space.reduced[j])
            .collect();
        let rd: Vec<usize> = (0..rb.space.dims.len())
            .filter(|&j| rb.space.reduced[j])
            .collect();
        // per-m part: kept coordinates and leaf bases
        let mut pre = String::new();
        self.coords(ps, &mut pre, ind, "m", "c", "d", &rb.space, &kd);
        let mut body = String::new();
        let inner = format!("{ind}    ");
        self.coords(ps, &mut body, &inner, "k", "c", "d", &rb.space, &rd);
        let mut bases = String::new();
        self.emit_prog(ps, &mut body, &inner, &rb.prog, "r", |ps, i, l, dt| {
            let p = self.read_ptr(ps, l.src, dt).unwrap_or_default();
            let stp = format!("st{p}");
            let mut kept = self.offset(ps, &l.strides, &kd, "c", &stp);
            let red = self.offset(ps, &l.strides, &rd, "c", &stp);
            if l.offset != 0 {
                let o = ps.add_int(&format!("o{p}"), self.idx_dtype(), l.offset as i64);
                kept = if kept == "0" {
                    o
                } else {
                    format!("{o} + {kept}")
                };
            }
            let mut red = red;
            for &(r, st) in &l.dynamic {
                let sp = ps.add_int(&format!("g{p}"), self.idx_dtype(), st as i64);
                let t = format!("({})r{r} * {sp}", self.idx);
                red = if red == "0" {
                    t
                } else {
                    format!("{red} + {t}")
                };
            }
            if kept == "0" {
                format!("{p}[{red}]")
            } else {
                let _ = writeln!(bases, "{ind}const {} b{i} = {kept};", self.idx);
                if red == "0" {
                    format!("{p}[b{i}]")
                } else {
                    format!("{p}[b{i} + {red}]")
                }
            }
        });
        for (j, r) in rb.reds.iter().enumerate() {
            let _ = writeln!(
                body,
                "{inner}acc{j} = {};",
                combine(
                    r.kind,
                    &format!("acc{j}"),
                    &format!("({})r{}", acc_ctype(r.acc), r.reg)
                )
            );
        }
        pre.push_str(&bases);
        (pre, body)
    }

    fn acc_decls(&self, rb: &RedBody, ind: &str) -> String {
        let mut s = String::new();
        for (j, r) in rb.reds.iter().enumerate() {
            let _ = writeln!(
                s,
                "{ind}{} acc{j} = {};",
                acc_ctype(r.acc),
                init_value(r.kind, r.acc)
            );
        }
        s
    }

    fn warp_reduce(&self, rb: &RedBody, ind: &str) -> String {
        self.lanes_reduce(rb, ind, 32)
    }

    /// The shuffle tree over groups of `lanes` consecutive lanes (a power of two): the first
    /// lane of each group ends with its group's value. Lane `l` reads lane `l + o` for
    /// `o = lanes/2, ..., 1`, so a group's first lane only ever reads lanes of its own group
    /// and every lane of the warp takes part in every shuffle.
    fn lanes_reduce(&self, rb: &RedBody, ind: &str, lanes: u32) -> String {
        let mut s = String::new();
        if lanes <= 1 {
            return s;
        }
        let _ = writeln!(s, "{ind}for (int o = {}; o > 0; o >>= 1) {{", lanes / 2);
        for (j, r) in rb.reds.iter().enumerate() {
            let _ = writeln!(
                s,
                "{ind}    acc{j} = {};",
                combine(
                    r.kind,
                    &format!("acc{j}"),
                    &if r.acc.kind() == cunumpy_core::dtype::DTypeKind::Complex {
                        // a complex accumulator shuffles its two parts (COMPLEX_PREAMBLE)
                        format!("cn_shfl_down(0xffffffffu, acc{j}, o)")
                    } else {
                        format!("__shfl_down_sync(0xffffffffu, acc{j}, o)")
                    }
                )
            );
        }
        let _ = writeln!(s, "{ind}}}");
        s
    }

    /// Block-wide reduce: thread 0 ends with the block's value of every accumulator.
    fn block_reduce(&self, rb: &RedBody, ind: &str) -> String {
        let nw = (self.plan.options.block / 32).max(1);
        let mut s = self.warp_reduce(rb, ind);
        for j in 0..rb.reds.len() {
            let _ = writeln!(s, "{ind}if (lane == 0) sh{j}[warp] = acc{j};");
        }
        let _ = writeln!(s, "{ind}__syncthreads();");
        let _ = writeln!(s, "{ind}if (warp == 0) {{");
        for (j, r) in rb.reds.iter().enumerate() {
            let _ = writeln!(
                s,
                "{ind}    acc{j} = lane < {nw} ? sh{j}[lane] : ({}){};",
                acc_ctype(r.acc),
                init_value(r.kind, r.acc)
            );
        }
        s.push_str(&self.warp_reduce(rb, &format!("{ind}    ")));
        let _ = writeln!(s, "{ind}}}");
        s
    }

    fn shared_decls(&self, rb: &RedBody) -> String {
        let nw = (self.plan.options.block / 32).max(1);
        let mut s = String::new();
        for (j, r) in rb.reds.iter().enumerate() {
            let _ = writeln!(s, "    __shared__ {} sh{j}[{nw}];", acc_ctype(r.acc));
        }
        s
    }

    /// Finalize (mean division, result dtype), epilogue program and stores for output `m`.
    fn epilogue(&self, ps: &mut Params, rb: &RedBody, ind: &str) -> String {
        let mut s = String::new();
        for (j, r) in rb.reds.iter().enumerate() {
            let v = match r.kind {
                ReduceKind::Mean { ddof } => {
                    self.index_param(ps, "K", rb.k);
                    // a complex accumulator divides by a real count (an operator overload)
                    let acc = if is_complex(r.acc) {
                        format!("acc{j}")
                    } else {
                        format!("(double)acc{j}")
                    };
                    format!("{acc} / ((double)K - {ddof}.0)")
                }
                _ => format!("acc{j}"),
            };
            let _ = writeln!(
                s,
                "{ind}const {} red{j} = ({})({v});",
                ctype(r.out),
                ctype(r.out)
            );
        }
        let all: Vec<usize> = (0..rb.epi_space.dims.len()).collect();
        let contiguous = contiguous_istrides(&rb.epi_space.dims);
        let needs = rb.epi.regs.iter().any(|r| match &r.kind {
            RegKind::Leaf(l) => {
                !matches!(l.src, LeafSrc::Scalar(_) | LeafSrc::Reduced(_))
                    && l.strides != contiguous
                    && l.strides.iter().any(|&x| x != 0)
            }
            _ => false,
        });
        if needs {
            self.coords(ps, &mut s, ind, "m", "e", "ed", &rb.epi_space, &all);
        }
        self.emit_prog(ps, &mut s, ind, &rb.epi, "q", |ps, _, l, dt| {
            let p = self.read_ptr(ps, l.src, dt).unwrap_or_default();
            let off = self.leaf_index(ps, l, &p, "m", "e", &format!("et{p}"), &contiguous, "q");
            format!("{p}[{off}]")
        });
        for st in &rb.stores {
            let dt = rb.epi.regs[st.reg].dtype;
            let p = self.write_ptr(ps, st.dst, dt);
            let _ = writeln!(s, "{ind}{p}[m] = q{};", st.reg);
        }
        s
    }

    fn reduction(&self, name: &str, rb: &RedBody) -> (String, Vec<Launch>) {
        let idx = self.idx;
        let b = self.plan.options.block;
        let mut src = String::new();
        let mut launches = Vec::new();
        match rb.strategy {
            Strategy::WarpPerRow | Strategy::ThreadPerOutput => {
                let mut ps = Params { list: Vec::new() };
                let warp = rb.strategy == Strategy::WarpPerRow;
                let (pre, body) = self.red_main(&mut ps, rb, "        ");
                let epi = self.epilogue(&mut ps, rb, "            ");
                self.index_param(&mut ps, "M", rb.m);
                self.index_param(&mut ps, "K", rb.k);
                let _ = writeln!(
                    src,
                    "extern \"C\" __global__ void {name}(\n{})\n{{",
                    ps.signature()
                );
                if warp {
                    let _ = writeln!(src, "    const int lane = threadIdx.x & 31;");
                    let _ = writeln!(
                        src,
                        "    const {idx} warps = ({idx})gridDim.x * ({idx})(blockDim.x >> 5);"
                    );
                    let _ = writeln!(
                        src,
                        "    for ({idx} m = ({idx})blockIdx.x * ({idx})(blockDim.x >> 5) + ({idx})(threadIdx.x >> 5); m < M; m += warps) {{"
                    );
                    src.push_str(&pre);
                    src.push_str(&self.acc_decls(rb, "        "));
                    // four loads of a lane in flight at once (rows of 128 to a few thousand)
                    src.push_str("#pragma unroll 4\n");
                    let _ = writeln!(src, "        for ({idx} k = lane; k < K; k += 32) {{");
                    src.push_str(&body);
                    src.push_str("        }\n");
                    src.push_str(&self.warp_reduce(rb, "        "));
                    src.push_str("        if (lane == 0) {\n");
                } else {
                    let _ = writeln!(
                        src,
                        "    const {idx} stride = ({idx})blockDim.x * ({idx})gridDim.x;"
                    );
                    let _ = writeln!(
                        src,
                        "    for ({idx} m = ({idx})blockIdx.x * ({idx})blockDim.x + ({idx})threadIdx.x; m < M; m += stride) {{"
                    );
                    src.push_str(&pre);
                    src.push_str(&self.acc_decls(rb, "        "));
                    let _ = writeln!(src, "        for ({idx} k = 0; k < K; ++k) {{");
                    src.push_str(&body);
                    src.push_str("        }\n");
                    src.push_str("        {\n");
                }
                src.push_str(&epi);
                src.push_str("        }\n    }\n}\n");
                let per_block = if warp {
                    (b / 32).max(1) as usize
                } else {
                    b as usize
                };
                launches.push(Launch {
                    name: name.to_string(),
                    grid: grid_for(rb.m, per_block, self.max_grid()),
                    block: b,
                    shared_bytes: 0,
                    params: ps.list,
                });
            }
            Strategy::LanesPerRow(lanes) => {
                // `lanes` lanes per row, 32 / lanes rows per warp. The loop over a warp's rows
                // is warp-uniform (every lane shuffles); a row past the end loads nothing and
                // stores nothing.
                let mut ps = Params { list: Vec::new() };
                let (pre, body) = self.red_main(&mut ps, rb, "        ");
                let epi = self.epilogue(&mut ps, rb, "            ");
                self.index_param(&mut ps, "M", rb.m);
                self.index_param(&mut ps, "K", rb.k);
                let rows = 32 / lanes.max(1);
                let shift = lanes.max(1).trailing_zeros();
                let _ = writeln!(
                    src,
                    "extern \"C\" __global__ void {name}(\n{})\n{{",
                    ps.signature()
                );
                let _ = writeln!(src, "    const int lane = threadIdx.x & 31;");
                let _ = writeln!(src, "    const int sub = lane & {};", lanes - 1);
                let _ = writeln!(
                    src,
                    "    const {idx} rows = ({idx})gridDim.x * ({idx})(blockDim.x >> 5) * {rows};"
                );
                let _ = writeln!(
                    src,
                    "    for ({idx} mw = (({idx})blockIdx.x * ({idx})(blockDim.x >> 5) + ({idx})(threadIdx.x >> 5)) * {rows}; mw < M; mw += rows) {{"
                );
                let _ = writeln!(
                    src,
                    "        const {idx} m = mw + ({idx})(lane >> {shift});"
                );
                let _ = writeln!(src, "        const {idx} kend = m < M ? K : 0;");
                src.push_str(&pre);
                src.push_str(&self.acc_decls(rb, "        "));
                src.push_str("#pragma unroll 4\n");
                let _ = writeln!(
                    src,
                    "        for ({idx} k = sub; k < kend; k += {lanes}) {{"
                );
                src.push_str(&body);
                src.push_str("        }\n");
                src.push_str(&self.lanes_reduce(rb, "        ", lanes));
                src.push_str("        if (sub == 0 && m < M) {\n");
                src.push_str(&epi);
                src.push_str("        }\n    }\n}\n");
                launches.push(Launch {
                    name: name.to_string(),
                    grid: grid_for(rb.m, (b / lanes.max(1)).max(1) as usize, self.max_grid()),
                    block: b,
                    shared_bytes: 0,
                    params: ps.list,
                });
            }
            Strategy::Split => {
                let blocks_per_output = self.geometry.split[self.ki].unwrap_or(1);
                // launch 1: partials
                let mut ps = Params { list: Vec::new() };
                let (pre, body) = self.red_main(&mut ps, rb, "        ");
                let mut part_names = Vec::new();
                for (j, r) in rb.reds.iter().enumerate() {
                    let pname = format!("part{j}");
                    let off = self.geometry.partials[self.ki]
                        .get(j)
                        .map(|&bf| self.geometry.offsets[bf])
                        .unwrap_or(0);
                    ps.add(
                        &pname,
                        pointer(acc_dtype(r.acc), false),
                        ParamValue::Workspace { offset: off },
                    );
                    part_names.push((pname, off));
                }
                self.index_param(&mut ps, "M", rb.m);
                self.index_param(&mut ps, "K", rb.k);
                self.index_param(&mut ps, "P", blocks_per_output);
                let pname = format!("{name}_partial");
                let _ = writeln!(
                    src,
                    "extern \"C\" __global__ void {pname}(\n{})\n{{",
                    ps.signature()
                );
                src.push_str(&self.shared_decls(rb));
                src.push_str("    const int lane = threadIdx.x & 31;\n    const int warp = threadIdx.x >> 5;\n");
                let _ = writeln!(
                    src,
                    "    for ({idx} blk = blockIdx.x; blk < M * P; blk += gridDim.x) {{"
                );
                let _ = writeln!(src, "        const {idx} m = blk / P;");
                let _ = writeln!(src, "        const {idx} p = blk - m * P;");
                src.push_str(&pre);
                src.push_str(&self.acc_decls(rb, "        "));
                let _ = writeln!(
                    src,
                    "        for ({idx} k = p * ({idx})blockDim.x + ({idx})threadIdx.x; k < K; k += P * ({idx})blockDim.x) {{"
                );
                src.push_str(&body);
                src.push_str("        }\n");
                src.push_str(&self.block_reduce(rb, "        "));
                for j in 0..rb.reds.len() {
                    let _ = writeln!(src, "        if (threadIdx.x == 0) part{j}[blk] = acc{j};");
                }
                src.push_str("        __syncthreads();\n    }\n}\n\n");
                let grid = (rb.m * blocks_per_output).clamp(1, i32::MAX as usize) as u32;
                launches.push(Launch {
                    name: pname,
                    grid,
                    block: b,
                    shared_bytes: 0,
                    params: ps.list,
                });
                // launch 2: fixed-order combine of the partials, epilogue, stores
                let mut ps = Params { list: Vec::new() };
                for (j, r) in rb.reds.iter().enumerate() {
                    let (pn, off) = &part_names[j];
                    ps.add(
                        pn,
                        pointer(acc_dtype(r.acc), true),
                        ParamValue::Workspace { offset: *off },
                    );
                }
                let epi = self.epilogue(&mut ps, rb, "            ");
                self.index_param(&mut ps, "M", rb.m);
                self.index_param(&mut ps, "P", blocks_per_output);
                let fname = format!("{name}_final");
                let _ = writeln!(
                    src,
                    "extern \"C\" __global__ void {fname}(\n{})\n{{",
                    ps.signature()
                );
                src.push_str(&self.shared_decls(rb));
                src.push_str("    const int lane = threadIdx.x & 31;\n    const int warp = threadIdx.x >> 5;\n");
                let _ = writeln!(
                    src,
                    "    for ({idx} m = blockIdx.x; m < M; m += gridDim.x) {{"
                );
                src.push_str(&self.acc_decls(rb, "        "));
                let _ = writeln!(
                    src,
                    "        for ({idx} p = threadIdx.x; p < P; p += blockDim.x) {{"
                );
                for (j, r) in rb.reds.iter().enumerate() {
                    let _ = writeln!(
                        src,
                        "            acc{j} = {};",
                        combine(r.kind, &format!("acc{j}"), &format!("part{j}[m * P + p]"))
                    );
                }
                src.push_str("        }\n");
                src.push_str(&self.block_reduce(rb, "        "));
                src.push_str("        if (threadIdx.x == 0) {\n");
                src.push_str(&epi);
                src.push_str("        }\n        __syncthreads();\n    }\n}\n");
                launches.push(Launch {
                    name: fname,
                    grid: rb.m.clamp(1, self.max_grid()) as u32,
                    block: b,
                    shared_bytes: 0,
                    params: ps.list,
                });
            }
        }
        (src, launches)
    }
}

/// The multiplier and shift that divide by `d` (1 <= d < 2^31) any `n` in [0, 2^31):
/// `n / d == (umulhi(n, magic) + n) >> shift` (Granlund and Montgomery's round-up method with
/// `shift = ceil(log2 d)` and `magic = floor(2^32 (2^shift - d) / d) + 1`; `umulhi + n` does
/// not overflow 32 bits because `n < 2^31`). A size of 0 never reaches a kernel that runs
/// (its loop is empty) and gets the divisor 1.
pub(crate) fn fast_divisor(d: usize) -> (u32, u32) {
    let d = (d.max(1) as u64).min(1 << 31);
    let shift = 64 - (d - 1).leading_zeros();
    let magic = ((1u64 << 32) * ((1u64 << shift) - d)) / d + 1;
    (magic as u32, shift)
}

fn grid_for(work: usize, per_block: usize, max: usize) -> u32 {
    work.div_ceil(per_block.max(1)).clamp(1, max) as u32
}

/// Whether every index of the kernel fits 32-bit arithmetic (with room for the grid stride).
fn fits_32(plan: &Plan, geometry: &Geometry, ki: usize) -> bool {
    const LIMIT: usize = (i32::MAX as usize) - (1 << 24);
    let mut sizes: Vec<usize> = plan.inputs.iter().map(|t| t.size()).collect();
    sizes.extend(plan.outputs.iter().map(|t| t.size()));
    sizes.extend(geometry.buffers.iter().map(|b| b.elements));
    match &plan.kernels[ki].body {
        // i + stride, with a grid that covers the array, reaches twice the size
        Body::Elementwise { space, .. } => sizes.push(2 * space.size()),
        Body::Reduction(rb) => {
            sizes.push(rb.space.size());
            if let Some(blocks_per_output) = geometry.split[ki] {
                sizes.push(rb.m * blocks_per_output * plan.options.block as usize);
                sizes.push(rb.k + blocks_per_output * plan.options.block as usize);
            }
        }
    }
    sizes.iter().all(|&s| s < LIMIT)
}

/// The CUDA source (without preamble) and the launches of kernel `ki` of a plan with the
/// layout `geometry` (that of the device it is loaded on).
pub(crate) fn generate(plan: &Plan, geometry: &Geometry, ki: usize) -> (String, Vec<Launch>) {
    let k = &plan.kernels[ki];
    let g = Gen {
        plan,
        geometry,
        ki,
        idx: if fits_32(plan, geometry, ki) {
            "int"
        } else {
            "long long"
        },
    };
    match &k.body {
        Body::Elementwise {
            space,
            prog,
            stores,
        } => {
            let (s, l) = match tiles::tile_map(space, prog, plan.options.stencil_rows) {
                Some(map) => g.tiled_elementwise(&k.name, space, prog, stores, &map),
                None => g.elementwise(&k.name, space, prog, stores),
            };
            (s, vec![l])
        }
        Body::Reduction(rb) => g.reduction(&k.name, rb),
    }
}

#[cfg(test)]
mod tests {
    use super::fast_divisor;

    fn check(d: usize, n: u64) {
        let (magic, shift) = fast_divisor(d);
        let hi = (n * u64::from(magic)) >> 32;
        let q = (hi + n) >> shift;
        assert!(hi + n < 1 << 32, "overflow for n={n}, d={d}");
        assert_eq!(q, n / d as u64, "n={n}, d={d}");
    }

    #[test]
    fn fast_divisor_divides_every_index() {
        let big = (1u64 << 31) - 1;
        let mut ds: Vec<usize> = (1..=3000).collect();
        ds.extend((1..31).flat_map(|b| [(1usize << b) - 1, 1 << b, (1 << b) + 1]));
        ds.extend([8190, 8192, 46341, 1_000_003, 65_537, (1 << 31) - 1]);
        for &d in &ds {
            for n in (0..2000u64).chain(big - 2000..=big) {
                check(d, n);
            }
            // either side of multiples of d, over the whole range
            let step = (big / 997).max(1);
            let mut n = 0u64;
            while n <= big {
                let near = n - n % d as u64;
                for x in [near.saturating_sub(1), near, near + 1] {
                    if x <= big {
                        check(d, x);
                    }
                }
                n += step;
            }
        }
    }
}
