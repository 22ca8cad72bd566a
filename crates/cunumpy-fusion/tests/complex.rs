//! Complex dtypes: type rules of the op table, the graph's refusals, and the CPU executor's
//! results against formulas computed here element by element.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

use cunumpy_fusion::*;
use std::f64::consts::FRAC_PI_2;

/// What core's packer (the one of user kernels) writes for each parameter of `launch`.
fn packed(
    p: &DevicePlan,
    launch: &Launch,
    ptrs: &DevicePointers<'_>,
    svs: &[ScalarValue],
) -> std::result::Result<Vec<Vec<u8>>, String> {
    let args = launch_args(p, launch, ptrs, svs, 0).map_err(|e| e.to_string())?;
    let plan = cunumpy_core::args::ArgPlan::new(&launch_signature(launch), &|_| None)
        .map_err(|e| e.message)?;
    let mut buffer = plan.new_buffer();
    for (i, arg) in args.iter().enumerate() {
        plan.pack(i, arg, 0, &mut buffer).map_err(|e| e.message)?;
    }
    Ok((0..args.len()).map(|i| buffer.bytes_of(&plan, i)).collect())
}

fn arg(dtype: DType, weak: bool) -> ArgType {
    ArgType { dtype, weak }
}

#[test]
fn type_rules_follow_numpy_for_complex() {
    let c64 = arg(DType::Complex64, false);
    let c128 = arg(DType::Complex128, false);
    let f32 = arg(DType::Float32, false);
    let py_complex = arg(DType::Complex128, true);
    // float32 + Python complex -> complex64 (NEP 50); float32 * complex64 -> complex64
    assert_eq!(
        Op::Add.signature(&[f32, py_complex]).unwrap().1,
        DType::Complex64
    );
    assert_eq!(Op::Mul.signature(&[f32, c64]).unwrap().1, DType::Complex64);
    assert_eq!(
        Op::TrueDiv.signature(&[c64, c64]).unwrap().1,
        DType::Complex64
    );
    assert_eq!(Op::Exp.signature(&[c128]).unwrap().1, DType::Complex128);
    // absolute, real and imag give the real dtype of the same precision
    for op in [Op::Abs, Op::Real, Op::Imag] {
        assert_eq!(op.signature(&[c64]).unwrap().1, DType::Float32, "{op:?}");
        assert_eq!(op.signature(&[c128]).unwrap().1, DType::Float64, "{op:?}");
    }
    assert_eq!(
        Op::Eq.signature(&[c64, c128]).unwrap(),
        (vec![DType::Complex128; 2], DType::Bool)
    );
    // rounding, floor division, remainder, arctan2 and sign have no complex loop (NumPy has
    // none either); clip has none here
    for op in [
        Op::Floor,
        Op::Clip,
        Op::FloorDiv,
        Op::Mod,
        Op::Arctan2,
        Op::Sign,
    ] {
        let args = vec![c128; op.def().arity];
        let e = op.signature(&args).unwrap_err();
        assert!(e.contains("complex"), "{op:?}: {e}");
        assert!(!op.supports_complex());
    }
    assert_eq!(Op::from_name("conj"), Some(Op::Conj));
}

#[test]
fn graph_refuses_complex_any_all_and_lossy_astype() {
    let mut g = GraphBuilder::new();
    let z = g.input(DType::Complex64, 1).unwrap();
    for kind in [ReduceKind::Min, ReduceKind::Max] {
        assert!(g.reduce(kind, z, &Axis::All, false).is_ok());
    }
    for kind in [ReduceKind::Any, ReduceKind::All] {
        let e = g.reduce(kind, z, &Axis::All, false).unwrap_err();
        assert_eq!(
            e,
            FusionError::UnsupportedDType {
                op: kind.name().into(),
                dtype: DType::Complex64
            }
        );
    }
    let e = g.astype(z, DType::Int32).unwrap_err().to_string();
    assert!(e.contains("astype") && e.contains("imaginary"), "{e}");
    assert!(g.var(z, &Axis::All, 0, false).is_err());
    // real -> complex is fine; real/conj of a real value are the value itself
    let f = g.input(DType::Float64, 1).unwrap();
    assert!(g.astype(f, DType::Complex64).is_ok());
    assert_eq!(g.op(Op::Conj, &[f]).unwrap(), f);
    assert_eq!(g.op(Op::Real, &[f]).unwrap(), f);
}

