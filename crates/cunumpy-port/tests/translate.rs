//! The translator on the struphy-style kernels of the repository's tests/port_kernels.py (read
//! from there; Python's syntax tree of it is stored in tests/fixtures, to be dumped again when
//! the kernels change): what it accepts, how it classifies writes, and what it
//! refuses with which line and array.

#![allow(clippy::unwrap_used)]
use cunumpy_port::{translate, Options, PortErrorKind};

const TREE: &str = include_str!("fixtures/port_kernels.json");
const SOURCE: &str = include_str!("../../../tests/port_kernels.py");

fn run(kernel: &str) -> Result<cunumpy_port::Translation, cunumpy_port::PortError> {
    translate(TREE, SOURCE, &Options::for_kernel(kernel))
}

#[test]
fn deposit_plus_equals_becomes_atomic() {
    let t = run("deposit_1d").unwrap();
    assert_eq!(t.params, ["markers", "n_markers", "grid", "dx"]);
    assert_eq!(t.loop_var, "ip");
    assert_eq!(t.n_threads.as_deref(), Some("n_markers"));
    assert!(t
        .writes
        .iter()
        .all(|w| w.how == "atomic" && w.array == "grid"));
    assert!(t.source.contains("#include <cunumpy/atomic.cuh>"));
    assert!(t.source.contains("cunumpy_atomic_add(&grid(cunumpy_port_mod(i0, nx)), (double)(markers(ip, 6) * (1.0 - f)));"));
    // -= of a negative becomes an atomic add of its negation
    assert!(
        t.source.contains("(double)(-(-markers(ip, 6) * f))"),
        "{}",
        t.source
    );
}

#[test]
fn owned_writes_and_helpers() {
    let t = run("push_v_rotation").unwrap();
    assert!(t
        .writes
        .iter()
        .all(|w| w.how == "owned" && w.array == "markers"));
    assert_eq!(t.helpers, ["cross", "norm3"]);
    assert_eq!(t.source.matches("__device__ void cross(").count(), 1);
    assert!(t.source.contains("double v_data[3];"));
    assert!(!t.source.contains("atomic"));
    let cells = run("cell_update").unwrap();
    // rows and columns collapsed: one thread per cell
    assert_eq!(cells.collapsed, [("j".to_string(), 94)]);
    assert_eq!(
        cells.n_threads.as_deref(),
        Some("max(0, (a.shape[0])) * max(0, (a.shape[1]))")
    );
}

#[test]
fn refusals_name_line_construct_and_array() {
    let cases = [
        (
            "shift_left",
            116,
            Some("a"),
            "read of another iteration's element",
        ),
        ("scatter_assign", 121, Some("out"), "unprovable write"),
        (
            "deposit_then_read",
            134,
            Some("grid"),
            "read of accumulated array",
        ),
    ];
    for (kernel, line, array, construct) in cases {
        let e = run(kernel).unwrap_err();
        assert_eq!(e.kind, PortErrorKind::Race, "{kernel}");
        assert_eq!(
            (e.line, e.array.as_deref(), e.construct.as_str()),
            (line, array, construct),
            "{kernel}"
        );
        assert!(e
            .to_string()
            .starts_with(&format!("{kernel}, line {line}: ")));
    }
    // A sum assigned (not added) after the loop.
    let e = run("total_charge").unwrap_err();
    assert_eq!(
        (e.kind, e.line, e.construct.as_str()),
        (PortErrorKind::Unsupported, 128, "reduction")
    );
    let e = run("cross").unwrap_err();
    assert_eq!(
        (e.kind, e.construct.as_str()),
        (PortErrorKind::Unsupported, "parallel loop")
    );
    let e = run("nope").unwrap_err();
    assert_eq!(e.kind, PortErrorKind::Input);
}

#[test]
fn sample_call_types_win_over_annotations() {
    let opts = Options {
        kernel: "deposit_2d".into(),
        arg_types: vec![("xs".into(), "float32[:]".into())],
        parallel_loop: None,
    };
    let t = translate(TREE, SOURCE, &opts).unwrap();
    assert!(t.source.contains("CArray1D<float> xs, CArray1D<double> ys"));
}

