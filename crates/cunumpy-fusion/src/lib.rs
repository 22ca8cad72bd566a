//! cunumpy's fusion compiler, pure Rust: a graph builder the Python tracer calls for every
//! operation on symbolic values, ONE op table (name, arity, dtype rule, CUDA C expression, CPU
//! kernel), NumPy 2 promotion, a planner that fuses elementwise work into as few kernels as
//! reductions allow, CUDA C code generation and a parallel CPU executor of the same plan.
//!
//! ```
//! use cunumpy_core::dtype::DType;
//! use cunumpy_fusion::{execute_cpu, plan, ArrayMut, ArrayRef, Axis, GraphBuilder, Op,
//!                      ReduceKind, ScalarValue};
//!
//! // f(a, b) = sum((a - b) ** 2)
//! let mut g = GraphBuilder::new();
//! let a = g.input(DType::Float64, 1).unwrap();
//! let b = g.input(DType::Float64, 1).unwrap();
//! let two = g.scalar(DType::Int64, true).unwrap(); // a Python int: weak
//! let d = g.op(Op::Sub, &[a, b]).unwrap();
//! let sq = g.op(Op::Pow, &[d, two]).unwrap();
//! let s = g.reduce(ReduceKind::Sum, sq, &Axis::All, false).unwrap();
//! g.output(s).unwrap();
//! let graph = g.finish().unwrap();
//!
//! let p = plan(&graph, &[vec![4], vec![4]]).unwrap();
//! assert_eq!(p.kernels.len(), 1);
//! let (x, y) = (vec![1.0, 2.0, 3.0, 4.0], vec![0.0; 4]);
//! let mut out = vec![0.0f64];
//! execute_cpu(&p, &[ArrayRef::new(&x, &[4]), ArrayRef::new(&y, &[4])],
//!             &[ScalarValue::Int(2)], &mut [ArrayMut::new(&mut out, &[])]).unwrap();
//! assert_eq!(out[0], 30.0);
//! assert!(p.cuda_source().contains("extern \"C\" __global__"));
//! ```

mod complex;
mod cpu;
mod cuda;
mod elem;
mod error;
mod graph;
mod host_loops;
mod host_run;
mod hostgen;
mod ops;
mod pack;
mod plan;
mod promote;
mod vmath;

pub use complex::Complex;
pub use cpu::{execute_cpu, ArrayMut, ArrayRef, ScalarValue, BLOCK};
pub use cuda::{COMPLEX_PREAMBLE, PREAMBLE};
pub use elem::{Data, DataMut};
pub use error::{FusionError, Result};
pub use graph::{
    Axis, Graph, GraphBuilder, InputDecl, Node, NodeKind, ReduceKind, ScalarDecl, Value, ValueInfo,
};
pub use host_loops::{
    host_loop_settings, host_loop_status, set_host_loops, wait_for_host_loops, HostLoopMode,
    HostLoopStatus,
};
pub use ops::{Op, OpDef, Rule, OPS};
pub use pack::{launch_param_values, DevicePointers};
pub use plan::{
    c_ident, plan, plan_with_options, BufferSpec, Kernel, KernelKind, Launch, Operand, Param,
    ParamValue, Plan, PlanOptions, Strategy, TensorSpec,
};
pub use promote::{promote, promote_types, ArgType};

/// Re-exported so users of the crate name dtypes without depending on cunumpy-core.
pub use cunumpy_core::dtype::DType;
