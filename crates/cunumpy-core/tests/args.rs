//! Argument plans: every scalar rule, pointers, views and structs, checked on packed bytes.

use cunumpy_core::args::{
    safe_cast, Arg, ArgErrorKind, ArgPlan, DeviceArray, Scalar, ScalarSource,
};
use cunumpy_core::dtype::DType;
use cunumpy_core::signature::{Param, ParamKind, Signature};

fn signature(params: Vec<(&str, &str, ParamKind)>) -> Signature {
    Signature {
        kernel: "k".into(),
        params: params
            .into_iter()
            .map(|(name, decl, kind)| Param {
                name: name.into(),
                decl: decl.into(),
                kind,
                default: None,
            })
            .collect(),
        template_params: vec![],
        expression: "k".into(),
    }
}

fn plan_of(kind: ParamKind) -> ArgPlan {
    let sig = signature(vec![("x", "T x", kind)]);
    ArgPlan::new(&sig, &|name| (name == "P").then_some(24)).expect("plan")
}

fn pack_one(kind: ParamKind, arg: Arg<'_>) -> Result<Vec<u8>, (ArgErrorKind, String)> {
    let plan = plan_of(kind);
    let mut buffer = plan.new_buffer();
    plan.pack(0, &arg, 0, &mut buffer)
        .map_err(|e| (e.kind, e.message))?;
    Ok(buffer.bytes_of(&plan, 0))
}

fn py(s: Scalar) -> Arg<'static> {
    Arg::Scalar(s, ScalarSource::Python)
}

fn np(s: Scalar, d: DType) -> Arg<'static> {
    Arg::Scalar(s, ScalarSource::NumPy(d))
}

#[test]
fn python_ints_are_range_checked_for_every_integer_type() {
    for d in DType::ALL {
        let Some((lo, hi)) = d.int_range() else {
            continue;
        };
        if d == DType::Bool {
            continue;
        }
        let kind = ParamKind::Scalar(d);
        let bytes = pack_one(kind.clone(), py(Scalar::Int(hi))).expect("max fits");
        assert_eq!(bytes, hi.to_le_bytes()[..d.itemsize()].to_vec());
        let bytes = pack_one(kind.clone(), py(Scalar::Int(lo))).expect("min fits");
        assert_eq!(bytes, lo.to_le_bytes()[..d.itemsize()].to_vec());
        let (kind_err, msg) =
            pack_one(kind.clone(), py(Scalar::Int(hi + 1))).expect_err("overflow");
        assert_eq!(kind_err, ArgErrorKind::Overflow);
        assert!(msg.starts_with("k(): argument 0 (T x): "), "{msg}");
        assert!(
            msg.contains(&format!("is out of range [{lo}, {hi}]")),
            "{msg}"
        );
        assert!(pack_one(kind, py(Scalar::Int(lo - 1))).is_err());
    }
}

#[test]
fn floats_into_integers_are_refused() {
    let (kind, msg) =
        pack_one(ParamKind::Scalar(DType::Int32), py(Scalar::Float(1.0))).expect_err("lossy");
    assert_eq!(kind, ArgErrorKind::Type);
    assert!(
        msg.contains("cannot take float 1.0 without losing information"),
        "{msg}"
    );
    let (_, msg) = pack_one(
        ParamKind::Scalar(DType::Int64),
        np(Scalar::Float(2.0), DType::Float64),
    )
    .expect_err("lossy");
    assert!(
        msg.contains("cannot take a float64 scalar without losing information"),
        "{msg}"
    );
}