#[test]
fn loop_variable_plus_invariant_offset_is_owned() {
    let t = run("stencil_rows").unwrap();
    assert!(t
        .writes
        .iter()
        .all(|w| w.how == "owned" && w.array == "out"));
    assert_eq!(t.n_threads.as_deref(), Some("max(0, ((e + 1)) - (s))"));
    assert!(t.source.contains("i1 = s + cunumpy_t;"));
}

#[test]
fn an_offset_read_from_a_local_array_is_not_invariant() {
    let e = run("local_offset").unwrap_err();
    assert_eq!(
        (e.kind, e.line, e.array.as_deref()),
        (PortErrorKind::Race, 152, Some("out"))
    );
}

#[test]
fn offsets_set_once_in_an_inner_loop_are_owned() {
    let t = run("stencil_rows_2d").unwrap();
    assert_eq!(t.loop_var, "i1");
    assert!(t
        .writes
        .iter()
        .all(|w| w.how == "owned" && w.array == "out"));
    // the two loops collapsed (the sum over d stays in the thread)
    assert_eq!(t.collapsed, [("i2".to_string(), 196)]);
    assert_eq!(
        t.n_threads.as_deref(),
        Some("max(0, max(0, ((int(e[0]) + 1)) - (int(s[0])))) * max(0, max(0, ((int(e[1]) + 1)) - (int(s[1]))))")
    );
}

#[test]
fn a_name_assigned_in_one_branch_only_is_carried() {
    let e = run("conditional_index").unwrap_err();
    assert_eq!(
        (e.kind, e.line, e.construct.as_str()),
        (PortErrorKind::Race, 213, "carried scalar")
    );
}

#[test]
fn a_sum_becomes_per_thread_partials_and_one_atomic_add() {
    let t = run("dot_sum").unwrap();
    assert_eq!(t.writes.len(), 1);
    assert_eq!(
        (t.writes[0].array.as_str(), t.writes[0].how),
        ("res", "reduction")
    );
    assert!(t.source.contains("const double cunumpy_s_init = s;"));
    assert!(t
        .source
        .contains("cunumpy_atomic_add(&res(0), (double)(s));"));
    assert!(t.source.contains("#include <cunumpy/atomic.cuh>"));
    assert_eq!(
        t.n_threads.as_deref(),
        Some("max(0, ((a.shape[0])) - (lo))")
    );
    let e = run("sum_into_written").unwrap_err();
    assert_eq!(
        (e.kind, e.line, e.array.as_deref()),
        (PortErrorKind::Race, 249, Some("res"))
    );
    let e = run("running_sum").unwrap_err();
    assert_eq!((e.kind, e.line), (PortErrorKind::Race, 231));
}

#[test]
fn slice_assignments_become_element_loops() {
    let t = run("push_slices").unwrap();
    assert!(t
        .source
        .contains("markers((3 + cunumpy_k0), ip) += dt * v(cunumpy_k0);"));
    // the right-hand side reads the target's array elsewhere: a buffer first, as Python
    let t = run("shift_slice").unwrap();
    assert!(t
        .source
        .contains("cunumpy_rhs[cunumpy_k0] = a(cunumpy_k0, i);"));
}

#[test]
fn run_time_local_arrays_check_their_reserve() {
    let t = run("window_sums").unwrap();
    assert!(t
        .source
        .contains("double buf_data[CUNUMPY_PORT_LOCAL_CAP];"));
    assert!(t
        .source
        .contains("if (buf.size() < 0 || buf.size() > CUNUMPY_PORT_LOCAL_CAP) {"));
    // the message by default; a bare trap only on a GPU and only when asked for
    let guard = "#if defined(CUNUMPY_PORT_CAP_TRAP_ONLY) && defined(__CUDA_ARCH__)";
    let at = t.source.find(guard).expect("the trap-only branch");
    let rest = &t.source[at..];
    let otherwise = rest.find("#else").expect("the message branch");
    assert!(rest[..otherwise].contains("{ __trap(); }"));
    assert!(rest[otherwise..].contains("printf(\"cunumpy: %s needs %lld elements"));
}

#[test]
fn views_are_read_only() {
    let t = run("row_sums").unwrap();
    assert!(t.source.contains("CArray1D<double> row;"));
    assert!(t.source.contains("long long r;"));
    let e = run("write_row").unwrap_err();
    assert_eq!(e.construct, "write through a view");
}
