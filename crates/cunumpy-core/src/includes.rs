//! Include resolution and hashing (in progress).