#[test]
fn ints_into_floats_must_round_trip() {
    let bytes = pack_one(ParamKind::Scalar(DType::Float64), py(Scalar::Int(3))).expect("exact");
    assert_eq!(bytes, 3.0f64.to_le_bytes().to_vec());
    let big = (1i128 << 53) + 1;
    let (kind, msg) =
        pack_one(ParamKind::Scalar(DType::Float64), py(Scalar::Int(big))).expect_err("inexact");
    assert_eq!(kind, ArgErrorKind::Value);
    assert!(
        msg.contains("cannot be represented exactly as double"),
        "{msg}"
    );
    let (_, msg) = pack_one(
        ParamKind::Scalar(DType::Float32),
        py(Scalar::Int((1 << 24) + 1)),
    )
    .expect_err("inexact in float");
    assert!(msg.contains("exactly as float"), "{msg}");
    // A NumPy integer is checked by value, like a Python int.
    let bytes = pack_one(
        ParamKind::Scalar(DType::Float32),
        np(Scalar::Int(7), DType::UInt64),
    )
    .expect("exact");
    assert_eq!(bytes, 7.0f32.to_le_bytes().to_vec());
}

#[test]
fn python_floats_overflowing_float_are_errors() {
    let (kind, msg) = pack_one(ParamKind::Scalar(DType::Float32), py(Scalar::Float(1e300)))
        .expect_err("overflow");
    assert_eq!(kind, ArgErrorKind::Overflow);
    assert!(msg.contains("overflows float"), "{msg}");
    let bytes = pack_one(
        ParamKind::Scalar(DType::Float32),
        py(Scalar::Float(f64::INFINITY)),
    )
    .expect("inf is a float");
    assert_eq!(bytes, f32::INFINITY.to_le_bytes().to_vec());
    let bytes = pack_one(ParamKind::Scalar(DType::Float32), py(Scalar::Float(0.1))).expect("ok");
    assert_eq!(bytes, 0.1f32.to_le_bytes().to_vec());
}

#[test]
fn bools_go_to_bool_and_integers_only() {
    assert_eq!(
        pack_one(ParamKind::Scalar(DType::Bool), py(Scalar::Bool(true))).expect("bool"),
        vec![1]
    );
    assert_eq!(
        pack_one(ParamKind::Scalar(DType::Int32), py(Scalar::Bool(true))).expect("int"),
        vec![1, 0, 0, 0]
    );
    let (_, msg) =
        pack_one(ParamKind::Scalar(DType::Bool), py(Scalar::Int(1))).expect_err("int to bool");
    assert!(msg.contains("takes only True or False, got int 1"), "{msg}");
    let (_, msg) =
        pack_one(ParamKind::Scalar(DType::Float64), py(Scalar::Bool(true))).expect_err("bool");
    assert!(msg.contains("cannot take a value of type bool"), "{msg}");
}

#[test]
fn complex_parameters() {
    let bytes = pack_one(
        ParamKind::Scalar(DType::Complex128),
        py(Scalar::Complex(1.5, -2.0)),
    )
    .expect("complex");
    let mut want = 1.5f64.to_le_bytes().to_vec();
    want.extend((-2.0f64).to_le_bytes());
    assert_eq!(bytes, want);
    let bytes = pack_one(ParamKind::Scalar(DType::Complex64), py(Scalar::Float(2.0))).expect("c64");
    let mut want = 2.0f32.to_le_bytes().to_vec();
    want.extend(0.0f32.to_le_bytes());
    assert_eq!(bytes, want);
    assert!(pack_one(
        ParamKind::Scalar(DType::Float64),
        py(Scalar::Complex(1.0, 0.0))
    )
    .is_err());
    assert!(pack_one(
        ParamKind::Scalar(DType::Complex64),
        np(Scalar::Complex(1.0, 0.0), DType::Complex128)
    )
    .is_err());
}

#[test]
fn numpy_scalars_follow_safe_casting() {
    assert!(pack_one(
        ParamKind::Scalar(DType::Float64),
        np(Scalar::Float(1.0), DType::Float32)
    )
    .is_ok());
    assert!(pack_one(
        ParamKind::Scalar(DType::Float32),
        np(Scalar::Float(1.0), DType::Float64)
    )
    .is_err());
    assert!(safe_cast(DType::Int16, DType::Float32));
    assert!(!safe_cast(DType::Int32, DType::Float32));
    assert!(safe_cast(DType::UInt32, DType::Int64));
    assert!(!safe_cast(DType::Int8, DType::UInt64));
    assert!(safe_cast(DType::Float32, DType::Complex64));
    assert!(!safe_cast(DType::Float64, DType::Complex64));
}

