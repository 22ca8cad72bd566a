//! The table of a Cox-de Boor recurrence (struphy's `b_der_splines_slim`):
//! `values = zeros((n + 1, n + 1))`, `values[0, 0] = c`, then `for j in range(n)` writing row
//! `j + 1` up to its diagonal (`values[j + 1, r]` for `r` in `range(j + 1)`, then
//! `values[j + 1, j + 1]`) from row `j` up to its diagonal (`values[j, r]`), and after the
//! loop reads only from the lower triangle (`values[n, :]`, `values[n - 1, 0]`,
//! `values[n - 1, k]` with `k` from `range(a, n)`). By induction rows `0..=j` hold their lower
//! triangles when iteration `j` starts, so no read sees a zero of the fill: the generated code
//! leaves it out (`dead_table_fills`, with `dead_fill`'s proofs). On the GPU that fill is `(n + 1)^2` stores into local memory
//! per call, twice per marker in a pusher on a spline mapping.

use crate::dead_fill::{
    count_binds, counting_loop_var, each_zeros, element_of, has_jump, mentions,
    only_mentioned_after,
};
use crate::json::{const_int, is_whole_slice, name_of, same_expr, Json};

/// The lines of the `name = zeros((n + 1, n + 1))` statements in `body` (and in the blocks
/// nested in it) whose fill no read can see by the triangle argument.
pub(crate) fn dead_table_fills(body: &[Json]) -> Vec<u32> {
    let mut lines = Vec::new();
    each_zeros(body, &mut |s, name, after, _| {
        if triangle_fill_is_dead(s, name, after, body) {
            lines.push(s.line());
        }
    });
    lines
}

/// Whether the fill of `name = zeros((n + 1, n + 1))` (the statement `s`, followed by `after`
/// in its block) is dead by the triangle argument above.
fn triangle_fill_is_dead(s: &Json, name: &str, after: &[Json], function_body: &[Json]) -> bool {
    let Some(n) = square_side_minus_one(s) else {
        return false;
    };
    if count_binds(function_body, name) != 1
        || !only_mentioned_after(name, after, function_body)
        || names_bound(n, function_body)
    {
        return false;
    }
    let mut mentioning = after.iter().filter(|t| mentions(t, name));
    let (Some(corner), Some(lp)) = (mentioning.next(), mentioning.next()) else {
        return false;
    };
    let at_corner = |t: &Json| {
        t.get("targets").as_list().first().is_some_and(|x| {
            element_of(x, name)
                && index_pair(x)
                    .is_some_and(|(a, b)| const_int(a) == Some(0) && const_int(b) == Some(0))
        })
    };
    let until_loop = after.iter().take_while(|t| !std::ptr::eq(*t, lp));
    corner.kind() == "Assign"
        && at_corner(corner)
        && !mentions(corner.get("value"), name)
        && !until_loop.clone().any(has_jump)
        && recurrence_loop(lp, name, n)
        && mentioning.all(|t| reads_lower_triangle(t, name, n, &[]))
}

/// `n` when `s` is `name = zeros((n + 1, n + 1), ...)` with the same `n` twice.
fn square_side_minus_one(s: &Json) -> Option<&Json> {
    let [shape] = s.get("value").get("args").as_list() else {
        return None;
    };
    let [a, b] = shape.get("elts").as_list() else {
        return None;
    };
    let n = plus_one_of(a)?;
    (shape.kind() == "Tuple" && plus_one_of(b).is_some_and(|m| same_expr(m, n))).then_some(n)
}

/// `x` when `e` is `x + 1`.
fn plus_one_of(e: &Json) -> Option<&Json> {
    (e.kind() == "BinOp" && e.get("op").kind() == "Add" && const_int(e.get("right")) == Some(1))
        .then(|| e.get("left"))
}

/// `for j in range(n)` writing row `j + 1` up to its diagonal from row `j` (see the module).
fn recurrence_loop(lp: &Json, name: &str, n: &Json) -> bool {
    let Some(j) = counting_loop_var(lp, None) else {
        return false;
    };
    let stop = lp.get("iter").get("args").as_list().last();
    let body = lp.get("body").as_list();
    if !stop.is_some_and(|e| same_expr(e, n))
        || !lp.get("orelse").as_list().is_empty()
        || body.iter().any(|t| has_jump(t) || binds_anywhere(t, j))
    {
        return false;
    }
    let row_next = |i: &Json| is_plus_one(i, j);
    let mut diagonal = false;
    let mut row = false;
    for t in body.iter().filter(|t| mentions(t, name)) {
        if let Some((a, b)) = write_index(t, name) {
            if row_next(a) && is_plus_one(b, j) {
                diagonal = true;
                continue;
            }
            return false;
        }
        let Some(r) = counting_loop_var(t, Some(j)) else {
            return false;
        };
        let inner_stop = t.get("iter").get("args").as_list().last();
        let inner = t.get("body").as_list();
        if !inner_stop.is_some_and(|e| is_plus_one(e, j))
            || inner.iter().any(|x| has_jump(x) || binds_anywhere(x, r))
        {
            return false;
        }
        for x in inner.iter().filter(|x| mentions(x, name)) {
            match write_index(x, name) {
                Some((a, b)) if row_next(a) && name_of(b) == Some(r) => row = true,
                Some(_) => return false,
                None if reads_only(x, name, |a, b| {
                    name_of(a) == Some(j) && name_of(b) == Some(r)
                }) => {}
                None => return false,
            }
        }
    }
    diagonal && row
}

