//! The kernel itself: which loop runs in parallel, and the proof that it may. Every array write
//! in the loop is indexed by the loop variable (each iteration owns its elements), or a
//! `+=`/`-=` that becomes an atomic add, or the kernel is refused with the line and the array.

use crate::error::PortErrorKind;
use crate::json::Json;
use crate::translate::{
    array_key, collect_assigns, const_int, indices, key_type, name_of, strip_parens, FnCx, Options,
    Par, Translation, Translator, WriteDecision, PRELUDE, R,
};
use crate::types::{parse_annotation, struct_scratch, Scalar, Ty};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Store,
    AddSub,
    OtherAug,
}

struct Seen<'j> {
    array: String,
    idx: Option<Vec<&'j Json>>, // None: passed whole to a helper
    access: Access,
    line: u32,
    helper: Option<String>,
}

impl<'a> Translator<'a> {
    /// Translates kernel `opts.kernel` of the module.
    pub fn kernel(&mut self, opts: &Options) -> R<Translation> {
        let name = opts.kernel.clone();
        self.current = name.clone();
        let def = *self.funcs.get(&name).ok_or_else(|| {
            self.e(
                PortErrorKind::Input,
                0,
                "function",
                None,
                format!("no top-level function '{name}' in the module"),
            )
        })?;
        let mut given: BTreeMap<String, Ty> = BTreeMap::new();
        for (n, t) in &opts.arg_types {
            let ty = parse_annotation(t).map_err(|m| {
                self.e(
                    PortErrorKind::Input,
                    def.line(),
                    "argument type",
                    Some(n),
                    format!("argument '{n}': {m}"),
                )
            })?;
            if let Ty::Struct(sname, _) = &ty {
                let scratch = struct_scratch(t);
                if !scratch.is_empty() {
                    self.scratch.insert(sname.clone(), scratch);
                }
            }
            given.insert(n.clone(), ty);
        }
        let params = self.params(def, &|_, n| given.get(n).cloned())?;
        let body: Vec<&Json> = def.get("body").as_list().iter().collect();
        let loops: Vec<usize> = (0..body.len())
            .filter(|&k| body[k].kind() == "For")
            .collect();
        let at = match opts.parallel_loop {
            Some(line) => *loops.iter().find(|&&k| body[k].line() == line).ok_or_else(|| {
                self.e(PortErrorKind::Input, line, "parallel loop", None,
                    format!("line {line} is not a for loop at the top level of {name}"))
            })?,
            None => match loops.as_slice() {
                [one] => *one,
                [] => return Err(self.e(PortErrorKind::Unsupported, def.line(), "parallel loop", None,
                    "no for loop at the top level of the kernel to run in parallel".into())),
                [_, second, ..] => return Err(self.e(PortErrorKind::Unsupported, body[*second].line(), "parallel loop", None,
                    "several top-level loops: a kernel runs one loop in parallel (split it into one kernel per loop)".into())),
            },
        };
        let lp = body[at];
        let preamble: Vec<Json> = body[..at].iter().map(|s| (*s).clone()).collect();
        let all: Vec<Json> = body.iter().map(|s| (*s).clone()).collect();
        let mut f = self.function(&name, &params, &all)?;
        for (k, s) in preamble.iter().enumerate() {
            if k == 0 && s.kind() == "Expr" && s.get("value").kind() == "Constant" {
                continue;
            }
            if s.kind() == "Assign" {
                if let Some(n) = s.get("targets").as_list().first().and_then(name_of) {
                    if f.vars.get(n).is_some_and(Ty::is_view) && !f.params.contains(n) {
                        return Err(self.e(PortErrorKind::Unsupported, s.line(), "view before the parallel loop", Some(n),
                            format!("makes the view '{n}' before the parallel loop (make it inside the loop, where the race proof sees which elements it reads)")));
                    }
                }
            }
            let mut seen = Vec::new();
            self.accesses_stmt(&f, s, &mut seen);
            // (scratch fields of a struct are the thread's own: writing them is no race)
            if let Some(w) = seen
                .iter()
                .find(|w| w.access != Access::Read && !self.is_scratch_key(&f, &w.array))
            {
                return Err(self.e(
                    PortErrorKind::Unsupported,
                    w.line,
                    "write before the parallel loop",
                    Some(&w.array),
                    format!(
                        "writes '{}' before the parallel loop (every thread would do it)",
                        w.array
                    ),
                ));
            }
        }
        let reductions = self.reductions(&f, &preamble, lp);
        let counters = self.counters(&f, &preamble, lp, &reductions)?;
        let par = self.prove(&f, &preamble, lp, &reductions, &counters.names)?;
        // After the loop: nothing but `out[k] += s` of a reduction (an atomic add of each
        // thread's partial sum).
        let mut folds: Vec<(&Json, String)> = Vec::new();
        let mut loop_seen = Vec::new();
        for s in lp.get("body").as_list() {
            self.accesses_stmt(&f, s, &mut loop_seen);
        }
        for s in &body[at + 1..] {
            let docstring = s.kind() == "Expr" && s.get("value").kind() == "Constant";
            let bare_return = s.kind() == "Return" && s.get("value") == &Json::Null;
            // `return counter`: the CUDA kernel returns nothing (the source says so)
            let counter_return = s.kind() == "Return"
                && name_of(s.get("value")).is_some_and(|n| counters.names.contains(n));
            if docstring || bare_return || counter_return || s.kind() == "Pass" {
                continue;
            }
            match self.fold(&f, s, &reductions, &loop_seen) {
                Some(Ok(r)) => folds.push((s, r)),
                Some(Err(e)) => return Err(e),
                None => {
                    return Err(self.e(
                        PortErrorKind::Unsupported,
                        s.line(),
                        s.kind(),
                        None,
                        "a statement after the parallel loop (it would run once per thread, not once; only `out[k] += s` of a sum `s` accumulated in the loop is translated, as an atomic add)"
                            .into(),
                    ))
                }
            }
        }
        // The code.
        let over = self.index_array_loop(&f, lp)?;
        if over.is_some() && !counters.names.is_empty() {
            return Err(self.e(PortErrorKind::Unsupported, lp.line(), "counter", None,
                "a counter in a parallel loop over the entries of an array (recounted only over range())".into()));
        }
        let (var, start, stop, step) = match &over {
            Some((v, arr)) => (
                v.clone(),
                "0".to_string(),
                format!("{arr}.shape[0]"),
                "1".to_string(),
            ),
            None => self.range(&f, lp)?,
        };
        let step_n: i64 = step.parse().unwrap_or(1);
        let trip = match (start.as_str(), step_n) {
            ("0", 1) => stop.clone(),
            (_, 1) => format!("{stop} - {start}"),
            (_, s) if s > 0 => format!("({stop} - {start} + {}) / {s}", s - 1),
            (_, s) => format!("({start} - {stop} + {}) / {}", -s - 1, -s),
        };
        let first = match (start.as_str(), step_n) {
            _ if over.is_some() => {
                format!("{}(cunumpy_t)", over.as_ref().map_or("", |o| o.1.as_str()))
            }
            ("0", 1) => "cunumpy_t".to_string(),
            (_, 1) => format!("{start} + cunumpy_t"),
            (_, s) => format!("{start} + cunumpy_t * {s}"),
        };
        let mut code = String::new();
        code.push_str(&self.decls(&f, "    "));
        code.push_str(&self.block(&mut f, &preamble, 1, None)?);
        for r in &reductions {
            let c = f.vars.get(r).map(|t| t.scalar().c()).unwrap_or("double");
            code.push_str(&format!(
                "    // '{r}' is a sum: each thread adds its iterations into its own partial, from 0\n    const {c} cunumpy_{r}_init = {r};\n    {r} = ({c})0;\n"
            ));
        }
        for c in &counters.names {
            let ct = f.vars.get(c).map(|t| t.scalar().c()).unwrap_or("long long");
            code.push_str(&format!(
                "    // '{c}' is a counter (only `{c} += k` in the loop): each iteration recounts it from this value\n    const {ct} cunumpy_{c}_init = {c};\n"
            ));
        }
        code.push_str(&self.comment(lp.line(), "    "));
        code.push_str("    // (parallel: one iteration per thread, grid-stride so any launch shape is right)\n");
        code.push_str(&format!("    const long long cunumpy_n = {trip};\n"));
        code.push_str("    for (long long cunumpy_t = blockIdx.x * (long long)blockDim.x + threadIdx.x; cunumpy_t < cunumpy_n;\n");
        code.push_str("         cunumpy_t += (long long)gridDim.x * blockDim.x) {\n");
        code.push_str(&format!("        {var} = {first};\n"));
        if let Some((_, arr)) = &over {
            code.push_str(&self.index_array_check(&var, arr, lp.line()));
        }
        if !counters.names.is_empty() {
            code.push_str(&self.recount(&mut f, &counters, &var, &start, step_n)?);
        }
        code.push_str(&self.block(&mut f, lp.get("body").as_list(), 2, Some(&par))?);
        code.push_str("    }\n");
        for r in &reductions {
            code.push_str(&format!(
                "    // the value '{r}' had before the loop is added once, by the first thread\n    if (blockIdx.x == 0 && threadIdx.x == 0) {r} += cunumpy_{r}_init;\n"
            ));
        }
        for (s, r) in &folds {
            code.push_str(&self.comment(s.line(), "    "));
            let (lhs, lt) = self.subscript(&f, s.get("target"))?;
            let v = if s.get("op").kind() == "Sub" {
                format!("-{r}")
            } else {
                r.clone()
            };
            self.atomic_used = true;
            code.push_str(&format!(
                "    cunumpy_atomic_add(&{lhs}, ({})({v}));\n",
                lt.scalar().c()
            ));
        }

        // Structs with scratch fields: the body takes their per-thread versions, which the
        // kernel makes first.
        let mut privatize = String::new();
        for (pname, t) in &params {
            if let Ty::Struct(sname, fields) = t {
                if self.scratch.contains_key(sname) {
                    privatize.push_str(&self.privatize(pname, sname, fields, def.line())?);
                }
            }
        }
        let mut writes = Vec::new();
        let mut seen = Vec::new();
        for s in lp.get("body").as_list() {
            self.accesses_stmt(&f, s, &mut seen);
        }
        for (s, _) in &folds {
            if let Some(a) = array_key(&f, s.get("target").get("value")) {
                writes.push(WriteDecision {
                    array: a,
                    line: s.line(),
                    how: "reduction",
                });
            }
        }
        for w in &seen {
            if w.access != Access::Read {
                let how = if par.atomic.contains(&w.array) {
                    "atomic"
                } else if self.is_scratch_key(&f, &w.array) {
                    "private"
                } else {
                    "owned"
                };
                writes.push(WriteDecision {
                    array: w.array.clone(),
                    line: w.line,
                    how,
                });
            }
        }
        let mut src = String::new();
        src.push_str(&format!("// CUDA version of {name}, generated by cunumpy from the host kernel (edit it: it is yours).\n"));
        match &over {
            Some((_, arr)) => src.push_str(&format!(
                "// Parallel loop: line {}, `for {var} in {arr}`: one entry per thread (the entries must increase strictly).\n",
                lp.line()
            )),
            None => src.push_str(&format!(
                "// Parallel loop: line {}, `for {var} in range(...)`: one iteration per thread.\n",
                lp.line()
            )),
        }
        if !counters.names.is_empty() {
            let names: Vec<&str> = counters.names.iter().map(String::as_str).collect();
            src.push_str(&format!(
                "// Counters (each iteration recounts the raises of the ones before it): {}.\n",
                names.join(", ")
            ));
        }
        let mut atomics: BTreeSet<&str> = par.atomic.iter().map(String::as_str).collect();
        for w in &writes {
            if w.how == "reduction" {
                atomics.insert(w.array.as_str());
            }
        }
        if !atomics.is_empty() {
            src.push_str(&format!(
                "// Atomic adds (+= into elements other iterations may hit): {}.\n",
                atomics.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
        src.push_str("#include <cunumpy/array_view.cuh>\n");
        if self.atomic_used {
            src.push_str("#include <cunumpy/atomic.cuh>\n");
        }
        src.push('\n');
        let mut declared: BTreeSet<&str> = BTreeSet::new();
        for (pname, t) in &params {
            if let Ty::Struct(sname, fields) = t {
                // two arguments of one struct: one declaration
                if !declared.insert(sname.as_str()) {
                    continue;
                }
                src.push_str(&format!(
                    "// The struct argument '{pname}' (the layout of its CudaStructArguments class).\nstruct {sname} {{\n"
                ));
                let scratch: Vec<&str> = self
                    .scratch
                    .get(sname)
                    .map(|v| v.iter().map(|(n, _)| n.as_str()).collect())
                    .unwrap_or_default();
                let member = |n: &str, ft: &Ty| {
                    let c = ft.scalar().c();
                    match ft {
                        Ty::View(_, r) => format!("    CArray{r}D<{c}> {n};\n"),
                        _ => {
                            let star = if ft.rank() > 0 { "*" } else { "" };
                            format!("    {c}{star} {n};\n")
                        }
                    }
                };
                for (n, ft) in fields
                    .iter()
                    .filter(|(n, _)| !scratch.contains(&n.as_str()))
                {
                    src.push_str(&member(n, ft));
                }
                src.push_str("};\n\n");
                if !scratch.is_empty() {
                    src.push_str(&format!(
                        "// '{pname}' as each thread sees it: the fields above, and its own {} (arrays {sname}.__init__ allocates).\nstruct {sname}_thread {{\n",
                        scratch.join(", ")
                    ));
                    for (n, ft) in fields {
                        src.push_str(&member(n, ft));
                    }
                    src.push_str("};\n\n");
                }
            }
        }
        for (key, text) in PRELUDE {
            if self.prelude.contains(key) {
                src.push_str(text);
                src.push('\n');
            }
        }
        for h in &self.helper_src {
            src.push_str(h);
            src.push('\n');
        }
        let ps: Vec<String> = params.iter().map(|(n, t)| t.c_param(n)).collect();
        src.push_str(&self.comment(def.line(), ""));
        if privatize.is_empty() {
            src.push_str(&format!(
                "extern \"C\" __global__ void {name}({}) {{\n",
                ps.join(", ")
            ));
            src.push_str(&code);
            src.push_str("}\n");
        } else {
            let body_ps: Vec<String> = params.iter().map(|(n, t)| self.c_param(n, t)).collect();
            src.push_str(
                "// (the kernel's body; the kernel below gives it the per-thread structs)\n",
            );
            src.push_str(&format!(
                "__device__ void {name}__body({}) {{\n",
                body_ps.join(", ")
            ));
            src.push_str(&code);
            src.push_str("}\n\n");
            src.push_str(&format!(
                "extern \"C\" __global__ void {name}({}) {{\n",
                ps.join(", ")
            ));
            src.push_str(&privatize);
            let call: Vec<String> = params
                .iter()
                .map(|(n, t)| match t {
                    Ty::Struct(s, _) if self.scratch.contains_key(s) => format!("{n}__thread"),
                    _ => n.clone(),
                })
                .collect();
            src.push_str(&format!("    {name}__body({});\n}}\n", call.join(", ")));
        }
        let n_threads = self
            .py_trip(&f, &preamble, lp)
            .or_else(|| over.as_ref().map(|(_, arr)| format!("{arr}.shape[0]")));
        Ok(Translation {
            source: src,
            kernel: name,
            params: params.iter().map(|(n, _)| n.clone()).collect(),
            loop_line: lp.line(),
            loop_var: var,
            n_threads,
            writes,
            helpers: self.helpers_done.keys().cloned().collect(),
        })
    }

    /// The per-thread version `<p>__thread` of struct argument `p`: its fields, and its scratch
    /// fields as local arrays of this thread, sized as the class's `__init__` sizes them (the
    /// extents come as `def cunumpy_scratch__<Struct>(self): field = (extent, ...)`).
    fn privatize(&mut self, p: &str, sname: &str, fields: &[(String, Ty)], line: u32) -> R<String> {
        let scratch = self.scratch.get(sname).cloned().unwrap_or_default();
        let fname = format!("cunumpy_scratch__{sname}");
        let def = *self.funcs.get(&fname).ok_or_else(|| {
            self.e(PortErrorKind::Input, line, "struct field", Some(p),
                format!("struct {sname} ('{p}') has scratch fields but no extents for them ({fname} is missing)"))
        })?;
        let me = def
            .get("args")
            .get("args")
            .as_list()
            .first()
            .and_then(|a| a.get("arg").as_str())
            .unwrap_or("self")
            .to_string();
        let mut g = FnCx {
            name: self.current.clone(),
            ..FnCx::default()
        };
        g.vars
            .insert(me.clone(), Ty::Struct(sname.to_string(), fields.to_vec()));
        g.params.insert(me.clone());
        let mut extents: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for s in def.get("body").as_list() {
            let Some(n) = s.get("targets").as_list().first().and_then(name_of) else {
                continue;
            };
            let v = s.get("value");
            let dims: Vec<&Json> = if v.kind() == "Tuple" {
                v.get("elts").as_list().iter().collect()
            } else {
                vec![v]
            };
            let mut ext = Vec::new();
            for d in dims {
                let (x, t) = self.expr(&g, d).map_err(|e| {
                    self.e(PortErrorKind::Unsupported, line, "struct field", Some(p),
                        format!("the size of the scratch field '{p}.{n}' ({sname}.__init__ allocates it): {}", e.message))
                })?;
                if !t.scalar().is_int() || t.rank() > 0 {
                    return Err(self.e(
                        PortErrorKind::Unsupported,
                        line,
                        "struct field",
                        Some(p),
                        format!("the size of the scratch field '{p}.{n}' is not an integer"),
                    ));
                }
                ext.push(if t == Ty::Scalar(Scalar::I64) {
                    strip_parens(&x).to_string()
                } else {
                    format!("(long long)({})", strip_parens(&x))
                });
            }
            extents.insert(n.to_string(), ext);
        }
        self.prelude.insert("localcap");
        let names: Vec<&str> = scratch.iter().map(|(n, _)| n.as_str()).collect();
        let mut out = format!(
            "    // '{p}': {sname}.__init__ allocates {}; each thread has its own\n    // (scratch: what an iteration reads there, it or its thread's earlier iterations wrote).\n",
            names.join(", ")
        );
        for (n, t) in fields {
            if names.contains(&n.as_str()) {
                out.push_str(&format!(
                    "    {} {p}__{n}_data[CUNUMPY_PORT_LOCAL_CAP];\n",
                    t.scalar().c()
                ));
            }
        }
        out.push_str(&format!("    {sname}_thread {p}__thread;\n    {{\n"));
        out.push_str(&format!("        const {sname}& {me} = {p};\n"));
        for (n, t) in fields {
            if !names.contains(&n.as_str()) {
                out.push_str(&format!("        {p}__thread.{n} = {me}.{n};\n"));
                continue;
            }
            let ext = extents.get(n).ok_or_else(|| {
                self.e(
                    PortErrorKind::Input,
                    line,
                    "struct field",
                    Some(p),
                    format!("no size for the scratch field '{p}.{n}' of struct {sname}"),
                )
            })?;
            if ext.len() != t.rank() {
                return Err(self.e(
                    PortErrorKind::Input,
                    line,
                    "struct field",
                    Some(p),
                    format!(
                        "the scratch field '{p}.{n}' has rank {} but {} extents",
                        t.rank(),
                        ext.len()
                    ),
                ));
            }
            let c = t.scalar().c();
            let v = format!("{p}__thread.{n}");
            out.push_str(&format!(
                "        {v} = CArray{}D<{c}>{{{p}__{n}_data, {{{}}}}};\n",
                t.rank(),
                ext.join(", ")
            ));
            out.push_str(&format!(
                "        if ({v}.size() < 0 || {v}.size() > CUNUMPY_PORT_LOCAL_CAP) {{\n            printf(\"cunumpy: {}: scratch field '{p}.{n}' needs %lld elements; this kernel reserves %d per thread (raise CUNUMPY_PORT_LOCAL_CAP)\\n\", (long long){v}.size(), (int)CUNUMPY_PORT_LOCAL_CAP);\n            __trap();\n        }}\n",
                self.current
            ));
            let fill = scratch
                .iter()
                .find(|(m, _)| m == n)
                .map(|(_, f)| f.as_str());
            if let Some(x) = match fill {
                Some("zeros") => Some("0"),
                Some("ones") => Some("1"),
                _ => None,
            } {
                out.push_str(&format!("        for (long long cunumpy_f = 0; cunumpy_f < {v}.size(); ++cunumpy_f) {p}__{n}_data[cunumpy_f] = ({c}){x};\n"));
            }
        }
        out.push_str("    }\n");
        Ok(out)
    }

    /// Scalars of the kernel set before the parallel loop that the loop only adds to
    /// (`s += x`, `s -= x`, never read otherwise in it): sums whose order does not matter
    /// (up to rounding), each thread keeping its own partial.
    fn reductions(&self, f: &FnCx, preamble: &[Json], lp: &Json) -> BTreeSet<String> {
        let body = lp.get("body").as_list();
        let mut before = Vec::new();
        collect_assigns(preamble, &mut before);
        let outer: BTreeSet<&str> = before.iter().filter_map(|(t, _, _)| name_of(t)).collect();
        let mut inner = Vec::new();
        collect_updates(body, &mut inner);
        let mut out = BTreeSet::new();
        for (n, _) in &inner {
            if !outer.contains(n.as_str())
                || f.params.contains(n)
                || f.vars.get(n).is_none_or(|t| t.rank() != 0)
            {
                continue;
            }
            let (mut adds, mut other) = (0usize, 0usize);
            count_sum_uses(body, n, &mut adds, &mut other);
            if adds > 0 && other == 0 {
                out.insert(n.clone());
            }
        }
        out
    }

    /// `out[k] += s` after the loop, `s` a reduction, `k` made of constants and parameters,
    /// `out` an array the loop does not touch: Some(Ok(s)). Some(Err) when it is such a
    /// statement that cannot be translated; None when it is not one.
    fn fold(
        &self,
        f: &FnCx,
        s: &Json,
        reductions: &BTreeSet<String>,
        loop_seen: &[Seen],
    ) -> Option<R<String>> {
        if s.kind() == "Assign" {
            let r = name_of(s.get("value")).filter(|r| reductions.contains(*r))?;
            return Some(Err(self.e(PortErrorKind::Unsupported, s.line(), "reduction", None,
                format!("assigns the sum '{r}' after the parallel loop: a kernel can add it (`out[k] += {r}`, the caller zeroing out[k]), not assign it"))));
        }
        if s.kind() != "AugAssign" || !matches!(s.get("op").kind(), "Add" | "Sub") {
            return None;
        }
        let r = name_of(s.get("value")).filter(|r| reductions.contains(*r))?;
        let target = s.get("target");
        if target.kind() != "Subscript" {
            return None;
        }
        let a = array_key(f, target.get("value"))?;
        let fixed = indices(target).iter().all(|i| {
            const_int(i).is_some_and(|v| v >= 0) || name_of(i).is_some_and(|n| f.params.contains(n))
        });
        if !fixed {
            return Some(Err(self.e(PortErrorKind::Unsupported, s.line(), "reduction", Some(&a),
                format!("adds the sum '{r}' into '{a}' at an index that is not made of constants and parameters"))));
        }
        if loop_seen.iter().any(|w| w.array == a) {
            return Some(Err(self.e(PortErrorKind::Race, s.line(), "reduction", Some(&a),
                format!("adds the sum '{r}' into '{a}', which the parallel loop also reads or writes: the result would depend on the thread order"))));
        }
        Some(Ok(r.to_string()))
    }

    /// The proof: classifies every array access and scalar update of the loop body.
    fn prove(
        &mut self,
        f: &FnCx,
        preamble: &[Json],
        lp: &Json,
        reductions: &BTreeSet<String>,
        counters: &BTreeSet<String>,
    ) -> R<Par> {
        let var = name_of(lp.get("target")).unwrap_or("").to_string();
        let body = lp.get("body").as_list();
        // Control flow that ties iterations together.
        check_flow(self, body, 0)?;
        // Scalars: nothing assigned before the loop (or a parameter) may be updated in it.
        let mut before = Vec::new();
        collect_assigns(preamble, &mut before);
        let outer: BTreeSet<&str> = before
            .iter()
            .filter_map(|(t, _, _)| name_of(t))
            .chain(f.params.iter().map(String::as_str))
            .collect();
        let mut inner = Vec::new();
        collect_updates(body, &mut inner);
        for (n, line) in &inner {
            if *n == var {
                return Err(self.e(
                    PortErrorKind::Race,
                    *line,
                    "loop variable",
                    None,
                    format!("assigns the loop variable '{var}' inside the parallel loop"),
                ));
            }
            if outer.contains(n.as_str())
                && !reductions.contains(n)
                && !counters.contains(n)
                && f.vars.get(n).is_some_and(|t| t.rank() == 0)
            {
                return Err(self.e(PortErrorKind::Race, *line, "scalar update", None,
                    format!("updates '{n}', which is set before the parallel loop: each iteration would depend on the previous one (a scalar reduction; accumulate into an array element with += instead, which becomes an atomic add; an integer only raised by `+= k`, each read of it followed by a raise, is a counter and is recounted)")));
            }
        }
        // Body locals must be assigned before they are read in each iteration.
        let locals: BTreeSet<String> = inner
            .iter()
            .map(|(n, _)| n.clone())
            .filter(|n| !reductions.contains(n) && !counters.contains(n))
            .collect();
        let mut assigned: BTreeSet<String> = BTreeSet::new();
        assigned.insert(var.clone());
        if let Some((n, line)) = first_carried(body, &locals, &mut assigned) {
            return Err(self.e(PortErrorKind::Race, line, "carried scalar", None,
                format!("reads '{n}' before assigning it in the iteration: it carries a value from the previous iteration")));
        }
        // Arrays (scratch fields of structs aside: every thread has its own).
        let mut seen = Vec::new();
        for s in body {
            self.accesses_stmt(f, s, &mut seen);
        }
        seen.retain(|w| !self.is_scratch_key(f, &w.array));
        // Arrays an invariant index may read: array arguments the loop does not write (local
        // arrays change per iteration).
        let writes: BTreeSet<&String> = seen
            .iter()
            .filter(|w| w.access != Access::Read)
            .map(|w| &w.array)
            .collect();
        let written: BTreeSet<String> = f
            .vars
            .iter()
            .filter(|(n, t)| !matches!(t, Ty::Array(..)) || writes.contains(n))
            .map(|(n, _)| n.clone())
            .collect();
        let mut owner = Owner::new(&var, body, &inner, written);
        owner.counters = counters.clone();
        let mut arrays: BTreeMap<&str, Vec<&Seen>> = BTreeMap::new();
        for w in &seen {
            arrays.entry(w.array.as_str()).or_default().push(w);
        }
        let mut atomic = BTreeSet::new();
        for (a, uses) in arrays {
            let writes: Vec<&&Seen> = uses.iter().filter(|w| w.access != Access::Read).collect();
            let Some(first_write) = writes.first() else {
                continue;
            };
            if let Some(w) = writes.iter().find(|w| w.idx.is_none()) {
                let h = w.helper.clone().unwrap_or_default();
                return Err(self.e(PortErrorKind::Race, w.line, "helper writes array", Some(a),
                    format!("passes '{a}' to {h}(), which writes it: the translator cannot see which elements (index it in the kernel instead)")));
            }
            // Positions where every access indexes with the bare loop variable.
            let (rank, s) = key_type(f, a);
            let owned_at = (0..rank).find(|&k| {
                let first = uses[0]
                    .idx
                    .as_ref()
                    .and_then(|ix| ix.get(k))
                    .and_then(|e| owner.key(e));
                first.is_some()
                    && uses.iter().all(|w| {
                        w.idx
                            .as_ref()
                            .and_then(|ix| ix.get(k))
                            .and_then(|e| owner.key(e))
                            == first
                    })
            });
            if owned_at.is_some() {
                continue;
            }
            // Every write owned at position k, but a read elsewhere: another iteration's element.
            let writes_owned_at = (0..rank).find_map(|k| {
                let first = writes[0]
                    .idx
                    .as_ref()
                    .and_then(|ix| ix.get(k))
                    .and_then(|e| owner.key(e))?;
                writes
                    .iter()
                    .all(|w| {
                        w.idx
                            .as_ref()
                            .and_then(|ix| ix.get(k))
                            .and_then(|e| owner.key(e))
                            .as_ref()
                            == Some(&first)
                    })
                    .then_some((k, first))
            });
            if let Some((k, first)) = writes_owned_at {
                if let Some(r) = uses.iter().find(|w| {
                    w.idx
                        .as_ref()
                        .and_then(|ix| ix.get(k))
                        .and_then(|e| owner.key(e))
                        .as_ref()
                        != Some(&first)
                }) {
                    return Err(self.e(
                        PortErrorKind::Race,
                        r.line,
                        "read of another iteration's element",
                        Some(a),
                        format!(
                            "reads '{a}' at an index other than '{first}' in position {k}, while each iteration writes '{a}' at '{first}' (line {}): it may read what another iteration writes",
                            first_write.line
                        ),
                    ));
                }
            }
            if let Some(w) = writes
                .iter()
                .find(|w| matches!(w.access, Access::Store | Access::OtherAug))
            {
                let what = if w.access == Access::Store {
                    "="
                } else {
                    "an augmented assignment other than += / -="
                };
                if let Some(h) = &w.helper {
                    return Err(self.e(PortErrorKind::Race, w.line, "unprovable write", Some(a),
                        format!("passes '{a}' to {h}(), which writes it at the index it is given, and that index is not the loop variable '{var}' (in the same position in every access of '{a}'): iterations may write the same element, so it is refused rather than left to race")));
                }
                return Err(self.e(PortErrorKind::Race, w.line, "unprovable write", Some(a),
                    format!("writes '{a}' with {what} at an index that is not the loop variable '{var}' (in the same position in every access of '{a}'): iterations may write the same element, so it is refused rather than left to race")));
            }
            if let Some(r) = uses.iter().find(|w| w.access == Access::Read) {
                return Err(self.e(PortErrorKind::Race, r.line, "read of accumulated array", Some(a),
                    format!("reads '{a}', into which other iterations add (line {}): the value would depend on the thread order", first_write.line)));
            }
            if s == Scalar::Bool {
                return Err(self.e(
                    PortErrorKind::Race,
                    first_write.line,
                    "atomic add",
                    Some(a),
                    format!("+= into the bool array '{a}' has no atomic add"),
                ));
            }
            atomic.insert(a.to_string());
        }
        Ok(Par { atomic })
    }

    /// The arrays a statement writes (helper arguments included), for the counters' recount.
    pub(crate) fn written_keys(&self, f: &FnCx, s: &Json, out: &mut Vec<String>) {
        let mut seen = Vec::new();
        self.accesses_stmt(f, s, &mut seen);
        out.extend(
            seen.into_iter()
                .filter(|w| w.access != Access::Read)
                .map(|w| w.array),
        );
    }

    /// Every access of an array argument in a statement (helper arguments included).
    fn accesses_stmt<'j>(&self, f: &FnCx, s: &'j Json, out: &mut Vec<Seen<'j>>) {
        match s.kind() {
            "Assign" | "AugAssign" => {
                let targets: Vec<&Json> = if s.kind() == "Assign" {
                    s.get("targets").as_list().iter().collect()
                } else {
                    vec![s.get("target")]
                };
                for t in targets {
                    // `b = p.field`: a local view of the whole field, read at indices the
                    // proof does not see
                    if t.kind() == "Name" {
                        if let Some((key, _)) = crate::translate::struct_field(f, s.get("value")) {
                            out.push(Seen {
                                array: key,
                                idx: None,
                                access: Access::Read,
                                line: s.line(),
                                helper: None,
                            });
                        }
                    }
                    if t.kind() == "Subscript" {
                        if let Some(a) = array_key(f, t.get("value")) {
                            let access = match (s.kind(), s.get("op").kind()) {
                                ("Assign", _) => Access::Store,
                                (_, "Add" | "Sub") => Access::AddSub,
                                _ => Access::OtherAug,
                            };
                            out.push(Seen {
                                array: a.to_string(),
                                idx: Some(indices(t)),
                                access,
                                line: s.line(),
                                helper: None,
                            });
                        }
                        for i in indices(t) {
                            self.accesses_expr(f, i, s.line(), out);
                        }
                    }
                }
                self.accesses_expr(f, s.get("value"), s.line(), out);
            }
            _ => {
                for key in ["test", "iter", "value"] {
                    self.accesses_expr(f, s.get(key), s.line(), out);
                }
                for key in ["body", "orelse"] {
                    for c in s.get(key).as_list() {
                        self.accesses_stmt(f, c, out);
                    }
                }
            }
        }
    }

    fn accesses_expr<'j>(&self, f: &FnCx, e: &'j Json, line: u32, out: &mut Vec<Seen<'j>>) {
        let line = if e.line() > 0 { e.line() } else { line };
        match e {
            Json::Obj(m) => {
                if e.kind() == "Subscript" {
                    if let Some(a) = array_key(f, e.get("value")) {
                        out.push(Seen {
                            array: a,
                            idx: Some(indices(e)),
                            access: Access::Read,
                            line,
                            helper: None,
                        });
                    }
                }
                if e.kind() == "Call" {
                    if let Some(h) = name_of(e.get("func")).filter(|h| self.funcs.contains_key(*h))
                    {
                        for (k, a) in e.get("args").as_list().iter().enumerate() {
                            // a struct passed whole: an access of each of its array fields,
                            // at indices the proof cannot see
                            if let Some((n, Ty::Struct(_, fields))) =
                                name_of(a).and_then(|n| f.vars.get(n).map(|t| (n, t)))
                            {
                                for (field, ft) in fields {
                                    let key = format!("{n}.{field}");
                                    if ft.rank() > 0 && !self.is_scratch_key(f, &key) {
                                        let writes = self.helper_writes_field(
                                            h,
                                            k,
                                            Some(field),
                                            &mut BTreeSet::new(),
                                        );
                                        // the helper touches it at one index it is given
                                        // (helper_owned.rs): that index, in its position
                                        let idx = self.helper_field_at(e, h, k, field, ft.rank());
                                        out.push(Seen {
                                            array: key,
                                            idx,
                                            access: if writes {
                                                Access::Store
                                            } else {
                                                Access::Read
                                            },
                                            line,
                                            helper: Some(h.to_string()),
                                        });
                                    }
                                }
                                continue;
                            }
                            if let Some((key, Ty::View(..))) = crate::translate::struct_field(f, a)
                            {
                                let writes = self.helper_writes(h, k, &mut BTreeSet::new());
                                out.push(Seen {
                                    array: key,
                                    idx: None,
                                    access: if writes { Access::Store } else { Access::Read },
                                    line,
                                    helper: Some(h.to_string()),
                                });
                                continue;
                            }
                            if let Some(n) =
                                name_of(a).filter(|n| matches!(f.vars.get(*n), Some(Ty::Array(..))))
                            {
                                let writes = self.helper_writes(h, k, &mut BTreeSet::new());
                                let access = if writes { Access::Store } else { Access::Read };
                                // indexed in the helper by one index it is given
                                let rank = f.vars.get(n).map_or(0, Ty::rank);
                                let idx = self.helper_field_at(e, h, k, "", rank);
                                out.push(Seen {
                                    array: n.to_string(),
                                    idx,
                                    access,
                                    line,
                                    helper: Some(h.to_string()),
                                });
                            }
                        }
                    }
                }
                for (k, v) in m {
                    if k != "_t" && k != "_line" {
                        self.accesses_expr(f, v, line, out);
                    }
                }
            }
            Json::List(v) => {
                for x in v {
                    self.accesses_expr(f, x, line, out);
                }
            }
            _ => {}
        }
    }

    /// The index at which the helper call `call` (of `h`, the struct at argument `k`) touches
    /// the struct's field `field` (the array argument `k` itself for "") of rank `rank`, as
    /// index expressions: the arguments the helper indexes it by in their positions, nothing
    /// the proof could own elsewhere. None when the helper's accesses do not share one.
    fn helper_field_at<'j>(
        &self,
        call: &'j Json,
        h: &str,
        k: usize,
        field: &str,
        rank: usize,
    ) -> Option<Vec<&'j Json>> {
        static UNKNOWN: Json = Json::Null;
        let found = self
            .helper_field_index(h, k, field, &mut BTreeSet::new())
            .ok()??;
        let args = call.get("args").as_list();
        let mut idx: Vec<&Json> = vec![&UNKNOWN; rank];
        for (q, pos) in found {
            // every access has the argument q in position pos
            *idx.get_mut(pos)? = args.get(q)?;
        }
        Some(idx)
    }

    /// Whether helper `h` writes (directly or through its own calls) its parameter number `k`.
    pub(crate) fn helper_writes(&self, h: &str, k: usize, busy: &mut Busy) -> bool {
        self.helper_writes_field(h, k, None, busy)
    }

    /// Whether helper `h` writes its parameter number `k`, a struct, at its array field
    /// `field` (any field for `None`): `p.field[...] =`, or `p.field` / `p` passed to a
    /// function that writes it.
    pub(crate) fn helper_writes_field(
        &self,
        h: &str,
        k: usize,
        field: Option<&str>,
        busy: &mut Busy,
    ) -> bool {
        if !busy.insert((h.to_string(), k, field.unwrap_or("").to_string())) {
            return false;
        }
        let Some(def) = self.funcs.get(h) else {
            return true;
        };
        let Some(p) = def
            .get("args")
            .get("args")
            .as_list()
            .get(k)
            .and_then(|a| a.get("arg").as_str())
        else {
            return true;
        };
        writes_name(self, def.get("body"), p, field, busy)
    }

    /// The trip count as Python text (for `n_threads`), with locals set once before the loop
    /// replaced by their value.
    fn py_trip(&self, f: &FnCx, preamble: &[Json], lp: &Json) -> Option<String> {
        let mut defs: BTreeMap<String, Json> = BTreeMap::new();
        let mut twice: BTreeSet<String> = BTreeSet::new();
        let mut define = |n: &str, v: Json| {
            if defs.insert(n.to_string(), v).is_some() {
                twice.insert(n.to_string());
            }
        };
        for s in preamble {
            if s.kind() == "Assign" {
                if let [t] = s.get("targets").as_list() {
                    if let Some(n) = name_of(t) {
                        define(n, s.get("value").clone());
                    } else if t.kind() == "Tuple" {
                        // `n0, n1 = x.shape` (or `shape(x)`): n0 is x.shape[0]
                        if let Some(base) = self.shape_base(s.get("value")) {
                            for (k, e) in t.get("elts").as_list().iter().enumerate() {
                                if let Some(n) = name_of(e) {
                                    define(n, shape_item(base, k));
                                }
                            }
                        }
                    }
                }
            }
        }
        for n in &twice {
            defs.remove(n);
        }
        let args = lp.get("iter").get("args").as_list();
        let stop = py_expr(f, &defs, args.get(if args.len() == 1 { 0 } else { 1 })?, 0)?;
        match args.len() {
            1 => Some(stop),
            2 => Some(format!(
                "max(0, ({stop}) - ({}))",
                py_expr(f, &defs, &args[0], 0)?
            )),
            _ => {
                let start = py_expr(f, &defs, &args[0], 0)?;
                let step = const_int(&args[2])?;
                Some(format!("len(range({start}, {stop}, {step}))"))
            }
        }
    }
}

