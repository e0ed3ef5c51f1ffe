//! Keeps a local APIService for every group-version the catalog serves, as upstream's
//! autoregistration controller does: created at start-up for the compiled-in
//! group-versions, and for those registered while serving (CRDs, `--definitions-dir`),
//! which are deleted again when their last kind goes. An APIService a user pointed at a
//! service is left alone: it takes the group-version over.

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::sync::Notify;

use super::priorities::{self, AUTOMANAGED};
use crate::api::options::DeleteOptions;
use crate::catalog::{ApiResource, Catalog};
use crate::registry::codec::decode;
use crate::registry::Store;

/// Creates the missing local APIServices now, then keeps them current in a task.
pub async fn start(
    catalog: Arc<Catalog>,
    store: Store,
    kind: Arc<ApiResource>,
) -> Result<(), String> {
    sync(&catalog, &store, &kind, true).await?;
    let changed = Arc::new(Notify::new());
    let wake = changed.clone();
    catalog.subscribe(Box::new(move |_| wake.notify_one()));
    crate::panics::spawn("APIService registration", async move {
        loop {
            changed.notified().await;
            if let Err(e) = sync(&catalog, &store, &kind, false).await {
                tracing::warn!("APIService registration: {e}");
            }
        }
    });
    Ok(())
}

/// The group-versions the catalog serves.
fn served(catalog: &Catalog) -> BTreeSet<(String, String)> {
    catalog
        .all()
        .iter()
        .map(|r| (r.def.group.to_string(), r.def.version.to_string()))
        .collect()
}

/// Creates the APIServices of served group-versions that have none, then (not at
/// start-up) deletes the local ones of group-versions no longer served. The existing
/// APIServices are read as stored and decoded one at a time: this runs on every catalog
/// change, and with a thousand CRDs a decoded list was megabytes on the heap per change.
async fn sync(
    catalog: &Catalog,
    store: &Store,
    kind: &ApiResource,
    at_start: bool,
) -> Result<(), String> {
    let served = served(catalog);
    let existing = store
        .list_stored(kind, None, &crate::controllers::from_cache())
        .await
        .map_err(|e| e.to_string())?
        .items;
    let prefix = Store::prefix(kind, None);
    let names: BTreeSet<&str> = existing
        .iter()
        .filter_map(|kv| kv.key.strip_prefix(prefix.as_str()))
        .collect();
    for (group, version) in &served {
        if names.contains(priorities::name(group, version).as_str()) {
            continue;
        }
        let obj = priorities::local(group, version, at_start);
        match store
            .create(
                kind,
                None,
                obj,
                &crate::registry::store::WriteContext::new("kube-apiserver"),
            )
            .await
        {
            Ok(_) => {}
            Err(e) if e.is_already_exists() => {}
            Err(e) => return Err(format!("creating APIService {version}.{group}: {e}")),
        }
    }
    // Local APIServices of group-versions no longer served go, but not at start-up:
    // the CRDs and definition files of the last run are still being registered then.
    if at_start {
        return Ok(());
    }
    // Names are `<version>.<group>` (validated): a served group-version's is kept
    // without decoding it.
    let served_names: BTreeSet<String> = served
        .iter()
        .map(|(group, version)| priorities::name(group, version))
        .collect();
    let candidates = existing.iter().filter(|kv| {
        kv.key
            .strip_prefix(prefix.as_str())
            .is_none_or(|name| !served_names.contains(name))
    });
    for kv in candidates {
        let obj = decode(kind, kv).map_err(|e| e.to_string())?;
        let automanaged = obj["metadata"]["labels"][AUTOMANAGED].is_string();
        let local = obj["spec"]["service"].is_null();
        let gv = (
            obj["spec"]["group"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            obj["spec"]["version"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        );
        let Some(name) = obj["metadata"]["name"].as_str() else {
            continue;
        };
        if automanaged && local && !served.contains(&gv) {
            match store
                .delete(kind, None, name, &DeleteOptions::default(), None)
                .await
            {
                Ok(_) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(format!("deleting APIService {name}: {e}")),
            }
        }
    }
    Ok(())
}
