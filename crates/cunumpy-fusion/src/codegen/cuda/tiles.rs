//! The tiled mapping of a stencil: an elementwise kernel over a space of two or more dims that
//! reads views of one array shifted along an outer axis (`u[2:, 1:-1]`, `u[1:-1, 1:-1]`,
//! `u[:-2, 1:-1]`). The flat mapping loads every view of every element, and the rows above
//! and below come from L2 each time (H200, 2-D five-point Laplacian on 8192x8192 float64:
//! 0.78x the copy rate). Here each warp takes a tile of 32 consecutive elements of the
//! innermost axis (a lane each) by `rows` consecutive rows of the walked axis, each lane
//! walking its rows; views that differ by a whole number of rows along the walked axis share
//! one window of registers, loaded once per tile: row `t` of a view shifted `k` rows from the
//! window's base is the window's element `t + k`. So the views of a three-row stencil cost
//! `rows + 2` loads per `rows` outputs, not `3 * rows`; views shifted along the inner axis
//! (the left and right neighbours) are loaded at each row and hit L1 after the warp's first
//! load of the row. Every element computes its program in the same order as in the flat
//! mapping: the results are the same bit for bit.
//!
//! Tiles are numbered inner chunk fastest (the warps of a block side by side along a row);
//! a grid-stride loop covers them. A tile cut by the end of the walked axis runs a plain loop
//! over its rows, loading each view at each row; a lane past the end of the inner axis does
//! nothing.

use super::{grid_for, Gen, Params};
use crate::codegen::dialect::c_type as ctype;
use crate::plan::{contiguous_istrides, Launch, Leaf, LeafSrc, Program, RegKind, Space, Store};
use std::fmt::Write as _;

/// Lanes of a tile: the elements of the innermost axis one warp covers.
const LANES: usize = 32;
/// The most rows apart two views of one window may be.
const MAX_SPAN: i64 = 4;

/// How a tile reads one leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Read {
    /// Loaded at each row.
    Row,
    /// The same at every row (stride 0 along the walked axis): loaded once per tile.
    Once,
    /// At row `t`, element `t + k` of window `w`.
    Window { w: usize, k: usize },
}

/// Views of one array a whole number of rows apart: the window holds rows `0..rows + span`
/// of its base view (the one shifted least), those some view reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    /// Register of the base view.
    pub base: usize,
    /// The shift of each view from the base, in rows (0 for the base).
    pub shifts: Vec<usize>,
}

impl Window {
    /// The window elements some row `t < rows` reads.
    fn used(&self, rows: usize) -> Vec<usize> {
        let mut j: Vec<usize> = self
            .shifts
            .iter()
            .flat_map(|&k| (0..rows).map(move |t| t + k))
            .collect();
        j.sort_unstable();
        j.dedup();
        j
    }
}

/// The tiled mapping of one elementwise program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TileMap {
    /// The walked axis of the space (not the innermost).
    pub walk: usize,
    /// Rows each lane walks.
    pub rows: usize,
    /// Per register: how a tile reads it (None: not an array read).
    pub reads: Vec<Option<Read>>,
    pub windows: Vec<Window>,
}

/// An array read of a program (its register and leaf), or None for anything else.
fn array_leaf(r: &crate::plan::Reg) -> Option<&Leaf> {
    match &r.kind {
        RegKind::Leaf(l) if !matches!(l.src, LeafSrc::Scalar(_) | LeafSrc::Reduced(_)) => Some(l),
        _ => None,
    }
}

/// The groups of views along `axis`: registers and their shifts in rows (relative to the
/// group's first view). Views of one array with the same strides whose offsets differ by a
/// whole number of rows, at most `MAX_SPAN` apart, are one group.
fn groups_along(prog: &Program, axis: usize) -> Vec<Vec<(usize, i64)>> {
    let mut groups: Vec<Vec<(usize, i64)>> = Vec::new();
    for (i, r) in prog.regs.iter().enumerate() {
        let Some(l) = array_leaf(r) else { continue };
        let st = l.strides[axis] as i64;
        if st == 0 {
            continue;
        }
        let found = groups.iter().position(|g| {
            let first = array_leaf(&prog.regs[g[0].0]);
            let Some(f) = first else { return false };
            let delta = l.offset as i64 - f.offset as i64;
            if f.src != l.src || f.strides != l.strides || delta % st != 0 {
                return false;
            }
            let k = delta / st;
            let lo = g.iter().map(|m| m.1).min().unwrap_or(0).min(k);
            let hi = g.iter().map(|m| m.1).max().unwrap_or(0).max(k);
            hi - lo <= MAX_SPAN
        });
        match found {
            Some(gi) => {
                let f = array_leaf(&prog.regs[groups[gi][0].0]).map_or(0, |f| f.offset as i64);
                groups[gi].push((i, (l.offset as i64 - f) / st));
            }
            None => groups.push(vec![(i, 0)]),
        }
    }
    groups
}