/// Helpers (and parameter, field) whose writes are being looked at, against recursion.
pub(crate) type Busy = BTreeSet<(String, usize, String)>;

fn writes_name(t: &Translator, node: &Json, p: &str, field: Option<&str>, busy: &mut Busy) -> bool {
    // `p.attr` with attr the field asked about (any, for None)
    let field_of_p = |e: &Json| {
        e.kind() == "Attribute"
            && name_of(e.get("value")) == Some(p)
            && field.is_none_or(|fl| e.get("attr").as_str() == Some(fl))
    };
    match node {
        Json::Obj(m) => {
            if matches!(node.kind(), "Assign" | "AugAssign") {
                let targets: Vec<&Json> = if node.kind() == "Assign" {
                    node.get("targets").as_list().iter().collect()
                } else {
                    vec![node.get("target")]
                };
                // p[...] = or, for a struct p, p.field[...] = (and p.field = )
                if targets.iter().any(|tg| {
                    let v = tg.get("value");
                    (tg.kind() == "Subscript" && (name_of(v) == Some(p) || field_of_p(v)))
                        || field_of_p(tg)
                }) {
                    return true;
                }
            }
            if node.kind() == "Call" {
                if let Some(h) = name_of(node.get("func")).filter(|h| t.funcs.contains_key(*h)) {
                    for (k, a) in node.get("args").as_list().iter().enumerate() {
                        if name_of(a) == Some(p) && t.helper_writes_field(h, k, field, busy) {
                            return true;
                        }
                        if field_of_p(a) && t.helper_writes(h, k, busy) {
                            return true;
                        }
                    }
                }
            }
            m.values().any(|v| writes_name(t, v, p, field, busy))
        }
        Json::List(v) => v.iter().any(|x| writes_name(t, x, p, field, busy)),
        _ => false,
    }
}

