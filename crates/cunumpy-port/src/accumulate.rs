//! Accumulation through helpers: the parallel loop passes a shared array (a grid, a matrix)
//! to a helper, which adds into it at indices computed from the iteration's data (struphy's
//! `particle_to_mat_kernels.vec_fill_b_v0(args_derham, eta1, eta2, eta3, vec, filling)`, whose
//! `filler_kernels.fill_vec` does `vec[i1, i2, i3] += b3`). The proof follows the array into
//! the helper (and the helpers it passes it to): when the helper's parameter is only ever the
//! target of `+=`/`-=` (its elements never read, never assigned with `=`), those adds become
//! atomic adds and the kernel is safe whatever elements the iterations hit. Anything else the
//! helper does with it is refused, naming the helper, its line and the array.

use crate::error::{PortError, PortErrorKind};
use crate::json::Json;
use crate::translate::{err, name_of, FnCx, Translator, R};
use crate::types::Ty;
use std::collections::BTreeSet;

impl<'a> Translator<'a> {
    /// Whether every helper call of the loop `body` that writes the kernel's array `a` (passed
    /// whole, by name) only adds into it. Ok(true) records the helper parameters whose
    /// `+=`/`-=` become atomic adds (`atomic_params`); Ok(false): `a` is not an array argument
    /// (a struct field, a struct passed whole), which this does not follow; Err is the refusal
    /// naming the helper, its line and the array.
    pub(crate) fn helper_accumulation(&mut self, f: &FnCx, body: &[Json], a: &str) -> R<bool> {
        if !matches!(f.vars.get(a), Some(Ty::Array(..))) {
            return Ok(false);
        }
        let mut calls = Vec::new();
        calls_passing(self, &Json::List(body.to_vec()), a, &mut calls);
        let mut pairs = BTreeSet::new();
        let mut busy = BTreeSet::new();
        for (h, k) in calls {
            self.adds_only(&h, k, a, &mut pairs, &mut busy)?;
        }
        for (h, p) in &pairs {
            if self.helpers_done.contains_key(h) {
                // translated already (a call of it before the loop, or in a value the types
                // were inferred from), with plain adds
                return Err(err(PortErrorKind::Unsupported, h, self.funcs.get(h).map_or(0, |d| d.line()), "helper writes array", Some(a),
                    format!("{h}() adds into '{p}' (the kernel's '{a}', which every iteration shares) but is also called outside the parallel loop or in an assigned value, where it was translated without atomic adds: call it only as a statement in the loop")));
            }
        }
        self.atomic_params.extend(pairs);
        Ok(true)
    }

    /// Helper `h`'s parameter number `k` (the kernel's shared array `a`) is only added into
    /// (`p[...] += x`, `p[...] -= x`), also in the helpers it passes `p` on to.
    fn adds_only(
        &self,
        h: &str,
        k: usize,
        a: &str,
        pairs: &mut BTreeSet<(String, String)>,
        busy: &mut BTreeSet<(String, usize)>,
    ) -> R<()> {
        if !busy.insert((h.to_string(), k)) {
            return Ok(());
        }
        let Some(def) = self.funcs.get(h) else {
            return Ok(());
        };
        let Some(p) = def
            .get("args")
            .get("args")
            .as_list()
            .get(k)
            .and_then(|x| x.get("arg").as_str())
        else {
            return Err(err(
                PortErrorKind::Input,
                h,
                def.line(),
                "call",
                Some(a),
                format!("{h}() has no parameter number {} for '{a}'", k + 1),
            ));
        };
        pairs.insert((h.to_string(), p.to_string()));
        let refuse = |line: u32, what: &str| {
            let construct = if what.starts_with("reads") {
                "read of accumulated array"
            } else {
                "helper writes array"
            };
            err(PortErrorKind::Race, h, line, construct, Some(a),
                format!("{h}() {what} '{p}' (the kernel's '{a}', which every iteration shares): only += / -= into it can be made atomic adds, anything else would race"))
        };
        let mut nested = Vec::new();
        walk(self, def.get("body"), p, def.line(), &refuse, &mut nested)?;
        for (g, j) in nested {
            self.adds_only(&g, j, a, pairs, busy)?;
        }
        Ok(())
    }

    /// The header line naming the helper parameters whose adds are atomic.
    pub(crate) fn atomic_params_comment(&self) -> String {
        let each: Vec<String> = self
            .atomic_params
            .iter()
            .map(|(h, p)| format!("{h}({p})"))
            .collect();
        format!(
            "// Atomic adds in helpers (their parameter receives a shared array they only add into): {}.\n",
            each.join(", ")
        )
    }

    /// Whether the `+=`/`-=` of statement target `target` in function `f` is an atomic add: a
    /// subscript of a parameter of a helper that the kernel passes a shared array to.
    pub(crate) fn atomic_in_helper(&self, f: &FnCx, target: &Json) -> bool {
        target.kind() == "Subscript"
            && name_of(target.get("value")).is_some_and(|p| {
                f.params.contains(p)
                    && self
                        .atomic_params
                        .contains(&(f.name.clone(), p.to_string()))
            })
    }

