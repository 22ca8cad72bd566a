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

use crate::json::{const_int, name_of, Json};

/// The module's functions by name (the helpers a call may reach).
pub(crate) type Funcs<'a> = BTreeMap<String, &'a Json>;

/// The lines of the `name = zeros(...)` statements in `body` (and in the blocks nested in it)
/// whose fill no read can see.
pub(crate) fn dead_zero_fills(body: &[Json], funcs: &Funcs<'_>) -> Vec<u32> {
    let mut lines = Vec::new();
    scan_block(body, body, funcs, &mut lines);
    lines
}

fn scan_block(block: &[Json], function_body: &[Json], funcs: &Funcs<'_>, lines: &mut Vec<u32>) {
    for (i, s) in block.iter().enumerate() {
        if let Some(name) = zeros_target(s) {
            let after = &block[i + 1..];
            if fill_is_dead(name, after, function_body)
                || overwritten_by_call(name, after, function_body, funcs)
            {
                lines.push(s.line());
            }
        }
        for field in ["body", "orelse"] {
            scan_block(s.get(field).as_list(), function_body, funcs, lines);
        }
    }
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
    let whole_slice = |t: &Json| {
        let sl = t.get("slice");
        element_of(t, param)
            && sl.kind() == "Slice"
            && ["lower", "upper", "step"]
                .iter()
                .all(|f| matches!(sl.get(f), Json::Null))
    };
    total == 1
        && s.kind() == "Assign"
        && targets.len() == 1
        && whole_slice(&targets[0])
        && !mentions(s.get("value"), param)
        && !body[..at].iter().any(has_jump)
}

/// Whether every mention of `name` in the function, but the zeros statement's own target, lies
/// in `after` (the statements that follow the zeros in its block): none in an enclosing block.
fn only_mentioned_after(name: &str, after: &[Json], function_body: &[Json]) -> bool {
    let total: usize = function_body.iter().map(|s| mention_count(s, name)).sum();
    let in_after: usize = after.iter().map(|s| mention_count(s, name)).sum();
    total == 1 + in_after
}

