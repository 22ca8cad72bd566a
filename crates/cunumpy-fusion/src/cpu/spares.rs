//! Intermediate columns kept from one call of a plan for its next: a tall matrix's row
//! reduction (`a.max(axis=1) - a.min(axis=1)`, 625 000 rows of 16 float64 on 2 cores) spent a
//! third of its time faulting in the fresh pages of its result columns on every call.

use crate::scalar::complex::Complex;
use crate::scalar::elem::{with_elem, Column, Elem};
use cunumpy_core::dtype::DType;
use std::sync::Mutex;

/// At most this many columns are kept (a plan's reductions rarely have more results).
const KEPT: usize = 8;

/// Columns of earlier calls, handed out again to a loop that overwrites every element.
#[derive(Debug, Default)]
pub(crate) struct Spares(Mutex<Vec<Column>>);

impl Spares {
    /// A column of `len` elements of `dtype`: a kept one (holding an earlier call's values,
    /// so only for a writer of every element) or a new one filled with zeros.
    pub(crate) fn take(&self, dtype: DType, len: usize) -> Column {
        let mut kept = self.lock();
        if let Some(i) = kept
            .iter()
            .position(|c| c.dtype() == dtype && c.as_data().len() == len)
        {
            return kept.swap_remove(i);
        }
        drop(kept);
        with_elem!(dtype, T => T::new_col(vec![T::default(); len]))
    }

    /// Keeps `columns` for a later [`Spares::take`], dropping the oldest beyond [`KEPT`].
    pub(crate) fn keep(&self, columns: impl IntoIterator<Item = Column>) {
        let mut kept = self.lock();
        kept.extend(columns);
        let extra = kept.len().saturating_sub(KEPT);
        kept.drain(..extra);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Column>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
