//! Counters of the parallel loop: an integer set before the loop and only raised in it by
//! `c += k` (a positive constant), as in the marker compaction `mat_f[counter, :] = ...;
//! counter += 1`. Its value in iteration `i` is its value before the loop plus the increments
//! of the iterations before `i`: each thread recounts those from the part of the body that
//! decides them (the *count slice*: the `if`s and `continue`s around the increments and the
//! scalar assignments their conditions read), which must read nothing the loop writes.
//!
//! Ownership: when every read of the counter in an iteration is followed, on every path to the
//! end of that iteration, by an increment, the values iterations read are disjoint ranges
//! (`[c_i, c_i + inc_i)`), so an array indexed by the counter is owned by the iteration, as one
//! indexed by the loop variable. A counter read on a path without a later increment (the next
//! iteration would see the same value) is refused, as is any other scalar carried from one
//! iteration to the next.

use crate::error::PortErrorKind;
use crate::json::Json;
use crate::translate::{array_key, const_int, name_of, FnCx, Translator, R};
use crate::types::Ty;
use std::collections::{BTreeMap, BTreeSet};

/// The loop variable of the recount loop in the generated code.
pub(crate) const RECOUNT_VAR: &str = "cunumpy_j";

/// The counters of a parallel loop and the statements that recount them.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) names: BTreeSet<String>,
    /// The count slice of the loop body, the loop variable renamed to [`RECOUNT_VAR`].
    pub(crate) slice: Vec<Json>,
    /// The fast path: per counter the C expression of its increment in one iteration, valid
    /// for every iteration when all `guards` (pairs of C expressions that must be equal) hold.
    pub(crate) step: BTreeMap<String, String>,
    pub(crate) guards: Vec<(String, String)>,
}

fn mentions(e: &Json, n: &str) -> bool {
    match e {
        Json::Obj(m) => name_of(e) == Some(n) || m.values().any(|v| mentions(v, n)),
        Json::List(v) => v.iter().any(|x| mentions(x, n)),
        _ => false,
    }
}

/// `c += k` with `k` a positive integer constant: Some(c).
fn increment(s: &Json) -> Option<&str> {
    let raise = s.kind() == "AugAssign"
        && s.get("op").kind() == "Add"
        && const_int(s.get("value")).is_some_and(|k| k > 0);
    if raise {
        name_of(s.get("target"))
    } else {
        None
    }
}

/// Every name a statement assigns (targets of =, op=, annotated =, for), nested blocks too.
fn assigned_names(s: &Json, out: &mut Vec<String>) {
    let targets: Vec<&Json> = match s.kind() {
        "Assign" => s.get("targets").as_list().iter().collect(),
        "AugAssign" | "For" | "AnnAssign" => vec![s.get("target")],
        _ => vec![],
    };
    for t in targets {
        if t.kind() == "Tuple" {
            out.extend(
                t.get("elts")
                    .as_list()
                    .iter()
                    .filter_map(name_of)
                    .map(String::from),
            );
        } else if let Some(n) = name_of(t) {
            out.push(n.to_string());
        }
    }
    for key in ["body", "orelse"] {
        for x in s.get(key).as_list() {
            assigned_names(x, out);
        }
    }
}

fn mentions_kind(e: &Json, kinds: &[&str]) -> bool {
    match e {
        Json::Obj(m) => kinds.contains(&e.kind()) || m.values().any(|v| mentions_kind(v, kinds)),
        Json::List(v) => v.iter().any(|x| mentions_kind(x, kinds)),
        _ => false,
    }
}

fn rename(e: &Json, from: &str, to: &str) -> Json {
    match e {
        Json::Obj(m) => {
            let mut m2 = BTreeMap::new();
            for (k, v) in m {
                m2.insert(k.clone(), rename(v, from, to));
            }
            if name_of(e) == Some(from) {
                m2.insert("id".into(), Json::Str(to.into()));
            }
            Json::Obj(m2)
        }
        Json::List(v) => Json::List(v.iter().map(|x| rename(x, from, to)).collect()),
        other => other.clone(),
    }
}

fn names_read(e: &Json, out: &mut BTreeSet<String>) {
    match e {
        Json::Obj(m) => {
            if let Some(n) = name_of(e) {
                out.insert(n.to_string());
            }
            m.values().for_each(|v| names_read(v, out));
        }
        Json::List(v) => v.iter().for_each(|x| names_read(x, out)),
        _ => {}
    }
}

