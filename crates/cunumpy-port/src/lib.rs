//! cunumpy-port: translates a typed Python host kernel (Pyccel style: annotated arguments, a loop
//! over particles or cells, helper calls, `+=` into a grid) into a CUDA C kernel with the same
//! name and argument order, choosing the loop to run in parallel and proving it race-free.
//!
//! Input: the module's syntax tree as JSON, dumped by the Python side from Python's own `ast`
//! module (the exact grammar of the running Python; no second Python parser to keep in step),
//! and the module's source text (for the line comments).

mod accumulate;
mod counters;
mod dead_fill;
mod error;
mod fill_prefix;
mod fill_triangle;
mod helper_owned;
mod index_loop;
mod json;
mod parallel;
mod slices;
mod translate;
mod types;

pub use error::{PortError, PortErrorKind};
pub use translate::{Options, Translation, WriteDecision};

/// Translates `opts.kernel` of the module whose syntax tree is `tree_json` and whose source is
/// `source`.
pub fn translate(tree_json: &str, source: &str, opts: &Options) -> Result<Translation, PortError> {
    let tree = json::parse(tree_json).map_err(|m| PortError {
        kind: PortErrorKind::Input,
        function: opts.kernel.clone(),
        line: 0,
        construct: "syntax tree".into(),
        array: None,
        message: format!("the syntax tree is not valid JSON: {m}"),
    })?;
    translate::Translator::new(&tree, source).kernel(opts)
}