/// `break` of the parallel loop itself and `return` anywhere in it end other iterations in
/// Python but only one thread in CUDA.
fn check_flow(t: &Translator, body: &[Json], loop_depth: usize) -> R<()> {
    for s in body {
        match s.kind() {
            "Return" => {
                return Err(t.e(
                    PortErrorKind::Unsupported,
                    s.line(),
                    "return",
                    None,
                    "return inside the parallel loop".into(),
                ))
            }
            "Break" if loop_depth == 0 => {
                return Err(t.e(
                    PortErrorKind::Unsupported,
                    s.line(),
                    "break",
                    None,
                    "break out of the parallel loop (later iterations would still run)".into(),
                ))
            }
            _ => {}
        }
        let deeper = if matches!(s.kind(), "For" | "While") {
            loop_depth + 1
        } else {
            loop_depth
        };
        for key in ["body", "orelse"] {
            check_flow(t, s.get(key).as_list(), deeper)?;
        }
    }
    Ok(())
}

/// Names assigned (=, op=, for targets) anywhere in a block, with the line.
fn collect_updates(body: &[Json], out: &mut Vec<(String, u32)>) {
    for s in body {
        let targets: Vec<&Json> = match s.kind() {
            "Assign" => s.get("targets").as_list().iter().collect(),
            "AugAssign" | "For" | "AnnAssign" => vec![s.get("target")],
            _ => vec![],
        };
        for t in targets {
            let names: Vec<&Json> = if t.kind() == "Tuple" {
                t.get("elts").as_list().iter().collect()
            } else {
                vec![t]
            };
            for n in names.into_iter().filter_map(name_of) {
                out.push((n.to_string(), s.line()));
            }
        }
        for key in ["body", "orelse"] {
            collect_updates(s.get(key).as_list(), out);
        }
    }
}