/// `name` when `s` is `name = zeros(...)` (or `np.zeros`, `numpy.zeros`).
fn zeros_target(s: &Json) -> Option<&str> {
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
fn counting_loop_var<'a>(s: &'a Json, upper_of: Option<&str>) -> Option<&'a str> {
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
fn accesses_within(node: &Json, name: &str, j: &str, within: &[&str]) -> bool {
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
fn element_of(e: &Json, name: &str) -> bool {
    e.kind() == "Subscript" && name_of(e.get("value")) == Some(name)
}

fn mentions(node: &Json, name: &str) -> bool {
    mention_count(node, name) > 0
}

fn mention_count(node: &Json, name: &str) -> usize {
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
fn count_binds(body: &[Json], name: &str) -> usize {
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
fn assigns_name(s: &Json, name: &str) -> bool {
    binds(s, name) || count_binds_nested(s, name) > 0
}

fn has_jump(s: &Json) -> bool {
    match s.kind() {
        "Break" | "Continue" | "Return" => true,
        _ => ["body", "orelse"]
            .iter()
            .any(|f| s.get(f).as_list().iter().any(has_jump)),
    }
}

/// The third proof, for an argument the function fills itself (struphy's `b_d_splines_slim`:
/// `bn[:] = 0.0`, then `bn[0] = 1.0`, then `for j in range(pn): ... bn[j + 1] = saved` reading
/// only `bn[0..=j]`): the elements that the code after the fill writes before it reads them
/// never show the fill, inside the function or to its caller, so only the elements past them
/// need it. For each `p[:] = constant` at the top level of `body` whose fill is partly dead,
/// the line and the start of the part that stays (`max(n, 0) + k`, an expression of the
/// function's parameters) as a syntax tree, to be filled as `p[start:] = constant`.
///
/// As for Pyccel's Fortran, the arguments are taken not to alias each other.
pub(crate) fn partial_fills(body: &[Json]) -> BTreeMap<u32, Json> {
    let mut found = BTreeMap::new();
    for (i, s) in body.iter().enumerate() {
        let Some(p) = constant_whole_fill(s) else {
            continue;
        };
        if count_binds(body, p) != 0 || body[..i].iter().any(|t| mentions(t, p)) {
            continue; // a local, or an argument already read or aliased before its fill
        }
        if let Some(start) = written_prefix(p, &body[i + 1..], body, &body[..i]) {
            found.insert(s.line(), start);
        }
    }
    found
}

/// `p` when `s` is `p[:] = c` with `c` a number.
fn constant_whole_fill(s: &Json) -> Option<&str> {
    let targets = s.get("targets").as_list();
    let [t] = targets else { return None };
    let sl = t.get("slice");
    let whole = sl.kind() == "Slice"
        && ["lower", "upper", "step"]
            .iter()
            .all(|f| matches!(sl.get(f), Json::Null));
    let constant =
        s.get("value").kind() == "Constant" && matches!(s.get("value").get("value"), Json::Num(_));
    (s.kind() == "Assign" && whole && constant)
        .then(|| name_of(t.get("value")))
        .flatten()
}

/// What the statements after a fill have written of `p` before any read of the rest:
/// `p[0..max(n, m) + c]`, or `p[0..c]` without `n` (`n` an expression of names that the
/// function never binds).
struct Prefix<'a> {
    n: Option<&'a Json>,
    m: i64,
    c: i64,
}

impl Prefix<'_> {
    fn start(&self) -> Option<Json> {
        match self.n {
            Some(n) => Some(add_const(call2("max", n.clone(), int_node(self.m)), self.c)),
            None if self.c > 0 => Some(int_node(self.c)),
            None => None,
        }
    }

    /// Whether `index` is the first element past the prefix when `n` is at least `m`
    /// (`n + c`).
    fn is_next(&self, index: &Json) -> bool {
        let Some(n) = self.n else {
            return const_int(index) == Some(self.c);
        };
        if self.c == 0 {
            return same_expr(index, n);
        }
        index.kind() == "BinOp"
            && index.get("op").kind() == "Add"
            && same_expr(index.get("left"), n)
            && const_int(index.get("right")) == Some(self.c)
    }
}

/// The start of the part of `p` that the statements `after` a fill of it do not write before
/// reading (`None`: nothing is written so). Walks them while every mention of `p` is a
/// single-element write, which extends the prefix when it writes the element just past it
/// (`p[k] = v`; after a loop up to `n`, `p[n] = v`), or one counting loop that writes
/// `p[j + off]` at the top of its body every iteration and reads only what is written by
/// then (see `prefix_loop`); stops at anything else (what was written by then stays written).
fn written_prefix(p: &str, after: &[Json], body: &[Json], before: &[Json]) -> Option<Json> {
    let mut prefix = Prefix {
        n: None,
        m: 0,
        c: 0,
    };
    for t in after {
        if has_jump(t) {
            break;
        }
        if !mentions(t, p) {
            continue;
        }
        if let Some(index) = element_write(t, p) {
            if prefix.is_next(index) {
                // past the prefix when n >= m, inside it (or a write elsewhere) otherwise
                prefix = match prefix.n {
                    Some(n) => Prefix {
                        n: Some(n),
                        m: prefix.m - 1,
                        c: prefix.c + 1,
                    },
                    None => Prefix {
                        c: prefix.c + 1,
                        ..prefix
                    },
                };
            }
            continue;
        }
        match (prefix.n, prefix_loop(t, p, prefix.c, body, before)) {
            (None, Some(next)) => prefix = next,
            _ => break,
        }
    }
    prefix.start()
}

/// The index of `t` when it is `p[index] = v` with `v` not reading `p`.
fn element_write<'a>(t: &'a Json, p: &str) -> Option<&'a Json> {
    let [target] = t.get("targets").as_list() else {
        return None;
    };
    let index = target.get("slice");
    (t.kind() == "Assign"
        && element_of(target, p)
        && !matches!(index.kind(), "Slice" | "Tuple")
        && !mentions(index, p)
        && !mentions(t.get("value"), p))
    .then_some(index)
}

