//! Fills that the code after them partly overwrites before any read: the part that stays is
//! a tail `a[start:]`, `start` an expression of names the function never binds. An argument's
//! own fill (`bn[:] = 0.0` in struphy's `b_d_splines_slim`) shrinks to that tail
//! (`partial_fills`); a local `zeros(n)` whose first use is a call to a helper that writes its
//! first elements gets its tail filled just before that call (`deferred_fills`); a local that
//! the code after it writes first keeps only its tail (`local_partial_fills`). All rest on
//! one walk over the statements after the fill (`written_prefix`), which follows the written
//! prefix `a[0..start]` through single-element writes and counting loops and stops at anything
//! it does not know, so what it claims is written by then.

use std::collections::BTreeMap;

use crate::dead_fill::{
    accesses_within, assigns_name, count_binds, counting_loop_var, each_zeros, element_of,
    has_jump, mention_count, mentions, one_axis_at_run_time, only_mentioned_after, Funcs,
};
use crate::json::{const_int, is_whole_slice, name_of, same_expr, Json};

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
    let whole = is_whole_slice(t.get("slice"));
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
    if (a, c) == (0, 0)
        && (last_iteration_writes(loop_body, p, j, n, body, before)
            || inner_loop_writes_first(loop_body, p, j))
    {
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

/// Whether the body of `for j in range(n)` mentions `p` only in one top-level loop
/// `for r in range(j + 1)` without a jump, whose body writes `p[r]` at its top level before
/// any other mention of `p` and then touches only `p[r]` (struphy's `diff[r] = 1.0 / ...`
/// followed by `temp = values[j, r] * diff[r]`): iteration `j` then writes `p[0..=j]` and reads
/// only what it wrote, so the loop leaves `p[0..n]` written.
fn inner_loop_writes_first(loop_body: &[Json], p: &str, j: &str) -> bool {
    let mut mentioning = loop_body.iter().filter(|s| mentions(s, p));
    let (Some(inner), None) = (mentioning.next(), mentioning.next()) else {
        return false;
    };
    let Some(r) = counting_loop_var(inner, Some(j)) else {
        return false;
    };
    let stop = inner.get("iter").get("args").as_list().last();
    let inner_body = inner.get("body").as_list();
    if stop.is_none_or(|e| e.kind() != "BinOp") // range(j + 1), not range(j)
        || mentions(inner.get("iter"), p)
        || !inner.get("orelse").as_list().is_empty()
        || inner_body.iter().any(|s| has_jump(s) || assigns_name(s, r))
    {
        return false;
    }
    let Some(first) = inner_body.iter().position(|s| mentions(s, p)) else {
        return false;
    };
    element_write(&inner_body[first], p).is_some_and(|ix| name_of(ix) == Some(r))
        && inner_body[first + 1..].iter().all(|s| only_at(s, p, r))
}

/// Whether every mention of `p` in `node` is the element `p[r]`.
fn only_at(node: &Json, p: &str, r: &str) -> bool {
    if element_of(node, p) {
        return name_of(node.get("slice")) == Some(r);
    }
    if name_of(node) == Some(p) {
        return false;
    }
    match node {
        Json::Obj(m) => m.values().all(|v| only_at(v, p, r)),
        Json::List(v) => v.iter().all(|x| only_at(x, p, r)),
        _ => true,
    }
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
    each_zeros(body, &mut |s, name, after, _| {
        if !one_axis_at_run_time(s) {
            return;
        }
        if let Some((line, start)) = call_writes_prefix(name, after, body, funcs) {
            found.insert(s.line(), (line, name.to_string(), start));
        }
    });
    found
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

/// A local `a = zeros(n)` (one axis, `n` known at run time only) whose first elements the
/// statements after it in its block write before any read (`written_prefix`; struphy's
/// `diff = zeros(pn)` in `b_der_splines_slim`, written whole by the recurrence before
/// `diff[:] = diff * pn` reads it): the zeros' line -> where the fill that stays starts.
pub(crate) fn local_partial_fills(body: &[Json]) -> BTreeMap<u32, Json> {
    let mut found = BTreeMap::new();
    each_zeros(body, &mut |s, name, after, before| {
        if !one_axis_at_run_time(s)
            || count_binds(body, name) != 1
            || !only_mentioned_after(name, after, body)
        {
            return;
        }
        if let Some(start) = written_prefix(name, after, body, before) {
            found.insert(s.line(), start);
        }
    });
    found
}
