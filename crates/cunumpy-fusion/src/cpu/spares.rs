//! Intermediate columns kept from one call of a plan for its next: a tall matrix's row
//! reduction (`a.max(axis=1) - a.min(axis=1)`, 625 000 rows of 16 float64 on 2 cores) spent a
//! third of its time faulting in the fresh pages of its result columns on every call.

use crate::scalar::complex::Complex;
use crate::scalar::elem::{with_elem, Column, Elem};
use cunumpy_core::dtype::DType;
use std::sync::Mutex;

/// At most this many columns are kept (a plan's reductions rarely have more results).
const KEPT: usize = 8;
/// Nor more than this many bytes in all: a plan idle between calls holds no more memory than
/// this for them (a larger result is faulted in afresh, which costs less next to its size).
const KEPT_BYTES: usize = 256 << 20;

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

    /// Keeps `columns` for a later [`Spares::take`], dropping the oldest beyond [`KEPT`]
    /// columns or [`KEPT_BYTES`] bytes.
    pub(crate) fn keep(&self, columns: impl IntoIterator<Item = Column>) {
        let mut kept = self.lock();
        kept.extend(columns);
        let extra = kept.len().saturating_sub(KEPT);
        kept.drain(..extra);
        let bytes = |c: &Column| c.as_data().len() * c.dtype().itemsize();
        while kept.iter().map(bytes).sum::<usize>() > KEPT_BYTES {
            kept.remove(0);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Column>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may panic
    use super::*;

    fn first_value(c: &Column) -> f64 {
        match c {
            Column::Float64(v) => v[0],
            _ => f64::NAN,
        }
    }

    #[test]
    fn a_kept_column_of_the_same_dtype_and_length_is_handed_out_again() {
        let spares = Spares::default();
        spares.keep([Column::Float64(vec![7.0; 10])]);
        // another length or dtype gets a new zero column and leaves the kept one
        assert_eq!(first_value(&spares.take(DType::Float64, 11)), 0.0);
        assert_eq!(spares.take(DType::Float32, 10).dtype(), DType::Float32);
        assert_eq!(first_value(&spares.take(DType::Float64, 10)), 7.0);
        // taken: the next one is new
        assert_eq!(first_value(&spares.take(DType::Float64, 10)), 0.0);
    }

    #[test]
    fn at_most_kept_columns_and_kept_bytes_stay() {
        let spares = Spares::default();
        spares.keep((0..KEPT + 3).map(|i| Column::Float64(vec![i as f64; 4])));
        assert_eq!(spares.lock().len(), KEPT);
        // the oldest went first
        assert_eq!(first_value(&spares.lock()[0]), 3.0);
        let big = KEPT_BYTES / 8 / 2 + 1; // two of these are over the byte cap
        spares.keep([
            Column::Float64(vec![1.0; big]),
            Column::Float64(vec![2.0; big]),
        ]);
        let kept = spares.lock();
        assert_eq!(kept.len(), 1);
        assert_eq!(first_value(&kept[0]), 2.0);
    }
}