/// The prefix after `t` when `t` is `for j in range(a, n)` (`a` a number, the names in `n`
/// never bound in the function), entered with `p[0..c]` written, `c == a + off`, whose body
/// writes `p[j + off]` at its top level, has no jump, does not bind `j`, and reads only
/// elements written by then: with `off == 1`, `p[0..=j]` (the B-spline recurrences, also
/// inside `if j == X:`, see `AliasesOfJ`); with `off == 0`, none. Iteration `j` then finds
/// `p[0..j + off]` written and leaves `p[0..=j + off]` written, so the loop leaves
/// `p[0..max(n, a) + off]`.
fn prefix_loop<'a>(
    t: &'a Json,
    p: &str,
    c: i64,
    body: &[Json],
    before: &[Json],
) -> Option<Prefix<'a>> {
    if t.kind() != "For" {
        return None;
    }
    let j = name_of(t.get("target"))?;
    let range = t.get("iter");
    if range.kind() != "Call" || name_of(range.get("func")) != Some("range") {
        return None;
    }
    let (a, n) = match range.get("args").as_list() {
        [n] => (0, n),
        [a, n] => (const_int(a)?, n),
        _ => return None,
    };
    let loop_body = t.get("body").as_list();
    if !t.get("orelse").as_list().is_empty()
        || mentions(n, p)
        || names_in(n).iter().any(|x| count_binds(body, x) > 0)
        || loop_body.iter().any(|s| has_jump(s) || assigns_name(s, j))
    {
        return None;
    }
    let off = c - a;
    if (a, c) == (0, 0) && last_iteration_writes(loop_body, p, j, n, body, before) {
        return Some(Prefix {
            n: Some(n),
            m: 0,
            c: 0,
        });
    }
    let writes_next = loop_body.iter().any(|s| {
        element_write(s, p).is_some_and(|ix| match off {
            0 => name_of(ix) == Some(j),
            _ => {
                ix.kind() == "BinOp"
                    && ix.get("op").kind() == "Add"
                    && name_of(ix.get("left")) == Some(j)
                    && const_int(ix.get("right")) == Some(off)
            }
        })
    });
    let reads_written = match off {
        0 => loop_body.iter().all(|s| only_element_writes(s, p)),
        1 => {
            let aliases = AliasesOfJ { j, body, before };
            loop_body.iter().all(|s| aliases.reads_within(s, p, &[]))
        }
        _ => false,
    };
    (writes_next && reads_written).then_some(Prefix {
        n: Some(n),
        m: a,
        c: off,
    })
}

/// Whether the body of `for j in range(n)` mentions `p` only in one `if j == n - 1:` at its
/// top level, whose body (without a jump) holds `for il in range(j + 1)` (spelled with a
/// name that equals `j` there, see `AliasesOfJ`) writing `p[j - il]` or `p[il]` at its top
/// level, and writes `p` nowhere else in a way that reads it (struphy's `bd` in
/// `b_d_splines_slim`: `if j == pn - 1: for il in range(pd + 1): bd[pd - il] = ...`). The
/// last iteration, run when `n >= 1`, then writes `p[0..n]`.
fn last_iteration_writes(
    loop_body: &[Json],
    p: &str,
    j: &str,
    n: &Json,
    body: &[Json],
    before: &[Json],
) -> bool {
    let mut mentioning = loop_body.iter().filter(|s| mentions(s, p));
    let (Some(branch), None) = (mentioning.next(), mentioning.next()) else {
        return false;
    };
    let test = branch.get("test");
    let [x] = test.get("comparators").as_list() else {
        return false;
    };
    let is_last = x.kind() == "BinOp"
        && x.get("op").kind() == "Sub"
        && same_expr(x.get("left"), n)
        && const_int(x.get("right")) == Some(1);
    let aliases = AliasesOfJ { j, body, before };
    let equal = aliases.equal_to_j(test);
    if branch.kind() != "If"
        || name_of(test.get("left")) != Some(j)
        || !is_last
        || mentions(test, p)
        || mentions(&Json::List(branch.get("orelse").as_list().to_vec()), p)
    {
        return false;
    }
    let inner: Vec<Json> = branch
        .get("body")
        .as_list()
        .iter()
        .map(|s| rename(s, &equal, j))
        .collect();
    let covers = |s: &Json| {
        let Some(il) = counting_loop_var(s, Some(j)) else {
            return false;
        };
        let stop = s.get("iter").get("args").as_list().last();
        let to_j = stop.is_some_and(|e| e.kind() == "BinOp"); // range(j + 1), not range(j)
        let il_body = s.get("body").as_list();
        let writes_all = il_body.iter().any(|w| {
            element_write(w, p).is_some_and(|ix| {
                name_of(ix) == Some(il)
                    || (ix.kind() == "BinOp"
                        && ix.get("op").kind() == "Sub"
                        && name_of(ix.get("left")) == Some(j)
                        && name_of(ix.get("right")) == Some(il))
            })
        });
        to_j && writes_all && !il_body.iter().any(|w| has_jump(w) || assigns_name(w, il))
    };
    !inner.iter().any(has_jump)
        && inner.iter().any(covers)
        && inner.iter().all(|s| only_element_writes(s, p))
}

