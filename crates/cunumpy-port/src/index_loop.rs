//! A parallel loop over the entries of an index array (struphy's `reflect`: `for ip in
//! outside_inds:`, the markers that left the domain, as `np.nonzero` gives them). Each thread
//! takes one entry; the race proof treats the loop variable as it treats a `range` one, which
//! is sound when no two entries are equal. That is checked where it costs nothing: the entries
//! must increase strictly (each thread compares its entry with the one before), and a kernel
//! given others stops with a message naming the array, instead of racing.

use crate::error::PortErrorKind;
use crate::json::Json;
use crate::translate::{name_of, FnCx, Translator, R};
use crate::types::Ty;

impl<'a> Translator<'a> {
    /// `for v in arr:` over a 1-D integer array argument the loop does not write: Some((v,
    /// arr)); None for any other loop (a `range` one, or refused by `range`).
    pub(crate) fn index_array_loop(&self, f: &FnCx, lp: &Json) -> R<Option<(String, String)>> {
        let Some(arr) = name_of(lp.get("iter")) else {
            return Ok(None);
        };
        let Some(var) = name_of(lp.get("target")) else {
            return Ok(None);
        };
        match f.vars.get(arr) {
            Some(Ty::Array(s, 1)) if s.is_int() && f.params.contains(arr) => {}
            _ => return Ok(None),
        }
        if !lp.get("orelse").as_list().is_empty() {
            return Ok(None);
        }
        let mut written = Vec::new();
        for s in lp.get("body").as_list() {
            self.written_keys(f, s, &mut written);
        }
        if written.iter().any(|w| w == arr) {
            return Err(self.e(
                PortErrorKind::Race,
                lp.line(),
                "for",
                Some(arr),
                format!("the parallel loop runs over the entries of '{arr}' and writes '{arr}'"),
            ));
        }
        Ok(Some((var.to_string(), arr.to_string())))
    }

    /// The check each thread makes of its entry (after `var = arr(cunumpy_t)`).
    pub(crate) fn index_array_check(&self, var: &str, arr: &str, line: u32) -> String {
        let name = &self.current;
        format!(
            "        // (no two iterations may have the same '{var}': the entries of '{arr}' must increase strictly)\n\
             \x20       if (cunumpy_t > 0 && !({arr}(cunumpy_t - 1) < {var})) {{\n\
             \x20           printf(\"cunumpy: {name}: line {line}: the entries of '{arr}' do not increase strictly (entry %lld): iterations could write the same elements in parallel\\n\", (long long)cunumpy_t);\n\
             \x20           __trap();\n\
             \x20       }}\n"
        )
    }
}
