//! Element types shared by every layer: NumPy dtype names, sizes, CUDA alignments and C names.

use std::fmt;

/// A NumPy dtype that a CUDA kernel parameter can take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    Int8,
    UInt8,
    Int16,
    UInt16,
    Int32,
    UInt32,
    Int64,
    UInt64,
    Float32,
    Float64,
    Complex64,
    Complex128,
}

/// The broad class of a dtype, used by the casting rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DTypeKind {
    Bool,
    Signed,
    Unsigned,
    Float,
    Complex,
}

impl DType {
    /// Every dtype, in NumPy's order.
    pub const ALL: [DType; 13] = [
        DType::Bool,
        DType::Int8,
        DType::UInt8,
        DType::Int16,
        DType::UInt16,
        DType::Int32,
        DType::UInt32,
        DType::Int64,
        DType::UInt64,
        DType::Float32,
        DType::Float64,
        DType::Complex64,
        DType::Complex128,
    ];

    /// The NumPy name (`"float64"`).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::Int8 => "int8",
            DType::UInt8 => "uint8",
            DType::Int16 => "int16",
            DType::UInt16 => "uint16",
            DType::Int32 => "int32",
            DType::UInt32 => "uint32",
            DType::Int64 => "int64",
            DType::UInt64 => "uint64",
            DType::Float32 => "float32",
            DType::Float64 => "float64",
            DType::Complex64 => "complex64",
            DType::Complex128 => "complex128",
        }
    }

    /// Parses a NumPy dtype name (`str(np.dtype(...))`).
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Bytes per element.
    pub fn itemsize(self) -> usize {
        match self {
            DType::Bool | DType::Int8 | DType::UInt8 => 1,
            DType::Int16 | DType::UInt16 => 2,
            DType::Int32 | DType::UInt32 | DType::Float32 => 4,
            DType::Int64 | DType::UInt64 | DType::Float64 | DType::Complex64 => 8,
            DType::Complex128 => 16,
        }
    }

    /// Alignment of the type on the device: CUDA's complex types are aligned to their
    /// full size (`complex<double>` to 16), unlike NumPy's complex128 (8).
    pub fn cuda_alignment(self) -> usize {
        self.itemsize()
    }

    pub fn kind(self) -> DTypeKind {
        match self {
            DType::Bool => DTypeKind::Bool,
            DType::Int8 | DType::Int16 | DType::Int32 | DType::Int64 => DTypeKind::Signed,
            DType::UInt8 | DType::UInt16 | DType::UInt32 | DType::UInt64 => DTypeKind::Unsigned,
            DType::Float32 | DType::Float64 => DTypeKind::Float,
            DType::Complex64 | DType::Complex128 => DTypeKind::Complex,
        }
    }

    /// The canonical C spelling, the reverse of the type map (`ctype_of`).
    pub fn c_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::Int8 => "signed char",
            DType::UInt8 => "unsigned char",
            DType::Int16 => "short",
            DType::UInt16 => "unsigned short",
            DType::Int32 => "int",
            DType::UInt32 => "unsigned int",
            DType::Int64 => "long long",
            DType::UInt64 => "unsigned long long",
            DType::Float32 => "float",
            DType::Float64 => "double",
            DType::Complex64 => "complex<float>",
            DType::Complex128 => "complex<double>",
        }
    }

    /// Inclusive integer range of an integer (or bool) dtype.
    pub fn int_range(self) -> Option<(i128, i128)> {
        Some(match self {
            DType::Bool => (0, 1),
            DType::Int8 => (i8::MIN as i128, i8::MAX as i128),
            DType::UInt8 => (0, u8::MAX as i128),
            DType::Int16 => (i16::MIN as i128, i16::MAX as i128),
            DType::UInt16 => (0, u16::MAX as i128),
            DType::Int32 => (i32::MIN as i128, i32::MAX as i128),
            DType::UInt32 => (0, u32::MAX as i128),
            DType::Int64 => (i64::MIN as i128, i64::MAX as i128),
            DType::UInt64 => (0, u64::MAX as i128),
            _ => return None,
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
        }
        assert_eq!(DType::from_name("float16"), None);
    }

    #[test]
    fn complex_double_is_16_aligned_on_the_device() {
        assert_eq!(DType::Complex128.cuda_alignment(), 16);
        assert_eq!(DType::Complex64.cuda_alignment(), 8);
    }
}
