//! What the translator refuses, and why.

/// Why a kernel was not translated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortErrorKind {
    /// A construct the translator does not handle (yet): the host kernel stays the reference.
    Unsupported,
    /// The translator cannot prove the parallel loop is race-free: it refuses instead of
    /// generating a kernel that might race.
    Race,
    /// The input is not what the translator was given to expect (no such function, bad types).
    Input,
}

/// A refusal naming the function, the construct, the array (if any) and the source line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{function}, line {line}: {message}")]
pub struct PortError {
    pub kind: PortErrorKind,
    pub function: String,
    pub line: u32,
    pub construct: String,
    pub array: Option<String>,
    pub message: String,
}
