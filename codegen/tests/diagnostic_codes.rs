//! One test per diagnostic code, driven by `--explain`'s own text: each explanation's
//! erroneous example must produce its code (the rendered diagnostics are snapshotted in
//! `snapshots/codes/E0xxx.txt`; `UPDATE_SNAPSHOTS=1` rewrites them) and its fixed example
//! must generate cleanly, so the explanations cannot drift from what codegen reports.

use std::fs;
use std::path::PathBuf;

use codegen::{generate, Code, SourceFile};

/// The fenced blocks of an explanation: (language, text).
fn examples(code: Code) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in code.explanation().lines() {
        match (&mut current, line.strip_prefix("```")) {
            (None, Some(lang)) => current = Some((lang.to_string(), String::new())),
            (Some(_), Some("")) => out.extend(current.take()),
            (Some((_, text)), _) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

/// The example as the definition files of a tree: one, or one per YAML document when
/// the example defines several versions of a kind (documents separated by `---`).
fn sources(lang: &str, text: &str) -> Vec<SourceFile> {
    let ext = match lang {
        "yaml" => "yaml",
        "rust" => "rs",
        other => panic!("examples are yaml or rust, not {other}"),
    };
    let documents: Vec<&str> = if ext == "yaml" {
        text.split("---\n").collect()
    } else {
        vec![text]
    };
    if documents.len() == 1 {
        return vec![SourceFile {
            path: format!("api-defs/example.{ext}"),
            text: text.to_string(),
        }];
    }
    documents
        .iter()
        .enumerate()
        .map(|(i, doc)| SourceFile {
            path: format!("api-defs/example-{}.{ext}", i + 1),
            text: doc.to_string(),
        })
        .collect()
}

fn check_snapshot(code: Code, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots/codes")
        .join(format!("{code}.txt"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, actual).unwrap();
        return;
    }
    let expected = fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing snapshot {}; run with UPDATE_SNAPSHOTS=1",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "snapshot {} differs; run with UPDATE_SNAPSHOTS=1 and review the diff.\n--- actual ---\n{actual}",
        path.display()
    );
}

#[test]
fn every_code_has_an_explanation_titled_with_its_code() {
    for &code in Code::ALL {
        let first = code.explanation().lines().next().unwrap_or_default();
        assert_eq!(first, format!("# {code}: {}", code.title()));
        assert_eq!(
            examples(code).len(),
            2,
            "{code}: an erroneous example and its fix"
        );
        assert_eq!(Code::parse(&code.as_str().to_lowercase()), Some(code));
    }
}

#[test]
fn every_erroneous_example_reports_its_code_and_every_fix_generates() {
    for &code in Code::ALL.iter().filter(|&&c| c != Code::Upstream) {
        let blocks = examples(code);
        let (lang, bad) = &blocks[0];
        let srcs = sources(lang, bad);
        let diags = generate(&srcs).expect_err(&format!("{code}'s erroneous example must fail"));
        assert!(
            diags.0.iter().any(|d| d.code == code),
            "{code}'s example reports {:?}:\n{diags}",
            diags.codes()
        );
        check_snapshot(
            code,
            &diags.render(&|p| srcs.iter().find(|s| s.path == p).map(|s| s.text.clone())),
        );
        let (lang, fixed) = &blocks[1];
        if let Err(d) = generate(&sources(lang, fixed)) {
            panic!("{code}'s fixed example must generate:\n{d}");
        }
    }
}

#[test]
fn a_selection_naming_a_kind_upstream_lacks_reports_e0019() {
    let selection = &examples(Code::Upstream)[0].1;
    let empty = r#"{"openapi": "3.0.0", "paths": {}, "components": {"schemas": {}}}"#;
    let read = |_: &str| Ok(empty.to_string());
    let diags = codegen::import::import("api-defs/upstream.yaml", selection, "upstream", &read)
        .expect_err("the selection names a kind the documents lack");
    assert_eq!(diags.codes(), [Code::Upstream], "{diags}");
    check_snapshot(
        Code::Upstream,
        &diags.render(&|p| (p == "api-defs/upstream.yaml").then(|| selection.clone())),
    );
}
