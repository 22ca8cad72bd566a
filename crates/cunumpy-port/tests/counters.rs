//! Counters of the parallel loop (tests/port_counters.py; Python's syntax tree of it is stored
//! in tests/fixtures/port_counters.json, to be dumped again when the kernels change): an integer
//! raised by `+= k` and read only before a raise is recounted per iteration and owns the
//! elements it indexes; true loop-carried scalars and counters that cannot be recounted are
//! refused with the line.

#![allow(clippy::unwrap_used)]
use cunumpy_port::{translate, Options, PortErrorKind};

const TREE: &str = include_str!("fixtures/port_counters.json");
const SOURCE: &str = include_str!("../../../tests/port_counters.py");

fn run(kernel: &str) -> Result<cunumpy_port::Translation, cunumpy_port::PortError> {
    translate(TREE, SOURCE, &Options::for_kernel(kernel))
}

#[test]
fn counter_indexed_writes_are_owned() {
    let t = run("evaluate_markers").unwrap();
    assert!(t
        .writes
        .iter()
        .all(|w| w.how == "owned" && w.array == "mat"));
    assert!(t
        .source
        .contains("const long long cunumpy_counter_init = counter;"));
    // the recount loop reads the markers of the earlier iterations, and writes nothing
    let start = t.source.find("for (long long cunumpy_j = 0;").unwrap();
    let end = t.source.find("        e1 = markers(0, i);").unwrap();
    let recount = &t.source[start..end];
    assert!(recount.contains("e1 = markers(0, cunumpy_j);"));
    assert!(recount.contains("counter += 1;"));
    assert!(!recount.contains("mat("));
    // `return counter` after the loop is accepted (the CUDA kernel returns nothing)
    assert_eq!(t.loop_var, "i");
}

#[test]
fn uniform_increments_take_the_closed_form() {
    let t = run("evaluate_markers").unwrap();
    assert!(t
        .source
        .contains("if ((((remove_outside) ? 0 : 1)) == (1)) {"));
    assert!(t
        .source
        .contains("counter = cunumpy_counter_init + i * (((remove_outside) ? 0 : 1));"));
    let two = run("pull_markers").unwrap();
    assert!(two
        .source
        .contains("if ((((a_has_holes) ? 1 : 0)) == (1)) {"));
    assert!(two
        .source
        .contains("counter_o = cunumpy_counter_o_init + (i - 1) / 2 * (1);"));
    // a raise that depends on the data: always recounted
    let one = run("compact_positive").unwrap();
    assert!(!one.source.contains("cunumpy_counter_init + "));
    assert!(one.source.contains("if (values(cunumpy_j) > 0.0) {"));
}

#[test]
fn uncountable_scalars_are_refused_with_the_line() {
    let cases = [
        ("running_sum", 74, None, "scalar update"),
        ("counter_read_without_increment", 83, None, "counter"),
        ("counter_of_written_flags", 93, Some("flags"), "counter"),
    ];
    for (kernel, line, array, construct) in cases {
        let e = run(kernel).unwrap_err();
        assert_eq!(e.kind, PortErrorKind::Race, "{kernel}");
        assert_eq!(
            (e.line, e.array.as_deref(), e.construct.as_str()),
            (line, array, construct),
            "{kernel}: {}",
            e.message
        );
    }
}

#[test]
fn a_count_added_after_the_loop_is_a_reduction() {
    let t = run("count_positive").unwrap();
    assert_eq!(t.writes.len(), 1);
    assert_eq!(
        (t.writes[0].array.as_str(), t.writes[0].how),
        ("out", "reduction")
    );
    assert!(!t.source.contains("cunumpy_j"));
}
