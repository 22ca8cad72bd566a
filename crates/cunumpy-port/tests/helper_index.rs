//! Helpers writing the marker of the index they are given (tests/port_helper_index.py; the
//! syntax tree in tests/fixtures/port_helper_index.json is Python's after the Python side's
//! rewrites for `push_stage`, whose helpers' `markers = args.markers` are inlined): the race
//! proof follows the loop variable into the helpers; other indices are refused with the line.

#![allow(clippy::unwrap_used)]
use cunumpy_port::{translate, Options, PortErrorKind};

const TREE: &str = include_str!("fixtures/port_helper_index.json");
const SOURCE: &str = include_str!("../../../tests/port_helper_index.py");
const PARTICLES: &str =
    "struct ParticleArguments {markers: view float64[:,:]; first_free: int64; dt: float64}";

fn run(kernel: &str) -> Result<cunumpy_port::Translation, cunumpy_port::PortError> {
    translate(
        TREE,
        SOURCE,
        &Options {
            kernel: kernel.into(),
            arg_types: vec![("args".into(), PARTICLES.into())],
            ..Options::default()
        },
    )
}

#[test]
fn struct_field_written_by_helpers_at_the_loop_index_is_owned() {
    let t = run("push_stage").unwrap();
    assert_eq!(t.writes.len(), 1);
    assert_eq!(
        (
            t.writes[0].array.as_str(),
            t.writes[0].line,
            t.writes[0].how
        ),
        ("args.markers", 48, "owned")
    );
    assert_eq!(t.helpers, ["advance", "wrap_axis"]);
    // markers[0:3, ip] = markers[0:3, ip] + ... + markers[ff:ff + 3, ip]: through a buffer
    // (of the slice's length: a constant here)
    assert!(t.source.contains("double cunumpy_rhs[3];"));
}

#[test]
fn array_written_by_a_helper_at_the_loop_index_is_owned() {
    let t = run("push_kick").unwrap();
    assert!(t
        .writes
        .iter()
        .all(|w| w.how == "owned" && w.array == "markers"));
    assert!(!t.source.contains("atomic"));
}

#[test]
fn helpers_writing_other_elements_are_refused() {
    // a helper only adding into another marker's element: atomic adds there (accumulate.rs)
    let t = run("push_kick_neighbour").unwrap();
    assert!(t
        .source
        .contains("cunumpy_atomic_add(&markers(3, (ip + 1)), (double)(dt));"));
    let cases = [("push_kick_first", 79, "unprovable write")];
    for (kernel, line, construct) in cases {
        let e = run(kernel).unwrap_err();
        assert_eq!(e.kind, PortErrorKind::Race, "{kernel}");
        assert_eq!(
            (e.line, e.array.as_deref(), e.construct.as_str()),
            (line, Some("markers"), construct),
            "{kernel}: {}",
            e.message
        );
    }
}

#[test]
fn loop_over_an_index_array_checks_its_entries_increase() {
    let t = run("flip_listed").unwrap();
    assert_eq!(t.loop_var, "ip");
    assert_eq!(t.n_threads.as_deref(), Some("inds.shape[0]"));
    assert!(t.source.contains("ip = inds(cunumpy_t);"));
    assert!(t
        .source
        .contains("if (cunumpy_t > 0 && !(inds(cunumpy_t - 1) < ip)) {"));
    assert!(t.source.contains("__trap();"));
    assert!(t.writes.iter().all(|w| w.how == "owned"));
    let e = run("flip_listed_and_inds").unwrap_err();
    assert_eq!(
        (e.kind, e.construct.as_str(), e.array.as_deref()),
        (PortErrorKind::Race, "for", Some("inds"))
    );
}
