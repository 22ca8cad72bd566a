//! The CUDA signature parser (in progress).
