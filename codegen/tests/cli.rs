//! The codegen binary on a copy of the repository's definitions: `--check` passes on a
//! fresh tree, fails naming the stale file after a definition changes, and passes again
//! after regenerating. Bad definitions write nothing.

use std::fs;
use std::path::Path;
use std::process::Command;

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            fs::copy(&p, &dest).unwrap();
        }
    }
}

fn codegen(root: &Path, check: bool) -> std::process::Output {
    codegen_with(root, if check { &["--check"] } else { &[] })
}

/// The binary on the tree at `root`, with `args`.
fn codegen_with(root: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_codegen"))
        .arg("--root")
        .arg(root)
        .args(args)
        .output()
        .unwrap()
}

fn workspace() -> tempfile::TempDir {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&repo.join("api-defs"), &tmp.path().join("api-defs"));
    copy_dir(
        &repo.join("server/src/generated"),
        &tmp.path().join("server/src/generated"),
    );
    tmp
}

#[test]
fn check_detects_a_stale_definition_and_regenerating_fixes_it() {
    let tmp = workspace();
    let root = tmp.path();
    let out = codegen(root, true);
    assert!(
        out.status.success(),
        "fresh tree must be up to date: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let widget = root.join("api-defs/examples/widget.yaml");
    let text = fs::read_to_string(&widget)
        .unwrap()
        .replace("shortNames: [wd]", "shortNames: [wd, wdg]");
    fs::write(&widget, text).unwrap();
    let out = codegen(root, true);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("stale: server/src/generated/catalog.json"),
        "{stderr}"
    );

    assert!(codegen(root, false).status.success());
    assert!(codegen(root, true).status.success());
    assert!(
        fs::read_to_string(root.join("server/src/generated/catalog.json"))
            .unwrap()
            .contains("\"wdg\"")
    );
}

#[test]
fn removed_definitions_leave_no_stale_files_behind() {
    let tmp = workspace();
    let root = tmp.path();
    fs::remove_file(root.join("api-defs/examples/gadget.rs")).unwrap();
    let out = codegen(root, true);
    assert!(!out.status.success());
    assert!(codegen(root, false).status.success());
    let mod_rs = fs::read_to_string(root.join("server/src/generated/mod.rs")).unwrap();
    assert!(!mod_rs.contains("gadget"));
}

#[test]
fn a_bad_definition_writes_nothing_and_shows_the_coded_error_under_its_line() {
    let tmp = workspace();
    let root = tmp.path();
    let before = fs::read_to_string(root.join("server/src/generated/catalog.json")).unwrap();
    fs::write(root.join("api-defs/examples/oops.yaml"), "group: example.dev\nversion: v1\nkind: Oops\nscope: Namespaced\nschema:\n  type: object\n  properties:\n    spec:\n      type: strin\n").unwrap();
    let out = codegen(root, false);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    // As rustc draws errors: code, position, the line with a caret under the span, help.
    let expected = "error[E0010]: `spec` has unknown type `strin`
 --> api-defs/examples/oops.yaml:8:5
  |
8 |     spec:
  |     ^^^^
  |
  = help: did you mean `string`?
";
    assert!(stderr.contains(expected), "{stderr}");
    assert!(
        stderr.contains("try `cargo run -p codegen -- --explain E0010`"),
        "{stderr}"
    );
    assert_eq!(
        fs::read_to_string(root.join("server/src/generated/catalog.json")).unwrap(),
        before
    );
}