impl<'a> Translator<'a> {
    /// The counters of the parallel loop `lp` (empty when it has none): integers assigned
    /// before it in `preamble` (not `reductions`) and in it only raised by `c += k`. A scalar that is not one is
    /// left to the scalar-update refusal of the proof.
    pub(crate) fn counters(
        &mut self,
        f: &FnCx,
        preamble: &[Json],
        lp: &Json,
        reductions: &BTreeSet<String>,
    ) -> R<Counters> {
        let body = lp.get("body").as_list();
        let var = name_of(lp.get("target")).unwrap_or("");
        let mut before = Vec::new();
        for s in preamble {
            assigned_names(s, &mut before);
        }
        let mut in_loop = Vec::new();
        for s in body {
            assigned_names(s, &mut in_loop);
        }
        let mut names = BTreeSet::new();
        for n in in_loop.iter().collect::<BTreeSet<_>>() {
            let int = matches!(f.vars.get(n), Some(t @ Ty::Scalar(_)) if t.scalar().is_int());
            // (a sum added into an array after the loop is a reduction, not a counter)
            if !int || !before.contains(n) || f.params.contains(n) || reductions.contains(n) {
                continue;
            }
            if self.only_increments(body, n, 0)? {
                names.insert(n.clone());
            }
        }
        if names.is_empty() {
            return Ok(Counters::default());
        }
        for n in &names {
            self.read_then_raised(body, n, None)?;
        }
        // The count slice, to a fixed point of the scalars its conditions read.
        let mut needed: BTreeSet<String> = BTreeSet::new();
        let slice = loop {
            let slice = self.slice(body, &names, &needed)?;
            let mut read = BTreeSet::new();
            for s in &slice {
                names_read(s, &mut read);
            }
            let grown: BTreeSet<String> = needed.union(&read).cloned().collect();
            if grown == needed {
                break slice;
            }
            needed = grown;
        };
        self.slice_is_pure(f, body, &slice)?;
        let mut step = BTreeMap::new();
        let mut guards = Vec::new();
        let fixed: BTreeSet<String> = in_loop.into_iter().chain([var.to_string()]).collect();
        for n in &names {
            let mut g = Vec::new();
            match self.per_iteration(f, body, n, &fixed, &mut g) {
                Some(e) if e.len() < 2000 => {
                    step.insert(n.clone(), e);
                    guards.extend(g);
                }
                _ => {
                    step.clear();
                    break;
                }
            }
        }
        // a guard of two different constants never holds: no fast path
        let never = |(a, b): &(String, String)| matches!((a.parse::<i64>(), b.parse::<i64>()), (Ok(x), Ok(y)) if x != y);
        if guards.iter().any(never) {
            step.clear();
        }
        if step.is_empty() {
            guards.clear();
        }
        let slice = slice.iter().map(|s| rename(s, var, RECOUNT_VAR)).collect();
        Ok(Counters {
            names,
            slice,
            step,
            guards,
        })
    }

    /// The code that sets the counters at the start of iteration `var`: their value before
    /// the loop plus the increments of the iterations `start..var`, recounted by the thread.
    pub(crate) fn recount(
        &mut self,
        f: &mut FnCx,
        c: &Counters,
        var: &str,
        start: &str,
        step: i64,
    ) -> R<String> {
        let names: Vec<&str> = c.names.iter().map(String::as_str).collect();
        if step <= 0 {
            return Err(self.e(
                PortErrorKind::Unsupported,
                0,
                "counter",
                None,
                format!(
                    "the counter(s) {} in a parallel loop whose range() step is not positive",
                    names.join(", ")
                ),
            ));
        }
        f.vars
            .insert(RECOUNT_VAR.into(), Ty::Scalar(crate::types::Scalar::I64));
        let mut out = format!(
            "        // the counter(s) {}: the increments of the iterations before this one (the\n        // lines of the loop that decide them, for each earlier iteration {RECOUNT_VAR})\n",
            names.join(", ")
        );
        let mut pad = "        ";
        if !c.step.is_empty() {
            let done = if start == "0" {
                var.to_string()
            } else {
                format!("({var} - {start})")
            };
            let done = if step == 1 {
                done
            } else {
                format!("{done} / {step}")
            };
            let test: Vec<String> = c
                .guards
                .iter()
                .map(|(a, b)| format!("({a}) == ({b})"))
                .collect();
            out.push_str(
                "        // (every iteration raises them by the same amount when this holds)\n",
            );
            out.push_str(&format!(
                "        if ({}) {{\n",
                if test.is_empty() {
                    "true".to_string()
                } else {
                    test.join(" && ")
                }
            ));
            for n in &names {
                out.push_str(&format!(
                    "            {n} = cunumpy_{n}_init + {done} * ({});\n",
                    c.step[*n]
                ));
            }
            out.push_str("        } else {\n");
            pad = "            ";
        }
        for n in &names {
            out.push_str(&format!("{pad}{n} = cunumpy_{n}_init;\n"));
        }
        out.push_str(&format!(
            "{pad}for (long long {RECOUNT_VAR} = {start}; {RECOUNT_VAR} < {var}; {RECOUNT_VAR} += {step}) {{\n"
        ));
        let depth = if c.step.is_empty() { 3 } else { 4 };
        out.push_str(&self.block(f, &c.slice, depth, None)?);
        out.push_str(&format!("{pad}}}\n"));
        if !c.step.is_empty() {
            out.push_str("        }\n");
        }
        f.vars.remove(RECOUNT_VAR);
        Ok(out)
    }

