//! A fused plan on the host: the CPU executor (`cunumpy_fusion::execute_cpu_cached`, with the
//! plan's compiled loops) over host arrays, after the checks a call needs that the planner
//! cannot make: bool inputs hold only 0/1 bytes, and no output shares memory with another
//! argument. The binding reads the arrays; this is the rest of the call.

use crate::{FusedPlan, RuntimeError};
use cunumpy_core::dtype::DType;
use cunumpy_fusion::{ArrayMut, ArrayRef, Complex, Data, DataMut, ScalarValue};

/// A C-contiguous host array (the binding reads it from a NumPy array).
pub struct HostArray {
    /// Address of the first element.
    pub ptr: usize,
    /// Number of elements.
    pub len: usize,
    pub dtype: DType,
    pub shape: Vec<usize>,
}

/// The bytes `[start, end)` a host array covers.
pub fn byte_range(v: &HostArray) -> (usize, usize) {
    (v.ptr, v.ptr + v.len * v.dtype.itemsize())
}

/// Whether two byte ranges `[start, end)` share a byte.
pub fn overlaps<T: PartialOrd>(a: (T, T), b: (T, T)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// Typed read-only slice of a host array.
///
/// # Safety
/// `v` describes live, initialised, C-contiguous memory of `v.len` elements of `v.dtype`,
/// aligned for it, that nothing writes while the slice lives; for bool, every byte is 0 or 1.
unsafe fn data_of<'a>(v: &HostArray) -> Data<'a> {
    macro_rules! s {
        ($t:ty) => {
            // SAFETY: the caller's contract (pointer, length, type, no writers).
            unsafe { std::slice::from_raw_parts(v.ptr as *const $t, v.len) }
        };
    }
    if v.len == 0 {
        return empty_data(v.dtype);
    }
    match v.dtype {
        DType::Bool => Data::Bool(s!(bool)),
        DType::Int8 => Data::Int8(s!(i8)),
        DType::UInt8 => Data::UInt8(s!(u8)),
        DType::Int16 => Data::Int16(s!(i16)),
        DType::UInt16 => Data::UInt16(s!(u16)),
        DType::Int32 => Data::Int32(s!(i32)),
        DType::UInt32 => Data::UInt32(s!(u32)),
        DType::Int64 => Data::Int64(s!(i64)),
        DType::UInt64 => Data::UInt64(s!(u64)),
        DType::Float32 => Data::Float32(s!(f32)),
        DType::Complex64 => Data::Complex64(s!(Complex<f32>)),
        DType::Complex128 => Data::Complex128(s!(Complex<f64>)),
        _ => Data::Float64(s!(f64)),
    }
}

fn empty_data(d: DType) -> Data<'static> {
    match d {
        DType::Bool => Data::Bool(&[]),
        DType::Int8 => Data::Int8(&[]),
        DType::UInt8 => Data::UInt8(&[]),
        DType::Int16 => Data::Int16(&[]),
        DType::UInt16 => Data::UInt16(&[]),
        DType::Int32 => Data::Int32(&[]),
        DType::UInt32 => Data::UInt32(&[]),
        DType::Int64 => Data::Int64(&[]),
        DType::UInt64 => Data::UInt64(&[]),
        DType::Float32 => Data::Float32(&[]),
        DType::Complex64 => Data::Complex64(&[]),
        DType::Complex128 => Data::Complex128(&[]),
        _ => Data::Float64(&[]),
    }
}

/// Typed writable slice of a host array.
///
/// # Safety
/// As for [`data_of`], and no other slice (read or write) of these bytes lives meanwhile.
unsafe fn data_mut_of<'a>(v: &HostArray) -> DataMut<'a> {
    macro_rules! s {
        ($t:ty, $var:ident) => {
            if v.len == 0 {
                DataMut::$var(&mut [])
            } else {
                // SAFETY: the caller's contract (pointer, length, type, exclusive access).
                DataMut::$var(unsafe { std::slice::from_raw_parts_mut(v.ptr as *mut $t, v.len) })
            }
        };
    }
    match v.dtype {
        DType::Bool => s!(bool, Bool),
        DType::Int8 => s!(i8, Int8),
        DType::UInt8 => s!(u8, UInt8),
        DType::Int16 => s!(i16, Int16),
        DType::UInt16 => s!(u16, UInt16),
        DType::Int32 => s!(i32, Int32),
        DType::UInt32 => s!(u32, UInt32),
        DType::Int64 => s!(i64, Int64),
        DType::UInt64 => s!(u64, UInt64),
        DType::Float32 => s!(f32, Float32),
        DType::Complex64 => s!(Complex<f32>, Complex64),
        DType::Complex128 => s!(Complex<f64>, Complex128),
        _ => s!(f64, Float64),
    }
}

