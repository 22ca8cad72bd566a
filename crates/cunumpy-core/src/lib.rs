//! cunumpy's engine: element types, CUDA signatures, argument plans, struct layouts and the
//! transfer/launch ledger. Knows nothing about Python, CUDA libraries or a C++ compiler.

pub mod dtype;
pub mod ledger;
pub mod signature;