    /// The increment of counter `n` in one iteration running `body` as a C expression of
    /// loop invariants (`fixed`: the names the loop assigns, and its variable, are not), and
    /// in `guards` the pairs that must be equal for it to be that in every iteration: at an
    /// `if` whose test changes with the iteration, the increments of its two branches. None
    /// when a test or the expression cannot be written so.
    fn per_iteration(
        &mut self,
        f: &FnCx,
        body: &[Json],
        n: &str,
        fixed: &BTreeSet<String>,
        guards: &mut Vec<(String, String)>,
    ) -> Option<String> {
        let Some((s, rest)) = body.split_first() else {
            return Some("0".into());
        };
        if guards.len() > 64 {
            return None;
        }
        match s.kind() {
            "Continue" => Some("0".into()),
            "If" => {
                let mut a: Vec<Json> = s.get("body").as_list().to_vec();
                a.extend(rest.iter().cloned());
                let mut b: Vec<Json> = s.get("orelse").as_list().to_vec();
                b.extend(rest.iter().cloned());
                let x = self.per_iteration(f, &a, n, fixed, guards)?;
                let y = self.per_iteration(f, &b, n, fixed, guards)?;
                if x == y {
                    return Some(x);
                }
                let mut read = BTreeSet::new();
                names_read(s.get("test"), &mut read);
                let invariant = !mentions_kind(s.get("test"), &["Call", "Subscript"])
                    && read
                        .iter()
                        .all(|r| !fixed.contains(r) && f.vars.contains_key(r));
                if invariant {
                    let (t, _) = self.expr(f, s.get("test")).ok()?;
                    Some(format!("(({t}) ? {x} : {y})"))
                } else {
                    guards.push((x.clone(), y));
                    Some(x)
                }
            }
            _ => {
                let rest = self.per_iteration(f, rest, n, fixed, guards)?;
                match increment(s).filter(|c| *c == n) {
                    None => Some(rest),
                    Some(_) => {
                        let k = const_int(s.get("value"))?;
                        Some(if rest == "0" {
                            k.to_string()
                        } else {
                            format!("{k} + {rest}")
                        })
                    }
                }
            }
        }
    }