impl FusedPlan {
    /// Runs the plan on the CPU: `ins` and `outs` are of the plan's shapes and dtypes. Checks
    /// that bool inputs hold only 0/1 bytes and that no output overlaps another argument
    /// (a [`RuntimeError::FusedCall`] otherwise), then runs the executor. Blocks: call it
    /// without holding any interpreter lock.
    ///
    /// # Safety
    /// Every array is live, initialised, C-contiguous memory of `len` elements of its dtype,
    /// aligned for it, staying allocated for the call; the outputs are writable; no other
    /// thread writes any of them meanwhile.
    pub unsafe fn run_host(
        &self,
        ins: &[HostArray],
        outs: &[HostArray],
        svs: &[ScalarValue],
    ) -> Result<(), RuntimeError> {
        for (i, v) in ins.iter().enumerate() {
            if v.dtype == DType::Bool && v.len > 0 {
                // SAFETY: `v` is `v.len` live bytes (a bool array is one byte per element),
                // read only (the caller's contract).
                let bytes = unsafe { std::slice::from_raw_parts(v.ptr as *const u8, v.len) };
                if bytes.iter().any(|&b| b > 1) {
                    return Err(RuntimeError::FusedCall(format!(
                        "fuse: input {i}: a bool array holds bytes other than 0 and 1"
                    )));
                }
            }
        }
        for (i, o) in outs.iter().enumerate() {
            let r = byte_range(o);
            let clash = ins.iter().any(|v| overlaps(r, byte_range(v)))
                || outs
                    .iter()
                    .enumerate()
                    .any(|(j, v)| j != i && overlaps(r, byte_range(v)));
            if clash && o.len > 0 {
                return Err(RuntimeError::FusedCall(format!(
                    "fuse: output {i} overlaps another argument's memory"
                )));
            }
        }
        // SAFETY: the caller's contract (live, typed, aligned, C-contiguous arrays nobody
        // else writes); bool inputs hold only 0/1 bytes (checked); outputs overlap no input
        // and no other output (checked), so the one mutable slice of each is exclusive.
        let (ins_data, outs_data): (Vec<Data<'_>>, Vec<DataMut<'_>>) = unsafe {
            (
                ins.iter().map(|v| data_of(v)).collect(),
                outs.iter().map(|v| data_mut_of(v)).collect(),
            )
        };
        let refs: Vec<ArrayRef<'_>> = ins_data
            .into_iter()
            .zip(ins)
            .map(|(data, v)| ArrayRef {
                data,
                shape: &v.shape,
            })
            .collect();
        let mut muts: Vec<ArrayMut<'_>> = outs_data
            .into_iter()
            .zip(outs)
            .map(|(data, v)| ArrayMut {
                data,
                shape: &v.shape,
            })
            .collect();
        cunumpy_fusion::execute_cpu_cached(self.plan(), self.host_loops(), &refs, svs, &mut muts)?;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use cunumpy_fusion::{plan, GraphBuilder, Op};

    fn view<T>(v: &[T], dtype: DType) -> HostArray {
        HostArray {
            ptr: v.as_ptr() as usize,
            len: v.len(),
            dtype,
            shape: vec![v.len()],
        }
    }

    fn view_mut<T>(v: &mut [T], dtype: DType) -> HostArray {
        HostArray {
            ptr: v.as_mut_ptr() as usize,
            len: v.len(),
            dtype,
            shape: vec![v.len()],
        }
    }

    fn add_plan() -> FusedPlan {
        let mut g = GraphBuilder::new();
        let a = g.input(DType::Float64, 1).unwrap();
        let b = g.input(DType::Float64, 1).unwrap();
        let y = g.op(Op::Add, &[a, b]).unwrap();
        g.output(y).unwrap();
        FusedPlan::new(plan(&g.finish().unwrap(), &[vec![4], vec![4]]).unwrap())
    }

    #[test]
    fn runs_on_the_cpu_and_refuses_overlapping_outputs() {
        let fused = add_plan();
        let a = [1.0, 2.0, 3.0, 4.0];
        let b = [10.0, 20.0, 30.0, 40.0];
        let mut out = [0.0f64; 4];
        // SAFETY: live arrays of the plan's shapes and dtypes; `out` is written only here.
        unsafe {
            fused
                .run_host(
                    &[view(&a, DType::Float64), view(&b, DType::Float64)],
                    &[view_mut(&mut out, DType::Float64)],
                    &[],
                )
                .unwrap()
        };
        assert_eq!(out, [11.0, 22.0, 33.0, 44.0]);
        // the output is the first input: refused before anything runs
        // SAFETY: as above; the call is refused before any write.
        let err = unsafe {
            fused.run_host(
                &[view(&a, DType::Float64), view(&b, DType::Float64)],
                &[view(&a, DType::Float64)],
                &[],
            )
        }
        .unwrap_err();
        assert!(err.to_string().contains("output 0 overlaps"), "{err}");
        assert_eq!(a, [1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn bool_inputs_must_hold_zero_or_one() {
        let mut g = GraphBuilder::new();
        let a = g.input(DType::Bool, 1).unwrap();
        let y = g.op(Op::LogicalNot, &[a]).unwrap();
        g.output(y).unwrap();
        let fused = FusedPlan::new(plan(&g.finish().unwrap(), &[vec![3]]).unwrap());
        let bad = [0u8, 2, 1];
        let mut out = [0u8; 3];
        // SAFETY: live arrays of the plan's shapes and one-byte elements.
        let err = unsafe {
            fused.run_host(
                &[view(&bad, DType::Bool)],
                &[view_mut(&mut out, DType::Bool)],
                &[],
            )
        }
        .unwrap_err();
        assert!(
            err.to_string().contains("bytes other than 0 and 1"),
            "{err}"
        );
    }
}
