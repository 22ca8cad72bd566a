//! Slice assignments (`v[:] = markers[3:6, ip]`, `eta[:] = alpha[:3] * eta_k + c`,
//! `markers[3:6, ip] += dt * e`): the statement is run element by element, in a loop over the
//! target's sliced axes, with every slice of the right-hand side (and every whole array named
//! there) indexed at the same position.

use crate::error::PortErrorKind;
use crate::json::Json;
use crate::translate::{
    array_key, const_int, indices, name_of, FnCx, Par, Translator, PARTIAL_FILL_NOTE, R,
};
use crate::types::{Scalar, Ty};
use std::collections::BTreeMap;

fn obj(pairs: Vec<(&str, Json)>) -> Json {
    Json::Obj(
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect::<BTreeMap<_, _>>(),
    )
}

fn name(n: &str) -> Json {
    obj(vec![
        ("_t", Json::Str("Name".into())),
        ("id", Json::Str(n.into())),
        ("ctx", obj(vec![("_t", Json::Str("Load".into()))])),
    ])
}

fn num(v: i64) -> Json {
    obj(vec![
        ("_t", Json::Str("Constant".into())),
        ("value", Json::Num(v.to_string())),
    ])
}

fn bin(l: Json, op: &str, r: Json) -> Json {
    obj(vec![
        ("_t", Json::Str("BinOp".into())),
        ("left", l),
        ("op", obj(vec![("_t", Json::Str(op.into()))])),
        ("right", r),
    ])
}

/// `base.shape[axis]` as a syntax tree (`base` a syntax tree: a name or a struct field).
fn shape_of(base: &Json, axis: usize) -> Json {
    obj(vec![
        ("_t", Json::Str("Subscript".into())),
        (
            "value",
            obj(vec![
                ("_t", Json::Str("Attribute".into())),
                ("attr", Json::Str("shape".into())),
                ("value", base.clone()),
            ]),
        ),
        ("slice", num(axis as i64)),
    ])
}

fn with(node: &Json, key: &str, v: Json) -> Json {
    let mut n = node.clone();
    if let Json::Obj(m) = &mut n {
        m.insert(key.to_string(), v);
    }
    n
}

/// A full slice `:`.
fn full_slice() -> Json {
    obj(vec![
        ("_t", Json::Str("Slice".into())),
        ("lower", Json::Null),
        ("upper", Json::Null),
        ("step", Json::Null),
    ])
}

impl<'a> Translator<'a> {
    /// The rank of the array a subscript's base names (argument, local, struct field).
    fn base_rank(&self, f: &FnCx, base: &Json) -> Option<usize> {
        if let Some(n) = name_of(base) {
            return f.vars.get(n).map(Ty::rank).filter(|r| *r > 0);
        }
        crate::translate::struct_field(f, base).map(|(_, t)| t.rank().max(1))
    }

    /// The indices of subscript `e`, with `:` for the trailing axes it leaves out (`out[:]` of
    /// a 2-D `out` is `out[:, :]`, as in NumPy).
    fn padded_indices(&self, f: &FnCx, e: &Json) -> Vec<Json> {
        let mut ix: Vec<Json> = indices(e).into_iter().cloned().collect();
        let rank = self.base_rank(f, e.get("value")).unwrap_or(ix.len());
        while ix.len() < rank && ix.iter().any(|i| i.kind() == "Slice") {
            ix.push(full_slice());
        }
        ix
    }

    /// The slice `s` of axis `axis` of `base`: (start, length) as syntax trees, the step 1.
    fn slice_parts(
        &self,
        f: &FnCx,
        at: &Json,
        base: &Json,
        axis: usize,
        s: &Json,
    ) -> R<(Json, Json)> {
        let bad = |why: &str| {
            Err(self.e(
                PortErrorKind::Unsupported,
                at.line(),
                "slice",
                name_of(base),
                format!("slice assignment: {why}"),
            ))
        };
        if !matches!(s.get("step"), Json::Null) && const_int(s.get("step")) != Some(1) {
            return bad("a slice with a step other than 1");
        }
        for k in ["lower", "upper"] {
            if const_int(s.get(k)).is_some_and(|v| v < 0) {
                return bad("a negative slice bound");
            }
        }
        let lower = match s.get("lower") {
            Json::Null => num(0),
            l => l.clone(),
        };
        let upper = match s.get("upper") {
            Json::Null => {
                if crate::translate::struct_field_array(f, base).is_some() {
                    return bad("an open-ended slice of a pointer field (its length is unknown)");
                }
                shape_of(base, axis)
            }
            u => u.clone(),
        };
        let len = match (const_int(&lower), const_int(&upper)) {
            (Some(0), _) => upper,
            (Some(a), Some(b)) => num((b - a).max(0)),
            _ => bin(upper, "Sub", lower.clone()),
        };
        Ok((lower, len))
    }

