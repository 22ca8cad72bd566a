//! The planner: a graph lowered for concrete input shapes into as few kernels as its
//! reductions allow. One function per pass, run in order by [`plan_with_options`]:
//!
//! 1. `shapes`: the shape of every node;
//! 2. and 3. `groups`: reduction dependencies, then the reductions computed together;
//! 4. `outputs`: each output in a group's epilogue or an elementwise kernel;
//! 5. `materialise`: the reductions later kernels read, in outputs or workspace buffers;
//! 6. `lower`: every kernel's programs over collapsed iteration spaces;
//! 7. `traffic`: what each kernel reads and writes, and the bytes it moves.
//!
//! The result, [`Plan`], is device-free plain data (`types`). The passes that depend on the
//! device (split widths, partials, workspace layout) run when a plan is loaded on one
//! (`geometry`); `explain` writes a plan as text.

pub(crate) mod explain;
pub(crate) mod geometry;
mod groups;
mod lower;
mod materialise;
mod outputs;
mod shapes;
mod traffic;
pub(crate) mod types;

pub use geometry::Geometry;
pub(crate) use types::*;

use crate::error::{FusionError, Result};
use crate::ir::graph::Graph;

/// Plans a graph for concrete input shapes with the default options.
pub fn plan(graph: &Graph, input_shapes: &[Vec<usize>]) -> Result<Plan> {
    plan_with_options(graph, input_shapes, &PlanOptions::default())
}

/// Plans a graph for concrete input shapes.
pub fn plan_with_options(
    graph: &Graph,
    input_shapes: &[Vec<usize>],
    options: &PlanOptions,
) -> Result<Plan> {
    let g = graph;
    if input_shapes.len() != g.inputs.len() {
        return Err(FusionError::Arguments {
            what: "plan".into(),
            expected: format!("{} input shape(s)", g.inputs.len()),
            got: format!("{}", input_shapes.len()),
        });
    }
    for (i, (s, d)) in input_shapes.iter().zip(&g.inputs).enumerate() {
        if s.len() != d.ndim {
            return Err(FusionError::Arguments {
                what: format!("plan: input {i}"),
                expected: format!("{} dimension(s)", d.ndim),
                got: format!("shape {s:?}"),
            });
        }
    }
    let shapes = shapes::node_shapes(g, input_shapes)?;
    let red_deps = groups::reduction_deps(g);
    let (mut groups, group_of) = groups::reduction_groups(g, &shapes, &red_deps);
    let elementwise = outputs::place_outputs(g, &shapes, &mut groups, &group_of);
    let mat = materialise::materialise(g, &shapes, &groups, &group_of, &elementwise);
    let kernels = lower::lower_kernels(g, &shapes, &groups, &elementwise, &mat, options)?;
    let mut plan = Plan {
        options: options.clone(),
        inputs: input_shapes
            .iter()
            .zip(&g.inputs)
            .map(|(s, d)| TensorSpec {
                shape: s.clone(),
                dtype: d.dtype,
            })
            .collect(),
        scalars: g.scalars.iter().map(|s| (s.dtype, s.weak)).collect(),
        outputs: g
            .outputs
            .iter()
            .map(|o| TensorSpec {
                shape: shapes[o.index()].clone(),
                dtype: g.nodes[o.index()].dtype,
            })
            .collect(),
        kernels,
        buffers: mat.buffers,
    };
    traffic::count_traffic(&mut plan);
    Ok(plan)
}