/// The first body local read before any assignment in source order (a value carried between
/// iterations), as (name, line).
fn first_carried(
    body: &[Json],
    locals: &BTreeSet<String>,
    assigned: &mut BTreeSet<String>,
) -> Option<(String, u32)> {
    fn reads(
        e: &Json,
        locals: &BTreeSet<String>,
        assigned: &BTreeSet<String>,
        line: u32,
    ) -> Option<(String, u32)> {
        match e {
            Json::Obj(m) => {
                if let Some(n) = name_of(e) {
                    if locals.contains(n) && !assigned.contains(n) {
                        return Some((n.to_string(), line));
                    }
                }
                m.values().find_map(|v| reads(v, locals, assigned, line))
            }
            Json::List(v) => v.iter().find_map(|x| reads(x, locals, assigned, line)),
            _ => None,
        }
    }
    for s in body {
        let line = s.line();
        match s.kind() {
            "Assign" => {
                if let Some(r) = reads(s.get("value"), locals, assigned, line) {
                    return Some(r);
                }
                for t in s.get("targets").as_list() {
                    if t.kind() == "Subscript" {
                        if let Some(r) = reads(t, locals, assigned, line) {
                            return Some(r);
                        }
                    }
                    let names: Vec<&Json> = if t.kind() == "Tuple" {
                        t.get("elts").as_list().iter().collect()
                    } else {
                        vec![t]
                    };
                    for n in names.into_iter().filter_map(name_of) {
                        assigned.insert(n.to_string());
                    }
                }
            }
            "AugAssign" => {
                if let Some(r) = reads(s.get("target"), locals, assigned, line)
                    .or_else(|| reads(s.get("value"), locals, assigned, line))
                {
                    return Some(r);
                }
            }
            // A loop body may run zero times: what it assigns is not assigned after it.
            "For" => {
                if let Some(r) = reads(s.get("iter"), locals, assigned, line) {
                    return Some(r);
                }
                let mut inside = assigned.clone();
                if let Some(n) = name_of(s.get("target")) {
                    inside.insert(n.to_string());
                }
                if let Some(r) = first_carried(s.get("body").as_list(), locals, &mut inside) {
                    return Some(r);
                }
            }
            "While" => {
                if let Some(r) = reads(s.get("test"), locals, assigned, line) {
                    return Some(r);
                }
                let mut inside = assigned.clone();
                if let Some(r) = first_carried(s.get("body").as_list(), locals, &mut inside) {
                    return Some(r);
                }
            }
            // After an `if`, a name is assigned when both branches assign it (or a branch
            // leaves the iteration with `continue`).
            "If" => {
                if let Some(r) = reads(s.get("test"), locals, assigned, line) {
                    return Some(r);
                }
                let mut branches = Vec::new();
                for key in ["body", "orelse"] {
                    let mut inside = assigned.clone();
                    let block = s.get(key).as_list();
                    if let Some(r) = first_carried(block, locals, &mut inside) {
                        return Some(r);
                    }
                    if !leaves(block) {
                        branches.push(inside);
                    }
                }
                match branches.as_slice() {
                    [] => {}
                    [one] => *assigned = one.clone(),
                    [a, b] => *assigned = a.intersection(b).cloned().collect(),
                    _ => {}
                }
            }
            _ => {
                if let Some(r) = reads(s, locals, assigned, line) {
                    return Some(r);
                }
            }
        }
    }
    None
}