    /// Whether every assignment of `n` in `body` is `n += k` (k > 0) outside inner loops; an
    /// increment inside an inner loop is refused.
    fn only_increments(&self, body: &[Json], n: &str, depth: usize) -> R<bool> {
        for s in body {
            let mut own = Vec::new();
            if !matches!(s.kind(), "If" | "For" | "While") {
                assigned_names(s, &mut own);
            } else if s.kind() == "For" {
                own.extend(name_of(s.get("target")).map(String::from));
            }
            if own.iter().any(|x| x == n) {
                if increment(s) != Some(n) {
                    return Ok(false);
                }
                if depth > 0 {
                    return Err(self.e(PortErrorKind::Race, s.line(), "counter", None,
                        format!("raises the counter '{n}' inside an inner loop: the translator recounts a counter per iteration of the parallel loop only from increments outside inner loops")));
                }
            }
            let deeper = depth + usize::from(matches!(s.kind(), "For" | "While"));
            for key in ["body", "orelse"] {
                if !self.only_increments(s.get(key).as_list(), n, deeper)? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Every read of the counter `n` must be followed by an increment on every path to the end
    /// of the iteration (`continue` included). Returns the line of a read still waiting for
    /// one when the block falls through, `Err` when a path ends with one waiting.
    fn read_then_raised(
        &self,
        body: &[Json],
        n: &str,
        mut pending: Option<u32>,
    ) -> R<Option<Option<u32>>> {
        let refuse = |line: u32, at: u32| {
            self.e(PortErrorKind::Race, at, "counter", None,
                format!("reads the counter '{n}' (line {line}) on a path of the iteration that ends without raising it: the next iteration would see the same value, so the elements indexed by it are not the iteration's own"))
        };
        for s in body {
            match s.kind() {
                "Continue" => {
                    if let Some(l) = pending {
                        return Err(refuse(l, s.line()));
                    }
                    return Ok(None);
                }
                "If" => {
                    if mentions(s.get("test"), n) {
                        pending = Some(s.line());
                    }
                    let a = self.read_then_raised(s.get("body").as_list(), n, pending)?;
                    let b = self.read_then_raised(s.get("orelse").as_list(), n, pending)?;
                    match (a, b) {
                        (None, None) => return Ok(None),
                        (Some(x), Some(y)) => pending = x.or(y),
                        (Some(x), None) | (None, Some(x)) => pending = x,
                    }
                }
                _ if increment(s) == Some(n) => pending = None,
                _ => {
                    if mentions(s, n) {
                        pending = Some(s.line());
                    }
                }
            }
        }
        match pending {
            Some(l) if body.is_empty() => Err(refuse(l, l)),
            _ => Ok(Some(pending)),
        }
    }

    /// The statements of `body` that decide the counters' increments.
    fn slice(
        &self,
        body: &[Json],
        counters: &BTreeSet<String>,
        needed: &BTreeSet<String>,
    ) -> R<Vec<Json>> {
        let mut out = Vec::new();
        for s in body {
            match s.kind() {
                "Continue" => out.push(s.clone()),
                "If" => {
                    let b = self.slice(s.get("body").as_list(), counters, needed)?;
                    let o = self.slice(s.get("orelse").as_list(), counters, needed)?;
                    if !b.is_empty() || !o.is_empty() {
                        let mut m = match s {
                            Json::Obj(m) => m.clone(),
                            _ => BTreeMap::new(),
                        };
                        m.insert("body".into(), Json::List(b));
                        m.insert("orelse".into(), Json::List(o));
                        out.push(Json::Obj(m));
                    }
                }
                _ if increment(s).is_some_and(|c| counters.contains(c)) => out.push(s.clone()),
                "Assign"
                    if s.get("targets").as_list().len() == 1
                        && name_of(&s.get("targets").as_list()[0])
                            .is_some_and(|t| needed.contains(t)) =>
                {
                    out.push(s.clone())
                }
                _ => {
                    let mut own = Vec::new();
                    assigned_names(s, &mut own);
                    if let Some(x) = own.iter().find(|x| needed.contains(*x)) {
                        return Err(self.e(PortErrorKind::Unsupported, s.line(), "counter", None,
                            format!("the increments of a counter depend on '{x}', which this statement sets (only plain `{x} = ...` outside inner loops can be recounted)")));
                    }
                }
            }
        }
        Ok(out)
    }

    /// The count slice reads only what no iteration writes and calls nothing.
    fn slice_is_pure(&self, f: &FnCx, body: &[Json], slice: &[Json]) -> R<()> {
        let mut written = Vec::new();
        for s in body {
            self.written_keys(f, s, &mut written);
        }
        fn walk(t: &Translator, f: &FnCx, e: &Json, written: &[String], line: u32) -> R<()> {
            let line = if e.line() > 0 { e.line() } else { line };
            match e.kind() {
                "Call" => {
                    return Err(t.e(PortErrorKind::Unsupported, line, "counter", None,
                        "the increments of a counter depend on a function call (the recount runs only plain expressions)".into()))
                }
                "Subscript" => {
                    let base = e.get("value");
                    let key = array_key(f, base);
                    let local = name_of(base).is_some_and(|n| !f.params.contains(n));
                    match key {
                        Some(k) if !local && !written.contains(&k) => {}
                        _ => {
                            return Err(t.e(PortErrorKind::Race, line, "counter", key.as_deref(),
                                "the increments of a counter depend on an array the parallel loop writes or a local array: each thread could not recount them".into()))
                        }
                    }
                }
                _ => {}
            }
            match e {
                Json::Obj(m) => m.values().try_for_each(|v| walk(t, f, v, written, line)),
                Json::List(v) => v.iter().try_for_each(|x| walk(t, f, x, written, line)),
                _ => Ok(()),
            }
        }
        slice
            .iter()
            .try_for_each(|s| walk(self, f, s, &written, s.line()))
    }
}