/// Whether every mention of `p` in `s` is a write `p[e] = v` of one element (no read).
fn only_element_writes(s: &Json, p: &str) -> bool {
    if element_write(s, p).is_some() {
        return true;
    }
    if !mentions(s, p) {
        return true;
    }
    match s.kind() {
        "For" | "While" | "If" => {
            !mentions(s.get("iter"), p)
                && !mentions(s.get("test"), p)
                && ["body", "orelse"]
                    .iter()
                    .all(|f| s.get(f).as_list().iter().all(|x| only_element_writes(x, p)))
        }
        _ => false,
    }
}

/// Names that equal the loop variable `j` where an `if j == X:` holds: `q` bound once in the
/// function, at its top level before the fill, as `q = X'` with `X'` the same expression as
/// `X` and its names never bound (struphy's `pd = pn - 1` read under `if j == pn - 1:`).
struct AliasesOfJ<'a> {
    j: &'a str,
    body: &'a [Json],
    before: &'a [Json],
}

impl AliasesOfJ<'_> {
    /// `accesses_within` for the loop variable `j`, also inside `if j == X:` where the names
    /// bound to `X` stand for `j`.
    fn reads_within(&self, node: &Json, p: &str, within: &[&str]) -> bool {
        if node.kind() == "If" {
            let equal = self.equal_to_j(node.get("test"));
            let inner: Vec<&str> = within
                .iter()
                .copied()
                .chain(equal.iter().copied())
                .collect();
            return self.reads_within(node.get("test"), p, within)
                && node
                    .get("body")
                    .as_list()
                    .iter()
                    .all(|s| self.reads_within_with(s, p, &inner, &equal))
                && node
                    .get("orelse")
                    .as_list()
                    .iter()
                    .all(|s| self.reads_within(s, p, within));
        }
        if let Json::List(v) = node {
            return v.iter().all(|x| self.reads_within(x, p, within));
        }
        if matches!(node.kind(), "For" | "While") || !node_has_if(node) {
            return accesses_within(node, p, self.j, within);
        }
        match node {
            Json::Obj(m) => m.values().all(|v| self.reads_within(v, p, within)),
            _ => true,
        }
    }

    /// Inside the body of `if j == X:`, with `equal` the names that equal `j` there: a loop
    /// `for r in range(q + 1)` with `q` in `equal` bounds `r` to `[0, j]`, and `q - r` lies
    /// in `[0, j]`.
    fn reads_within_with(&self, node: &Json, p: &str, within: &[&str], equal: &[&str]) -> bool {
        if equal.is_empty() {
            return self.reads_within(node, p, within);
        }
        let renamed = rename(node, equal, self.j);
        self.reads_within(&renamed, p, within)
    }

    /// The names bound to `X` when `test` is `j == X` (or `X == j`).
    fn equal_to_j(&self, test: &Json) -> Vec<&str> {
        let ops = test.get("ops").as_list();
        let comps = test.get("comparators").as_list();
        let ([op], [right]) = (ops, comps) else {
            return Vec::new();
        };
        let left = test.get("left");
        let x = if name_of(left) == Some(self.j) {
            right
        } else if name_of(right) == Some(self.j) {
            left
        } else {
            return Vec::new();
        };
        if test.kind() != "Compare"
            || op.kind() != "Eq"
            || names_in(x).iter().any(|n| count_binds(self.body, n) > 0)
        {
            return Vec::new();
        }
        self.before
            .iter()
            .filter_map(|s| {
                let [t] = s.get("targets").as_list() else {
                    return None;
                };
                let q = name_of(t)?;
                (s.kind() == "Assign"
                    && count_binds(self.body, q) == 1
                    && same_expr(s.get("value"), x))
                .then_some(q)
            })
            .collect()
    }
}