/// Counts, in a block, the statements `n += x` / `n -= x` (`x` not reading `n`) and every
/// other use of the name `n`.
fn count_sum_uses(body: &[Json], n: &str, adds: &mut usize, other: &mut usize) {
    fn uses(e: &Json, n: &str) -> usize {
        match e {
            Json::Obj(m) => {
                usize::from(name_of(e) == Some(n)) + m.values().map(|v| uses(v, n)).sum::<usize>()
            }
            Json::List(v) => v.iter().map(|x| uses(x, n)).sum(),
            _ => 0,
        }
    }
    for s in body {
        if s.kind() == "AugAssign"
            && name_of(s.get("target")) == Some(n)
            && matches!(s.get("op").kind(), "Add" | "Sub")
        {
            *adds += 1;
            *other += uses(s.get("value"), n);
            continue;
        }
        for key in ["targets", "target", "value", "test", "iter"] {
            *other += uses(s.get(key), n);
        }
        for key in ["body", "orelse"] {
            count_sum_uses(s.get(key).as_list(), n, adds, other);
        }
    }
}

/// Whether a block always leaves the iteration (ends in `continue`, `break` or `return`).
fn leaves(block: &[Json]) -> bool {
    block
        .last()
        .is_some_and(|s| matches!(s.kind(), "Continue" | "Break" | "Return"))
}

