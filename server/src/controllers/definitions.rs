//! The definitions-directory controller (`--definitions-dir`): keeps the catalog in step
//! with a directory of YAML definitions, so a kind is served (and stops being served)
//! while the server runs, with no codegen and no restart.
//!
//! Each file is loaded and checked by codegen's own loader and validator, so a mistake
//! is logged as the same `file:line:col` diagnostic `cargo run -p codegen` prints, and the
//! file is skipped until it is fixed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::catalog::Catalog;

/// How often the directory is read again.
const RESYNC: Duration = Duration::from_millis(300);

/// Definition files larger than this are refused (a definition is a few KiB).
const MAX_FILE_BYTES: u64 = 1 << 20;

/// `(group, version, plural)` a file registered.
type Served = (String, String, String);

/// Runs the controller until the process ends.
pub fn spawn(catalog: Arc<Catalog>, dir: PathBuf) {
    crate::panics::spawn("definitions controller", async move {
        // file → (its text, what it registered: None when it failed to load)
        let mut files: BTreeMap<PathBuf, (String, Option<Served>)> = BTreeMap::new();
        loop {
            let found = read_dir(&dir).await;
            sync(&catalog, &mut files, found);
            tokio::time::sleep(RESYNC).await;
        }
    });
}

/// The YAML files of `dir` and their texts (unreadable ones are logged and left out).
async fn read_dir(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut entries = match tokio::fs::read_dir(dir).await {
        Ok(e) => e,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), "--definitions-dir: {e}");
            return out;
        }
    };
    while let Ok(Some(entry)) = entries.next_entry().await {
        let path = entry.path();
        if !path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            continue;
        }
        match entry.metadata().await {
            Ok(m) if m.len() > MAX_FILE_BYTES => {
                tracing::warn!(file = %path.display(), "definition larger than {MAX_FILE_BYTES} bytes; skipped");
                continue;
            }
            Ok(_) => {}
            Err(_) => continue,
        }
        if let Ok(text) = tokio::fs::read_to_string(&path).await {
            out.insert(path, text);
        }
    }
    out
}

/// Registers new and changed files, unregisters what changed or disappeared.
fn sync(
    catalog: &Catalog,
    files: &mut BTreeMap<PathBuf, (String, Option<Served>)>,
    found: BTreeMap<PathBuf, String>,
) {
    let stale: Vec<PathBuf> = files
        .iter()
        .filter(|(path, (text, _))| found.get(*path) != Some(text))
        .map(|(path, _)| path.clone())
        .collect();
    for path in stale {
        if let Some((_, Some((group, version, plural)))) = files.remove(&path) {
            catalog.unregister(&group, &version, &plural);
            tracing::info!(file = %path.display(), "unregistered {plural}.{group}/{version}");
        }
    }
    for (path, text) in found {
        if files.contains_key(&path) {
            continue;
        }
        let served = register(catalog, &path, &text);
        files.insert(path, (text, served));
    }
}

/// Loads, validates and registers one file; `None` (logged) when it cannot be served.
fn register(catalog: &Catalog, path: &Path, text: &str) -> Option<Served> {
    let name = path.display().to_string();
    let source = codegen::SourceFile {
        path: name.clone(),
        text: text.to_string(),
    };
    let def = match codegen::load_definitions(&[source]) {
        Ok(mut defs) if defs.len() == 1 => defs.remove(0),
        Ok(_) => {
            tracing::warn!(file = %name, "a definition file holds one definition");
            return None;
        }
        Err(diags) => {
            tracing::warn!("{name}: not served:\n{diags}");
            return None;
        }
    };
    let served = (def.group.clone(), def.version.clone(), def.plural.clone());
    match catalog.register(def) {
        Ok(res) => {
            tracing::info!(file = %name, "registered {}", res.qualified_resource());
            Some(served)
        }
        Err(e) => {
            tracing::warn!(file = %name, "not served: {e}");
            None
        }
    }
}
