//! cunumpy's engine: element types, CUDA signatures, argument plans, struct layouts and the
//! transfer/launch ledger. Knows nothing about Python, CUDA libraries or a C++ compiler.

pub mod args;
pub mod cache_key;
pub mod ctypes;
pub mod dtype;
pub mod host_pool;
pub mod includes;
pub mod launch;
pub mod layout;
pub mod ledger;
pub mod parser;
pub mod signature;