/// Distinct shifts of a group, less one: the loads per row a window saves.
fn saving(g: &[(usize, i64)]) -> usize {
    let mut k: Vec<i64> = g.iter().map(|m| m.1).collect();
    k.sort_unstable();
    k.dedup();
    k.len() - 1
}

/// The tiled mapping of an elementwise program over `space` walking `rows` rows per lane, or
/// None where the flat mapping serves: `rows` below 2, a space of one dim or with fewer than
/// 32 elements along its innermost axis, a gather, or no views shifted along an outer axis.
pub(crate) fn tile_map(space: &Space, prog: &Program, rows: u32) -> Option<TileMap> {
    let nd = space.dims.len();
    if rows < 2 || nd < 2 || space.dims[nd - 1] < LANES {
        return None;
    }
    let gathers = prog.regs.iter().any(|r| match &r.kind {
        RegKind::Leaf(l) => !l.dynamic.is_empty(),
        RegKind::Index { .. } => true,
        _ => false,
    });
    if gathers {
        return None;
    }
    // the outer axis along which windows save the most loads (the outermost of equals)
    let (walk, groups) = (0..nd - 1)
        .map(|a| (a, groups_along(prog, a)))
        .max_by_key(|(a, g)| {
            (
                g.iter().map(|g| saving(g)).sum::<usize>(),
                std::cmp::Reverse(*a),
            )
        })?;
    if groups.iter().all(|g| saving(g) == 0) {
        return None;
    }
    let mut reads: Vec<Option<Read>> = prog
        .regs
        .iter()
        .map(|r| {
            array_leaf(r).map(|l| {
                if l.strides[walk] == 0 {
                    Read::Once
                } else {
                    Read::Row
                }
            })
        })
        .collect();
    let mut windows = Vec::new();
    for g in groups.iter().filter(|g| saving(g) > 0) {
        let lo = g.iter().map(|m| m.1).min().unwrap_or(0);
        let base = g.iter().find(|m| m.1 == lo).map_or(g[0].0, |m| m.0);
        let w = windows.len();
        let mut shifts = Vec::new();
        for &(i, k) in g {
            let k = (k - lo) as usize;
            reads[i] = Some(Read::Window { w, k });
            if !shifts.contains(&k) {
                shifts.push(k);
            }
        }
        shifts.sort_unstable();
        windows.push(Window { base, shifts });
    }
    Some(TileMap {
        walk,
        rows: rows as usize,
        reads,
        windows,
    })
}

/// ` + t * step` for row `t` (a number or a variable) of something that moves `step` (a
/// parameter name, or "1") per row; empty at row 0.
fn at_row(t: &str, step: &str) -> String {
    match (t, step) {
        ("0", _) => String::new(),
        (_, "1") => format!(" + {t}"),
        _ => format!(" + {t} * {step}"),
    }
}

