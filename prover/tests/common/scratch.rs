//! A temporary folder per test, shared by the prover's and the command line's integration
//! tests (`cli/tests/it/main.rs` includes this file by path).

/// A temporary folder for one test, removed when dropped (a test that fails removes it too), so
/// a test run leaves the temporary folder as it found it. It reads as the folder's `Path`.
pub struct Scratch(tempfile::TempDir);

impl Scratch {
    /// A new empty folder named `qls-<prefix>-…` in the temporary folder.
    pub fn new(prefix: &str) -> Scratch {
        Scratch(
            tempfile::Builder::new()
                .prefix(&format!("qls-{prefix}-"))
                .tempdir()
                .expect("a temporary folder"),
        )
    }
}

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        self.0.path()
    }
}

impl AsRef<std::path::Path> for Scratch {
    fn as_ref(&self) -> &std::path::Path {
        self.0.path()
    }
}