#[test]
fn cpu_executor_computes_complex_elementwise_and_reductions() {
    // f(z, a, s) = (abs(z * a + s), sum(conj(z) * z, axis 1, keepdims), mean(z))
    let mut g = GraphBuilder::new();
    let z = g.input(DType::Complex128, 2).unwrap();
    let a = g.input(DType::Float64, 1).unwrap();
    let s = g.scalar(DType::Complex128, true).unwrap();
    let za = g.op(Op::Mul, &[z, a]).unwrap();
    let t = g.op(Op::Add, &[za, s]).unwrap();
    let r = g.op(Op::Abs, &[t]).unwrap();
    g.output(r).unwrap();
    let c = g.op(Op::Conj, &[z]).unwrap();
    let p = g.op(Op::Mul, &[c, z]).unwrap();
    let sum = g.reduce(ReduceKind::Sum, p, &Axis::One(1), true).unwrap();
    g.output(sum).unwrap();
    let mean = g
        .reduce(ReduceKind::Mean { ddof: 0 }, z, &Axis::All, false)
        .unwrap();
    g.output(mean).unwrap();
    let graph = g.finish().unwrap();
    let (rows, cols) = (3, 5000);
    let plan = plan(&graph, &[vec![rows, cols], vec![cols]]).unwrap();
    assert_eq!(plan.outputs[0].dtype, DType::Float64);
    assert_eq!(plan.outputs[1].dtype, DType::Complex128);

    let zs: Vec<Complex<f64>> = (0..rows * cols)
        .map(|i| Complex::new((i as f64 * 0.37).sin(), (i as f64 * 0.11).cos()))
        .collect();
    let av: Vec<f64> = (0..cols).map(|j| 1.0 + j as f64 * 1e-3).collect();
    let (sr, si) = (0.5, -2.0);
    let mut out_abs = vec![0.0f64; rows * cols];
    let mut out_sum = vec![Complex::<f64>::default(); rows];
    let mut out_mean = vec![Complex::<f64>::default(); 1];
    let (zshape, ashape) = ([rows, cols], [cols]);
    let (sshape, mshape) = ([rows, 1], []);
    execute_cpu(
        &plan,
        &[ArrayRef::new(&zs, &zshape), ArrayRef::new(&av, &ashape)],
        &[ScalarValue::Complex(sr, si)],
        &mut [
            ArrayMut::new(&mut out_abs, &zshape),
            ArrayMut::new(&mut out_sum, &sshape),
            ArrayMut::new(&mut out_mean, &mshape),
        ],
    )
    .unwrap();
    for i in 0..rows * cols {
        let (re, im) = (zs[i].re * av[i % cols] + sr, zs[i].im * av[i % cols] + si);
        assert!((out_abs[i] - re.hypot(im)).abs() < 1e-12, "{i}");
    }
    for r in 0..rows {
        let want: f64 = zs[r * cols..(r + 1) * cols]
            .iter()
            .map(|c| c.re * c.re + c.im * c.im)
            .sum();
        assert!((out_sum[r].re - want).abs() < 1e-9 * want, "{r}");
        assert!(out_sum[r].im.abs() < 1e-9, "{r}");
    }
    let n = (rows * cols) as f64;
    let (mr, mi) = zs.iter().fold((0.0, 0.0), |(a, b), c| (a + c.re, b + c.im));
    assert!((out_mean[0].re - mr / n).abs() < 1e-12);
    assert!((out_mean[0].im - mi / n).abs() < 1e-12);
}

