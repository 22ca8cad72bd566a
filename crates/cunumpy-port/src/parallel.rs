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

#[derive(Clone)]
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
        let var0 = name_of(lp.get("target")).unwrap_or("").to_string();
        let mut par = self.prove(
            &f,
            &preamble,
            std::slice::from_ref(&var0),
            lp.get("body").as_list(),
            &reductions,
            &counters.names,
        )?;
        // Loop collapsing: the perfect nest of independent loops below the parallel one (each
        // level's body its statements of loop-invariant locals, then the next loop), as deep as
        // the proof holds with the same atomics as the one loop (an inner sum into a local, a
        // write owned by the outer variables only, bounds that change: it stops there). Only a
        // `range` loop without counters is collapsed (a counter is recounted per iteration of
        // the one loop; a loop over an index array runs one entry per thread).
        let is_range =
            lp.get("iter").kind() == "Call" && name_of(lp.get("iter").get("func")) == Some("range");
        let nest = if is_range && counters.names.is_empty() {
            self.nest(&f, lp)
        } else {
            Vec::new()
        };
        let mut levels: Vec<&Json> = vec![lp];
        let mut flat: Vec<Json> = lp.get("body").as_list().to_vec();
        for d in (2..=nest.len()).rev() {
            let vars: Vec<String> = nest[..d]
                .iter()
                .map(|(l, _)| name_of(l.get("target")).unwrap_or("").to_string())
                .collect();
            let mut body: Vec<Json> = Vec::new();
            for (_, pre) in &nest[..d - 1] {
                body.extend(pre.iter().map(|s| (*s).clone()));
            }
            body.extend(nest[d - 1].0.get("body").as_list().iter().cloned());
            let kept = self.atomic_params.clone();
            match self.prove(&f, &preamble, &vars, &body, &reductions, &counters.names) {
                Ok(p) if p.atomic == par.atomic => {
                    par = p;
                    levels = nest[..d].iter().map(|(l, _)| *l).collect();
                    flat = body;
                    break;
                }
                _ => self.atomic_params = kept,
            }
        }
        // After the loop: nothing but `out[k] += s` of a reduction (an atomic add of each
        // thread's partial sum).
        let mut folds: Vec<(&Json, String)> = Vec::new();
        let mut loop_seen = Vec::new();
        for s in &flat {
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
        let mut ranges = Vec::new();
        // the parallel loop's own start and step (the counters' recount needs them)
        let mut start0 = "0".to_string();
        let mut step0: i64 = 1;
        for (d, l) in levels.iter().enumerate() {
            let (v, start, stop, step) = match (&over, d) {
                (Some((v, arr)), 0) => (
                    v.clone(),
                    "0".to_string(),
                    format!("{arr}.shape[0]"),
                    "1".to_string(),
                ),
                _ => self.range(&f, l)?,
            };
            let step_n: i64 = step.parse().unwrap_or(1);
            if d == 0 {
                start0 = start.clone();
                step0 = step_n;
            }
            let trip = match (start.as_str(), step_n) {
                ("0", 1) => stop.clone(),
                (_, 1) => format!("{stop} - {start}"),
                (_, s) if s > 0 => format!("({stop} - {start} + {}) / {s}", s - 1),
                (_, s) => format!("({start} - {stop} + {}) / {}", -s - 1, -s),
            };
            let entries = match (&over, d) {
                (Some((_, arr)), 0) => Some(arr.clone()),
                _ => None,
            };
            let first = move |t: &str| match (&entries, start.as_str(), step_n) {
                (Some(arr), _, _) => format!("{arr}({t})"),
                (None, "0", 1) => t.to_string(),
                (None, _, 1) => format!("{start} + {t}"),
                (None, _, s) => format!("{start} + {t} * {s}"),
            };
            ranges.push((v, trip, first));
        }
        let var = ranges[0].0.clone();
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
        for l in &levels {
            code.push_str(&self.comment(l.line(), "    "));
        }
        if let [(v, trip, first)] = ranges.as_slice() {
            code.push_str("    // (parallel: one iteration per thread, grid-stride so any launch shape is right)\n");
            code.push_str(&format!("    const long long cunumpy_n = {trip};\n"));
            code.push_str("    for (long long cunumpy_t = blockIdx.x * (long long)blockDim.x + threadIdx.x; cunumpy_t < cunumpy_n;\n");
            code.push_str("         cunumpy_t += (long long)gridDim.x * blockDim.x) {\n");
            code.push_str(&format!("        {v} = {};\n", first("cunumpy_t")));
            if let Some((_, arr)) = &over {
                code.push_str(&self.index_array_check(v, arr, lp.line()));
            }
            if !counters.names.is_empty() {
                code.push_str(&self.recount(&mut f, &counters, v, &start0, step0)?);
            }
        } else {
            let names: Vec<&str> = ranges.iter().map(|(v, _, _)| v.as_str()).collect();
            code.push_str(&format!(
                "    // (parallel, collapsed: one ({}) per thread, {} fastest as in C order; grid-stride so any launch shape is right)\n",
                names.join(", "),
                names[names.len() - 1]
            ));
            for (k, (_, trip, _)) in ranges.iter().enumerate() {
                code.push_str(&format!(
                    "    const long long cunumpy_n{k} = cunumpy_port_trip({trip});\n"
                ));
            }
            let all: Vec<String> = (0..ranges.len()).map(|k| format!("cunumpy_n{k}")).collect();
            code.push_str(&format!(
                "    const long long cunumpy_n = {};\n",
                all.join(" * ")
            ));
            code.push_str("    // (32-bit division where the flat index fits, 64-bit otherwise)\n");
            code.push_str("    const bool cunumpy_small = cunumpy_n <= 0xffffffffLL;\n");
            code.push_str("    for (long long cunumpy_t = blockIdx.x * (long long)blockDim.x + threadIdx.x; cunumpy_t < cunumpy_n;\n");
            code.push_str("         cunumpy_t += (long long)gridDim.x * blockDim.x) {\n");
            for (ty, cast, cond) in [
                ("unsigned int", "(unsigned int)", "if (cunumpy_small) {"),
                ("long long", "", "} else {"),
            ] {
                code.push_str(&format!(
                    "        {cond}\n            {ty} cunumpy_r = {cast}cunumpy_t;\n"
                ));
                for k in (0..ranges.len()).rev() {
                    let (v, _, first) = &ranges[k];
                    if k == 0 {
                        code.push_str(&format!(
                            "            {v} = {};\n",
                            first("(long long)cunumpy_r")
                        ));
                    } else {
                        code.push_str(&format!(
                            "            {v} = {};\n            cunumpy_r /= {cast}cunumpy_n{k};\n",
                            first(&format!("(long long)(cunumpy_r % {cast}cunumpy_n{k})"))
                        ));
                    }
                }
            }
            code.push_str("        }\n");
            self.prelude.insert("trip");
        }
        code.push_str(&self.block(&mut f, &flat, 2, Some(&par))?);
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
        for s in &flat {
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
        match (&over, levels.as_slice()) {
            (Some((_, arr)), _) => src.push_str(&format!(
                "// Parallel loop: line {}, `for {var} in {arr}`: one entry per thread (the entries must increase strictly).\n",
                lp.line()
            )),
            (None, [_]) => src.push_str(&format!(
                "// Parallel loop: line {}, `for {var} in range(...)`: one iteration per thread.\n",
                lp.line()
            )),
            (None, _) => {
                let names: Vec<String> = ranges.iter().map(|(v, _, _)| v.clone()).collect();
                let lines: Vec<String> = levels.iter().map(|l| l.line().to_string()).collect();
                src.push_str(&format!(
                    "// Parallel loop: line {}, `for {var} in range(...)`, collapsed with the loops nested in it (lines {}: {}): one ({}) per thread, threads = the product of their trip counts.\n",
                    lp.line(),
                    lines.join(", "),
                    names.iter().map(|n| format!("`for {n}`")).collect::<Vec<_>>().join(", "),
                    names.join(", ")
                ));
            }
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
        if !self.atomic_params.is_empty() {
            src.push_str(&self.atomic_params_comment());
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
        // every kernel says how its registers are capped
        self.prelude.insert("registers");
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
        let n_threads = if levels.len() == 1 {
            self.py_trip(&f, &preamble, lp)
                .or_else(|| over.as_ref().map(|(_, arr)| format!("{arr}.shape[0]")))
        } else {
            let parts: Option<Vec<String>> = levels
                .iter()
                .map(|l| {
                    self.py_trip(&f, &preamble, l)
                        .map(|t| format!("max(0, {t})"))
                })
                .collect();
            parts.map(|p| p.join(" * "))
        };
        Ok(Translation {
            source: src,
            kernel: name,
            params: params.iter().map(|(n, _)| n.clone()).collect(),
            loop_line: lp.line(),
            loop_var: var,
            collapsed: levels[1..]
                .iter()
                .map(|l| (name_of(l.get("target")).unwrap_or("").to_string(), l.line()))
                .collect(),
            n_threads,
            writes,
            helpers: self.helpers_done.keys().cloned().collect(),
        })
    }

    /// The nest below the parallel loop `lp` that may be collapsed into it: `(loop, statements
    /// of its body before the next loop)` per level, `lp` first. A level continues the nest when
    /// its body is assignments of locals (no helper calls; a scalar, or an element or slice of a
    /// local array), `if`s of them and of `continue`, and then a last `for v in range(...)` whose bounds read nothing the nest
    /// assigns or writes (no loop variable of it either) and no helper. Whether the writes allow
    /// collapsing is the proof's to say.
    fn nest<'j>(&self, f: &FnCx, lp: &'j Json) -> Vec<(&'j Json, Vec<&'j Json>)> {
        let mut updated = Vec::new();
        collect_updates(lp.get("body").as_list(), &mut updated);
        let mut changing: BTreeSet<String> = updated.into_iter().map(|(n, _)| n).collect();
        if let Some(v) = name_of(lp.get("target")) {
            changing.insert(v.to_string());
        }
        let mut seen = Vec::new();
        for s in lp.get("body").as_list() {
            self.accesses_stmt(f, s, &mut seen);
        }
        for w in seen.iter().filter(|w| w.access != Access::Read) {
            changing.insert(w.array.clone());
        }
        fn calls_helper(t: &Translator, e: &Json) -> bool {
            match e {
                Json::Obj(m) => {
                    (e.kind() == "Call"
                        && name_of(e.get("func")).is_some_and(|h| t.funcs.contains_key(h)))
                        || m.values().any(|v| calls_helper(t, v))
                }
                Json::List(v) => v.iter().any(|x| calls_helper(t, x)),
                _ => false,
            }
        }
        // every name read is unchanged in the nest; array elements only of unwritten arguments
        fn steady(f: &FnCx, changing: &BTreeSet<String>, e: &Json) -> bool {
            match e {
                Json::Obj(m) => {
                    if name_of(e).is_some_and(|n| changing.contains(n)) {
                        return false;
                    }
                    if e.kind() == "Subscript" {
                        let v = e.get("value");
                        let shape = v.kind() == "Call" || v.get("attr").as_str() == Some("shape");
                        let fixed = array_key(f, v).is_some_and(|a| !changing.contains(&a));
                        if !shape && !fixed {
                            return false;
                        }
                    }
                    m.values().all(|v| steady(f, changing, v))
                }
                Json::List(v) => v.iter().all(|x| steady(f, changing, x)),
                _ => true,
            }
        }
        fn simple(t: &Translator, f: &FnCx, s: &Json) -> bool {
            // `continue` at a level skips every iteration of the loops below it: in the flat
            // index, the thread's iteration
            if matches!(s.kind(), "Continue" | "Pass") {
                return true;
            }
            if s.kind() == "If" {
                return !calls_helper(t, s.get("test"))
                    && s.get("body")
                        .as_list()
                        .iter()
                        .chain(s.get("orelse").as_list())
                        .all(|c| simple(t, f, c));
            }
            if s.kind() != "Assign" || calls_helper(t, s.get("value")) {
                return false;
            }
            match s.get("targets").as_list() {
                [t] if t.kind() == "Name" => {
                    name_of(t).is_some_and(|n| f.vars.get(n).is_some_and(|ty| ty.rank() == 0))
                }
                [t] if t.kind() == "Subscript" => name_of(t.get("value")).is_some_and(|a| {
                    !f.params.contains(a) && !matches!(f.vars.get(a), Some(Ty::Struct(..)) | None)
                }),
                _ => false,
            }
        }
        // Names a statement list assigns, or whose elements it assigns.
        fn assigned(body: &[Json], out: &mut BTreeSet<String>) {
            for s in body {
                if s.kind() == "Assign" {
                    for t in s.get("targets").as_list() {
                        let base = if t.kind() == "Subscript" {
                            t.get("value")
                        } else {
                            t
                        };
                        if let Some(n) = name_of(base) {
                            out.insert(n.to_string());
                        }
                    }
                }
                for key in ["body", "orelse"] {
                    assigned(s.get(key).as_list(), out);
                }
            }
        }
        // Whether a block assigns (=, op=, elements) any of `names`, or passes one to a helper
        // that writes it (or to a method or module function, which might).
        fn touches(t: &Translator, e: &Json, names: &BTreeSet<String>) -> bool {
            match e {
                Json::Obj(m) => {
                    let hit = |t: &Json| {
                        let base = if t.kind() == "Subscript" {
                            t.get("value")
                        } else {
                            t
                        };
                        name_of(base).is_some_and(|n| names.contains(n))
                    };
                    let direct = match e.kind() {
                        "Assign" => e.get("targets").as_list().iter().any(hit),
                        "AugAssign" | "For" => hit(e.get("target")),
                        "Call" => {
                            let func = name_of(e.get("func"));
                            e.get("args").as_list().iter().enumerate().any(|(k, a)| {
                                hit(a)
                                    && match func {
                                        Some(h) if t.funcs.contains_key(h) => {
                                            t.helper_writes(h, k, &mut Busy::new())
                                        }
                                        Some(_) => false, // range, min, a math function
                                        None => true,
                                    }
                            })
                        }
                        _ => false,
                    };
                    direct || m.values().any(|v| touches(t, v, names))
                }
                Json::List(v) => v.iter().any(|x| touches(t, x, names)),
                _ => false,
            }
        }
        let mut out: Vec<(&'j Json, Vec<&'j Json>)> = vec![(lp, Vec::new())];
        let mut cur = lp;
        loop {
            let body = cur.get("body").as_list();
            let Some((inner, pre)) = body.split_last() else {
                break;
            };
            let it = inner.get("iter");
            let args = it.get("args").as_list();
            let ok = inner.kind() == "For"
                && name_of(inner.get("target")).is_some()
                && it.kind() == "Call"
                && name_of(it.get("func")) == Some("range")
                && inner.get("orelse").as_list().is_empty()
                && (1..=3).contains(&args.len())
                && (args.len() < 3 || const_int(&args[2]).is_some_and(|c| c != 0))
                && args
                    .iter()
                    .all(|a| !calls_helper(self, a) && steady(f, &changing, a))
                && pre.iter().all(|s| simple(self, f, s));
            if !ok {
                break;
            }
            // what the level's statements set, the loops below may not change (a thread sets
            // it afresh where the host loop would carry the change to the next iteration)
            let mut set = BTreeSet::new();
            assigned(pre, &mut set);
            if touches(self, inner, &set) {
                break;
            }
            if let Some(last) = out.last_mut() {
                last.1 = pre.iter().collect();
            }
            out.push((inner, Vec::new()));
            cur = inner;
        }
        out
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
                "        if ({v}.size() < 0 || {v}.size() > CUNUMPY_PORT_LOCAL_CAP) {{\n            cunumpy_port_cap_exceeded(\"{}: scratch field '{p}.{n}'\", (long long){v}.size());\n        }}\n",
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
    /// `vars`: the variables of the loops run in parallel (one, or the collapsed nest's, outer
    /// first); `body`: what one thread runs per iteration (the innermost collapsed loop's body,
    /// after the statements of the levels above it).
    fn prove(
        &mut self,
        f: &FnCx,
        preamble: &[Json],
        vars: &[String],
        body: &[Json],
        reductions: &BTreeSet<String>,
        counters: &BTreeSet<String>,
    ) -> R<Par> {
        let var = vars.join(", ");
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
            if vars.contains(n) {
                return Err(self.e(
                    PortErrorKind::Race,
                    *line,
                    "loop variable",
                    None,
                    format!("assigns the loop variable '{n}' inside the parallel loop"),
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
        let mut assigned: BTreeSet<String> = vars.iter().cloned().collect();
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
        let mut owner = Owner::new(vars, body, &inner, written);
        // counters are owned like the loop variable (only without collapsing: one variable)
        if vars.len() == 1 {
            owner.counters = counters.clone();
        }
        let mut arrays: BTreeMap<&str, Vec<&Seen>> = BTreeMap::new();
        for w in &seen {
            arrays.entry(w.array.as_str()).or_default().push(w);
        }
        let mut atomic = BTreeSet::new();
        for (a, uses) in arrays {
            // A helper accessing the array at an index it is given (helper_owned.rs), where the
            // writes are not the iteration's own elements but every helper passed the array
            // only adds into it: atomic adds in the helpers, as for an array passed whole
            // (accumulate.rs). Otherwise the index decides (owned, or the refusal).
            let demoted: Vec<Seen>;
            let uses: Vec<&Seen> = if uses.iter().any(|w| w.helper.is_some() && w.idx.is_some())
                && !writes_owned_by_all(&owner, key_type(f, a).0, &uses, vars.len())
                && matches!(self.helper_accumulation(f, body, a), Ok(true))
            {
                demoted = uses
                    .iter()
                    .map(|w| {
                        let mut c = (*w).clone();
                        if c.helper.is_some() {
                            c.idx = None;
                        }
                        c
                    })
                    .collect();
                demoted.iter().collect()
            } else {
                uses
            };
            let writes: Vec<&&Seen> = uses.iter().filter(|w| w.access != Access::Read).collect();
            let Some(first_write) = writes.first() else {
                continue;
            };
            if let Some(w) = writes.iter().find(|w| w.idx.is_none()) {
                // a helper only adding into it: atomic adds there (else the refusal)
                if !self.helper_accumulation(f, body, a)? {
                    let h = w.helper.clone().unwrap_or_default();
                    return Err(self.e(PortErrorKind::Race, w.line, "helper writes array", Some(a),
                        format!("passes '{a}' to {h}(), which writes it: the translator cannot see which elements (index it in the kernel instead)")));
                }
            }
            // For each loop variable, a position where every access indexes with it plus the
            // same invariant offset: distinct iterations (tuples, when collapsed) differ there.
            let (rank, s) = key_type(f, a);
            let key_at = |w: &Seen, k: usize, v: usize| {
                w.idx
                    .as_ref()
                    .and_then(|ix| ix.get(k))
                    .and_then(|e| owner.key(e, v))
            };
            let owned_by = |group: &[&Seen], v: usize| {
                (0..rank).find_map(|k| {
                    let first = key_at(group[0], k, v)?;
                    group
                        .iter()
                        .all(|w| key_at(w, k, v).as_ref() == Some(&first))
                        .then_some((k, first))
                })
            };
            let all: Vec<&Seen> = uses.to_vec();
            if (0..vars.len()).all(|v| owned_by(&all, v).is_some()) {
                continue;
            }
            // Every write owned, but a read elsewhere: another iteration's element.
            let ws: Vec<&Seen> = writes.iter().map(|w| **w).collect();
            let writes_owned: Option<Vec<(usize, String)>> =
                (0..vars.len()).map(|v| owned_by(&ws, v)).collect();
            if let Some(owned) = writes_owned {
                if let Some((r, k, first)) = uses.iter().find_map(|w| {
                    owned
                        .iter()
                        .enumerate()
                        .find(|(v, (k, first))| key_at(w, *k, *v).as_ref() != Some(first))
                        .map(|(_, (k, first))| (w, *k, first.clone()))
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
                .filter(|w| w.idx.is_some()) // (a helper's writes: adds, proven above)
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
                    format!("writes '{a}' with {what} at an index that is not the loop variable '{var}' (in the same position in every access of '{a}'{}): iterations may write the same element, so it is refused rather than left to race", if vars.len() > 1 { ", each of them" } else { "" })));
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

/// Whether every write among `uses` (an array of rank `rank`) has, for each of the `n_vars`
/// loop variables, one position where all the writes index with that variable plus the same
/// invariant offset (distinct iterations write distinct elements).
fn writes_owned_by_all(owner: &Owner, rank: usize, uses: &[&Seen], n_vars: usize) -> bool {
    let ws: Vec<&&Seen> = uses.iter().filter(|w| w.access != Access::Read).collect();
    let key_at = |w: &Seen, k: usize, v: usize| {
        w.idx
            .as_ref()
            .and_then(|ix| ix.get(k))
            .and_then(|e| owner.key(e, v))
    };
    !ws.is_empty()
        && (0..n_vars).all(|v| {
            (0..rank).any(|k| match key_at(ws[0], k, v) {
                Some(first) => ws.iter().all(|w| key_at(w, k, v).as_ref() == Some(&first)),
                None => false,
            })
        })
}

/// Which index expressions give every iteration its own element: the loop variable plus or minus
/// a loop-invariant offset (`i`, `p_out + i - s_out`), also through a local set once at the top
/// of the loop body (`i_loc = i - s_out`). `key` is the expression's canonical text (locals
/// replaced), so two accesses hit the same element exactly when their keys are equal.
struct Owner<'j> {
    /// The parallel loops' variables (one, or a collapsed nest's).
    vars: Vec<String>,
    updated: BTreeSet<String>,
    /// Names whose elements are not invariant: arrays written in the loop, local arrays, scalars.
    written: BTreeSet<String>,
    defs: BTreeMap<String, &'j Json>,
    /// Counters read only before an increment (`counters.rs`): owned like the loop variable.
    counters: BTreeSet<String>,
}

impl<'j> Owner<'j> {
    fn new(
        vars: &[String],
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
            vars: vars.to_vec(),
            updated: updates.iter().map(|(n, _)| n.clone()).collect(),
            written,
            defs,
            counters: BTreeSet::new(),
        }
    }

    /// The canonical text of `e` when it is loop variable number `v` plus an invariant offset.
    fn key(&self, e: &Json, v: usize) -> Option<String> {
        self.affine(e, v, 0)
    }

    fn affine(&self, e: &Json, v: usize, depth: usize) -> Option<String> {
        if depth > 8 {
            return None;
        }
        match e.kind() {
            "Name" => {
                let n = name_of(e)?;
                if Some(n) == self.vars.get(v).map(String::as_str)
                    || (v == 0 && self.vars.len() == 1 && self.counters.contains(n))
                {
                    Some(n.to_string())
                } else {
                    self.affine(self.defs.get(n)?, v, depth + 1)
                }
            }
            "BinOp" => {
                let (l, r) = (e.get("left"), e.get("right"));
                match e.get("op").kind() {
                    "Add" => match (self.affine(l, v, depth + 1), self.affine(r, v, depth + 1)) {
                        (Some(a), None) => Some(format!("({a} + {})", self.invariant(r)?)),
                        (None, Some(b)) => Some(format!("({} + {b})", self.invariant(l)?)),
                        _ => None,
                    },
                    "Sub" => Some(format!(
                        "({} - {})",
                        self.affine(l, v, depth + 1)?,
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
                .filter(|n| !self.updated.contains(*n) && !self.vars.iter().any(|v| v == n))
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