impl Gen<'_> {
    /// An elementwise kernel in the tiled mapping `map` (see the module doc).
    pub(super) fn tiled_elementwise(
        &self,
        name: &str,
        space: &Space,
        prog: &Program,
        stores: &[Store],
        map: &TileMap,
    ) -> (String, Launch) {
        let mut ps = Params { list: Vec::new() };
        let idx = self.idx;
        let nd = space.dims.len();
        let (a, last, rows) = (map.walk, nd - 1, map.rows);
        let all: Vec<usize> = (0..nd).collect();
        let contiguous = contiguous_istrides(&space.dims);
        // the tiles: the walked axis in blocks of `rows`, the inner one in blocks of 32
        let tile_space = Space {
            dims: space
                .dims
                .iter()
                .enumerate()
                .map(|(j, &d)| match j {
                    _ if j == a => d.div_ceil(rows),
                    _ if j == last => d.div_ceil(LANES),
                    _ => d,
                })
                .collect(),
            reduced: vec![false; nd],
        };
        let mut body = String::new();
        let ind = "        ";
        self.coords(
            &mut ps,
            &mut body,
            ind,
            "tile",
            "t",
            "tn",
            &tile_space,
            &all,
        );
        for j in 0..nd {
            let v = if j == a {
                format!("t{j} * {rows}")
            } else if j == last {
                format!("t{j} * {LANES} + lane")
            } else {
                format!("t{j}")
            };
            let _ = writeln!(body, "{ind}const {idx} c{j} = {v};");
        }
        let d_last = format!("d{last}");
        self.index_param(&mut ps, &d_last, space.dims[last]);
        let d_walk = format!("d{a}");
        self.index_param(&mut ps, &d_walk, space.dims[a]);
        let _ = writeln!(body, "{ind}if (c{last} < {d_last}) {{");
        let ind = "            ";
        let _ = writeln!(body, "{ind}const {idx} rows = {d_walk} - c{a};");
        // the flat index of the tile's first row, and what it moves per row
        let i0 = self.offset(&mut ps, &contiguous, &all, "c", "ic");
        let _ = writeln!(body, "{ind}const {idx} i0 = {i0};");
        let out_step = ps.add_int(&format!("ic_{a}"), self.idx_dtype(), contiguous[a] as i64);
        // each view: its pointer, its element at the tile's first row, its step per row
        let mut ptr = vec![String::new(); prog.regs.len()];
        let mut step = vec![String::new(); prog.regs.len()];
        for (i, r) in prog.regs.iter().enumerate() {
            let Some(l) = array_leaf(r) else { continue };
            let p = self.read_ptr(&mut ps, l.src, r.dtype).unwrap_or_default();
            let b = self.leaf_index(
                &mut ps,
                l,
                &p,
                "i0",
                "c",
                &format!("st{p}"),
                &contiguous,
                "r",
            );
            let _ = writeln!(body, "{ind}const {idx} b{i} = {b};");
            let s = l.strides[a];
            step[i] = if s == 1 {
                "1".into()
            } else {
                ps.add_int(&format!("st{p}_{a}"), self.idx_dtype(), s as i64)
            };
            ptr[i] = p;
        }
        // views that do not move along the walked axis: once per tile (its first row is in
        // every tile)
        for (i, r) in prog.regs.iter().enumerate() {
            if map.reads[i] == Some(Read::Once) {
                let _ = writeln!(
                    body,
                    "{ind}const {} v{i} = {}[b{i}];",
                    ctype(r.dtype),
                    ptr[i]
                );
            }
        }
        // row `t` of a whole tile (its windows loaded), or row `t` (a variable) of a cut one
        let row = |ps: &mut Params, out: &mut String, ind: &str, t: Option<usize>| {
            let ts = t.map_or_else(|| "t".to_string(), |t| t.to_string());
            let t_of = |i: usize| match (map.reads[i], t) {
                (Some(Read::Once), _) => format!("v{i}"),
                (Some(Read::Window { w, k }), Some(t)) => format!("w{w}_{}", t + k),
                _ => format!("{}[b{i}{}]", ptr[i], at_row(&ts, &step[i])),
            };
            self.emit_prog(ps, out, ind, prog, "r", |_, i, _, _| t_of(i));
            let t = ts.as_str();
            for s in stores {
                let dt = prog.regs[s.reg].dtype;
                let p = self.write_ptr(ps, s.dst, dt);
                let _ = writeln!(out, "{ind}{p}[i0{}] = r{};", at_row(t, &out_step), s.reg);
            }
        };
        // a whole tile: the windows first, then each row
        let _ = writeln!(body, "{ind}if (rows >= {rows}) {{");
        let inner = format!("{ind}    ");
        for (w, win) in map.windows.iter().enumerate() {
            let b = win.base;
            for j in win.used(rows) {
                let _ = writeln!(
                    body,
                    "{inner}const {} w{w}_{j} = {}[b{b}{}];",
                    ctype(prog.regs[b].dtype),
                    ptr[b],
                    at_row(&j.to_string(), &step[b])
                );
            }
        }
        for t in 0..rows {
            let _ = writeln!(body, "{inner}{{");
            row(&mut ps, &mut body, &format!("{inner}    "), Some(t));
            let _ = writeln!(body, "{inner}}}");
        }
        // a tile cut by the end of the walked axis: its rows one by one
        let _ = writeln!(body, "{ind}}} else {{");
        let _ = writeln!(body, "{inner}for ({idx} t = 0; t < rows; ++t) {{");
        row(&mut ps, &mut body, &format!("{inner}    "), None);
        let _ = writeln!(body, "{inner}}}");
        let _ = writeln!(body, "{ind}}}");
        let _ = writeln!(body, "        }}");
        let tiles = tile_space.size();
        self.index_param(&mut ps, "nt", tiles);
        let mut src = String::new();
        let _ = writeln!(
            src,
            "extern \"C\" __global__ void {name}(\n{})\n{{",
            ps.signature()
        );
        let _ = writeln!(src, "    const int lane = (int)(threadIdx.x & 31);");
        let _ = writeln!(
            src,
            "    const {idx} warps = ({idx})gridDim.x * ({idx})(blockDim.x >> 5);"
        );
        let _ = writeln!(
            src,
            "    for ({idx} tile = ({idx})blockIdx.x * ({idx})(blockDim.x >> 5) + ({idx})(threadIdx.x >> 5); tile < nt; tile += warps) {{"
        );
        src.push_str(&body);
        src.push_str("    }\n}\n");
        let b = self.plan.options.block;
        let grid = grid_for(tiles, (b as usize / LANES).max(1), i32::MAX as usize);
        (
            src,
            Launch {
                name: name.to_string(),
                grid,
                block: b,
                shared_bytes: 0,
                params: ps.list,
            },
        )
    }
}
