//! Writes into a struct's array field inside a helper, owned by the iteration: struphy's
//! `update_position_stage(ip, k, ..., args_markers)` writes `markers[0:3, ip]` (the field
//! `args_markers.markers`) at the index `ip` it is given. When every access of the field in the
//! helper (and in the helpers it passes the struct on to) has, in one position, one parameter
//! of the helper that the helper never assigns, the helper touches the field only at that
//! index: at a call, the access is the field indexed there by the argument given for that
//! parameter, which the race proof then classifies as any access in the kernel (owned when
//! it is the loop variable). The same for an array passed to a helper (`kick(ip, markers)`
//! writing `markers[ip, 3]`).

use crate::json::Json;
use crate::parallel::Busy;
use crate::translate::{indices, name_of, Translator};
use std::collections::BTreeSet;

/// (parameter name, position) pairs every access seen so far agrees on; `None` before the first.
type Candidates = Option<BTreeSet<(String, usize)>>;

fn narrow(c: &mut Candidates, new: BTreeSet<(String, usize)>) {
    *c = Some(match c.take() {
        None => new,
        Some(old) => old.intersection(&new).cloned().collect(),
    });
}

/// `p.field`, or `p` itself for the field "" (an array parameter).
fn is_field(e: &Json, p: &str, field: &str) -> bool {
    if field.is_empty() {
        return name_of(e) == Some(p);
    }
    e.kind() == "Attribute"
        && name_of(e.get("value")) == Some(p)
        && e.get("attr").as_str() == Some(field)
}

fn param_names(def: &Json) -> Vec<String> {
    def.get("args")
        .get("args")
        .as_list()
        .iter()
        .filter_map(|a| a.get("arg").as_str().map(String::from))
        .collect()
}

fn assigns(node: &Json, n: &str) -> bool {
    match node {
        Json::Obj(m) => {
            let targets: Vec<&Json> = match node.kind() {
                "Assign" => node.get("targets").as_list().iter().collect(),
                "AugAssign" | "AnnAssign" | "For" => vec![node.get("target")],
                _ => vec![],
            };
            let hit = targets.iter().any(|t| {
                name_of(t) == Some(n)
                    || (t.kind() == "Tuple"
                        && t.get("elts")
                            .as_list()
                            .iter()
                            .any(|x| name_of(x) == Some(n)))
            });
            hit || m.values().any(|v| assigns(v, n))
        }
        Json::List(v) => v.iter().any(|x| assigns(x, n)),
        _ => false,
    }
}

impl<'a> Translator<'a> {
    /// Whether helper `h` touches the array field `field` of its struct parameter number `k`
    /// (its array parameter `k` itself for the field "") only at one index: `Ok(Some(set))`
    /// with the pairs `(q, pos)` such that every access of it has, in position `pos`, the
    /// helper's parameter number `q` (never assigned in the helper); `Ok(None)` when the
    /// helper does not touch the field; `Err(())` otherwise.
    pub(crate) fn helper_field_index(
        &self,
        h: &str,
        k: usize,
        field: &str,
        busy: &mut Busy,
    ) -> Result<Option<BTreeSet<(usize, usize)>>, ()> {
        if !busy.insert((h.to_string(), k, format!("index:{field}"))) {
            return Err(()); // recursion
        }
        let def = self.funcs.get(h).ok_or(())?;
        let params = param_names(def);
        let p = params.get(k).ok_or(())?.clone();
        let mut cands: Candidates = None;
        self.field_uses(def.get("body"), &p, field, &params, &mut cands, busy)?;
        let Some(cands) = cands else {
            return Ok(None);
        };
        let found: BTreeSet<(usize, usize)> = cands
            .into_iter()
            .filter(|(q, _)| !assigns(def.get("body"), q))
            .filter_map(|(q, pos)| params.iter().position(|x| *x == q).map(|qi| (qi, pos)))
            .collect();
        if found.is_empty() {
            return Err(());
        }
        Ok(Some(found))
    }

    fn field_uses(
        &self,
        node: &Json,
        p: &str,
        field: &str,
        params: &[String],
        cands: &mut Candidates,
        busy: &mut Busy,
    ) -> Result<(), ()> {
        let m = match node {
            Json::List(v) => {
                return v
                    .iter()
                    .try_for_each(|x| self.field_uses(x, p, field, params, cands, busy))
            }
            Json::Obj(m) => m,
            _ => return Ok(()),
        };
        match node.kind() {
            "Subscript" if is_field(node.get("value"), p, field) => {
                let ix = indices(node);
                let here: BTreeSet<(String, usize)> = ix
                    .iter()
                    .enumerate()
                    .filter_map(|(pos, e)| {
                        name_of(e)
                            .filter(|n| params.iter().any(|x| x == n) && *n != p)
                            .map(|n| (n.to_string(), pos))
                    })
                    .collect();
                narrow(cands, here);
                for e in ix {
                    self.field_uses(e, p, field, params, cands, busy)?;
                }
                return Ok(());
            }
            // `p.field.shape`, `shape(p.field)`, `len(p.field)`: its extents only
            "Attribute"
                if node.get("attr").as_str() == Some("shape")
                    && is_field(node.get("value"), p, field) =>
            {
                return Ok(())
            }
            "Attribute" if name_of(node.get("value")) == Some(p) => {
                return if node.get("attr").as_str() == Some(field) {
                    Err(())
                } else {
                    Ok(())
                };
            }
            "Call" => {
                let f = name_of(node.get("func")).unwrap_or("");
                let args = node.get("args").as_list();
                if matches!(f, "shape" | "len") && args.len() == 1 && is_field(&args[0], p, field) {
                    return Ok(());
                }
                if self.funcs.contains_key(f) {
                    for (k2, a) in args.iter().enumerate() {
                        if name_of(a) != Some(p) {
                            self.field_uses(a, p, field, params, cands, busy)?;
                            continue;
                        }
                        // the struct passed on: the callee's index must be one of ours
                        if let Some(found) = self.helper_field_index(f, k2, field, busy)? {
                            // the callee's index parameters, as our parameters
                            let ours: BTreeSet<(String, usize)> = found
                                .into_iter()
                                .filter_map(|(q2, pos)| {
                                    let n = args.get(q2).and_then(name_of)?;
                                    (params.iter().any(|x| x == n) && n != p)
                                        .then(|| (n.to_string(), pos))
                                })
                                .collect();
                            if ours.is_empty() {
                                return Err(());
                            }
                            narrow(cands, ours);
                        }
                    }
                    return self.field_uses(node.get("func"), p, field, params, cands, busy);
                }
            }
            "Name" if name_of(node) == Some(p) => return Err(()),
            _ => {}
        }
        m.values()
            .try_for_each(|v| self.field_uses(v, p, field, params, cands, busy))
    }
}
