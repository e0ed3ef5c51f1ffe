//! Compile-fail cases: each `tests/ui/*.rs` must fail with exactly the committed
//! `.stderr`. Regenerate with `TRYBUILD=overwrite` and read the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