#[test]
fn complex_scalar_parameters_pack_as_two_parts() {
    let mut g = GraphBuilder::new();
    let z = g.input(DType::Complex64, 1).unwrap();
    let s = g.scalar(DType::Complex64, false).unwrap();
    let y = g.op(Op::Mul, &[z, s]).unwrap();
    g.output(y).unwrap();
    let p = plan(&g.finish().unwrap(), &[vec![10]])
        .unwrap()
        .for_device(DeviceTarget::H200);
    let launch = &p.kernels[0].launches[0];
    let ptrs = DevicePointers {
        inputs: &[0x1000],
        outputs: &[0x2000],
        workspace: 0,
    };
    let values = packed(&p, launch, &ptrs, &[ScalarValue::Complex(1.5, -2.0)]).unwrap();
    let (param, bytes) = launch
        .params
        .iter()
        .zip(&values)
        .find(|(p, _)| p.value == ParamValue::Scalar(0))
        .unwrap();
    assert_eq!(param_c_type(param), "cn_c64");
    assert_eq!(
        bytes,
        &[1.5f32.to_le_bytes(), (-2.0f32).to_le_bytes()].concat()
    );
    // a complex value with an imaginary part does not convert to a real parameter
    let mut g = GraphBuilder::new();
    let a = g.input(DType::Float32, 1).unwrap();
    let s = g.scalar(DType::Float32, false).unwrap();
    let y = g.op(Op::Mul, &[a, s]).unwrap();
    g.output(y).unwrap();
    let p = plan(&g.finish().unwrap(), &[vec![10]])
        .unwrap()
        .for_device(DeviceTarget::H200);
    let l = &p.kernels[0].launches[0];
    assert!(packed(&p, l, &ptrs, &[ScalarValue::Complex(1.0, 1.0)]).is_err());
}

// ---- complex functions, ordering and min/max against NumPy's values -------------------------

