//! Accumulation through helpers, on the kernels of the repository's
//! tests/port_accumulate_kernels.py (Python's syntax tree of it is stored in tests/fixtures, to
//! be dumped again when the kernels change): a helper that only adds into the shared grid it
//! is passed gets atomic adds; any other use of the grid there is refused with the helper, its
//! line and the array.

#![allow(clippy::unwrap_used)]
use cunumpy_port::{translate, Options, PortErrorKind};

const TREE: &str = include_str!("fixtures/port_accumulate_kernels.json");
const SOURCE: &str = include_str!("../../../tests/port_accumulate_kernels.py");

fn run(kernel: &str) -> Result<cunumpy_port::Translation, cunumpy_port::PortError> {
    translate(TREE, SOURCE, &Options::for_kernel(kernel))
}

#[test]
fn adds_in_helpers_become_atomic_adds() {
    let t = run("charge_1d").unwrap();
    assert_eq!(t.writes.len(), 1);
    assert_eq!(
        (
            t.writes[0].array.as_str(),
            t.writes[0].line,
            t.writes[0].how
        ),
        ("grid", 31, "atomic")
    );
    assert_eq!(t.helpers, ["deposit_row", "scale_add"]);
    // the helper the kernel calls adds itself (-=), and through the one it passes the grid to
    assert!(
        t.source
            .contains("    cunumpy_atomic_add(&grid(i), (double)(s * w));\n"),
        "{}",
        t.source
    );
    assert!(t
        .source
        .contains("cunumpy_atomic_add(&grid(cunumpy_port_mod((i + 1), n)), (double)(-(-f * w)));"));
    assert_eq!(t.source.matches("cunumpy_atomic_add(").count(), 2);
    assert!(!t.source.contains("grid(i) +="));
    assert!(t.source.contains("#include <cunumpy/atomic.cuh>"));
    assert!(t.source.contains(
        "// Atomic adds in helpers (their parameter receives a shared array they only add into): deposit_row(grid), scale_add(grid).\n"
    ));
    // the kernel's own code calls the helper with the grid (no copy, no atomics there)
    assert!(t
        .source
        .contains("deposit_row(markers(ip, 0), h, markers(ip, 2), grid);"));
}

#[test]
fn assignment_into_the_grid_in_a_helper_is_refused() {
    let e = run("set_same_module").unwrap_err();
    assert_eq!(e.kind, PortErrorKind::Race);
    assert_eq!(
        (
            e.function.as_str(),
            e.line,
            e.array.as_deref(),
            e.construct.as_str()
        ),
        ("set_same_module", 64, Some("grid"), "unprovable write")
    );
    // the helper writes at the index it is given (helper_owned.rs), not the loop variable
    assert!(
        e.message.starts_with("passes 'grid' to store_helper(), which writes it at the index it is given, and that index is not the loop variable 'ip'"),
        "{}",
        e.message
    );
}

#[test]
fn a_local_array_where_the_helper_adds_atomically_is_refused() {
    let e = run("local_and_shared").unwrap_err();
    assert_eq!(e.kind, PortErrorKind::Unsupported);
    assert_eq!(
        (e.function.as_str(), e.line, e.array.as_deref()),
        ("local_and_shared", 72, Some("tmp"))
    );
    assert!(e
        .message
        .contains("scale_add(), whose adds into 'grid' are atomic"));
}

#[test]
fn other_augmented_assignments_and_reads_of_the_grid_are_refused() {
    let e = run("scale_in_helper").unwrap_err();
    assert_eq!(e.kind, PortErrorKind::Race);
    assert_eq!(
        (e.function.as_str(), e.line, e.array.as_deref()),
        ("scale_in_helper", 83, Some("grid"))
    );
    assert!(e.message.starts_with(
        "passes 'grid' to scale_cell(), which writes it at the index it is given, and that index is not the loop variable 'ip'"
    ));
    // the kernel itself reads what its helper adds into
    let e = run("add_then_read").unwrap_err();
    assert_eq!(
        (
            e.function.as_str(),
            e.line,
            e.array.as_deref(),
            e.construct.as_str()
        ),
        (
            "add_then_read",
            90,
            Some("grid"),
            "read of accumulated array"
        )
    );
    // a helper of another module is not in this (single-module) syntax tree
    assert_eq!(
        run("set_in_helper").unwrap_err().construct,
        "helper from another module"
    );
}
