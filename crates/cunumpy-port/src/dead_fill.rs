//! Fills of local arrays that no read can see: `left = zeros(pn)` followed by a loop that writes
//! `left[j]` at the top of iteration `j` and reads only `left[0..=j]` (the B-spline recurrences)
//! never reads one of the zeros, so the translator may leave the fill out. On the GPU such a
//! fill is a few stores into local memory per call, but a spline helper runs three times per
//! marker and field: dropping them took struphy's `eval_spline_mpi_markers` from 0.78x to 1.12x
//! of its hand-written version on the H200 (benches/results/generated-cuda-struphy-h200-2026-12-03/
//! transforms.md).
//!
//! The proof is deliberately narrow, so that it is easy to check by eye:
//! 1. the array is assigned once in the function, by this statement, and every later mention of
//!    it is an element access `a[e]` inside one loop `for j in range(n)` (start 0, step 1) that
//!    follows the fill in the same block, with no `break`, `continue` or `return` inside;
//! 2. the first statement of that loop's body that mentions the array is `a[j] = value`, at the
//!    body's top level (so every iteration runs it), and `value` does not mention the array;
//! 3. every other access reads `a[j]`, `a[r]` or `a[j - r]`, where `r` is the variable of a loop
//!    `for r in range(j + 1)` or `range(j)` (start 0) inside the body; neither `j` nor `r` is
//!    assigned anywhere else in the body.
//!
//! By induction over the iterations, `a[0..j]` are written before iteration `j` reads any of
//! them, so no read sees the fill. A second proof (`overwritten_by_call`) covers zeros handed
//! straight to a helper that overwrites the whole parameter (`bn[:] = values[pn, :]`) before
//! anything reads it. Anything else keeps its fill.

use std::collections::BTreeMap;

use crate::json::{const_int, is_whole_slice, name_of, Json};

/// The module's functions by name (the helpers a call may reach).
pub(crate) type Funcs<'a> = BTreeMap<String, &'a Json>;

/// The lines of the `name = zeros(...)` statements in `body` (and in the blocks nested in it)
/// whose fill no read can see.
pub(crate) fn dead_zero_fills(body: &[Json], funcs: &Funcs<'_>) -> Vec<u32> {
    let mut lines = Vec::new();
    each_zeros(body, &mut |s, name, after, _| {
        if fill_is_dead(name, after, body) || overwritten_by_call(name, after, body, funcs) {
            lines.push(s.line());
        }
    });
    lines
}

/// Calls `visit(statement, name, after, before)` for each `name = zeros(...)` statement in
/// `block` and in the blocks nested in it, with the statements after and before it in its own
/// block: where each fill proof starts.
pub(crate) fn each_zeros<'a>(
    block: &'a [Json],
    visit: &mut impl FnMut(&'a Json, &'a str, &'a [Json], &'a [Json]),
) {
    for (i, s) in block.iter().enumerate() {
        if let Some(name) = zeros_target(s) {
            visit(s, name, &block[i + 1..], &block[..i]);
        }
        for field in ["body", "orelse"] {
            each_zeros(s.get(field).as_list(), visit);
        }
    }
}

/// Whether the zeros statement `s` makes one axis whose length is known at run time only
/// (`zeros(p + 1)`, not `zeros(3)` nor `zeros((n, m))`).
pub(crate) fn one_axis_at_run_time(s: &Json) -> bool {
    matches!(s.get("value").get("args").as_list(), [n] if n.kind() != "Tuple" && const_int(n).is_none())
}

/// The other proof (struphy's `b1 = zeros(p + 1)` handed to `b_der_splines_slim`): every
/// mention of the array comes after the zeros in the same block, the first of them is the
/// array passed once, positionally, to a helper of the module that overwrites that parameter
/// whole (`p[:] = value` at the top of its body, before any `return`) and mentions it nowhere
/// else, and nothing between the zeros and the call can jump away. After the call every element
/// holds the helper's value, so no read can see a zero.
fn overwritten_by_call(
    name: &str,
    after: &[Json],
    function_body: &[Json],
    funcs: &Funcs<'_>,
) -> bool {
    if count_binds(function_body, name) != 1 || !only_mentioned_after(name, after, function_body) {
        return false;
    }
    let Some(first) = after.iter().position(|s| mentions(s, name)) else {
        return false;
    };
    if after[..first].iter().any(has_jump) || mention_count(&after[first], name) != 1 {
        return false;
    }
    let call = match after[first].kind() {
        "Expr" | "Assign" => after[first].get("value"),
        _ => return false,
    };
    if call.kind() != "Call" {
        return false;
    }
    let Some(def) = name_of(call.get("func")).and_then(|h| funcs.get(h)) else {
        return false;
    };
    let Some(k) = call
        .get("args")
        .as_list()
        .iter()
        .position(|a| name_of(a) == Some(name))
    else {
        return false;
    };
    let params = def.get("args").get("args").as_list();
    let Some(param) = params.get(k).and_then(|p| p.get("arg").as_str()) else {
        return false;
    };
    overwrites_whole(def.get("body").as_list(), param)
}

