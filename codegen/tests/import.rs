//! `codegen import-openapi` against upstream's reference data (`UPSTREAM_API_DIR`, by
//! default `/work/shared/upstream-api`, outside the repository) writes exactly the
//! imported definitions that are committed under `api-defs/`. Missing data fails the test.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn upstream_dir() -> PathBuf {
    let dir = PathBuf::from(
        std::env::var("UPSTREAM_API_DIR").unwrap_or_else(|_| "/work/shared/upstream-api".into()),
    );
    assert!(
        dir.join("openapi/v3").is_dir() && dir.join("proto").is_dir(),
        "upstream API data not found at {} (set UPSTREAM_API_DIR to the directory with openapi/ and proto/)",
        dir.display()
    );
    dir
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            yaml_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "yaml") {
            out.push(p);
        }
    }
}

#[test]
fn the_import_reproduces_the_committed_definitions() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_codegen"))
        .arg("--root")
        .arg(repo)
        .arg("import-openapi")
        .arg(upstream_dir())
        .arg("--out")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut produced = Vec::new();
    yaml_files(&tmp.path().join("api-defs"), &mut produced);
    assert!(produced.len() >= 11, "{produced:?}");
    for p in &produced {
        let rel = p.strip_prefix(tmp.path()).unwrap();
        let committed = fs::read_to_string(repo.join(rel))
            .unwrap_or_else(|e| panic!("{} is imported but not committed: {e}", rel.display()));
        assert_eq!(
            fs::read_to_string(p).unwrap(),
            committed,
            "{} differs from the import; run `cargo run -p codegen -- import-openapi {}`",
            rel.display(),
            upstream_dir().display()
        );
    }
    // Every committed import is still selected.
    let mut committed = Vec::new();
    yaml_files(&repo.join("api-defs"), &mut committed);
    for c in committed {
        let text = fs::read_to_string(&c).unwrap();
        if text.starts_with(codegen::import::HEADER) {
            let rel = c.strip_prefix(repo).unwrap();
            assert!(
                tmp.path().join(rel).exists(),
                "{} was imported once but is no longer selected in api-defs/upstream.yaml",
                rel.display()
            );
        }
    }
}

#[test]
fn bad_upstream_data_is_reported_with_positions() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let up = tmp.path().join("up");
    fs::create_dir_all(up.join("openapi/v3")).unwrap();
    fs::write(
        up.join("openapi/v3/api__v1_openapi.json"),
        "{\n  \"components\": [\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_codegen"))
        .arg("--root")
        .arg(repo)
        .arg("import-openapi")
        .arg(&up)
        .arg("--out")
        .arg(tmp.path().join("out"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error[E0001]: invalid JSON")
            && err.contains("up/openapi/v3/api__v1_openapi.json:2:"),
        "{err}"
    );
    assert!(
        !tmp.path().join("out").exists(),
        "nothing is written on errors"
    );
}
