//! Element types of the CPU executor: the `Elem` trait (NumPy's per-dtype semantics of every
//! scalar operation), typed slices, columns and scalars, and the slice-level loop helpers that
//! the op table's CPU functions are built from.

use crate::scalar::complex::Complex;
use cunumpy_core::dtype::DType;

/// Read-only element data of one array, typed. Booleans are Rust `bool` (NumPy stores them as
/// bytes 0/1; a binding must not hand over other byte values).
#[derive(Clone, Copy, Debug)]
pub enum Data<'a> {
    Bool(&'a [bool]),
    Int8(&'a [i8]),
    UInt8(&'a [u8]),
    Int16(&'a [i16]),
    UInt16(&'a [u16]),
    Int32(&'a [i32]),
    UInt32(&'a [u32]),
    Int64(&'a [i64]),
    UInt64(&'a [u64]),
    Float32(&'a [f32]),
    Float64(&'a [f64]),
    Complex64(&'a [Complex<f32>]),
    Complex128(&'a [Complex<f64>]),
}

/// Writable element data of one array, typed.
#[derive(Debug)]
pub enum DataMut<'a> {
    Bool(&'a mut [bool]),
    Int8(&'a mut [i8]),
    UInt8(&'a mut [u8]),
    Int16(&'a mut [i16]),
    UInt16(&'a mut [u16]),
    Int32(&'a mut [i32]),
    UInt32(&'a mut [u32]),
    Int64(&'a mut [i64]),
    UInt64(&'a mut [u64]),
    Float32(&'a mut [f32]),
    Float64(&'a mut [f64]),
    Complex64(&'a mut [Complex<f32>]),
    Complex128(&'a mut [Complex<f64>]),
}

/// An owned typed vector (scratch registers, reduction results, workspace buffers).
#[derive(Clone, Debug)]
pub(crate) enum Column {
    Bool(Vec<bool>),
    Int8(Vec<i8>),
    UInt8(Vec<u8>),
    Int16(Vec<i16>),
    UInt16(Vec<u16>),
    Int32(Vec<i32>),
    UInt32(Vec<u32>),
    Int64(Vec<i64>),
    UInt64(Vec<u64>),
    Float32(Vec<f32>),
    Float64(Vec<f64>),
    Complex64(Vec<Complex<f32>>),
    Complex128(Vec<Complex<f64>>),
}

impl Default for Column {
    fn default() -> Self {
        Column::Bool(Vec::new())
    }
}

/// One typed scalar value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Sv {
    Bool(bool),
    Int8(i8),
    UInt8(u8),
    Int16(i16),
    UInt16(u16),
    Int32(i32),
    UInt32(u32),
    Int64(i64),
    UInt64(u64),
    Float32(f32),
    Float64(f64),
    Complex64(Complex<f32>),
    Complex128(Complex<f64>),
}

impl Sv {
    /// The value's bytes as its C type holds them (little-endian, as on every host and device
    /// cunumpy runs on; complex: real part, then imaginary part).
    pub(crate) fn c_bytes(self) -> Vec<u8> {
        match self {
            Sv::Bool(b) => vec![u8::from(b)],
            Sv::Int8(x) => x.to_le_bytes().to_vec(),
            Sv::UInt8(x) => x.to_le_bytes().to_vec(),
            Sv::Int16(x) => x.to_le_bytes().to_vec(),
            Sv::UInt16(x) => x.to_le_bytes().to_vec(),
            Sv::Int32(x) => x.to_le_bytes().to_vec(),
            Sv::UInt32(x) => x.to_le_bytes().to_vec(),
            Sv::Int64(x) => x.to_le_bytes().to_vec(),
            Sv::UInt64(x) => x.to_le_bytes().to_vec(),
            Sv::Float32(x) => x.to_le_bytes().to_vec(),
            Sv::Float64(x) => x.to_le_bytes().to_vec(),
            Sv::Complex64(c) => [c.re.to_le_bytes(), c.im.to_le_bytes()].concat(),
            Sv::Complex128(c) => [c.re.to_le_bytes(), c.im.to_le_bytes()].concat(),
        }
    }
}

macro_rules! data_common {
    ($($v:ident),*) => {
        impl<'a> Data<'a> {
            /// The dtype of the elements.
            pub fn dtype(&self) -> DType {
                match self { $(Data::$v(_) => DType::$v,)* }
            }
            /// Number of elements.
            pub fn len(&self) -> usize {
                match self { $(Data::$v(s) => s.len(),)* }
            }
            /// Whether there are no elements.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
            pub(crate) fn sub(&self, start: usize, len: usize) -> Data<'a> {
                match self { $(Data::$v(s) => Data::$v(&s[start..start + len]),)* }
            }
            pub(crate) fn get(&self, i: usize) -> Sv {
                match self { $(Data::$v(s) => Sv::$v(s[i]),)* }
            }
            /// The address of element 0.
            pub(crate) fn as_ptr(&self) -> *const std::ffi::c_void {
                match self { $(Data::$v(s) => s.as_ptr().cast(),)* }
            }
        }
        impl<'a> DataMut<'a> {
            /// The dtype of the elements.
            pub fn dtype(&self) -> DType {
                match self { $(DataMut::$v(_) => DType::$v,)* }
            }
            /// Number of elements.
            pub fn len(&self) -> usize {
                match self { $(DataMut::$v(s) => s.len(),)* }
            }
            /// Whether there are no elements.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
            pub(crate) fn as_data(&self) -> Data<'_> {
                match self { $(DataMut::$v(s) => Data::$v(s),)* }
            }
            /// Splits into consecutive chunks of `chunk` elements.
            pub(crate) fn into_chunks(self, chunk: usize) -> Vec<DataMut<'a>> {
                match self { $(DataMut::$v(s) => s.chunks_mut(chunk.max(1)).map(DataMut::$v).collect(),)* }
            }
            pub(crate) fn reborrow(&mut self) -> DataMut<'_> {
                match self { $(DataMut::$v(s) => DataMut::$v(s),)* }
            }
            /// The address of element 0, for writing.
            pub(crate) fn as_mut_ptr(&mut self) -> *mut std::ffi::c_void {
                match self { $(DataMut::$v(s) => s.as_mut_ptr().cast(),)* }
            }
        }
        impl Column {
            pub(crate) fn as_data(&self) -> Data<'_> {
                match self { $(Column::$v(s) => Data::$v(s),)* }
            }
            pub(crate) fn dtype(&self) -> DType {
                match self { $(Column::$v(_) => DType::$v,)* }
            }
        }
        impl Sv {
            pub(crate) fn dtype(&self) -> DType {
                match self { $(Sv::$v(_) => DType::$v,)* }
            }
        }
    };
}
data_common!(
    Bool, Int8, UInt8, Int16, UInt16, Int32, UInt32, Int64, UInt64, Float32, Float64, Complex64,
    Complex128
);

/// Scalar semantics of one element type, following NumPy's loops: wrapping integer arithmetic,
/// Python-style floor division and modulo (0 for a zero divisor), NaN-propagating min/max.
pub(crate) trait Elem:
    Copy + Send + Sync + PartialEq + PartialOrd + Default + std::fmt::Debug + 'static
{
    const DT: DType;
    fn to_f64(self) -> f64;
    fn to_i64(self) -> i64;
    fn to_u64(self) -> u64;
    fn to_bool(self) -> bool;
    fn from_f64(v: f64) -> Self;
    fn from_i64(v: i64) -> Self;
    fn from_u64(v: u64) -> Self;
    fn from_bool(v: bool) -> Self;
    /// The value as a complex number (real types: imaginary part 0).
    #[inline(always)]
    fn to_c(self) -> (f64, f64) {
        (self.to_f64(), 0.0)
    }
    /// A value from a complex number (real types keep the real part; the graph refuses
    /// complex-to-real conversions, so none is dropped silently).
    #[inline(always)]
    fn from_c(re: f64, im: f64) -> Self {
        let _ = im;
        Self::from_f64(re)
    }

    fn add_(self, o: Self) -> Self;
    fn sub_(self, o: Self) -> Self;
    fn mul_(self, o: Self) -> Self;
    fn floordiv_(self, o: Self) -> Self;
    fn rem_(self, o: Self) -> Self;
    fn pow_(self, o: Self) -> Self;
    fn min_(self, o: Self) -> Self;
    fn max_(self, o: Self) -> Self;
    fn neg_(self) -> Self;
    fn abs_(self) -> Self;
    fn sign_(self) -> Self;
    fn reciprocal_(self) -> Self;
    fn floor_(self) -> Self;
    fn ceil_(self) -> Self;
    fn trunc_(self) -> Self;
    fn is_nan_(self) -> bool {
        false
    }
    fn is_inf_(self) -> bool {
        false
    }
    fn is_finite_(self) -> bool {
        true
    }

    fn slice<'a>(d: &Data<'a>) -> Option<&'a [Self]>;
    fn col_mut(c: &mut Column) -> Option<&mut Vec<Self>>;
    fn new_col(v: Vec<Self>) -> Column;
    fn from_sv(s: Sv) -> Option<Self>;
    fn to_sv(self) -> Sv;
    fn data_mut<'a, 'b>(d: &'b mut DataMut<'a>) -> Option<&'b mut [Self]>;

    /// NumPy's C-style conversion from another element type.
    #[inline(always)]
    fn cast_from<S: Elem>(x: S) -> Self {
        match Self::DT {
            DType::Complex64 | DType::Complex128 => {
                let (re, im) = x.to_c();
                Self::from_c(re, im)
            }
            DType::Bool => Self::from_bool(x.to_bool()),
            DType::Float32 | DType::Float64 => Self::from_f64(x.to_f64()),
            DType::UInt8 | DType::UInt16 | DType::UInt32 | DType::UInt64 => {
                if S::DT == DType::Float32 || S::DT == DType::Float64 {
                    // float -> unsigned goes through int64 like C compilers do in practice
                    Self::from_i64(x.to_i64())
                } else {
                    Self::from_u64(x.to_u64())
                }
            }
            _ => Self::from_i64(x.to_i64()),
        }
    }
}

/// Operations of the float element types only.
pub(crate) trait FloatElem: Elem {
    fn truediv_(self, o: Self) -> Self;
    fn atan2_(self, o: Self) -> Self;
    fn ln_(self) -> Self;
    fn log2_(self) -> Self;
    fn log10_(self) -> Self;
    fn expm1_(self) -> Self;
    fn ln1p_(self) -> Self;
    fn sqrt_(self) -> Self;
    fn sin_(self) -> Self;
    fn cos_(self) -> Self;
    fn tan_(self) -> Self;
    fn asin_(self) -> Self;
    fn acos_(self) -> Self;
    fn atan_(self) -> Self;
    fn sinh_(self) -> Self;
    fn cosh_(self) -> Self;
    fn tanh_(self) -> Self;
    fn rint_(self) -> Self;
}

/// Bitwise operations (integers and bool).
pub(crate) trait BitElem: Elem {
    fn and_(self, o: Self) -> Self;
    fn or_(self, o: Self) -> Self;
    fn xor_(self, o: Self) -> Self;
    fn not_(self) -> Self;
    fn shl_(self, o: Self) -> Self;
    fn shr_(self, o: Self) -> Self;
}

macro_rules! elem_access {
    ($t:ty, $v:ident) => {
        const DT: DType = DType::$v;
        #[inline(always)]
        fn slice<'a>(d: &Data<'a>) -> Option<&'a [Self]> {
            match d {
                Data::$v(s) => Some(s),
                _ => None,
            }
        }
        #[inline(always)]
        fn col_mut(c: &mut Column) -> Option<&mut Vec<Self>> {
            match c {
                Column::$v(s) => Some(s),
                _ => None,
            }
        }
        fn new_col(v: Vec<Self>) -> Column {
            Column::$v(v)
        }
        #[inline(always)]
        fn from_sv(s: Sv) -> Option<Self> {
            match s {
                Sv::$v(x) => Some(x),
                _ => None,
            }
        }
        #[inline(always)]
        fn to_sv(self) -> Sv {
            Sv::$v(self)
        }
        fn data_mut<'a, 'b>(d: &'b mut DataMut<'a>) -> Option<&'b mut [Self]> {
            match d {
                DataMut::$v(s) => Some(&mut **s),
                _ => None,
            }
        }
    };
}

macro_rules! int_common {
    ($t:ty) => {
        #[inline(always)]
        fn to_f64(self) -> f64 {
            self as f64
        }
        #[inline(always)]
        fn to_i64(self) -> i64 {
            self as i64
        }
        #[inline(always)]
        fn to_u64(self) -> u64 {
            self as u64
        }
        #[inline(always)]
        fn to_bool(self) -> bool {
            self != 0
        }
        #[inline(always)]
        fn from_f64(v: f64) -> Self {
            v as i64 as $t
        }
        #[inline(always)]
        fn from_i64(v: i64) -> Self {
            v as $t
        }
        #[inline(always)]
        fn from_u64(v: u64) -> Self {
            v as $t
        }
        #[inline(always)]
        fn from_bool(v: bool) -> Self {
            v as $t
        }
        #[inline(always)]
        fn add_(self, o: Self) -> Self {
            self.wrapping_add(o)
        }
        #[inline(always)]
        fn sub_(self, o: Self) -> Self {
            self.wrapping_sub(o)
        }
        #[inline(always)]
        fn mul_(self, o: Self) -> Self {
            self.wrapping_mul(o)
        }
        #[inline(always)]
        fn min_(self, o: Self) -> Self {
            if self < o {
                self
            } else {
                o
            }
        }
        #[inline(always)]
        fn max_(self, o: Self) -> Self {
            if self > o {
                self
            } else {
                o
            }
        }
        #[inline(always)]
        fn neg_(self) -> Self {
            self.wrapping_neg()
        }
        #[inline(always)]
        fn floor_(self) -> Self {
            self
        }
        #[inline(always)]
        fn ceil_(self) -> Self {
            self
        }
        #[inline(always)]
        fn trunc_(self) -> Self {
            self
        }
    };
}

macro_rules! bits_int {
    ($t:ty, $bits:expr, $signed:expr) => {
        impl BitElem for $t {
            #[inline(always)]
            fn and_(self, o: Self) -> Self {
                self & o
            }
            #[inline(always)]
            fn or_(self, o: Self) -> Self {
                self | o
            }
            #[inline(always)]
            fn xor_(self, o: Self) -> Self {
                self ^ o
            }
            #[inline(always)]
            fn not_(self) -> Self {
                !self
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn shl_(self, o: Self) -> Self {
                // NumPy: shifting by the bit width or more (or by a negative amount) gives 0.
                if o >= 0 && (o as u64) < $bits {
                    self << (o as u32)
                } else {
                    0
                }
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn shr_(self, o: Self) -> Self {
                if o >= 0 && (o as u64) < $bits {
                    self >> (o as u32)
                } else if $signed && self < 0 {
                    self >> ($bits - 1)
                } else {
                    0
                }
            }
        }
    };
}

macro_rules! signed_int {
    ($t:ty, $v:ident, $bits:expr) => {
        impl Elem for $t {
            elem_access!($t, $v);
            int_common!($t);
            #[inline(always)]
            fn floordiv_(self, o: Self) -> Self {
                if o == 0 {
                    0
                } else if self == <$t>::MIN && o == -1 {
                    <$t>::MIN
                } else {
                    let q = self / o;
                    if self % o != 0 && ((self < 0) != (o < 0)) {
                        q - 1
                    } else {
                        q
                    }
                }
            }
            #[inline(always)]
            fn rem_(self, o: Self) -> Self {
                if o == 0 || o == -1 {
                    0
                } else {
                    let r = self % o;
                    if r != 0 && ((r < 0) != (o < 0)) {
                        r + o
                    } else {
                        r
                    }
                }
            }
            #[inline(always)]
            fn pow_(self, o: Self) -> Self {
                if o < 0 {
                    // NumPy raises for negative integer powers; the kernel returns 1/x**|o|
                    // truncated: 1 and -1 keep their magnitude, everything else gives 0.
                    return match self {
                        1 => 1,
                        -1 => {
                            if o % 2 == 0 {
                                1
                            } else {
                                -1
                            }
                        }
                        _ => 0,
                    };
                }
                let mut base = self;
                let mut e = o;
                let mut r: $t = 1;
                while e > 0 {
                    if e & 1 == 1 {
                        r = r.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    e >>= 1;
                }
                r
            }
            #[inline(always)]
            fn abs_(self) -> Self {
                self.wrapping_abs()
            }
            #[inline(always)]
            fn sign_(self) -> Self {
                self.signum()
            }
            #[inline(always)]
            fn reciprocal_(self) -> Self {
                match self {
                    1 => 1,
                    -1 => -1,
                    _ => 0,
                }
            }
        }
        bits_int!($t, $bits, true);
    };
}

macro_rules! unsigned_int {
    ($t:ty, $v:ident, $bits:expr) => {
        impl Elem for $t {
            elem_access!($t, $v);
            int_common!($t);
            #[inline(always)]
            fn floordiv_(self, o: Self) -> Self {
                if o == 0 {
                    0
                } else {
                    self / o
                }
            }
            #[inline(always)]
            fn rem_(self, o: Self) -> Self {
                if o == 0 {
                    0
                } else {
                    self % o
                }
            }
            #[inline(always)]
            fn pow_(self, o: Self) -> Self {
                let mut base = self;
                let mut e = o;
                let mut r: $t = 1;
                while e > 0 {
                    if e & 1 == 1 {
                        r = r.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    e >>= 1;
                }
                r
            }
            #[inline(always)]
            fn abs_(self) -> Self {
                self
            }
            #[inline(always)]
            fn sign_(self) -> Self {
                (self > 0) as $t
            }
            #[inline(always)]
            fn reciprocal_(self) -> Self {
                (self == 1) as $t
            }
        }
        bits_int!($t, $bits, false);
    };
}

signed_int!(i8, Int8, 8);
signed_int!(i16, Int16, 16);
signed_int!(i32, Int32, 32);
signed_int!(i64, Int64, 64);
unsigned_int!(u8, UInt8, 8);
unsigned_int!(u16, UInt16, 16);
unsigned_int!(u32, UInt32, 32);
unsigned_int!(u64, UInt64, 64);

impl Elem for bool {
    elem_access!(bool, Bool);
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self as u64
    }
    #[inline(always)]
    fn to_bool(self) -> bool {
        self
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v != 0
    }
    #[inline(always)]
    fn from_bool(v: bool) -> Self {
        v
    }
    // NumPy's bool loops: add is logical or, multiply logical and, max or, min and.
    #[inline(always)]
    fn add_(self, o: Self) -> Self {
        self | o
    }
    #[inline(always)]
    fn sub_(self, o: Self) -> Self {
        self ^ o
    }
    #[inline(always)]
    fn mul_(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn floordiv_(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn rem_(self, _o: Self) -> Self {
        false
    }
    #[inline(always)]
    fn pow_(self, o: Self) -> Self {
        self | !o
    }
    #[inline(always)]
    fn min_(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn max_(self, o: Self) -> Self {
        self | o
    }
    #[inline(always)]
    fn neg_(self) -> Self {
        self
    }
    #[inline(always)]
    fn abs_(self) -> Self {
        self
    }
    #[inline(always)]
    fn sign_(self) -> Self {
        self
    }
    #[inline(always)]
    fn reciprocal_(self) -> Self {
        self
    }
    #[inline(always)]
    fn floor_(self) -> Self {
        self
    }
    #[inline(always)]
    fn ceil_(self) -> Self {
        self
    }
    #[inline(always)]
    fn trunc_(self) -> Self {
        self
    }
}

impl BitElem for bool {
    #[inline(always)]
    fn and_(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn or_(self, o: Self) -> Self {
        self | o
    }
    #[inline(always)]
    fn xor_(self, o: Self) -> Self {
        self ^ o
    }
    #[inline(always)]
    fn not_(self) -> Self {
        !self
    }
    #[inline(always)]
    fn shl_(self, o: Self) -> Self {
        self & !o
    }
    #[inline(always)]
    fn shr_(self, o: Self) -> Self {
        self & !o
    }
}

macro_rules! float_elem {
    ($t:ty, $v:ident) => {
        impl Elem for $t {
            elem_access!($t, $v);
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn to_u64(self) -> u64 {
                self as i64 as u64
            }
            #[inline(always)]
            fn to_bool(self) -> bool {
                self != 0.0
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_u64(v: u64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_bool(v: bool) -> Self {
                v as u8 as $t
            }
            #[inline(always)]
            fn add_(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn sub_(self, o: Self) -> Self {
                self - o
            }
            #[inline(always)]
            fn mul_(self, o: Self) -> Self {
                self * o
            }
            #[inline(always)]
            fn floordiv_(self, o: Self) -> Self {
                // NumPy's npy_divmod
                if o == 0.0 {
                    return self / o;
                }
                let m = self % o;
                let mut div = (self - m) / o;
                if m != 0.0 && ((o < 0.0) != (m < 0.0)) {
                    div -= 1.0;
                }
                if div != 0.0 {
                    let f = div.floor();
                    if div - f > 0.5 {
                        f + 1.0
                    } else {
                        f
                    }
                } else {
                    (0.0 as $t).copysign(self / o)
                }
            }
            #[inline(always)]
            fn rem_(self, o: Self) -> Self {
                if o == 0.0 {
                    return self % o;
                }
                let m = self % o;
                if m != 0.0 {
                    if (o < 0.0) != (m < 0.0) {
                        m + o
                    } else {
                        m
                    }
                } else {
                    (0.0 as $t).copysign(o)
                }
            }
            #[inline(always)]
            fn pow_(self, o: Self) -> Self {
                if o == 2.0 {
                    self * self
                } else {
                    self.powf(o)
                }
            }
            #[inline(always)]
            fn min_(self, o: Self) -> Self {
                if self.is_nan() || self < o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn max_(self, o: Self) -> Self {
                if self.is_nan() || self > o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn neg_(self) -> Self {
                -self
            }
            #[inline(always)]
            fn abs_(self) -> Self {
                self.abs()
            }
            #[inline(always)]
            fn sign_(self) -> Self {
                if self > 0.0 {
                    1.0
                } else if self < 0.0 {
                    -1.0
                } else {
                    // 0, -0 and NaN map to themselves
                    self
                }
            }
            #[inline(always)]
            fn reciprocal_(self) -> Self {
                1.0 / self
            }
            #[inline(always)]
            fn floor_(self) -> Self {
                self.floor()
            }
            #[inline(always)]
            fn ceil_(self) -> Self {
                self.ceil()
            }
            #[inline(always)]
            fn trunc_(self) -> Self {
                self.trunc()
            }
            #[inline(always)]
            fn is_nan_(self) -> bool {
                self.is_nan()
            }
            #[inline(always)]
            fn is_inf_(self) -> bool {
                self.is_infinite()
            }
            #[inline(always)]
            fn is_finite_(self) -> bool {
                self.is_finite()
            }
        }
        impl FloatElem for $t {
            #[inline(always)]
            fn truediv_(self, o: Self) -> Self {
                self / o
            }
            #[inline(always)]
            fn atan2_(self, o: Self) -> Self {
                self.atan2(o)
            }
            #[inline(always)]
            fn ln_(self) -> Self {
                self.ln()
            }
            #[inline(always)]
            fn log2_(self) -> Self {
                self.log2()
            }
            #[inline(always)]
            fn log10_(self) -> Self {
                self.log10()
            }
            #[inline(always)]
            fn expm1_(self) -> Self {
                self.exp_m1()
            }
            #[inline(always)]
            fn ln1p_(self) -> Self {
                self.ln_1p()
            }
            #[inline(always)]
            fn sqrt_(self) -> Self {
                self.sqrt()
            }
            #[inline(always)]
            fn sin_(self) -> Self {
                self.sin()
            }
            #[inline(always)]
            fn cos_(self) -> Self {
                self.cos()
            }
            #[inline(always)]
            fn tan_(self) -> Self {
                self.tan()
            }
            #[inline(always)]
            fn asin_(self) -> Self {
                self.asin()
            }
            #[inline(always)]
            fn acos_(self) -> Self {
                self.acos()
            }
            #[inline(always)]
            fn atan_(self) -> Self {
                self.atan()
            }
            #[inline(always)]
            fn sinh_(self) -> Self {
                self.sinh()
            }
            #[inline(always)]
            fn cosh_(self) -> Self {
                self.cosh()
            }
            #[inline(always)]
            fn tanh_(self) -> Self {
                self.tanh()
            }
            #[inline(always)]
            fn rint_(self) -> Self {
                self.round_ties_even()
            }
        }
    };
}
float_elem!(f32, Float32);
float_elem!(f64, Float64);

// Complex elements. The arithmetic NumPy defines for complex is implemented here; the
// operations it does not define for complex (floor_divide, remainder, floor, ceil, trunc, sign)
// are refused by `Op::signature` before a plan exists, so their bodies below (NaN) are never
// reached. min/max order lexicographically as NumPy's maximum/minimum do.
macro_rules! complex_elem {
    ($t:ident, $v:ident) => {
        impl Elem for Complex<$t> {
            elem_access!(Complex<$t>, $v);
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self.re as f64
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self.re as i64
            }
            #[inline(always)]
            fn to_u64(self) -> u64 {
                self.re as i64 as u64
            }
            #[inline(always)]
            fn to_bool(self) -> bool {
                self.re != 0.0 || self.im != 0.0
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                Complex::new(v as $t, 0.0)
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                Complex::new(v as $t, 0.0)
            }
            #[inline(always)]
            fn from_u64(v: u64) -> Self {
                Complex::new(v as $t, 0.0)
            }
            #[inline(always)]
            fn from_bool(v: bool) -> Self {
                Complex::new(v as u8 as $t, 0.0)
            }
            #[inline(always)]
            fn to_c(self) -> (f64, f64) {
                (self.re as f64, self.im as f64)
            }
            #[inline(always)]
            fn from_c(re: f64, im: f64) -> Self {
                Complex::new(re as $t, im as $t)
            }
            #[inline(always)]
            fn add_(self, o: Self) -> Self {
                self.add(o)
            }
            #[inline(always)]
            fn sub_(self, o: Self) -> Self {
                self.sub(o)
            }
            #[inline(always)]
            fn mul_(self, o: Self) -> Self {
                self.mul(o)
            }
            fn floordiv_(self, _o: Self) -> Self {
                Complex::new($t::NAN, $t::NAN)
            }
            fn rem_(self, _o: Self) -> Self {
                Complex::new($t::NAN, $t::NAN)
            }
            #[inline(always)]
            fn pow_(self, o: Self) -> Self {
                self.pow(o)
            }
            #[inline(always)]
            fn min_(self, o: Self) -> Self {
                self.minimum(o)
            }
            #[inline(always)]
            fn max_(self, o: Self) -> Self {
                self.maximum(o)
            }
            #[inline(always)]
            fn neg_(self) -> Self {
                self.neg()
            }
            #[inline(always)]
            fn abs_(self) -> Self {
                Complex::new(self.abs(), 0.0)
            }
            fn sign_(self) -> Self {
                Complex::new($t::NAN, $t::NAN)
            }
            #[inline(always)]
            fn reciprocal_(self) -> Self {
                Self::new(1.0, 0.0).div(self)
            }
            fn floor_(self) -> Self {
                Complex::new($t::NAN, $t::NAN)
            }
            fn ceil_(self) -> Self {
                Complex::new($t::NAN, $t::NAN)
            }
            fn trunc_(self) -> Self {
                Complex::new($t::NAN, $t::NAN)
            }
            #[inline(always)]
            fn is_nan_(self) -> bool {
                self.is_nan()
            }
            #[inline(always)]
            fn is_inf_(self) -> bool {
                self.is_inf()
            }
            #[inline(always)]
            fn is_finite_(self) -> bool {
                self.is_finite()
            }
        }
    };
}
complex_elem!(f32, Complex64);
complex_elem!(f64, Complex128);

/// One operand of a slice-level kernel: a slice of the block, or one value for the whole block.
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a, T> {
    Slice(&'a [T]),
    Splat(T),
}

impl<T: Copy> Operand<'_, T> {
    #[inline(always)]
    fn at(&self, i: usize) -> T {
        match self {
            Operand::Slice(s) => s[i],
            Operand::Splat(v) => *v,
        }
    }
}

#[inline(always)]
fn map1_body<T: Copy, U>(a: Operand<'_, T>, o: &mut [U], f: impl Fn(T) -> U) {
    match a {
        Operand::Slice(a) => {
            for (o, &a) in o.iter_mut().zip(a) {
                *o = f(a);
            }
        }
        Operand::Splat(a) => {
            for o in o.iter_mut() {
                *o = f(a);
            }
        }
    }
}

#[inline(always)]
fn map2_body<T: Copy, U>(a: Operand<'_, T>, b: Operand<'_, T>, o: &mut [U], f: impl Fn(T, T) -> U) {
    match (a, b) {
        (Operand::Slice(a), Operand::Slice(b)) => {
            for ((o, &a), &b) in o.iter_mut().zip(a).zip(b) {
                *o = f(a, b);
            }
        }
        (Operand::Slice(a), Operand::Splat(b)) => {
            for (o, &a) in o.iter_mut().zip(a) {
                *o = f(a, b);
            }
        }
        (Operand::Splat(a), Operand::Slice(b)) => {
            for (o, &b) in o.iter_mut().zip(b) {
                *o = f(a, b);
            }
        }
        (Operand::Splat(a), Operand::Splat(b)) => {
            for o in o.iter_mut() {
                *o = f(a, b);
            }
        }
    }
}

#[inline(always)]
fn map3_body<A: Copy, T: Copy, U>(
    a: Operand<'_, A>,
    b: Operand<'_, T>,
    c: Operand<'_, T>,
    o: &mut [U],
    f: impl Fn(A, T, T) -> U,
) {
    if let (Operand::Slice(a), Operand::Slice(b), Operand::Slice(c)) = (a, b, c) {
        for (((o, &a), &b), &c) in o.iter_mut().zip(a).zip(b).zip(c) {
            *o = f(a, b, c);
        }
        return;
    }
    for (i, o) in o.iter_mut().enumerate() {
        *o = f(a.at(i), b.at(i), c.at(i));
    }
}

/// Whether the slice loops may use AVX2 (checked once by the standard library, then cached).
#[inline(always)]
fn use_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

// The same loops compiled with AVX2 enabled (twice the vector width of the baseline SSE2 build;
// no FMA, so every result is bit-identical), chosen at run time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn map1_avx2<T: Copy, U>(a: Operand<'_, T>, o: &mut [U], f: impl Fn(T) -> U) {
    map1_body(a, o, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn map2_avx2<T: Copy, U>(
    a: Operand<'_, T>,
    b: Operand<'_, T>,
    o: &mut [U],
    f: impl Fn(T, T) -> U,
) {
    map2_body(a, b, o, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn map3_avx2<A: Copy, T: Copy, U>(
    a: Operand<'_, A>,
    b: Operand<'_, T>,
    c: Operand<'_, T>,
    o: &mut [U],
    f: impl Fn(A, T, T) -> U,
) {
    map3_body(a, b, c, o, f)
}

/// `o[i] = f(a[i])` over a block.
#[inline(always)]
pub(crate) fn map1<T: Copy, U>(a: Operand<'_, T>, o: &mut [U], f: impl Fn(T) -> U) {
    #[cfg(target_arch = "x86_64")]
    if use_avx2() {
        // SAFETY: the CPU supports AVX2 (checked at run time just above).
        return unsafe { map1_avx2(a, o, f) };
    }
    map1_body(a, o, f)
}

/// `o[i] = f(a[i], b[i])` over a block.
#[inline(always)]
pub(crate) fn map2<T: Copy, U>(
    a: Operand<'_, T>,
    b: Operand<'_, T>,
    o: &mut [U],
    f: impl Fn(T, T) -> U,
) {
    #[cfg(target_arch = "x86_64")]
    if use_avx2() {
        // SAFETY: the CPU supports AVX2 (checked at run time just above).
        return unsafe { map2_avx2(a, b, o, f) };
    }
    map2_body(a, b, o, f)
}

/// `o[i] = f(a[i], b[i], c[i])` over a block.
#[inline(always)]
pub(crate) fn map3<A: Copy, T: Copy, U>(
    a: Operand<'_, A>,
    b: Operand<'_, T>,
    c: Operand<'_, T>,
    o: &mut [U],
    f: impl Fn(A, T, T) -> U,
) {
    #[cfg(target_arch = "x86_64")]
    if use_avx2() {
        // SAFETY: the CPU supports AVX2 (checked at run time just above).
        return unsafe { map3_avx2(a, b, c, o, f) };
    }
    map3_body(a, b, c, o, f)
}

/// Converts an operand of one element type into a slice of another.
#[inline(always)]
pub(crate) fn cast_into<S: Elem, D: Elem>(a: Operand<'_, S>, o: &mut [D]) {
    map1(a, o, D::cast_from::<S>);
}

/// Runs `$body` with `$T` bound to the Rust element type of `$dt`.
macro_rules! with_elem {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            DType::Bool => {
                type $T = bool;
                $body
            }
            DType::Int8 => {
                type $T = i8;
                $body
            }
            DType::UInt8 => {
                type $T = u8;
                $body
            }
            DType::Int16 => {
                type $T = i16;
                $body
            }
            DType::UInt16 => {
                type $T = u16;
                $body
            }
            DType::Int32 => {
                type $T = i32;
                $body
            }
            DType::UInt32 => {
                type $T = u32;
                $body
            }
            DType::Int64 => {
                type $T = i64;
                $body
            }
            DType::UInt64 => {
                type $T = u64;
                $body
            }
            DType::Float32 => {
                type $T = f32;
                $body
            }
            DType::Float64 => {
                type $T = f64;
                $body
            }
            DType::Complex64 => {
                type $T = Complex<f32>;
                $body
            }
            DType::Complex128 => {
                type $T = Complex<f64>;
                $body
            }
        }
    };
}
pub(crate) use with_elem;

/// Converts a typed scalar to another dtype with NumPy's C-style conversion.
pub(crate) fn cast_sv(v: Sv, to: DType) -> Option<Sv> {
    with_elem!(v.dtype(), S => {
        let x = S::from_sv(v)?;
        with_elem!(to, D => Some(D::cast_from::<S>(x).to_sv()))
    })
}