/// (input, numpy.<func>(input)) pairs, complex128, computed with NumPy 2.4.6.
const INPUTS: [(f64, f64); 7] = [
    (0.3, 0.7),
    (-1.2, 0.4),
    (-0.6, -2.5),
    (1.7, -0.2),
    (2.5, 0.0),
    (0.05, 0.02),
    (0.0, 1.5),
];
const EXPECTED: [(&str, [(f64, f64); 7]); 12] = [
    (
        "tan",
        [
            (0.18971709151908692, 0.63983593026318),
            (-1.1256946121711862, 1.480074929280175),
            (-0.012498461325265301, -0.9950504990405747),
            (-2.2362103467631704, -3.594445643506889),
            (-0.7470222972386604, 0.0),
            (0.05002164693698488, 0.020047390459252024),
            (0.0, 0.9051482536448665),
        ],
    ),
    (
        "arcsin",
        [
            (0.24573200610107973, 0.6703367429877897),
            (-1.1071487177940904, 0.8047189562170501),
            (-0.21995255138037945, -1.6699116520055977),
            (1.4270979521437859, -1.1360075650337447),
            (FRAC_PI_2, 1.5667992369724109),
            (0.05001082221866183, 0.020023698808608253),
            (0.0, 1.1947632172871094),
        ],
    ),
    (
        "arccos",
        [
            (1.3250643206938169, -0.6703367429877897),
            (2.677945044588987, -0.8047189562170501),
            (1.790748878175276, 1.6699116520055977),
            (0.14369837465111068, 1.1360075650337447),
            (0.0, -1.5667992369724109),
            (1.5207855045762348, -0.020023698808608253),
            (FRAC_PI_2, -1.1947632172871094),
        ],
    ),
    (
        "arctan",
        [
            (0.480035181202844, 0.7016804321523099),
            (-0.9078874949608804, 0.1589971916799992),
            (-1.4654322752228834, -0.3937849821605566),
            (1.0435435594259457, -0.05106741776729827),
            (1.1902899496825317, 0.0),
            (0.04997830399952033, 0.019952752220232232),
            (FRAC_PI_2, 0.8047189562170501),
        ],
    ),
    (
        "arcsinh",
        [
            (0.38559098731817487, 0.7089034409655052),
            (-1.041161595266389, 0.25385167692830507),
            (-1.602454390370832, -1.3161536592787517),
            (1.3052437807823192, -0.10119049281536467),
            (1.6472311463710958, 0.0),
            (0.04998915565611594, 0.01997636542132713),
            (0.9624236501192069, FRAC_PI_2),
        ],
    ),
    (
        "arccosh",
        [
            (0.6703367429877897, 1.3250643206938169),
            (0.8047189562170501, 2.677945044588987),
            (1.6699116520055977, -1.790748878175276),
            (1.1360075650337447, -0.14369837465111068),
            (1.5667992369724109, 0.0),
            (0.020023698808608253, 1.5207855045762348),
            (1.1947632172871094, FRAC_PI_2),
        ],
    ),
    (
        "arctanh",
        [
            (0.19988189602962927, 0.6396697661585148),
            (-0.8047189562170503, 1.1071487177940904),
            (-0.07950704225387736, -1.206812100151365),
            (0.6567134470836324, -1.468616016121311),
            (0.42364893019360184, FRAC_PI_2),
            (0.05002163699966694, 0.020047419059531446),
            (0.0, 0.982793723247329),
        ],
    ),
    (
        "expm1",
        [
            (0.032428962911661585, 0.8696029191140402),
            (-0.7225817597882316, 0.11729055071581015),
            (-1.4396769383945962, -0.32844847656239234),
            (4.364832887493066, -1.0875054651218137),
            (11.182493960703473, 0.0),
            (0.05106084916512936, 0.021024020260758943),
            (-0.929262798332297, 0.9974949866040544),
        ],
    ),
    (
        "exp2",
        [
            (1.0890460677533975, 0.5741909341162227),
            (0.4186518369876692, 0.1191436536314451),
            (-0.10645989572224614, -0.6511079574470507),
            (3.2178396234848847, -0.44896708533455937),
            (5.656854249492381, 0.0),
            (1.0351654462039646, 0.014351359574627694),
            (0.5064610459029494, 0.862262842167567),
        ],
    ),
    (
        "log2",
        [
            (-0.3929375973235763, 1.682044698743433),
            (0.33903595255631885, 4.068172212595884),
            (1.3623251358664834, -2.605999646505873),
            (0.7754503323237615, -0.16895220503134745),
            (1.3219280948873624, 0.0),
            (-4.214865692210939, 0.5489546632866346),
            (0.5849625007211562, 2.2661800709135966),
        ],
    ),
    (
        "log10",
        [
            (-0.11828600321853136, 0.5063459083693582),
            (0.1020599913279624, 1.2246418635180676),
            (0.4101007297428201, -0.7844840622879994),
            (0.2334338101770547, -0.05085968154800658),
            (0.3979400086720376, 0.0),
            (-1.268801001050522, 0.16525181990889787),
            (0.17609125905568124, 0.6821881769209206),
        ],
    ),
    (
        "log1p",
        [
            (0.38966243840049886, 0.4939413689195812),
            (-0.8047189562170503, 2.0344439357957027),
            (0.9289296354662894, -1.4121410646084953),
            (0.9959877579492801, -0.07393903765794034),
            (1.252762968495368, 0.0),
            (0.04897153716498206, 0.01904531598201646),
            (0.589327498170823, 0.982793723247329),
        ],
    ),
];
const ORDER_A: [(f64, f64); 8] = [
    (1.0, 2.0),
    (1.0, 2.0),
    (1.0, f64::NAN),
    (f64::NAN, 0.0),
    (2.0, 1.0),
    (-1.0, 5.0),
    (3.0, -1.0),
    (0.0, 0.0),
];
const ORDER_B: [(f64, f64); 8] = [
    (1.0, 3.0),
    (1.0, 2.0),
    (2.0, 0.0),
    (1.0, 0.0),
    (1.0, f64::NAN),
    (-1.0, 4.0),
    (2.0, 7.0),
    (-0.0, 0.0),
];
// numpy.less(ORDER_A, ORDER_B)
const LESS: [bool; 8] = [true, false, false, false, false, false, false, false];
// numpy.less_equal(ORDER_A, ORDER_B)
const LESS_EQUAL: [bool; 8] = [true, true, false, false, false, false, false, true];
// numpy.greater(ORDER_A, ORDER_B)
const GREATER: [bool; 8] = [false, false, false, false, false, true, true, false];
// numpy.greater_equal(ORDER_A, ORDER_B)
const GREATER_EQUAL: [bool; 8] = [false, true, false, false, false, true, true, true];
// numpy.maximum(ORDER_A, ORDER_B)
const MAXIMUM: [(f64, f64); 8] = [
    (1.0, 3.0),
    (1.0, 2.0),
    (1.0, f64::NAN),
    (f64::NAN, 0.0),
    (1.0, f64::NAN),
    (-1.0, 5.0),
    (3.0, -1.0),
    (0.0, 0.0),
];
// numpy.minimum(ORDER_A, ORDER_B)
const MINIMUM: [(f64, f64); 8] = [
    (1.0, 2.0),
    (1.0, 2.0),
    (1.0, f64::NAN),
    (f64::NAN, 0.0),
    (1.0, f64::NAN),
    (-1.0, 4.0),
    (2.0, 7.0),
    (0.0, 0.0),
];
// numpy.fmax(ORDER_A, ORDER_B)
const FMAX: [(f64, f64); 8] = [
    (1.0, 3.0),
    (1.0, 2.0),
    (2.0, 0.0),
    (1.0, 0.0),
    (2.0, 1.0),
    (-1.0, 5.0),
    (3.0, -1.0),
    (0.0, 0.0),
];
// numpy.fmin(ORDER_A, ORDER_B)
const FMIN: [(f64, f64); 8] = [
    (1.0, 2.0),
    (1.0, 2.0),
    (2.0, 0.0),
    (1.0, 0.0),
    (2.0, 1.0),
    (-1.0, 4.0),
    (2.0, 7.0),
    (0.0, 0.0),
];
const RED_IN: [(f64, f64); 9] = [
    (1.0, 2.0),
    (1.0, 3.0),
    (0.5, 9.0),
    (2.0, -1.0),
    (2.0, f64::NAN),
    (0.0, 1.0),
    (-1.0, 0.0),
    (-1.0, -1.0),
    (-1.0, 1.0),
];
// numpy.max(RED_IN.reshape(3, 3), axis=1) and numpy.min(RED_IN.reshape(3, 3), axis=1)
const RED_MAX: [(f64, f64); 3] = [(1.0, 3.0), (2.0, f64::NAN), (-1.0, 1.0)];
const RED_MIN: [(f64, f64); 3] = [(0.5, 9.0), (2.0, f64::NAN), (-1.0, -1.0)];