/// A Python expression of the kernel's parameters (None when it uses anything else).
/// `base.shape[k]` as a syntax tree.
fn shape_item(base: &str, k: usize) -> Json {
    let obj = |pairs: Vec<(&str, Json)>| {
        Json::Obj(pairs.into_iter().map(|(a, b)| (a.to_string(), b)).collect())
    };
    obj(vec![
        ("_t", Json::Str("Subscript".into())),
        (
            "value",
            obj(vec![
                ("_t", Json::Str("Attribute".into())),
                ("attr", Json::Str("shape".into())),
                (
                    "value",
                    obj(vec![
                        ("_t", Json::Str("Name".into())),
                        ("id", Json::Str(base.into())),
                    ]),
                ),
            ]),
        ),
        (
            "slice",
            obj(vec![
                ("_t", Json::Str("Constant".into())),
                ("value", Json::Num(k.to_string())),
            ]),
        ),
    ])
}

fn py_expr(f: &FnCx, defs: &BTreeMap<String, Json>, e: &Json, depth: usize) -> Option<String> {
    if depth > 8 {
        return None;
    }
    let sub = |x: &Json| py_expr(f, defs, x, depth + 1);
    match e.kind() {
        "Constant" => match e.get("value") {
            Json::Num(n) if n.parse::<i64>().is_ok() => Some(n.clone()),
            _ => None,
        },
        "Name" => {
            let n = name_of(e)?;
            if f.params.contains(n) {
                Some(n.to_string())
            } else {
                defs.get(n).and_then(&sub).map(|v| format!("({v})"))
            }
        }
        "Subscript" => {
            let v = e.get("value");
            let call_base = (v.kind() == "Call")
                .then(|| {
                    let func = v.get("func");
                    let named = name_of(func) == Some("shape")
                        || func.get("attr").as_str() == Some("shape");
                    match v.get("args").as_list() {
                        [x] if named => name_of(x),
                        _ => None,
                    }
                })
                .flatten();
            if let Some(base) = call_base {
                Some(format!("{base}.shape[{}]", const_int(e.get("slice"))?))
            } else if let Some(a) = name_of(v).filter(|a| f.params.contains(*a)) {
                // an element of an array argument at constant indices (`e_out[0]`)
                let mut ix = Vec::new();
                for i in indices(e) {
                    ix.push(const_int(i).filter(|k| *k >= 0)?.to_string());
                }
                Some(format!("int({a}[{}])", ix.join(", ")))
            } else if v.kind() == "Attribute" && v.get("attr").as_str() == Some("shape") {
                Some(format!(
                    "{}.shape[{}]",
                    name_of(v.get("value"))?,
                    const_int(e.get("slice"))?
                ))
            } else {
                None
            }
        }
        "BinOp" => {
            let o = match e.get("op").kind() {
                "Add" => "+",
                "Sub" => "-",
                "Mult" => "*",
                "FloorDiv" => "//",
                _ => return None,
            };
            Some(format!(
                "({} {o} {})",
                sub(e.get("left"))?,
                sub(e.get("right"))?
            ))
        }
        "Attribute" => {
            let base = name_of(e.get("value"))?;
            f.params
                .contains(base)
                .then(|| format!("{base}.{}", e.get("attr").as_str().unwrap_or("")))
        }
        "Call" if name_of(e.get("func")) == Some("len") => {
            Some(format!("len({})", sub(e.get("args").as_list().first()?)?))
        }
        "Call" if name_of(e.get("func")) == Some("int") => {
            Some(format!("int({})", sub(e.get("args").as_list().first()?)?))
        }
        // `size(x)`, `np.size(x)` of an array argument (NumPy's element count)
        "Call"
            if (name_of(e.get("func")) == Some("size")
                || e.get("func").get("attr").as_str() == Some("size"))
                && e.get("args").as_list().len() == 1 =>
        {
            let x = name_of(&e.get("args").as_list()[0])?;
            (f.params.contains(x) && f.vars.get(x).is_some_and(|t| t.rank() > 0))
                .then(|| format!("{x}.size"))
        }
        _ => None,
    }
}

