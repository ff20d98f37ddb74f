//! Shared by the integration tests of the `nnac` package.

/// A new, empty scratch directory `nnac-{tag}-XXXXXX` in the system's temp directory.
/// It is deleted with everything in it when the returned guard drops: at the end of
/// the test, and also when an assertion fails. Keep the guard alive while its path is
/// in use (`let tmp = tempdir("x"); let dir = tmp.path();`).
pub fn tempdir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("nnac-{tag}-"))
        .tempdir()
        .expect("create a scratch directory")
}