/// Runs `op` on complex arrays of `dt` (every argument the same length) on the CPU executor.
fn run_complex<O: Default + Clone>(op: Op, dt: DType, args: &[Vec<(f64, f64)>]) -> Vec<O>
where
    for<'b> DataMut<'b>: From<&'b mut Vec<O>>,
{
    let mut g = GraphBuilder::new();
    let ins: Vec<Value> = args.iter().map(|_| g.input(dt, 1).unwrap()).collect();
    let r = g.op(op, &ins).unwrap();
    g.output(r).unwrap();
    let n = args[0].len();
    let p = plan(&g.finish().unwrap(), &vec![vec![n]; args.len()]).unwrap();
    let shape = [n];
    let c64: Vec<Vec<Complex<f32>>> = args
        .iter()
        .map(|a| {
            a.iter()
                .map(|&(r, i)| Complex::new(r as f32, i as f32))
                .collect()
        })
        .collect();
    let c128: Vec<Vec<Complex<f64>>> = args
        .iter()
        .map(|a| a.iter().map(|&(r, i)| Complex::new(r, i)).collect())
        .collect();
    let refs: Vec<ArrayRef<'_>> = if dt == DType::Complex64 {
        c64.iter().map(|a| ArrayRef::new(a, &shape)).collect()
    } else {
        c128.iter().map(|a| ArrayRef::new(a, &shape)).collect()
    };
    let mut out = vec![O::default(); n];
    execute_cpu(&p, &refs, &[], &mut [ArrayMut::new(&mut out, &shape)]).unwrap();
    out
}

