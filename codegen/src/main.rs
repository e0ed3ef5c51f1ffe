//! `cargo run -p codegen [-- --check]`: regenerate `server/src/generated/` from
//! `api-defs/`, or (with `--check`) write nothing and fail when anything is stale.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::{env, fs};

use codegen::{generate, SourceFile, GENERATED_DIR};

fn main() -> ExitCode {
    let mut check = false;
    let mut root = workspace_root();
    let mut crds: Option<Vec<String>> = None;
    let mut import: Option<Option<PathBuf>> = None;
    let mut out: Option<PathBuf> = None;
    let mut apiservice: Option<ApiServiceArgs> = None;
    // `docs`: write only the Markdown API reference.
    let mut docs = false;
    let mut args = env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "apiservice" if apiservice.is_none() && crds.is_none() && import.is_none() => {
                apiservice = Some(ApiServiceArgs::default())
            }
            flag @ ("--service" | "--port" | "--ca-file") if apiservice.is_some() => {
                let Some(value) = args.next() else {
                    return usage(&format!("{flag} needs a value"));
                };
                let a = apiservice.get_or_insert_with(Default::default);
                match flag {
                    "--service" => a.service = Some(value),
                    "--port" => a.port = Some(value),
                    _ => a.ca_file = Some(PathBuf::from(value)),
                }
            }
            "import-openapi" if import.is_none() && crds.is_none() => import = Some(None),
            "--out" if import.is_some() => match args.next() {
                Some(o) => out = Some(PathBuf::from(o)),
                None => return usage("--out needs a directory"),
            },
            dir if matches!(import, Some(None)) && !dir.starts_with('-') => {
                import = Some(Some(PathBuf::from(dir)))
            }
            "docs" if crds.is_none() && import.is_none() && apiservice.is_none() => docs = true,
            "crd" if crds.is_none() => crds = Some(Vec::new()),
            path if crds.is_some() && !path.starts_with('-') => {
                crds.get_or_insert_with(Vec::new).push(path.to_string())
            }
            "--check" => check = true,
            "--root" => match args.next() {
                Some(r) => root = PathBuf::from(r),
                None => return usage("--root needs a directory"),
            },
            "--explain" => {
                let Some(name) = args.next() else {
                    return usage("--explain needs a code, e.g. `--explain E0002`");
                };
                return explain(&name);
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => return usage(&format!("unknown argument `{other}`")),
        }
    }
    if let Some(upstream) = import {
        let Some(upstream) = upstream else {
            return usage("import-openapi needs the upstream directory");
        };
        let out = out.unwrap_or_else(|| root.clone());
        return match import_openapi(&root, &upstream, &out) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        };
    }
    if let Some(a) = apiservice {
        return match print_apiservices(&root, a) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        };
    }
    if let Some(paths) = crds {
        return match crd(&root, &paths) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        };
    }
    let scope = if docs {
        format!("{GENERATED_DIR}/{}", codegen::emit::reference::DIR)
    } else {
        GENERATED_DIR.to_string()
    };
    match run(&root, check, &scope) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

const USAGE: &str = "usage: cargo run -p codegen [-- [docs] [--check] [--root DIR]]
       cargo run -p codegen -- --explain CODE
       cargo run -p codegen -- crd [DEFINITION...] [--root DIR]
       cargo run -p codegen -- import-openapi UPSTREAM-DIR [--out DIR] [--root DIR]
       cargo run -p codegen -- apiservice --service NAMESPACE/NAME [--port N] [--ca-file FILE]
  Regenerates server/src/generated/ from api-defs/: the typed Rust, the catalog, the
  OpenAPI documents (openapi/), the Markdown API reference (reference/) and the CRD
  manifests of the custom kinds (crds/).
  docs        only the Markdown API reference, one page per group-version
  --check     write nothing; exit 1 naming each stale file
  --root DIR  the workspace root (default: the one codegen was built in)
  --explain CODE  print the longer explanation of a diagnostic code (E0002), with an
              erroneous example and its fix
  crd         print the CustomResourceDefinition manifest of each DEFINITION file
              (paths under the root; default: every custom definition), as YAML
  import-openapi  write the definitions api-defs/upstream.yaml selects, from upstream's
              OpenAPI v3 documents and generated.proto files in UPSTREAM-DIR, under
              DIR/api-defs/ (default DIR: the root); then run codegen
  apiservice  print an APIService per group-version of the custom definitions, pointing
              at Service NAMESPACE/NAME port N (default 443), trusting the PEM CA in
              FILE (without one: insecureSkipTLSVerify), as YAML";

