//! The fusion IR: the graph a traced function builds (`graph`), THE op table (`ops`: name,
//! arity, dtype rule, CUDA C expression, CPU kernel) and NumPy 2 type promotion (`promote`).

pub(crate) mod graph;
pub(crate) mod ops;
pub(crate) mod promote;