fn array<'a>(dtype: DType, shape: &'a [i64], strides: &'a [i64], c: bool) -> Arg<'a> {
    Arg::DeviceArray(DeviceArray {
        ptr: 0x7000_0000,
        dtype: Ok(dtype),
        shape,
        strides,
        c_contiguous: c,
        device: 0,
    })
}

#[test]
fn pointers_check_dtype_contiguity_device_and_refuse_host_arrays() {
    let ptr = ParamKind::Pointer {
        dtype: Some(DType::Float64),
        is_const: false,
    };
    let bytes = pack_one(ptr.clone(), array(DType::Float64, &[4], &[8], true)).expect("ok");
    assert_eq!(bytes, 0x7000_0000u64.to_le_bytes().to_vec());
    let (_, msg) =
        pack_one(ptr.clone(), array(DType::Float32, &[4], &[4], true)).expect_err("dtype");
    assert!(
        msg.contains("must have dtype float64, got float32"),
        "{msg}"
    );
    let (_, msg) = pack_one(ptr.clone(), array(DType::Float64, &[4], &[16], false)).expect_err("c");
    assert!(msg.contains("must be C-contiguous"), "{msg}");
    let (kind, msg) = pack_one(
        ptr.clone(),
        Arg::HostArray {
            type_name: "numpy.ndarray",
        },
    )
    .expect_err("host");
    assert_eq!(kind, ArgErrorKind::Type);
    assert!(
        msg.contains("got numpy.ndarray; arrays are never copied to the device"),
        "{msg}"
    );
    let plan = plan_of(ptr.clone());
    let mut buffer = plan.new_buffer();
    let err = plan
        .pack(0, &array(DType::Float64, &[4], &[8], true), 1, &mut buffer)
        .expect_err("device");
    assert_eq!(err.kind, ArgErrorKind::Value);
    assert!(err
        .message
        .contains("is on device 0, but the kernel launches on device 1"));
    let void = ParamKind::Pointer {
        dtype: None,
        is_const: true,
    };
    assert!(pack_one(void, array(DType::UInt8, &[4], &[1], true)).is_ok());
}

#[test]
fn views_pack_shape_and_element_strides() {
    let view = ParamKind::View {
        dtype: DType::Float32,
        ndim: 2,
        contiguous: false,
    };
    // A (3, 4) view of a (3, 8) float32 array: byte strides (32, 4).
    let bytes = pack_one(
        view.clone(),
        array(DType::Float32, &[3, 4], &[32, 4], false),
    )
    .expect("view");
    let words: Vec<u64> = bytes
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    assert_eq!(words, vec![0x7000_0000, 3, 4, 8, 1]);
    let (_, msg) =
        pack_one(view.clone(), array(DType::Float32, &[12], &[4], true)).expect_err("ndim");
    assert!(msg.contains("must be a 2D array, got 1D"), "{msg}");
    let (_, msg) =
        pack_one(view, array(DType::Float32, &[3, 4], &[32, 6], false)).expect_err("stride");
    assert!(
        msg.contains("are not multiples of the element size 4"),
        "{msg}"
    );
    let cview = ParamKind::View {
        dtype: DType::Float32,
        ndim: 2,
        contiguous: true,
    };
    let bytes = pack_one(
        cview.clone(),
        array(DType::Float32, &[3, 4], &[16, 4], true),
    )
    .expect("c");
    assert_eq!(bytes.len(), 24);
    let (_, msg) =
        pack_one(cview, array(DType::Float32, &[3, 4], &[32, 4], false)).expect_err("not c");
    assert!(msg.contains("declare the parameter as Array2D"), "{msg}");
}

#[test]
fn five_dimensional_views_pack_every_axis() {
    let view = ParamKind::View {
        dtype: DType::Float64,
        ndim: 5,
        contiguous: false,
    };
    let shape = [2, 3, 4, 5, 6];
    let bytes = pack_one(view, array(DType::Float64, &shape, &[], true)).expect("view");
    let words: Vec<u64> = bytes
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    assert_eq!(words, vec![0x7000_0000, 2, 3, 4, 5, 6, 360, 120, 30, 6, 1]);
}

