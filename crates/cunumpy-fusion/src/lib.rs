//! cunumpy's fusion compiler, pure Rust, in stages, each a folder that uses only those
//! below it:
//!
//! - `scalar/`: per-dtype scalar semantics (elements, complex numbers, vectorised math);
//! - `ir/`: the graph builder the Python tracer calls for every operation on symbolic values,
//!   ONE op table (name, arity, dtype rule, CUDA C expression, CPU kernel) and NumPy 2
//!   promotion;
//! - `plan/`: the planner, one function per pass, fusing elementwise work into as few kernels
//!   as reductions allow; its [`Plan`] is device-free;
//! - `codegen/`: one C dialect, and the CUDA and host C++ generators written in it;
//! - `device/`: a plan loaded on a device ([`Plan::for_device`]): CUDA source, launch
//!   geometry and workspace layout from the device's SM count, and the parameter packer;
//! - `cpu/`: the parallel CPU executor of the same plan (block interpreter and compiled loops).
//!
//! ```
//! use cunumpy_core::dtype::DType;
//! use cunumpy_fusion::{execute_cpu, plan, ArrayMut, ArrayRef, Axis, DeviceTarget,
//!                      GraphBuilder, Op, ReduceKind, ScalarValue};
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
//! let on_gpu = p.for_device(DeviceTarget::H200);
//! assert!(on_gpu.source.contains("extern \"C\" __global__"));
//! ```

mod codegen;
mod cpu;
mod device;
mod error;
mod ir;
mod plan;
mod scalar;

pub use codegen::cuda::param_c_type;
pub use codegen::dialect::{preamble_for, COMPLEX_PREAMBLE, PREAMBLE};
pub use cpu::executor::{execute_cpu, execute_cpu_cached, ArrayMut, ArrayRef, HostLoopCache};
pub use cpu::host_loops::{
    host_loop_settings, host_loop_status, set_host_loops, wait_for_host_loops, HostLoopMode,
    HostLoopStatus,
};
pub use cpu::shared::BLOCK;
pub use device::pack::{launch_args, launch_signature, DevicePointers};
pub use device::{DeviceKernel, DevicePlan, DeviceTarget};
pub use error::{FusionError, Result};
pub use ir::graph::{
    Axis, Graph, GraphBuilder, IndexItem, InputDecl, Node, NodeKind, ReduceKind, ScalarDecl, Value,
    ValueInfo, REDUCTIONS,
};
pub use ir::ops::{Op, OpDef, Rule, OPS, OP_ALIASES};
pub use ir::promote::{promote, promote_types, ArgType};
pub use plan::types::{
    c_ident, BufferSpec, Kernel, KernelKind, Launch, Operand, Param, ParamValue, Plan, PlanOptions,
    Strategy, TensorSpec,
};
pub use plan::{plan, plan_with_options, Geometry};
pub use scalar::complex::Complex;
pub use scalar::elem::{Data, DataMut};
pub use scalar::ScalarValue;

/// Re-exported so users of the crate name dtypes without depending on cunumpy-core.
pub use cunumpy_core::dtype::DType;