    /// `e` with every slice replaced by `start + cunumpy_kJ` (J counting the sliced axes of
    /// that operand) and every whole array named in it indexed by the loop counters; the
    /// lengths of the sliced axes of each operand are pushed to `lens`.
    fn elementwise(
        &self,
        f: &FnCx,
        at: &Json,
        e: &Json,
        d: usize,
        lens: &mut Vec<Vec<Json>>,
    ) -> R<Json> {
        match e.kind() {
            "Subscript" if indices(e).iter().any(|i| i.kind() == "Slice") => {
                let base = e.get("value");
                let mut j = 0;
                let mut ix = Vec::new();
                let mut ls = Vec::new();
                for (axis, i) in self.padded_indices(f, e).iter().enumerate() {
                    if i.kind() == "Slice" {
                        let (start, len) = self.slice_parts(f, at, base, axis, i)?;
                        let k = name(&format!("cunumpy_k{j}"));
                        ix.push(if const_int(&start) == Some(0) {
                            k
                        } else {
                            bin(start, "Add", k)
                        });
                        ls.push(len);
                        j += 1;
                    } else {
                        ix.push(self.elementwise(f, at, i, d, lens)?);
                    }
                }
                if j != d {
                    return Err(self.e(PortErrorKind::Unsupported, at.line(), "slice", name_of(base),
                        format!("slice assignment: an operand with {j} sliced axes where the target has {d}")));
                }
                lens.push(ls);
                let slice = if ix.len() == 1 {
                    ix.remove(0)
                } else {
                    obj(vec![
                        ("_t", Json::Str("Tuple".into())),
                        ("elts", Json::List(ix)),
                    ])
                };
                Ok(with(e, "slice", slice))
            }
            "Name" => {
                let n = name_of(e).unwrap_or("");
                match f.vars.get(n) {
                    Some(Ty::Array(..)) => Err(self.e(PortErrorKind::Unsupported, at.line(), "slice", Some(n),
                        format!("slice assignment naming the array argument '{n}' whole (write {n}[:], so the race proof sees it)"))),
                    Some(t @ (Ty::Local(..) | Ty::LocalDyn(..))) if t.rank() == d => {
                        let ix: Vec<Json> =
                            (0..d).map(|j| name(&format!("cunumpy_k{j}"))).collect();
                        lens.push((0..d).map(|a| shape_of(e, a)).collect());
                        let slice = if d == 1 {
                            ix[0].clone()
                        } else {
                            obj(vec![("_t", Json::Str("Tuple".into())), ("elts", Json::List(ix))])
                        };
                        Ok(obj(vec![
                            ("_t", Json::Str("Subscript".into())),
                            ("_line", Json::Num(at.line().to_string())),
                            ("value", e.clone()),
                            ("slice", slice),
                        ]))
                    }
                    Some(t) if t.rank() > 0 => Err(self.e(PortErrorKind::Unsupported, at.line(), "slice", Some(n),
                        format!("slice assignment: the array '{n}' has {} dimensions where the target has {d} sliced axes", t.rank()))),
                    _ => Ok(e.clone()),
                }
            }
            "Subscript" | "Attribute" | "Constant" => Ok(e.clone()),
            _ => match e {
                Json::Obj(m) => {
                    let mut out = BTreeMap::new();
                    for (k, v) in m {
                        let v = match v {
                            Json::Obj(_) => self.elementwise(f, at, v, d, lens)?,
                            Json::List(xs) => Json::List(
                                xs.iter()
                                    .map(|x| self.elementwise(f, at, x, d, lens))
                                    .collect::<R<Vec<_>>>()?,
                            ),
                            other => other.clone(),
                        };
                        out.insert(k.clone(), v);
                    }
                    Ok(Json::Obj(out))
                }
                other => Ok(other.clone()),
            },
        }
    }