#[test]
fn structs_need_their_own_packed_value() {
    let kind = ParamKind::Struct { name: "P".into() };
    let value = [7u8; 24];
    let bytes = pack_one(
        kind.clone(),
        Arg::Struct {
            name: "P",
            bytes: &value,
        },
    )
    .expect("struct");
    assert_eq!(bytes, value.to_vec());
    let (_, msg) = pack_one(
        kind,
        Arg::Struct {
            name: "Q",
            bytes: &value,
        },
    )
    .expect_err("other");
    assert!(
        msg.contains("must be a value of struct P (created with that CudaStruct)"),
        "{msg}"
    );
}

#[test]
fn argument_count_message_says_argument_for_one_parameter() {
    // cunumpy 0.7 wrote "takes N arguments"; one parameter reads "takes 1 argument".
    let sig = signature(vec![("n", "int n", ParamKind::Scalar(DType::Int32))]);
    let plan = ArgPlan::new(&sig, &|_| None).expect("plan");
    let err = plan.check_count(0).expect_err("count");
    assert_eq!(
        err.message,
        "k() takes 1 argument after flattening argument objects, got 0"
    );
}

#[test]
fn argument_count_is_checked_and_pointers_point_at_slots() {
    let sig = signature(vec![
        ("a", "double a", ParamKind::Scalar(DType::Float64)),
        ("n", "int n", ParamKind::Scalar(DType::Int32)),
    ]);
    let plan = ArgPlan::new(&sig, &|_| None).expect("plan");
    let err = plan.check_count(3).expect_err("count");
    assert_eq!(
        err.message,
        "k(): 1 argument too many: the kernel takes 2 (double a, int n), got 3 \
         (argument objects count as the values their __cuda_args__ gives)"
    );
    let err = plan.check_count(1).expect_err("count");
    assert_eq!(
        err.message,
        "k(): missing 1 argument: argument 1 (int n); the kernel takes 2 (double a, int n), \
         got 1 (argument objects count as the values their __cuda_args__ gives)"
    );
    let err = plan.check_count(0).expect_err("count");
    assert!(
        err.message
            .starts_with("k(): missing 2 arguments: argument 0 (double a), argument 1 (int n);"),
        "{}",
        err.message
    );
    let mut buffer = plan.new_buffer();
    plan.pack(0, &py(Scalar::Float(2.5)), 0, &mut buffer)
        .expect("a");
    plan.pack(1, &py(Scalar::Int(-4)), 0, &mut buffer)
        .expect("n");
    let params = buffer.params();
    // SAFETY: params has plan.len() entries, each pointing at a 16-byte aligned slot of
    // `buffer`, which outlives these reads.
    unsafe {
        assert_eq!(*(*params).cast::<f64>(), 2.5);
        assert_eq!(*(*params.add(1)).cast::<i32>(), -4);
    }
    let unknown_struct = signature(vec![("p", "Q p", ParamKind::Struct { name: "Q".into() })]);
    assert!(ArgPlan::new(&unknown_struct, &|_| None).is_err());
}

#[test]
fn raw_buffers_hold_each_value_in_its_own_slot() {
    let values = vec![
        7u64.to_le_bytes().to_vec(),
        vec![1u8; 40],
        3i32.to_le_bytes().to_vec(),
    ];
    let mut buffer = cunumpy_core::args::LaunchBuffer::from_raw_values(&values);
    let params = buffer.params();
    // SAFETY: three entries, each pointing into `buffer`'s 16-byte aligned slots.
    unsafe {
        assert_eq!(*(*params).cast::<u64>(), 7);
        assert_eq!(*(*params.add(1)).cast::<[u8; 40]>(), [1u8; 40]);
        assert_eq!(*(*params.add(2)).cast::<i32>(), 3);
    }
}