fn same(a: f64, b: f64, rtol: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= rtol * b.abs().max(1e-300)
}

#[test]
fn complex_functions_match_numpy() {
    let inputs = INPUTS.to_vec();
    for (name, want) in EXPECTED {
        let op = Op::from_name(name).unwrap();
        assert!(op.supports_complex(), "{name}");
        let got: Vec<Complex<f64>> =
            run_complex(op, DType::Complex128, std::slice::from_ref(&inputs));
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                same(g.re, w.0, 1e-13) && same(g.im, w.1, 1e-13),
                "{name}({:?}) = {g:?}, NumPy {w:?}",
                INPUTS[i]
            );
        }
        // complex64 computes in single precision: within a few ulps of NumPy's complex128
        let got: Vec<Complex<f32>> =
            run_complex(op, DType::Complex64, std::slice::from_ref(&inputs));
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let scale = w.0.hypot(w.1);
            assert!(
                (g.re as f64 - w.0).abs() <= 2e-6 * scale
                    && (g.im as f64 - w.1).abs() <= 2e-6 * scale,
                "{name}({:?}) complex64 = {g:?}, NumPy {w:?}",
                INPUTS[i]
            );
        }
    }
}

#[test]
fn complex_ordering_and_min_max_follow_numpy() {
    let (a, b) = (ORDER_A.to_vec(), ORDER_B.to_vec());
    for dt in [DType::Complex64, DType::Complex128] {
        for (op, want) in [
            (Op::Lt, LESS),
            (Op::Le, LESS_EQUAL),
            (Op::Gt, GREATER),
            (Op::Ge, GREATER_EQUAL),
        ] {
            assert_eq!(
                op.signature(&[arg(dt, false), arg(dt, false)]).unwrap().1,
                DType::Bool
            );
            let got: Vec<bool> = run_complex(op, dt, &[a.clone(), b.clone()]);
            assert_eq!(got, want, "{op:?} {dt}");
        }
        for (op, want) in [
            (Op::Maximum, MAXIMUM),
            (Op::Minimum, MINIMUM),
            (Op::Fmax, FMAX),
            (Op::Fmin, FMIN),
        ] {
            let got: Vec<Complex<f64>> = if dt == DType::Complex128 {
                run_complex(op, dt, &[a.clone(), b.clone()])
            } else {
                run_complex::<Complex<f32>>(op, dt, &[a.clone(), b.clone()])
                    .iter()
                    .map(|c| Complex::new(c.re as f64, c.im as f64))
                    .collect()
            };
            for (i, (g, w)) in got.iter().zip(want).enumerate() {
                assert!(
                    same(g.re, w.0, 0.0) && same(g.im, w.1, 0.0),
                    "{op:?} {dt} at {i}: {g:?}, NumPy {w:?}"
                );
            }
        }
    }
}

#[test]
fn complex_min_max_reductions_follow_numpy() {
    for (kind, want) in [(ReduceKind::Max, RED_MAX), (ReduceKind::Min, RED_MIN)] {
        let mut g = GraphBuilder::new();
        let z = g.input(DType::Complex128, 2).unwrap();
        let r = g.reduce(kind, z, &Axis::One(1), false).unwrap();
        g.output(r).unwrap();
        let p = plan(&g.finish().unwrap(), &[vec![3, 3]]).unwrap();
        assert_eq!(p.outputs[0].dtype, DType::Complex128);
        let zs: Vec<Complex<f64>> = RED_IN.iter().map(|&(r, i)| Complex::new(r, i)).collect();
        let mut out = vec![Complex::<f64>::default(); 3];
        execute_cpu(
            &p,
            &[ArrayRef::new(&zs, &[3, 3])],
            &[],
            &mut [ArrayMut::new(&mut out, &[3])],
        )
        .unwrap();
        for (g, w) in out.iter().zip(want) {
            assert!(
                same(g.re, w.0, 0.0) && same(g.im, w.1, 0.0),
                "{kind:?}: {g:?}, NumPy {w:?}"
            );
        }
    }
}
