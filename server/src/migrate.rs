//! `apiserver migrate-storage`: rewrites every stored object of the named resources in
//! the current storage version, as kube-storage-version-migrator does: through the API
//! of a running server (a kubeconfig names it), each object read and written back
//! unchanged. The server re-encodes an object stored in an older version even though
//! nothing changed (`registry::codec::in_older_version`), and leaves one already in the
//! storage version alone (same resourceVersion, no write).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use serde_json::Value;

use crate::auth::parent::{Parent, ParentError};

/// How many objects one list page asks for (kubectl's `--chunk-size` default).
const PAGE: usize = 500;

/// The flags of `apiserver migrate-storage`.
#[derive(Debug, Parser)]
#[command(
    name = "apiserver migrate-storage",
    bin_name = "apiserver migrate-storage",
    about = "Rewrites every stored object of the named resources in their current storage \
             version, through the API of a running server."
)]
struct MigrateOptions {
    /// The kubeconfig of the server to migrate (its current context).
    #[arg(long, required = true)]
    kubeconfig: PathBuf,
    /// The resources to migrate, as `<plural>.<group>` (`<plural>` for the core
    /// group), comma separated.
    #[arg(long, required = true, value_delimiter = ',')]
    resources: Vec<String>,
}

/// What migrating one resource did.
#[derive(Debug, Default, PartialEq, Eq)]
struct Outcome {
    /// Objects found.
    objects: usize,
    /// Objects the server wrote again (their resourceVersion changed).
    rewritten: usize,
    /// Objects that could not be written back, each with the reason.
    failed: Vec<String>,
}

/// Runs `apiserver migrate-storage ARGS` (`args` starts with the subcommand's name);
/// the exit code is 1 when a flag is wrong or an object could not be migrated.
pub fn run(args: &[String]) -> ExitCode {
    let options = match MigrateOptions::try_parse_from(args) {
        Ok(o) => o,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let parent = match Parent::from_kubeconfig(&options.kubeconfig, "--kubeconfig") {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut failed = false;
    for resource in &options.resources {
        match runtime.block_on(migrate(&parent, resource)) {
            Ok(outcome) => {
                println!(
                    "{resource}: {} objects, {} rewritten",
                    outcome.objects, outcome.rewritten
                );
                for f in &outcome.failed {
                    eprintln!("error: {resource}: {f}");
                }
                failed |= !outcome.failed.is_empty();
            }
            Err(e) => {
                eprintln!("error: {resource}: {e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `<plural>.<group>` split at its first dot (no dot: the core group).
fn split_resource(resource: &str) -> (&str, &str) {
    resource.split_once('.').unwrap_or((resource, ""))
}

/// The path of the group-version a resource is migrated through: its group's preferred
/// version (as kubectl and the migrator choose), which the server converts to the
/// storage version on write.
async fn group_version_path(parent: &Parent, group: &str) -> Result<String, String> {
    if group.is_empty() {
        return Ok("/api/v1".into());
    }
    let answer = parent
        .get(&format!("/apis/{group}"))
        .await
        .map_err(|e| match e {
            ParentError::Status { code: 404, .. } => {
                format!("the server does not serve the group {group:?}")
            }
            e => e.to_string(),
        })?;
    let version = answer["preferredVersion"]["groupVersion"]
        .as_str()
        .ok_or_else(|| format!("the group {group:?} has no preferred version"))?;
    Ok(format!("/apis/{version}"))
}

/// Reads every object of `resource` and writes each back unchanged.
async fn migrate(parent: &Parent, resource: &str) -> Result<Outcome, String> {
    let (plural, group) = split_resource(resource);
    let base = group_version_path(parent, group).await?;
    let served = parent.get(&base).await.map_err(|e| e.to_string())?;
    let known = served["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|r| r["name"] == plural);
    if !known {
        return Err(format!(
            "the server doesn't have a resource type {plural:?} in {}",
            base.trim_start_matches("/apis/").trim_start_matches('/')
        ));
    }
    let mut outcome = Outcome::default();
    let mut continue_token = String::new();
    loop {
        let mut path = format!("{base}/{plural}?limit={PAGE}");
        if !continue_token.is_empty() {
            path.push_str("&continue=");
            path.push_str(&percent_encode(&continue_token));
        }
        let list = parent.get(&path).await.map_err(|e| e.to_string())?;
        let kind = list["kind"].as_str().unwrap_or_default();
        let kind = kind.strip_suffix("List").unwrap_or(kind);
        for mut item in list["items"].as_array().cloned().unwrap_or_default() {
            outcome.objects += 1;
            // List items may leave out what every object in the list shares.
            item["apiVersion"] = list["apiVersion"].clone();
            item["kind"] = Value::String(kind.to_string());
            rewrite(parent, &base, plural, item, &mut outcome).await;
        }
        continue_token = list["metadata"]["continue"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if continue_token.is_empty() {
            return Ok(outcome);
        }
    }
}

/// Writes `item` back as it was read. A conflict means another write came first (which
/// stored it in the storage version too), a missing object that it was deleted: both
/// leave nothing to migrate.
async fn rewrite(parent: &Parent, base: &str, plural: &str, item: Value, outcome: &mut Outcome) {
    let meta = &item["metadata"];
    let name = meta["name"].as_str().unwrap_or_default();
    let before = meta["resourceVersion"].clone();
    let path = match meta["namespace"].as_str() {
        Some(ns) => format!("{base}/namespaces/{ns}/{plural}/{name}"),
        None => format!("{base}/{plural}/{name}"),
    };
    match parent.put(&path, &item).await {
        Ok(written) => {
            if written["metadata"]["resourceVersion"] != before {
                outcome.rewritten += 1;
            }
        }
        Err(ParentError::Status {
            code: 404 | 409, ..
        }) => {}
        Err(e) => outcome.failed.push(format!("{path}: {e}")),
    }
}

/// `s` as a query parameter value.
fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_name_their_group_after_the_first_dot() {
        assert_eq!(
            split_resource("gears.example.dev"),
            ("gears", "example.dev")
        );
        assert_eq!(split_resource("configmaps"), ("configmaps", ""));
        assert_eq!(percent_encode("a+b=/"), "a%2Bb%3D%2F");
    }
}