fn node_has_if(node: &Json) -> bool {
    match node {
        Json::Obj(m) => node.kind() == "If" || m.values().any(node_has_if),
        Json::List(v) => v.iter().any(node_has_if),
        _ => false,
    }
}

/// `node` with every `Name` in `from` read as `to`.
fn rename(node: &Json, from: &[&str], to: &str) -> Json {
    match node {
        Json::Obj(m) => {
            if name_of(node).is_some_and(|n| from.contains(&n)) {
                let mut out = m.clone();
                out.insert("id".into(), Json::Str(to.into()));
                return Json::Obj(out);
            }
            Json::Obj(
                m.iter()
                    .map(|(k, v)| (k.clone(), rename(v, from, to)))
                    .collect(),
            )
        }
        Json::List(v) => Json::List(v.iter().map(|x| rename(x, from, to)).collect()),
        other => other.clone(),
    }
}

/// Whether two expressions are the same syntax (their source lines aside).
fn same_expr(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Obj(x), Json::Obj(y)) => {
            let keys = |m: &BTreeMap<String, Json>| -> Vec<String> {
                m.keys().filter(|k| *k != "_line").cloned().collect()
            };
            keys(x) == keys(y)
                && keys(x)
                    .iter()
                    .all(|k| same_expr(&x[k.as_str()], &y[k.as_str()]))
        }
        (Json::List(x), Json::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(u, v)| same_expr(u, v))
        }
        _ => a == b,
    }
}

fn names_in(node: &Json) -> Vec<&str> {
    let mut out = Vec::new();
    collect_names(node, &mut out);
    out
}

fn collect_names<'a>(node: &'a Json, out: &mut Vec<&'a str>) {
    match node {
        Json::Obj(m) => {
            if let Some(n) = name_of(node) {
                out.push(n);
            }
            m.values().for_each(|v| collect_names(v, out));
        }
        Json::List(v) => v.iter().for_each(|x| collect_names(x, out)),
        _ => {}
    }
}

fn node(kind: &str, fields: Vec<(&str, Json)>) -> Json {
    let mut m = BTreeMap::new();
    m.insert("_t".to_string(), Json::Str(kind.to_string()));
    for (k, v) in fields {
        m.insert(k.to_string(), v);
    }
    Json::Obj(m)
}

fn int_node(v: i64) -> Json {
    node("Constant", vec![("value", Json::Num(v.to_string()))])
}

fn call2(func: &str, a: Json, b: Json) -> Json {
    let name = node(
        "Name",
        vec![
            ("id", Json::Str(func.into())),
            ("ctx", node("Load", vec![])),
        ],
    );
    node(
        "Call",
        vec![
            ("func", name),
            ("args", Json::List(vec![a, b])),
            ("keywords", Json::List(vec![])),
        ],
    )
}

fn add_const(e: Json, k: i64) -> Json {
    if k == 0 {
        return e;
    }
    node(
        "BinOp",
        vec![
            ("left", e),
            ("op", node("Add", vec![])),
            ("right", int_node(k)),
        ],
    )
}

/// A local `a = zeros(n)` (one axis, `n` known at run time only) whose first mention is a
/// call handing it to a helper of the module that writes its first elements before any read
/// of them (`written_prefix` of that parameter over the helper's body: struphy's
/// `der1 = zeros(int(degree[0]) + 1)` given to `b_der_splines_slim`, which writes
/// `der[0..=pn]` and reads none): nothing reads `a` before the call, so its fill can wait
/// until just before the call and cover only what the helper leaves, `a[start:]` with the
/// helper's start in the caller's terms (its parameters replaced by the call's arguments,
/// which have no side effects). The zeros' line -> (the call's line, the array, start).
pub(crate) fn deferred_fills(
    body: &[Json],
    funcs: &Funcs<'_>,
) -> BTreeMap<u32, (u32, String, Json)> {
    let mut found = BTreeMap::new();
    scan_deferred(body, body, funcs, &mut found);
    found
}