/// Whether every mention of `name` in `node` reads the lower triangle of the finished table:
/// row `n` (whole, or column 0 or a loop variable), row `n - 1` at column 0 or at the
/// variable of an enclosing `for k in range(a, n)` (`loops`).
fn reads_lower_triangle(node: &Json, name: &str, n: &Json, loops: &[&str]) -> bool {
    if node.kind() == "For" {
        let args = node.get("iter").get("args").as_list();
        let bounded = match args {
            [stop] => same_expr(stop, n),
            [start, stop] => const_int(start).is_some_and(|a| a >= 0) && same_expr(stop, n),
            _ => false,
        };
        if let (true, Some(k)) = (bounded, name_of(node.get("target"))) {
            let body = node.get("body").as_list();
            if name_of(node.get("iter").get("func")) == Some("range")
                && !body.iter().any(|t| binds_anywhere(t, k))
            {
                let inner: Vec<&str> = loops.iter().copied().chain([k]).collect();
                return body
                    .iter()
                    .all(|t| reads_lower_triangle(t, name, n, &inner))
                    && node
                        .get("orelse")
                        .as_list()
                        .iter()
                        .all(|t| reads_lower_triangle(t, name, n, loops));
            }
        }
    }
    if element_of(node, name) {
        let Some((a, b)) = index_pair(node) else {
            return false;
        };
        let column_ok = const_int(b) == Some(0) || name_of(b).is_some_and(|k| loops.contains(&k));
        let whole = is_whole_slice(b);
        let last_row = same_expr(a, n);
        let row_before = a.kind() == "BinOp"
            && a.get("op").kind() == "Sub"
            && same_expr(a.get("left"), n)
            && const_int(a.get("right")) == Some(1);
        return node.get("ctx").kind() == "Load"
            && ((last_row && (column_ok || whole)) || (row_before && column_ok));
    }
    if name_of(node) == Some(name) {
        return false;
    }
    match node {
        Json::Obj(m) => m.values().all(|v| reads_lower_triangle(v, name, n, loops)),
        Json::List(v) => v.iter().all(|x| reads_lower_triangle(x, name, n, loops)),
        _ => true,
    }
}

/// Whether every mention of `name` in `node` is a read `name[a, b]` with `ok(a, b)`.
fn reads_only(node: &Json, name: &str, ok: impl Fn(&Json, &Json) -> bool + Copy) -> bool {
    if element_of(node, name) {
        return node.get("ctx").kind() == "Load" && index_pair(node).is_some_and(|(a, b)| ok(a, b));
    }
    if name_of(node) == Some(name) {
        return false;
    }
    match node {
        Json::Obj(m) => m.values().all(|v| reads_only(v, name, ok)),
        Json::List(v) => v.iter().all(|x| reads_only(x, name, ok)),
        _ => true,
    }
}

/// `(a, b)` when `t` is `name[a, b] = v` with `v` not reading `name`.
fn write_index<'a>(t: &'a Json, name: &str) -> Option<(&'a Json, &'a Json)> {
    let [target] = t.get("targets").as_list() else {
        return None;
    };
    (t.kind() == "Assign" && element_of(target, name) && !mentions(t.get("value"), name))
        .then(|| index_pair(target))
        .flatten()
}

fn index_pair(e: &Json) -> Option<(&Json, &Json)> {
    match e.get("slice").get("elts").as_list() {
        [a, b] if e.get("slice").kind() == "Tuple" => Some((a, b)),
        _ => None,
    }
}

/// `e` is `j + 1`.
fn is_plus_one(e: &Json, j: &str) -> bool {
    plus_one_of(e).is_some_and(|x| name_of(x) == Some(j))
}

fn names_bound(e: &Json, function_body: &[Json]) -> bool {
    match e {
        Json::Obj(m) => {
            name_of(e).is_some_and(|x| count_binds(function_body, x) > 0)
                || m.values().any(|v| names_bound(v, function_body))
        }
        Json::List(v) => v.iter().any(|x| names_bound(x, function_body)),
        _ => false,
    }
}

fn binds_anywhere(t: &Json, name: &str) -> bool {
    count_binds(std::slice::from_ref(t), name) > 0
}
