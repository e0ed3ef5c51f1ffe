//! `cargo run -p codegen [-- --check]`: regenerate `server/src/generated/` from
//! `api-defs/`, or (with `--check`) write nothing and fail when anything is stale.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::{env, fs};

use codegen::{generate, SourceFile, GENERATED_DIR};

fn main() -> ExitCode {
    let mut check = false;
    let mut root = workspace_root();
    let mut args = env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--check" => check = true,
            "--root" => match args.next() {
                Some(r) => root = PathBuf::from(r),
                None => return usage("--root needs a directory"),
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => return usage(&format!("unknown argument `{other}`")),
        }
    }
    match run(&root, check) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

const USAGE: &str = "usage: cargo run -p codegen [-- [--check] [--root DIR]]
  Regenerates server/src/generated/ from api-defs/.
  --check     write nothing; exit 1 naming each stale file
  --root DIR  the workspace root (default: the one codegen was built in)";

fn usage(problem: &str) -> ExitCode {
    eprintln!("error: {problem}\n{USAGE}");
    ExitCode::from(2)
}

fn workspace_root() -> PathBuf {
    // CARGO_MANIFEST_DIR is codegen/; the workspace root is its parent.
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(Path::to_path_buf).unwrap_or(manifest)
}

fn run(root: &Path, check: bool) -> std::io::Result<ExitCode> {
    let mut paths = Vec::new();
    collect(&root.join("api-defs"), &mut paths)?;
    paths.sort();
    let mut sources = Vec::new();
    for p in paths {
        let rel = p
            .strip_prefix(root)
            .unwrap_or(&p)
            .to_string_lossy()
            .replace('\\', "/");
        sources.push(SourceFile {
            path: rel,
            text: fs::read_to_string(&p)?,
        });
    }
    let files = match generate(&sources) {
        Ok(f) => f,
        Err(diags) => {
            eprintln!("{diags}");
            return Ok(ExitCode::FAILURE);
        }
    };

    let gen_dir = root.join(GENERATED_DIR);
    let mut existing = Vec::new();
    if gen_dir.exists() {
        collect_all(&gen_dir, &mut existing)?;
    }
    let expected: Vec<PathBuf> = files.iter().map(|f| root.join(&f.path)).collect();
    let mut stale = Vec::new();
    for f in &files {
        let path = root.join(&f.path);
        if fs::read_to_string(&path).ok().as_deref() != Some(f.contents.as_str()) {
            stale.push(f.path.clone());
            if !check {
                fs::create_dir_all(path.parent().expect("generated files live in a directory"))?;
                fs::write(&path, &f.contents)?;
            }
        }
    }
    for e in existing.iter().filter(|e| !expected.contains(e)) {
        stale.push(
            e.strip_prefix(root)
                .unwrap_or(e)
                .to_string_lossy()
                .into_owned(),
        );
        if !check {
            fs::remove_file(e)?;
        }
    }
    stale.sort();
    if check {
        if stale.is_empty() {
            println!("codegen: {} generated files are up to date", files.len());
            Ok(ExitCode::SUCCESS)
        } else {
            for s in &stale {
                eprintln!("stale: {s}");
            }
            eprintln!(
                "codegen --check: {} generated file(s) are stale; run `cargo run -p codegen`",
                stale.len()
            );
            Ok(ExitCode::FAILURE)
        }
    } else {
        println!("codegen: {} files, {} updated", files.len(), stale.len());
        Ok(ExitCode::SUCCESS)
    }
}

/// Definition files (`.yaml`, `.yml`, `.rs`) under `dir`, recursively; README and other files are ignored.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "rs")
        ) {
            out.push(path);
        }
    }
    Ok(())
}

fn collect_all(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_all(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}
