//! Zero fills of local arrays that no read can see (tests/port_fill_kernels.py; Python's syntax
//! tree of it is stored in tests/fixtures/port_fill_kernels.json, to be dumped again when the
//! kernels change): the B-spline recurrence's `left`/`right` and zeros handed to a helper that
//! overwrites them whole are declared without their fill; every local whose zeros a read could
//! see keeps it.

#![allow(clippy::unwrap_used)]
use cunumpy_port::{translate, Options};

const TREE: &str = include_str!("fixtures/port_fill_kernels.json");
const SOURCE: &str = include_str!("../../../tests/port_fill_kernels.py");
const NOTE: &str =
    "not filled with zeros: no read below can see them (each element it reads is written first)";

fn source(kernel: &str) -> String {
    translate(TREE, SOURCE, &Options::for_kernel(kernel))
        .unwrap()
        .source
}

fn filled(src: &str, array: &str) -> bool {
    src.contains(&format!("{array}_data[cunumpy_f] = (double)0;"))
}

#[test]
fn recurrence_locals_lose_their_fill() {
    let src = source("bspline_values");
    assert_eq!(src.matches(NOTE).count(), 2);
    assert!(!filled(&src, "left") && !filled(&src, "right"));
    // the note stands where the fill was, after the size check
    let at = src.find("local array 'left'").unwrap();
    assert!(src[at..].find(NOTE).unwrap() < src[at..].find("right = CArray1D").unwrap());
}

#[test]
fn zeros_a_helper_overwrites_whole_lose_their_fill() {
    let src = source("rows_via_helper");
    assert_eq!(src.matches(NOTE).count(), 1);
    assert!(!filled(&src, "row"));
}

#[test]
fn fills_a_read_can_see_stay() {
    for kernel in [
        "reads_ahead",
        "read_after_loop",
        "conditional_write",
        "handed_to_helper",
        "zeros_in_a_branch",
        "rows_via_tail_helper",
        "rows_via_reading_helper",
    ] {
        let src = source(kernel);
        assert!(!src.contains(NOTE), "{kernel}");
        let array = if kernel.starts_with("rows") {
            "row"
        } else {
            "acc"
        };
        assert!(filled(&src, array), "{kernel}");
    }
}

const PARTIAL: &str =
    "filled only past the elements that the code below writes before any read of them";

/// Where the fill of the argument `array` of `helper` (one of the `splines_*` helpers that
/// `each_splines` calls) starts: "0" for the whole fill.
fn fill_start(helper: &str, array: &str) -> Option<String> {
    let src = source("each_splines");
    let body = &src[src.find(&format!("__device__ void {helper}("))?..];
    let body = &body[..body.find("\n}\n")?];
    if body.contains(&format!("{array}(cunumpy_k0) = 0.0;")) {
        return Some("0".into());
    }
    let head = format!("{array}((");
    let tail = " + cunumpy_k0)) = 0.0;";
    let line = body
        .lines()
        .find(|l| l.trim_start().starts_with(&head) && l.ends_with(tail))?;
    let inner = line.trim_start().strip_prefix(&head)?.strip_suffix(tail)?;
    Some(inner.to_string())
}

#[test]
fn an_argument_the_recurrence_writes_is_filled_only_past_it() {
    assert_eq!(
        fill_start("splines_into", "bn").as_deref(),
        Some("(cunumpy_port_max<long long>(degree, 0) + 1)")
    );
    // written whole in the last iteration (`if j == degree - 1`), never read
    assert_eq!(
        fill_start("splines_into", "bd").as_deref(),
        Some("cunumpy_port_max<long long>(degree, 0)")
    );
    assert_eq!(
        fill_start("splines_other_condition", "bd").as_deref(),
        Some("0")
    );
    // bn and bd of splines_into, bn[0] of reading_ahead and other_condition, bd of the two
    // that write bd[j] in each iteration j and never read it, and the driver's own bn and bd,
    // whose copy loops write them whole
    assert_eq!(source("each_splines").matches(PARTIAL).count(), 8);
}

#[test]
fn argument_fills_a_read_can_see_stay() {
    for (helper, start) in [
        ("splines_reading_ahead", "1"),
        ("splines_other_condition", "1"),
        ("splines_without_first", "0"),
    ] {
        assert_eq!(fill_start(helper, "bn").as_deref(), Some(start), "{helper}");
    }
}

const DEFERRED: &str =
    "filled just before the call that first receives it, past what that call writes first";

/// Where the fill of the local `array` that waited for a call starts.
fn deferred_start(src: &str, array: &str) -> Option<String> {
    let head = "for (long long cunumpy_f = ";
    let tail = format!("; cunumpy_f < {array}.size()");
    src.lines().find_map(|l| {
        let l = l.trim_start().strip_prefix(head)?;
        let end = l.find(&tail)?;
        Some(l[..end].to_string())
    })
}

#[test]
fn a_local_a_helper_writes_first_is_filled_before_the_call() {
    let src = source("each_derivs");
    assert_eq!(src.matches(DEFERRED).count(), 1);
    assert_eq!(
        deferred_start(&src, "der").as_deref(),
        Some("(cunumpy_port_max<long long>(p, 0) + 1)")
    );
    let fill = src.find("the zeros of 'der'").unwrap();
    assert!(fill < src.find("derivs_into(p, x(i), der);").unwrap());
    // the helper skips der[1]: only der[0] goes without the fill
    let src = source("each_derivs_skipping_one");
    assert_eq!(deferred_start(&src, "der").as_deref(), Some("1"));
}

/// The generated text of `helper`, a helper that `kernel` calls.
fn helper_body(kernel: &str, helper: &str) -> String {
    let src = source(kernel);
    let at = ["void", "double"]
        .iter()
        .find_map(|t| src.find(&format!("__device__ {t} {helper}(")))
        .unwrap();
    let end = at + src[at..].find("\n}\n").unwrap();
    src[at..end].to_string()
}

#[test]
fn the_recurrence_table_and_its_divisors_go_without_their_fill() {
    let body = helper_body("each_table", "der_table");
    assert!(!filled(&body, "values") && body.contains(NOTE));
    assert!(body.contains("cunumpy_f = cunumpy_port_max<long long>(p, 0); cunumpy_f < diff.size()"));
    // read above the diagonal, read before written: the fills stay whole
    assert!(filled(
        &helper_body("each_table", "table_reading_above"),
        "values"
    ));
    assert!(filled(
        &helper_body("each_table", "diff_read_first"),
        "diff"
    ));
}
