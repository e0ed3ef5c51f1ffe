//! `definitions`: a definition file through codegen (load → model → validate → emit),
//! the way `cargo run -p codegen` reads `api-defs/` and the server's
//! `--definitions-dir` controller reads a directory while serving. Rust when the text
//! derives `Resource`, YAML otherwise.

use codegen::SourceFile;

/// Runs one input.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = if text.contains("derive(") {
        "api-defs/fuzz/definition.rs"
    } else {
        "api-defs/fuzz/definition.yaml"
    };
    let source = SourceFile {
        path: path.into(),
        text: text.into(),
    };
    // Diagnostics are the expected answer to most inputs; a panic is the bug.
    let _ = codegen::generate(&[source]);
}