    /// `target[slices] = value` / `target[slices] op= value`, element by element.
    pub(crate) fn slice_assign(
        &mut self,
        f: &mut FnCx,
        s: &Json,
        depth: usize,
        par: Option<&Par>,
    ) -> R<String> {
        let target = if s.kind() == "Assign" {
            match s.get("targets").as_list() {
                [t] => t,
                _ => {
                    return Err(self.unsupported(
                        s,
                        "assignment",
                        "chained assignment a = b = ...".into(),
                    ))
                }
            }
        } else {
            s.get("target")
        };
        let base = target.get("value");
        let rank = self.base_rank(f, base).unwrap_or(0);
        let padded = self.padded_indices(f, target);
        if padded.len() != rank {
            return Err(self.e(
                PortErrorKind::Unsupported,
                s.line(),
                "slice",
                name_of(base),
                format!(
                    "slice assignment into an array of {rank} dimensions indexed with {}",
                    padded.len()
                ),
            ));
        }
        let d = padded.iter().filter(|i| i.kind() == "Slice").count();
        let mut lens = Vec::new();
        let t2 = self.elementwise(f, s, target, d, &mut lens)?;
        let target_lens = lens.pop().unwrap_or_default();
        let mut rhs_lens = Vec::new();
        let v2 = self.elementwise(f, s, s.get("value"), d, &mut rhs_lens)?;
        // Python computes the whole right-hand side before it stores: element by element is
        // the same unless the right-hand side reads the target's array elsewhere.
        let key = array_key(f, base).or_else(|| name_of(base).map(str::to_string));
        if let Some(key) = &key {
            if reads_other(f, &v2, key, &t2) {
                let atomic = par.is_some_and(|p| p.atomic.contains(key));
                if let ([len], false) = (target_lens.as_slice(), atomic) {
                    return self.slice_assign_buffered(f, s, &t2, &v2, len, depth);
                }
                return Err(self.e(PortErrorKind::Unsupported, s.line(), "slice", Some(key),
                    format!("slice assignment whose right-hand side reads '{key}' at other elements (Python reads them all before it writes)")));
            }
        }
        // A local view in the right-hand side may be a view of the target's array: element by
        // element, a write could change what a later element reads.
        if let Some(v) = reads_local_view(f, &v2) {
            return Err(self.e(PortErrorKind::Unsupported, s.line(), "slice", Some(&v),
                format!("slice assignment reading the view '{v}' (it may share elements with the target; read the array it views)")));
        }
        let stmt = with(
            s,
            if s.kind() == "Assign" {
                "targets"
            } else {
                "target"
            },
            if s.kind() == "Assign" {
                Json::List(vec![t2])
            } else {
                t2
            },
        );
        let stmt = with(&stmt, "value", v2);
        let pad = "    ".repeat(depth);
        let mut out = self.comment(s.line(), &pad);
        for j in 0..d {
            f.vars
                .insert(format!("cunumpy_k{j}"), Ty::Scalar(Scalar::I64));
        }
        let mut opened = String::new();
        for (j, len) in target_lens.iter().enumerate() {
            let (n, _) = self.expr(f, len)?;
            let p = "    ".repeat(depth + j);
            opened.push_str(&format!(
                "{p}for (long long cunumpy_k{j} = 0; cunumpy_k{j} < {n}; ++cunumpy_k{j}) {{\n"
            ));
        }
        out.push_str(&opened);
        let body = self.stmt(f, &stmt, depth + d, par);
        for j in 0..d {
            f.vars.remove(&format!("cunumpy_k{j}"));
        }
        // the element statement's own comment repeats the line: drop it
        let body = body?;
        let body: String = body
            .lines()
            .filter(|l| !l.trim_start().starts_with("// L"))
            .map(|l| format!("{l}\n"))
            .collect();
        out.push_str(&body);
        for j in (0..d).rev() {
            out.push_str(&format!("{}}}\n", "    ".repeat(depth + j)));
        }
        Ok(out)
    }
}