/// Whether `body` writes `param[:] = value` at its top level before any `return`, with `value`
/// not reading `param`, and mentions `param` nowhere else.
fn overwrites_whole(body: &[Json], param: &str) -> bool {
    let total: usize = body.iter().map(|s| mention_count(s, param)).sum();
    let Some(at) = body.iter().position(|s| mentions(s, param)) else {
        return false;
    };
    let s = &body[at];
    let targets = s.get("targets").as_list();
    let whole_slice = |t: &Json| element_of(t, param) && is_whole_slice(t.get("slice"));
    total == 1
        && s.kind() == "Assign"
        && targets.len() == 1
        && whole_slice(&targets[0])
        && !mentions(s.get("value"), param)
        && !body[..at].iter().any(has_jump)
}

/// Whether every mention of `name` in the function, but the zeros statement's own target, lies
/// in `after` (the statements that follow the zeros in its block): none in an enclosing block.
pub(crate) fn only_mentioned_after(name: &str, after: &[Json], function_body: &[Json]) -> bool {
    let total: usize = function_body.iter().map(|s| mention_count(s, name)).sum();
    let in_after: usize = after.iter().map(|s| mention_count(s, name)).sum();
    total == 1 + in_after
}

/// `name` when `s` is `name = zeros(...)` (or `np.zeros`, `numpy.zeros`).
pub(crate) fn zeros_target(s: &Json) -> Option<&str> {
    if s.kind() != "Assign" {
        return None;
    }
    let targets = s.get("targets").as_list();
    let value = s.get("value");
    if targets.len() != 1 || value.kind() != "Call" {
        return None;
    }
    let func = value.get("func");
    let fname = match func.kind() {
        "Name" => name_of(func),
        "Attribute" => func.get("attr").as_str(),
        _ => None,
    };
    if fname != Some("zeros") {
        return None;
    }
    name_of(&targets[0])
}

fn fill_is_dead(name: &str, after: &[Json], function_body: &[Json]) -> bool {
    // 1. one assignment of the name in the whole function, and all its later mentions in one loop
    if count_binds(function_body, name) != 1 || !only_mentioned_after(name, after, function_body) {
        return false;
    }
    let mut mentioning = after.iter().filter(|s| mentions(s, name));
    let Some(lp) = mentioning.next() else {
        return true; // never read: nothing can see the zeros
    };
    if mentioning.next().is_some() {
        return false;
    }
    let Some(j) = counting_loop_var(lp, None) else {
        return false;
    };
    if mentions(lp.get("iter"), name) || !lp.get("orelse").as_list().is_empty() {
        return false;
    }
    let body = lp.get("body").as_list();
    if body.iter().any(|s| has_jump(s) || assigns_name(s, j)) {
        return false;
    }
    // 2. the first mention is `name[j] = value` at the top of the body
    let Some(first) = body.iter().position(|s| mentions(s, name)) else {
        return false;
    };
    let w = &body[first];
    let targets = w.get("targets").as_list();
    if w.kind() != "Assign"
        || targets.len() != 1
        || !element_of(&targets[0], name)
        || name_of(targets[0].get("slice")) != Some(j)
        || mentions(w.get("value"), name)
    {
        return false;
    }
    // 3. every other access reads within [0, j]
    body[first + 1..]
        .iter()
        .all(|s| accesses_within(s, name, j, &[]))
}

/// `v` when `s` is `for v in range(n)` or `range(0, n)`; with `upper_of` set, only when `n` is
/// `upper_of + 1` or `upper_of`.
pub(crate) fn counting_loop_var<'a>(s: &'a Json, upper_of: Option<&str>) -> Option<&'a str> {
    if s.kind() != "For" {
        return None;
    }
    let it = s.get("iter");
    if it.kind() != "Call" || name_of(it.get("func")) != Some("range") {
        return None;
    }
    let args = it.get("args").as_list();
    let stop = match args {
        [stop] => stop,
        [start, stop] if const_int(start) == Some(0) => stop,
        _ => return None,
    };
    if let Some(j) = upper_of {
        let is_j = name_of(stop) == Some(j);
        let is_j_plus_1 = stop.kind() == "BinOp"
            && stop.get("op").kind() == "Add"
            && name_of(stop.get("left")) == Some(j)
            && const_int(stop.get("right")) == Some(1);
        if !(is_j || is_j_plus_1) {
            return None;
        }
    }
    name_of(s.get("target"))
}