    /// A call of helper `name` whose argument for a parameter it adds into atomically is an
    /// array of the thread's own (a local array, a struct's scratch field): refused, as atomic adds
    /// need global memory.
    pub(crate) fn check_atomic_args(
        &self,
        f: &FnCx,
        name: &str,
        args: &[Json],
        line: u32,
    ) -> R<()> {
        let Some(def) = self.funcs.get(name) else {
            return Ok(());
        };
        for (k, x) in args.iter().enumerate() {
            let Some(p) = def
                .get("args")
                .get("args")
                .as_list()
                .get(k)
                .and_then(|x| x.get("arg").as_str())
            else {
                continue;
            };
            if !self
                .atomic_params
                .contains(&(name.to_string(), p.to_string()))
            {
                continue;
            }
            // a local array, or a struct's scratch field (each thread's own, in local memory)
            let local = name_of(x)
                .filter(|v| matches!(f.vars.get(*v), Some(Ty::Local(..) | Ty::LocalDyn(..))))
                .map(str::to_string)
                .or_else(|| {
                    crate::translate::struct_field(f, x)
                        .map(|(key, _)| key)
                        .filter(|key| self.is_scratch_key(f, key))
                });
            if let Some(v) = local {
                return Err(self.e(PortErrorKind::Unsupported, line, "helper writes array", Some(&v),
                    format!("passes '{v}', an array of the thread's own (a local array or a struct's scratch field), to {name}(), whose adds into '{p}' are atomic (another call passes it a shared array): atomic adds need an array argument in global memory; use two helpers")));
            }
        }
        Ok(())
    }
}

/// The (helper, argument position) of every call in `node` passing the name `a` whole.
fn calls_passing(t: &Translator, node: &Json, a: &str, out: &mut Vec<(String, usize)>) {
    match node {
        Json::Obj(m) => {
            if node.kind() == "Call" {
                if let Some(h) = name_of(node.get("func")).filter(|h| t.funcs.contains_key(*h)) {
                    for (k, x) in node.get("args").as_list().iter().enumerate() {
                        if name_of(x) == Some(a) {
                            out.push((h.to_string(), k));
                        }
                    }
                }
            }
            for v in m.values() {
                calls_passing(t, v, a, out);
            }
        }
        Json::List(v) => {
            for x in v {
                calls_passing(t, x, a, out);
            }
        }
        _ => {}
    }
}

/// Every use of the name `p` in `node`: `p[...] += x` / `-= x` and `p.shape` pass; `p` passed
/// whole to a helper is collected in `nested`; anything else is refused.
fn walk(
    t: &Translator,
    node: &Json,
    p: &str,
    line: u32,
    refuse: &dyn Fn(u32, &str) -> PortError,
    nested: &mut Vec<(String, usize)>,
) -> R<()> {
    let line = if node.line() > 0 { node.line() } else { line };
    let is_p = |e: &Json| name_of(e) == Some(p);
    match node {
        Json::Obj(m) => {
            match node.kind() {
                "AugAssign" => {
                    let tg = node.get("target");
                    if tg.kind() == "Subscript" && is_p(tg.get("value")) {
                        if !matches!(node.get("op").kind(), "Add" | "Sub") {
                            return Err(refuse(
                                line,
                                "writes with an augmented assignment other than += / -= into",
                            ));
                        }
                        walk(t, tg.get("slice"), p, line, refuse, nested)?;
                        return walk(t, node.get("value"), p, line, refuse, nested);
                    }
                    if is_p(tg) {
                        return Err(refuse(line, "rebinds"));
                    }
                }
                "Assign" | "AnnAssign" => {
                    let targets: Vec<&Json> = if node.kind() == "Assign" {
                        node.get("targets").as_list().iter().collect()
                    } else {
                        vec![node.get("target")]
                    };
                    for tg in targets {
                        if tg.kind() == "Subscript" && is_p(tg.get("value")) {
                            return Err(refuse(line, "assigns (=) into"));
                        }
                        if is_p(tg)
                            || (tg.kind() == "Tuple" && tg.get("elts").as_list().iter().any(is_p))
                        {
                            return Err(refuse(line, "rebinds"));
                        }
                    }
                }
                "Attribute"
                    if is_p(node.get("value")) && node.get("attr").as_str() == Some("shape") =>
                {
                    return Ok(());
                }
                "Call" => {
                    if let Some(g) = name_of(node.get("func")).filter(|g| t.funcs.contains_key(*g))
                    {
                        for (j, x) in node.get("args").as_list().iter().enumerate() {
                            if is_p(x) {
                                nested.push((g.to_string(), j));
                            } else {
                                walk(t, x, p, line, refuse, nested)?;
                            }
                        }
                        return Ok(());
                    }
                }
                "Name" if is_p(node) => {
                    return Err(refuse(line, "reads (or uses otherwise than adding into)"));
                }
                _ => {}
            }
            for (key, v) in m {
                if key != "_t" && key != "_line" {
                    walk(t, v, p, line, refuse, nested)?;
                }
            }
            Ok(())
        }
        Json::List(v) => {
            for x in v {
                walk(t, x, p, line, refuse, nested)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}