fn scan_deferred(
    block: &[Json],
    function_body: &[Json],
    funcs: &Funcs<'_>,
    found: &mut BTreeMap<u32, (u32, String, Json)>,
) {
    for (i, s) in block.iter().enumerate() {
        if let Some(name) = zeros_target(s) {
            let shape = s.get("value").get("args").as_list();
            let one_axis = matches!(shape, [n] if n.kind() != "Tuple" && const_int(n).is_none());
            if one_axis {
                if let Some((line, start)) =
                    call_writes_prefix(name, &block[i + 1..], function_body, funcs)
                {
                    found.insert(s.line(), (line, name.to_string(), start));
                }
            }
        }
        for field in ["body", "orelse"] {
            scan_deferred(s.get(field).as_list(), function_body, funcs, found);
        }
    }
}

/// The call's line and the start of what it leaves unwritten of `name`, when the first
/// mention of `name` after its zeros is that call (see `deferred_fills`).
fn call_writes_prefix(
    name: &str,
    after: &[Json],
    function_body: &[Json],
    funcs: &Funcs<'_>,
) -> Option<(u32, Json)> {
    if count_binds(function_body, name) != 1 || !only_mentioned_after(name, after, function_body) {
        return None;
    }
    let first = after.iter().position(|s| mentions(s, name))?;
    if after[..first].iter().any(has_jump) || mention_count(&after[first], name) != 1 {
        return None;
    }
    let stmt = &after[first];
    let call = match stmt.kind() {
        "Expr" | "Assign" => stmt.get("value"),
        _ => return None,
    };
    if call.kind() != "Call" || !call.get("keywords").as_list().is_empty() {
        return None;
    }
    let def = name_of(call.get("func")).and_then(|h| funcs.get(h))?;
    let args = call.get("args").as_list();
    let k = args.iter().position(|a| name_of(a) == Some(name))?;
    let params: Vec<&str> = def
        .get("args")
        .get("args")
        .as_list()
        .iter()
        .filter_map(|p| p.get("arg").as_str())
        .collect();
    let param = *params.get(k)?;
    let helper_body = def.get("body").as_list();
    if count_binds(helper_body, param) != 0 {
        return None;
    }
    let start = written_prefix(param, helper_body, helper_body, &[])?;
    // the helper's parameters, as the call passes them
    let mut by_param = BTreeMap::new();
    for x in names_in(&start).into_iter().filter(|x| *x != "max") {
        let at = params.iter().position(|p| *p == x)?;
        let arg = args.get(at)?;
        if !without_side_effects(arg) || mentions(arg, name) {
            return None;
        }
        by_param.insert(x.to_string(), arg.clone());
    }
    Some((stmt.line(), substitute(&start, &by_param)))
}

/// Names, numbers, elements, fields, arithmetic and `int`/`float`/`len`/`max`/`min`/`abs`:
/// an expression whose evaluation changes nothing.
fn without_side_effects(e: &Json) -> bool {
    let parts_too = |fields: &[&str]| fields.iter().all(|f| without_side_effects(e.get(f)));
    match e.kind() {
        "Name" | "Constant" => true,
        "Attribute" => parts_too(&["value"]),
        "Subscript" => parts_too(&["value", "slice"]),
        "BinOp" => parts_too(&["left", "right"]),
        "UnaryOp" => parts_too(&["operand"]),
        "Tuple" => e.get("elts").as_list().iter().all(without_side_effects),
        "Call" => {
            matches!(
                name_of(e.get("func")),
                Some("int" | "float" | "len" | "max" | "min" | "abs")
            ) && e.get("keywords").as_list().is_empty()
                && e.get("args").as_list().iter().all(without_side_effects)
        }
        _ => false,
    }
}

/// `e` with each `Name` in `by_name` replaced by its expression.
fn substitute(e: &Json, by_name: &BTreeMap<String, Json>) -> Json {
    if let Some(v) = name_of(e).and_then(|n| by_name.get(n)) {
        return v.clone();
    }
    match e {
        Json::Obj(m) => Json::Obj(
            m.iter()
                .map(|(k, v)| (k.clone(), substitute(v, by_name)))
                .collect(),
        ),
        Json::List(v) => Json::List(v.iter().map(|x| substitute(x, by_name)).collect()),
        other => other.clone(),
    }
}
