//! cunumpy's engine: element types and C types, the CUDA signature parser, argument plans
//! (check, cast, pack), struct layouts, launch shapes and limits, include resolution, the one
//! cache-key type, the transfer/launch ledger, the host memory pool, the settings read from
//! the environment (`config`), the one mutex helper (`sync`) and the checks of a Metal kernel
//! call (`metal`). Knows nothing about Python, CUDA libraries or a C++ compiler.

pub mod args;
pub mod cache_key;
pub mod config;
pub mod constants;
pub mod ctypes;
pub mod disk;
pub mod dtype;
pub mod host_pool;
pub mod includes;
pub mod launch;
pub mod layout;
pub mod ledger;
pub mod metal;
pub mod parser;
pub mod signature;
pub mod sync;