/// `--explain E0xxx`: the code's explanation, or the list of codes for an unknown one.
fn explain(name: &str) -> ExitCode {
    match codegen::Code::parse(name) {
        Some(code) => {
            print!("{}", code.explanation());
            ExitCode::SUCCESS
        }
        None => {
            eprintln!("error: `{name}` is not a codegen diagnostic code; the codes are:");
            for c in codegen::Code::ALL {
                eprintln!("  {c}  {}", c.title());
            }
            ExitCode::from(2)
        }
    }
}

/// Prints `diags` as rustc draws errors, with the lines of the files under `root`.
fn report(root: &Path, diags: &codegen::Diagnostics) {
    eprint!(
        "{}",
        diags.render(&|path| fs::read_to_string(root.join(path)).ok())
    );
}

fn usage(problem: &str) -> ExitCode {
    eprintln!("error: {problem}\n{USAGE}");
    ExitCode::from(2)
}

fn workspace_root() -> PathBuf {
    // CARGO_MANIFEST_DIR is codegen/; the workspace root is its parent.
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(Path::to_path_buf).unwrap_or(manifest)
}

/// Every definition file under `root/api-defs`, with paths relative to `root`.
fn sources(root: &Path) -> std::io::Result<Vec<SourceFile>> {
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
    Ok(sources)
}