/// Which index expressions give every iteration its own element: the loop variable plus or minus
/// a loop-invariant offset (`i`, `p_out + i - s_out`), also through a local set once at the top
/// of the loop body (`i_loc = i - s_out`). `key` is the expression's canonical text (locals
/// replaced), so two accesses hit the same element exactly when their keys are equal.
struct Owner<'j> {
    var: String,
    updated: BTreeSet<String>,
    /// Names whose elements are not invariant: arrays written in the loop, local arrays, scalars.
    written: BTreeSet<String>,
    defs: BTreeMap<String, &'j Json>,
    /// Counters read only before an increment (`counters.rs`): owned like the loop variable.
    counters: BTreeSet<String>,
}

impl<'j> Owner<'j> {
    fn new(
        var: &str,
        body: &'j [Json],
        updates: &[(String, u32)],
        written: BTreeSet<String>,
    ) -> Self {
        let mut count: BTreeMap<&str, usize> = BTreeMap::new();
        for (n, _) in updates {
            *count.entry(n.as_str()).or_default() += 1;
        }
        // A local assigned once, anywhere in the body (nested blocks too): every read of it sees
        // that one assignment (a read before it in the iteration is refused as a carried
        // value), so its value is its definition's.
        fn single_defs<'j>(
            body: &'j [Json],
            count: &BTreeMap<&str, usize>,
            defs: &mut BTreeMap<String, &'j Json>,
        ) {
            for s in body {
                if s.kind() == "Assign" {
                    if let [t] = s.get("targets").as_list() {
                        if let Some(n) = name_of(t).filter(|n| count.get(n) == Some(&1)) {
                            defs.insert(n.to_string(), s.get("value"));
                        }
                    }
                }
                for key in ["body", "orelse"] {
                    single_defs(s.get(key).as_list(), count, defs);
                }
            }
        }
        let mut defs = BTreeMap::new();
        single_defs(body, &count, &mut defs);
        Owner {
            var: var.to_string(),
            updated: updates.iter().map(|(n, _)| n.clone()).collect(),
            written,
            defs,
            counters: BTreeSet::new(),
        }
    }

    fn key(&self, e: &Json) -> Option<String> {
        self.affine(e, 0)
    }

    /// The canonical text of `e` when it is the loop variable plus an invariant offset.
    fn affine(&self, e: &Json, depth: usize) -> Option<String> {
        if depth > 8 {
            return None;
        }
        match e.kind() {
            "Name" => {
                let n = name_of(e)?;
                if n == self.var || self.counters.contains(n) {
                    Some(n.to_string())
                } else {
                    self.affine(self.defs.get(n)?, depth + 1)
                }
            }
            "BinOp" => {
                let (l, r) = (e.get("left"), e.get("right"));
                match e.get("op").kind() {
                    "Add" => match (self.affine(l, depth + 1), self.affine(r, depth + 1)) {
                        (Some(a), None) => Some(format!("({a} + {})", self.invariant(r)?)),
                        (None, Some(b)) => Some(format!("({} + {b})", self.invariant(l)?)),
                        _ => None,
                    },
                    "Sub" => Some(format!(
                        "({} - {})",
                        self.affine(l, depth + 1)?,
                        self.invariant(r)?
                    )),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The canonical text of `e` when nothing in it changes during the loop.
    fn invariant(&self, e: &Json) -> Option<String> {
        match e.kind() {
            "Constant" => match e.get("value") {
                Json::Num(n) => Some(n.clone()),
                _ => None,
            },
            "Name" => name_of(e)
                .filter(|n| !self.updated.contains(*n) && *n != self.var)
                .map(str::to_string),
            "Attribute" => Some(format!(
                "{}.{}",
                self.invariant(e.get("value"))?,
                e.get("attr").as_str()?
            )),
            "BinOp" => {
                let o = match e.get("op").kind() {
                    "Add" => "+",
                    "Sub" => "-",
                    "Mult" => "*",
                    "FloorDiv" => "//",
                    _ => return None,
                };
                Some(format!(
                    "({} {o} {})",
                    self.invariant(e.get("left"))?,
                    self.invariant(e.get("right"))?
                ))
            }
            // An element of an array the loop does not write, at an invariant index (`p_out[0]`).
            "Subscript" => {
                let a = name_of(e.get("value")).filter(|a| !self.written.contains(*a))?;
                let mut ix = Vec::new();
                for i in indices(e) {
                    ix.push(self.invariant(i)?);
                }
                Some(format!("{a}[{}]", ix.join(", ")))
            }
            "UnaryOp" if e.get("op").kind() == "USub" => {
                Some(format!("-{}", self.invariant(e.get("operand"))?))
            }
            _ => None,
        }
    }
}