impl Translator<'_> {
    /// `p[:] = c` whose first elements the code after it writes before any read
    /// (`fill_prefix::partial_fills`): translated as `p[start:] = c`, so that only the elements
    /// that code leaves alone get the fill.
    pub(crate) fn partial_fill(
        &mut self,
        f: &mut FnCx,
        s: &Json,
        start: Json,
        depth: usize,
        par: Option<&Par>,
    ) -> R<String> {
        let target = &s.get("targets").as_list()[..1];
        let Some(target) = target.first() else {
            return self.slice_assign(f, s, depth, par);
        };
        let slice = with(target.get("slice"), "lower", start);
        let stmt = with(s, "targets", Json::List(vec![with(target, "slice", slice)]));
        let pad = "    ".repeat(depth);
        let mut out = self.comment(s.line(), &pad);
        out.push_str(&format!("{pad}{PARTIAL_FILL_NOTE}\n"));
        let rest = self.slice_assign(f, &stmt, depth, par)?;
        out.extend(
            rest.lines()
                .filter(|l| !l.trim_start().starts_with("// L"))
                .map(|l| format!("{l}\n")),
        );
        Ok(out)
    }

    /// A 1-D slice assignment whose right-hand side reads the target's array at other
    /// elements (`markers[0:3, ip] = markers[k:k + 3, ip] + dt * v`): as Python does, the
    /// whole right-hand side first (into a buffer of the thread), then the stores.
    fn slice_assign_buffered(
        &mut self,
        f: &mut FnCx,
        s: &Json,
        t2: &Json,
        v2: &Json,
        len: &Json,
        depth: usize,
    ) -> R<String> {
        let op = if s.kind() == "Assign" {
            "="
        } else {
            match s.get("op").kind() {
                "Add" => "+=",
                "Sub" => "-=",
                "Mult" => "*=",
                "Div" => "/=",
                _ => {
                    return Err(self.unsupported(
                        s,
                        "slice",
                        "an augmented slice assignment other than += -= *= /= reading the target's array at other elements".into(),
                    ))
                }
            }
        };
        let (n, _) = self.expr(f, len)?;
        f.vars.insert("cunumpy_k0".into(), Ty::Scalar(Scalar::I64));
        let lhs = self.expr(f, t2);
        let rhs = self.expr(f, v2);
        f.vars.remove("cunumpy_k0");
        let ((lhs, lt), (rhs, _)) = (lhs?, rhs?);
        let c = lt.scalar().c();
        let pad = "    ".repeat(depth);
        let fname = self.current.clone();
        let line = s.line();
        let mut out = self.comment(line, &pad);
        // a constant length (`markers[0:3, ip]`): a buffer of exactly that size
        let fixed = n.parse::<i64>().ok().filter(|&k| (1..=64).contains(&k));
        let mut lines = vec![
            "{".to_string(),
            "    // the right-hand side reads the target's array: all of it first, as Python does"
                .into(),
            format!("    const long long cunumpy_sn = {n};"),
        ];
        match fixed {
            Some(k) => lines.push(format!("    {c} cunumpy_rhs[{k}];")),
            None => {
                self.prelude.insert("localcap");
                lines.extend([
                    "    if (cunumpy_sn > CUNUMPY_PORT_LOCAL_CAP) {".to_string(),
                    format!("        cunumpy_port_cap_exceeded(\"{fname}: a slice assignment\", (long long)cunumpy_sn);"),
                    "    }".into(),
                    format!("    {c} cunumpy_rhs[CUNUMPY_PORT_LOCAL_CAP];"),
                ]);
            }
        }
        lines.extend([
            format!("    for (long long cunumpy_k0 = 0; cunumpy_k0 < cunumpy_sn; ++cunumpy_k0) cunumpy_rhs[cunumpy_k0] = {rhs};"),
            format!("    for (long long cunumpy_k0 = 0; cunumpy_k0 < cunumpy_sn; ++cunumpy_k0) {lhs} {op} cunumpy_rhs[cunumpy_k0];"),
            "}".into(),
        ]);
        for l in lines {
            out.push_str(&format!("{pad}{l}\n"));
        }
        Ok(out)
    }
}

/// Whether the (rewritten) right-hand side `v2` reads array `key` at an element other than
/// the target's `t2`.
fn reads_other(f: &FnCx, v2: &Json, key: &str, t2: &Json) -> bool {
    fn strip(j: &Json) -> Json {
        match j {
            Json::Obj(m) => Json::Obj(
                m.iter()
                    .filter(|(k, _)| k.as_str() != "_line" && k.as_str() != "ctx")
                    .map(|(k, v)| (k.clone(), strip(v)))
                    .collect(),
            ),
            Json::List(v) => Json::List(v.iter().map(strip).collect()),
            other => other.clone(),
        }
    }
    fn walk(f: &FnCx, e: &Json, key: &str, t: &Json) -> bool {
        match e {
            Json::Obj(m) => {
                if e.kind() == "Subscript" {
                    let k = array_key(f, e.get("value"))
                        .or_else(|| name_of(e.get("value")).map(str::to_string));
                    if k.as_deref() == Some(key) && strip(e.get("slice")) != strip(t.get("slice")) {
                        return true;
                    }
                }
                m.values().any(|v| walk(f, v, key, t))
            }
            Json::List(v) => v.iter().any(|x| walk(f, x, key, t)),
            _ => false,
        }
    }
    walk(f, v2, key, t2)
}

/// A local view (`row = a[i, :]`) the expression reads, if any.
fn reads_local_view(f: &FnCx, e: &Json) -> Option<String> {
    match e {
        Json::Obj(m) => {
            if let Some(n) = name_of(e) {
                if f.vars.get(n).is_some_and(Ty::is_view) && !f.params.contains(n) {
                    return Some(n.to_string());
                }
            }
            m.values().find_map(|v| reads_local_view(f, v))
        }
        Json::List(v) => v.iter().find_map(|x| reads_local_view(f, x)),
        _ => None,
    }
}
