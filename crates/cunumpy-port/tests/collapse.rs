//! Loop collapsing, on the grid kernels of the repository's tests/port_collapse_kernels.py
//! (Python's syntax tree of it is stored in tests/fixtures, to be dumped again when the kernels
//! change): the perfect nest of independent loops under the parallel one becomes one flat
//! thread index as deep as every write stays owned by one iteration (or an atomic add it was
//! already); an inner sum into a local, a write owned by the outer variables only and bounds
//! that depend on an outer variable stop it.

#![allow(clippy::unwrap_used)]
use cunumpy_port::{translate, Options};

const TREE: &str = include_str!("fixtures/port_collapse_kernels.json");
const SOURCE: &str = include_str!("../../../tests/port_collapse_kernels.py");

fn run(kernel: &str) -> cunumpy_port::Translation {
    translate(TREE, SOURCE, &Options::for_kernel(kernel)).unwrap()
}

fn collapsed(t: &cunumpy_port::Translation) -> Vec<&str> {
    t.collapsed.iter().map(|(v, _)| v.as_str()).collect()
}

#[test]
fn two_d_nest_is_collapsed() {
    let t = run("scale_2d");
    assert_eq!(t.loop_var, "i");
    assert_eq!(t.collapsed, [("j".to_string(), 15)]);
    assert_eq!(
        t.n_threads.as_deref(),
        Some("max(0, (a.shape[0])) * max(0, (a.shape[1]))")
    );
    assert!(t.writes.iter().all(|w| w.how == "owned"));
    let src = &t.source;
    assert!(
        src.contains("collapsed with the loops nested in it (lines 14, 15: `for i`, `for j`): one (i, j) per thread"),
        "{src}"
    );
    assert!(
        src.contains("    const long long cunumpy_n = cunumpy_n0 * cunumpy_n1;\n"),
        "{src}"
    );
    // innermost fastest (C order), the 32-bit division where the flat index fits
    assert!(src.contains("            unsigned int cunumpy_r = (unsigned int)cunumpy_t;\n            j = (long long)(cunumpy_r % (unsigned int)cunumpy_n1);\n            cunumpy_r /= (unsigned int)cunumpy_n1;\n            i = (long long)cunumpy_r;\n"), "{src}");
    assert!(src.contains("            long long cunumpy_r = cunumpy_t;\n            j = (long long)(cunumpy_r % cunumpy_n1);\n"), "{src}");
    // no loop over j is left
    assert!(!src.contains("for (j ="), "{src}");
}

#[test]
fn three_d_nest_with_offsets_and_steps_is_collapsed() {
    let t = run("shifted_3d");
    assert_eq!(collapsed(&t), ["i2", "i3"]);
    assert!(t
        .writes
        .iter()
        .all(|w| w.how == "owned" && w.array == "out"));
    let src = &t.source;
    // the start and the step of each range; the local row index computed per thread
    assert!(
        src.contains("i3 = s(2) + (long long)(cunumpy_r % (unsigned int)cunumpy_n2) * 2;"),
        "{src}"
    );
    assert!(
        src.contains("i2 = s(1) + (long long)(cunumpy_r % (unsigned int)cunumpy_n1);"),
        "{src}"
    );
    assert!(
        src.contains("cunumpy_port_trip(((e(2) + 1) - s(2) + 1) / 2)"),
        "{src}"
    );
    assert!(src.contains("i1_loc = i1 - s(0);"), "{src}");
    assert_eq!(
        t.n_threads.as_deref(),
        Some("max(0, max(0, ((int(e[0]) + 1)) - (int(s[0])))) * max(0, max(0, ((int(e[1]) + 1)) - (int(s[1])))) * max(0, len(range(int(s[2]), (int(e[2]) + 1), 2)))")
    );
}

#[test]
fn inner_sum_into_a_local_stops_collapsing() {
    let t = run("row_dot");
    assert_eq!(collapsed(&t), ["j"]);
    assert!(
        t.source.contains("for (k = 0; k < m.shape[2]; ++k)") || t.source.contains("for (k "),
        "{}",
        t.source
    );
    let t = run("tensor_fixed");
    assert_eq!(collapsed(&t), ["j"]);
    // the local array filled between the levels: per thread, before the body
    assert!(t
        .writes
        .iter()
        .all(|w| w.array == "out" && w.how == "owned"));
}

#[test]
fn atomic_adds_stay_atomic_when_collapsed() {
    let t = run("histogram_2d");
    assert_eq!(collapsed(&t), ["j"]);
    assert!(t
        .writes
        .iter()
        .all(|w| w.how == "atomic" && w.array == "hist"));
}

#[test]
fn writes_owned_by_the_outer_variable_only_are_not_collapsed() {
    // `last[i] = ...` for every j: collapsed it would be a race; `tot[i] +=`: an atomic add
    // where one thread owns the row today
    for k in ["last_in_row", "row_totals"] {
        let t = run(k);
        assert!(t.collapsed.is_empty(), "{k}");
        assert!(t.writes.iter().all(|w| w.how == "owned"), "{k}");
        assert!(t.source.contains("one iteration per thread"), "{k}");
    }
}

#[test]
fn bounds_depending_on_the_outer_variable_are_not_collapsed() {
    let t = run("lower_triangle");
    assert!(t.collapsed.is_empty());
    assert_eq!(t.n_threads.as_deref(), Some("m.shape[0]"));
}

#[test]
fn a_level_may_set_its_locals_with_an_if_first() {
    let t = run("diag_rows_3d");
    assert_eq!(collapsed(&t), ["i2", "i3"]);
    assert!(t.writes.iter().all(|w| w.how == "owned"));
}

#[test]
fn a_local_of_a_level_changed_below_it_is_not_collapsed() {
    // `w` set per row and doubled per column: collapsed, each thread would start from 1.0
    let t = run("carried_level");
    assert!(t.collapsed.is_empty());
}

#[test]
fn continue_at_a_level_skips_the_threads_point() {
    let t = run("masked_3d");
    assert_eq!(collapsed(&t), ["j", "k"]);
    assert!(t.source.contains("continue;"), "{}", t.source);
}

#[test]
fn a_level_local_passed_to_a_reading_helper_is_collapsed() {
    let t = run("tensor_helper");
    assert_eq!(collapsed(&t), ["j"]);
    assert_eq!(t.helpers, ["weighted_row"]);
}
