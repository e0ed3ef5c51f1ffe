//! The README's "Add a resource" walk, done for real on a copy of the repository: write
//! the README's definition, `cargo run -p codegen` (and `--check` before and after),
//! rebuild, start the server, `kubectl apply` the README's object, `kubectl get` it.
//!
//! The copy builds into the shared target directory (so dependencies are reused) under
//! renamed binaries, so it never replaces the binaries other tests start.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use apiserver_tests::{workspace_root, TestServer};

/// The `yaml` code blocks of the README's "Add a resource" section, in order.
fn readme_yaml_blocks() -> Vec<String> {
    let readme = fs::read_to_string(workspace_root().join("README.md")).expect("README.md");
    let section = readme
        .split("## Add a resource")
        .nth(1)
        .expect("README has an 'Add a resource' section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut blocks = Vec::new();
    let mut rest = section;
    while let Some(start) = rest.find("```yaml\n") {
        let body = &rest[start + 8..];
        let end = body.find("```").expect("closed code block");
        // Blocks are indented under list items; drop the common indentation.
        let lines: Vec<&str> = body[..end].lines().collect();
        let indent = lines
            .iter()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.len() - l.trim_start().len())
            .min()
            .unwrap_or(0);
        blocks.push(
            lines
                .iter()
                .map(|l| l.get(indent..).unwrap_or("").to_string())
                .collect::<Vec<_>>()
                .join("\n")
                + "\n",
        );
        rest = &body[end + 3..];
    }
    blocks
}

/// The object manifest inside the `cat <<'YAML' | kubectl apply -f -` block of the
/// README's "Add a resource" section.
fn readme_object() -> String {
    let readme = fs::read_to_string(workspace_root().join("README.md")).expect("README.md");
    let readme = &readme[readme
        .find("## Add a resource")
        .expect("README has an 'Add a resource' section")..];
    let start = readme
        .find("<<'YAML'")
        .expect("README applies an object from a heredoc");
    let body = &readme[start..];
    let body = &body[body.find('\n').expect("heredoc body") + 1..];
    let end = body.find("YAML\n").expect("heredoc end");
    let lines: Vec<&str> = body[..end].lines().collect();
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    lines
        .iter()
        .map(|l| l.get(indent..).unwrap_or("").to_string())
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "target" || name == ".git" || name == ".apiserver-data" {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        if src.is_dir() {
            copy_tree(&src, &dst);
        } else {
            fs::copy(&src, &dst).unwrap();
        }
    }
}

/// Renames the `[[bin]]` named `from` in a copied manifest.
fn rename_bin(manifest: &Path, from: &str, to: &str) {
    let text = fs::read_to_string(manifest).unwrap();
    let needle = format!("[[bin]]\nname = \"{from}\"");
    assert!(
        text.contains(&needle),
        "{} has no [[bin]] {from}",
        manifest.display()
    );
    fs::write(
        manifest,
        text.replace(&needle, &format!("[[bin]]\nname = \"{to}\"")),
    )
    .unwrap();
}

/// `cargo <args>` in `dir`, sharing the main target directory, with the variables
/// `cargo test` set for this crate removed (they would make build scripts rerun).
fn cargo(dir: &Path, target: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target);
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        if key == "OUT_DIR"
            || key.starts_with("CARGO_PKG_")
            || key.starts_with("CARGO_BIN_EXE_")
            || matches!(
                key,
                "CARGO_MANIFEST_DIR"
                    | "CARGO_MANIFEST_PATH"
                    | "CARGO_CRATE_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
                    | "CARGO_RUSTC_CURRENT_DIR"
            )
        {
            cmd.env_remove(key);
        }
    }
    cmd.output().expect("running cargo")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn readme_add_a_resource_walkthrough() {
    let blocks = readme_yaml_blocks();
    let definition = blocks.first().expect("README shows the definition").clone();
    assert!(
        definition.contains("kind: Gizmo"),
        "first yaml block is the definition:\n{definition}"
    );
    let object = readme_object();

    let root = workspace_root();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(|d| root.join(d))
        .unwrap_or_else(|| root.join("target"));
    let copy = tempfile::TempDir::with_prefix("apiserver-walkthrough-").unwrap();
    let repo = copy.path();
    copy_tree(&root, repo);
    rename_bin(
        &repo.join("server/Cargo.toml"),
        "apiserver",
        "apiserver-walkthrough",
    );
    rename_bin(
        &repo.join("codegen/Cargo.toml"),
        "codegen",
        "codegen-walkthrough",
    );

    // 1. Write the definition.
    fs::write(repo.join("api-defs/examples/gizmo.yaml"), &definition).unwrap();
    let stale = cargo(
        repo,
        &target,
        &["run", "-q", "-p", "codegen", "--", "--check"],
    );
    assert!(
        !stale.status.success(),
        "--check must fail before regenerating:\n{}",
        text(&stale)
    );
    assert!(
        text(&stale).contains("stale: server/src/generated/catalog.json"),
        "{}",
        text(&stale)
    );

    // 2. Regenerate.
    let generate = cargo(repo, &target, &["run", "-q", "-p", "codegen"]);
    assert!(
        generate.status.success(),
        "cargo run -p codegen failed:\n{}",
        text(&generate)
    );
    let check = cargo(
        repo,
        &target,
        &["run", "-q", "-p", "codegen", "--", "--check"],
    );
    assert!(
        check.status.success(),
        "--check after regenerating:\n{}",
        text(&check)
    );
    let catalog = fs::read_to_string(repo.join("server/src/generated/catalog.json")).unwrap();
    assert!(
        catalog.contains("\"kind\":\"Gizmo\""),
        "the catalog has the new kind"
    );

    // 3. Rebuild and start the server, then use the new kind with kubectl.
    let build = cargo(
        repo,
        &target,
        &[
            "build",
            "-q",
            "-p",
            "apiserver",
            "--bin",
            "apiserver-walkthrough",
        ],
    );
    assert!(
        build.status.success(),
        "building the server with the new kind failed:\n{}",
        text(&build)
    );
    let bin = target.join("debug").join(format!(
        "apiserver-walkthrough{}",
        std::env::consts::EXE_SUFFIX
    ));
    // This test binary holds only this test, so the variable affects nothing else.
    std::env::set_var("APISERVER_BIN", &bin);
    let server = TestServer::start();
    let manifest = server.write_file("gizmo.yaml", &object);
    let applied = server.kubectl_ok(&["apply", "-f", manifest.to_str().unwrap()]);
    assert!(
        applied.contains("gizmo.example.dev/first created"),
        "{applied}"
    );
    let got = server.kubectl_ok(&["get", "gizmos"]);
    assert!(
        got.contains("NAME") && got.contains("SIZE"),
        "printer column from the definition:\n{got}"
    );
    let row = got
        .lines()
        .find(|l| l.starts_with("first"))
        .unwrap_or_else(|| panic!("no row for first:\n{got}"));
    assert_eq!(
        row.split_whitespace().nth(1),
        Some("3"),
        "SIZE column:\n{got}"
    );
    let short = server.kubectl_ok(&["get", "gz", "first", "-o", "jsonpath={.spec.size}"]);
    assert_eq!(short, "3");
    let resources = server.kubectl_ok(&["api-resources", "--api-group=example.dev"]);
    assert!(
        resources.contains("gizmos") && resources.contains("gz"),
        "{resources}"
    );
}