#[test]
fn crd_prints_the_manifest_of_a_custom_definition_and_refuses_built_in_ones() {
    let tmp = workspace();
    let root = tmp.path();
    let crd = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_codegen"))
            .arg("crd")
            .args(args)
            .arg("--root")
            .arg(root)
            .output()
            .unwrap()
    };
    let out = crd(&["api-defs/examples/widget.yaml"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "kind: CustomResourceDefinition",
        "name: widgets.example.dev",
        "group: example.dev",
        "scope: Namespaced",
        "specReplicasPath: .spec.replicas",
        "x-kubernetes-list-map-keys:",
    ] {
        assert!(stdout.contains(want), "missing {want:?} in:\n{stdout}");
    }
    assert_eq!(stdout.matches("\n---\n").count() + 1, 1, "one document");
    // Every custom definition when none is named: Gadget, Gear (once) and Widget.
    let all = String::from_utf8_lossy(&crd(&[]).stdout).into_owned();
    assert_eq!(
        all.matches("kind: CustomResourceDefinition").count(),
        3,
        "{all}"
    );
    // Either file of a kind in two versions gives its one CRD, with both versions, and
    // a warning that its conversion needs a webhook.
    let gear = crd(&["api-defs/examples/gear.yaml"]);
    assert!(gear.status.success());
    let stdout = String::from_utf8_lossy(&gear.stdout);
    assert_eq!(stdout.matches("kind: CustomResourceDefinition").count(), 1);
    for want in [
        "name: gears.example.dev",
        "  - name: v1\n    served: true\n    storage: false\n",
        "  - name: v2\n    served: true\n    storage: true\n",
        "    strategy: Webhook\n",
    ] {
        assert!(stdout.contains(want), "missing {want:?} in:\n{stdout}");
    }
    assert!(
        String::from_utf8_lossy(&gear.stderr).contains(
            "warning: api-defs/examples/gear.yaml:6:7: conversion webhook needed: example.dev Gear converts to its storage version v2 by rules (in v1)"
        ),
        "{}",
        String::from_utf8_lossy(&gear.stderr)
    );
    let builtin = crd(&["api-defs/core/v1/secret.yaml"]);
    assert!(!builtin.status.success());
    assert!(
        String::from_utf8_lossy(&builtin.stderr).contains(
            "api-defs/core/v1/secret.yaml:4:7: Secret is a built-in kind, not a custom resource"
        ),
        "{}",
        String::from_utf8_lossy(&builtin.stderr)
    );
    let missing = crd(&["api-defs/nope.yaml"]);
    assert!(!missing.status.success());
}

#[test]
fn apiservice_prints_one_api_service_per_custom_group_version() {
    let tmp = workspace();
    let root = tmp.path();
    let ca = root.join("ca.crt");
    fs::write(
        &ca,
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_codegen"))
            .arg("apiservice")
            .args(args)
            .arg("--root")
            .arg(root)
            .output()
            .unwrap()
    };
    let out = run(&[
        "--service",
        "widgets/widget-api",
        "--port",
        "6444",
        "--ca-file",
        ca.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Widget, Gadget and Gear share example.dev/v1, Gear is also example.dev/v2: two
    // APIServices; built-in groups none.
    assert_eq!(stdout.matches("kind: APIService").count(), 2, "{stdout}");
    for want in [
        "name: v1.example.dev",
        "group: example.dev",
        "namespace: widgets",
        "name: widget-api",
        "port: 6444",
        "caBundle: LS0tLS1CRUdJTi",
        "groupPriorityMinimum: 1000",
    ] {
        assert!(stdout.contains(want), "missing {want:?} in:\n{stdout}");
    }
    let without_ca = run(&["--service", "widgets/widget-api"]);
    let stdout = String::from_utf8_lossy(&without_ca.stdout);
    assert!(
        stdout.contains("insecureSkipTLSVerify: true") && stdout.contains("port: 443"),
        "{stdout}"
    );
    let missing = run(&[]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("--service NAMESPACE/NAME"));
}

#[test]
fn explain_prints_the_codes_explanation_and_lists_the_codes_for_an_unknown_one() {
    let out = Command::new(env!("CARGO_BIN_EXE_codegen"))
        .args(["--explain", "E0002"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("# E0002: a key that is not part of the grammar\n"),
        "{text}"
    );
    assert!(text.contains("shortNames: [wd]"), "{text}");

    let out = Command::new(env!("CARGO_BIN_EXE_codegen"))
        .args(["--explain", "E9999"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("`E9999` is not a codegen diagnostic code"),
        "{text}"
    );
    assert!(text.contains("  E0019  upstream's documents"), "{text}");
}

#[test]
fn docs_writes_only_the_reference_and_check_catches_a_stale_page() {
    let tmp = workspace();
    let root = tmp.path();
    let page = root.join("server/src/generated/reference/apis__example.dev__v1.md");
    let catalog = root.join("server/src/generated/catalog.json");
    let catalog_before = fs::read_to_string(&catalog).unwrap();

    // A hand edit of a page is stale.
    fs::write(&page, "edited by hand\n").unwrap();
    let out = codegen(root, true);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("stale: server/src/generated/reference/apis__example.dev__v1.md"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // `docs` after a definition changed: the page follows, nothing else is written.
    let widget = root.join("api-defs/examples/widget.yaml");
    let text = fs::read_to_string(&widget)
        .unwrap()
        .replace("Colour of the widget.", "The widget's paint.");
    fs::write(&widget, text).unwrap();
    let out = codegen_with(root, &["docs"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page_text = fs::read_to_string(&page).unwrap();
    assert!(
        page_text.contains("| `color` *(required)* | string | The widget's paint. One of `red`, `green`, `blue`. |"),
        "{page_text}"
    );
    assert_eq!(fs::read_to_string(&catalog).unwrap(), catalog_before);
}