/// Writes (or with `check`, compares) the generated files under `scope`, a directory
/// codegen owns: the whole generated directory, or its `reference/` for `docs`.
fn run(root: &Path, check: bool, scope: &str) -> std::io::Result<ExitCode> {
    let sources = sources(root)?;
    let files = match generate(&sources) {
        Ok(f) => f,
        Err(diags) => {
            report(root, &diags);
            return Ok(ExitCode::FAILURE);
        }
    };
    let files: Vec<_> = files
        .into_iter()
        .filter(|f| f.path.starts_with(&format!("{scope}/")))
        .collect();

    let gen_dir = root.join(scope);
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

/// `codegen import-openapi`: the selected upstream kinds, written as definitions.
fn import_openapi(root: &Path, upstream: &Path, out: &Path) -> std::io::Result<ExitCode> {
    let rel = format!("api-defs/{}", codegen::import::SELECTION_FILE);
    let selection = fs::read_to_string(root.join(&rel))
        .map_err(|e| std::io::Error::new(e.kind(), format!("{rel}: {e}")))?;
    let read = |p: &str| fs::read_to_string(upstream.join(p)).map_err(|e| e.to_string());
    let label = upstream.to_string_lossy();
    let files = match codegen::import::import(&rel, &selection, &label, &read) {
        Ok(f) => f,
        Err(diags) => {
            report(root, &diags);
            return Ok(ExitCode::FAILURE);
        }
    };
    let mut changed = 0;
    for f in &files {
        let path = out.join(&f.path);
        if fs::read_to_string(&path).ok().as_deref() != Some(f.contents.as_str()) {
            changed += 1;
            fs::create_dir_all(path.parent().expect("definitions live in a directory"))?;
            fs::write(&path, &f.contents)?;
        }
    }
    println!(
        "import-openapi: {} definitions, {changed} updated",
        files.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// `codegen apiservice`'s flags.
#[derive(Default)]
struct ApiServiceArgs {
    service: Option<String>,
    port: Option<String>,
    ca_file: Option<PathBuf>,
}

/// `codegen apiservice`: the APIService manifests a parent cluster applies to send the
/// custom definitions' group-versions to a server built from them.
fn print_apiservices(root: &Path, a: ApiServiceArgs) -> std::io::Result<ExitCode> {
    let Some((namespace, name)) = a.service.as_deref().and_then(|s| s.split_once('/')) else {
        return Ok(usage("apiservice needs --service NAMESPACE/NAME"));
    };
    let port = match a.port.as_deref().map(str::parse::<u16>) {
        None => 443,
        Some(Ok(p)) if p > 0 => p,
        Some(_) => return Ok(usage("--port must be a port number (1-65535)")),
    };
    let ca_bundle = match &a.ca_file {
        Some(f) => {
            use base64::Engine;
            Some(base64::engine::general_purpose::STANDARD.encode(fs::read(f)?))
        }
        None => None,
    };
    let defs = match codegen::load_definitions(&sources(root)?) {
        Ok(d) => d,
        Err(diags) => {
            report(root, &diags);
            return Ok(ExitCode::FAILURE);
        }
    };
    let target = codegen::emit::apiservice::Target {
        namespace: namespace.to_string(),
        name: name.to_string(),
        port,
        ca_bundle,
    };
    for m in codegen::emit::apiservice::manifests(&defs, &target) {
        let yaml = serde_yaml::to_string(&m).expect("JSON values always serialize");
        print!("---\n{yaml}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `codegen crd`: the CRD manifests of the named definitions (all custom ones when none
/// is named), as YAML documents on stdout.
fn crd(root: &Path, paths: &[String]) -> std::io::Result<ExitCode> {
    let defs = match codegen::load_definitions(&sources(root)?) {
        Ok(d) => d,
        Err(diags) => {
            report(root, &diags);
            return Ok(ExitCode::FAILURE);
        }
    };
    let wanted: Vec<String> = paths
        .iter()
        .map(|p| p.trim_start_matches("./").replace('\\', "/"))
        .collect();
    let mut docs = Vec::new();
    for p in &wanted {
        if !defs.iter().any(|d| &d.location.file == p) {
            eprintln!(
                "error: {p}: no definition (give a path under api-defs/, relative to the root)"
            );
            return Ok(ExitCode::FAILURE);
        }
    }
    // A kind in several versions is one CRD: named by any of its files, printed once.
    let families = codegen::versions::families(&defs);
    let mut printed_families = Vec::new();
    for d in &defs {
        let family_key = (d.group.clone(), d.kind.clone());
        let family = families.get(&family_key);
        let named = match family {
            Some(members) => members.iter().any(|m| wanted.contains(&m.location.file)),
            None => wanted.contains(&d.location.file),
        };
        if !wanted.is_empty() && !named {
            continue;
        }
        let manifest = match family {
            Some(_) if printed_families.contains(&family_key) => continue,
            Some(members) => {
                printed_families.push(family_key);
                codegen::emit::crd::family_manifest(members).map(|f| {
                    if let Some(why) = &f.needs_webhook {
                        eprintln!("warning: {}: conversion webhook needed: {why}", d.location);
                    }
                    codegen::emit::crd::family_yaml(&f)
                })
            }
            None => codegen::emit::crd::manifest(d)
                .map(|m| serde_yaml::to_string(&m).expect("JSON values always serialize")),
        };
        match manifest {
            Ok(m) => docs.push(m),
            // Asked for by name: say why not; otherwise built-in kinds are skipped.
            Err(why) if named => {
                eprintln!("error: {}: {why}", d.location);
                return Ok(ExitCode::FAILURE);
            }
            Err(_) => {}
        }
    }
    for yaml in docs {
        print!("---\n{yaml}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Definition files (`.yaml`, `.yml`, `.rs`) under `dir`, recursively; README and other files are ignored.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.file_name().and_then(|n| n.to_str()) == Some(codegen::import::SELECTION_FILE)
        {
            // The importer's selection, not a definition.
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