/// Whether every mention of `name` in `node` is a read `name[e]` with `e` provably in `[0, j]`
/// (`within`: loop variables known to lie in `[0, j]` there), or a write `name[e] = ...` of
/// any single element.
pub(crate) fn accesses_within(node: &Json, name: &str, j: &str, within: &[&str]) -> bool {
    match node {
        Json::Obj(_) => {
            if node.kind() == "For" {
                if let Some(r) = counting_loop_var(node, Some(j)) {
                    if node
                        .get("body")
                        .as_list()
                        .iter()
                        .any(|s| assigns_name(s, r))
                    {
                        return false;
                    }
                    let mut inner = within.to_vec();
                    inner.push(r);
                    return !mentions(node.get("iter"), name)
                        && node
                            .get("body")
                            .as_list()
                            .iter()
                            .all(|s| accesses_within(s, name, j, &inner))
                        && node
                            .get("orelse")
                            .as_list()
                            .iter()
                            .all(|s| accesses_within(s, name, j, within));
                }
            }
            if node.kind() == "AugAssign" && element_of(node.get("target"), name) {
                // `name[e] += v` reads `name[e]` first
                return index_within(node.get("target").get("slice"), j, within)
                    && accesses_within(node.get("value"), name, j, within);
            }
            if element_of(node, name) {
                let index = node.get("slice");
                let store = node.get("ctx").kind() == "Store";
                return (store
                    && index.kind() != "Slice"
                    && index.kind() != "Tuple"
                    && accesses_within(index, name, j, within))
                    || index_within(index, j, within);
            }
            if name_of(node) == Some(name) {
                return false; // the array itself: passed on, aliased, measured
            }
            match node {
                Json::Obj(m) => m.values().all(|v| accesses_within(v, name, j, within)),
                _ => true,
            }
        }
        Json::List(v) => v.iter().all(|x| accesses_within(x, name, j, within)),
        _ => true,
    }
}

/// `e` is `j`, `r` or `j - r` with `r` in `within`.
fn index_within(e: &Json, j: &str, within: &[&str]) -> bool {
    let is_r = |x: &Json| name_of(x).is_some_and(|n| within.contains(&n));
    if name_of(e) == Some(j) || is_r(e) {
        return true;
    }
    e.kind() == "BinOp"
        && e.get("op").kind() == "Sub"
        && name_of(e.get("left")) == Some(j)
        && is_r(e.get("right"))
}

/// `e` is `name[...]`.
pub(crate) fn element_of(e: &Json, name: &str) -> bool {
    e.kind() == "Subscript" && name_of(e.get("value")) == Some(name)
}

pub(crate) fn mentions(node: &Json, name: &str) -> bool {
    mention_count(node, name) > 0
}

pub(crate) fn mention_count(node: &Json, name: &str) -> usize {
    match node {
        Json::Obj(m) => {
            usize::from(name_of(node) == Some(name))
                + m.values().map(|v| mention_count(v, name)).sum::<usize>()
        }
        Json::List(v) => v.iter().map(|x| mention_count(x, name)).sum(),
        _ => 0,
    }
}

/// How many statements bind `name` (`name = ...`, `name += ...`, `for name in ...`, a tuple
/// target), at any depth of `body`.
pub(crate) fn count_binds(body: &[Json], name: &str) -> usize {
    body.iter()
        .map(|s| usize::from(binds(s, name)) + count_binds_nested(s, name))
        .sum()
}

fn count_binds_nested(s: &Json, name: &str) -> usize {
    ["body", "orelse"]
        .iter()
        .map(|f| count_binds(s.get(f).as_list(), name))
        .sum()
}

fn binds(s: &Json, name: &str) -> bool {
    let targets: Vec<&Json> = match s.kind() {
        "Assign" => s.get("targets").as_list().iter().collect(),
        "AugAssign" | "AnnAssign" | "For" => vec![s.get("target")],
        _ => return false,
    };
    targets.iter().any(|t| target_binds(t, name))
}

fn target_binds(t: &Json, name: &str) -> bool {
    match t.kind() {
        "Name" => name_of(t) == Some(name),
        "Tuple" | "List" => t
            .get("elts")
            .as_list()
            .iter()
            .any(|e| target_binds(e, name)),
        _ => false,
    }
}

/// Whether `name` is bound by a statement in `s` or below it (other than by `s` when `s` is the
/// loop whose variable it is: callers pass the loop's body).
pub(crate) fn assigns_name(s: &Json, name: &str) -> bool {
    binds(s, name) || count_binds_nested(s, name) > 0
}

pub(crate) fn has_jump(s: &Json) -> bool {
    match s.kind() {
        "Break" | "Continue" | "Return" => true,
        _ => ["body", "orelse"]
            .iter()
            .any(|f| s.get(f).as_list().iter().any(has_jump)),
    }
}
