//! The namespace controller: once a namespace is Terminating, delete everything in it
//! (objects with finalizers wait for them), then drop the namespace's `kubernetes`
//! finalizer so the namespace itself disappears.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::scope::Scope;
use crate::api::options::DeleteOptions;
use crate::api::options::ListOptions;
use crate::api::ApiError;
use crate::catalog::Catalog;
use crate::registry::parts::Part;
use crate::registry::store::{Store, Target, WriteContext};

/// How often Terminating namespaces are re-examined.
const RESYNC: Duration = Duration::from_millis(500);

/// Runs the controller until `scope` stops.
pub fn spawn(catalog: Arc<Catalog>, store: Store, scope: &Scope) {
    scope.spawn("namespace controller", async move {
        loop {
            if let Err(e) = sync_all(&catalog, &store).await {
                tracing::warn!(error = %e, "namespace controller");
            }
            tokio::time::sleep(RESYNC).await;
        }
    });
}

async fn sync_all(catalog: &Catalog, store: &Store) -> Result<(), ApiError> {
    let Some(namespaces) = catalog.get("", "v1", "namespaces") else {
        return Ok(());
    };
    let all = store
        .list(&namespaces, None, &ListOptions::default())
        .await?;
    for ns in all
        .items
        .iter()
        .filter(|n| n["metadata"]["deletionTimestamp"].is_string())
    {
        let name = ns["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if empty_namespace(catalog, store, &name).await? {
            // Remove our finalizer; the store deletes the namespace once none remain.
            store
                .patch(
                    &namespaces,
                    None,
                    &name,
                    Target::Part(Part::NamespaceFinalize),
                    &WriteContext::new("namespace-controller"),
                    |old: &Value| {
                        let mut new = old.clone();
                        let rest: Vec<Value> = old["spec"]["finalizers"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter(|f| *f != "kubernetes")
                            .cloned()
                            .collect();
                        new["spec"]["finalizers"] = json!(rest);
                        Ok(new)
                    },
                )
                .await?;
        }
    }
    Ok(())
}

/// Deletes what is left in `ns`; true once nothing remains.
async fn empty_namespace(catalog: &Catalog, store: &Store, ns: &str) -> Result<bool, ApiError> {
    let mut remaining = 0;
    for res in catalog
        .all()
        .iter()
        .filter(|r| r.namespaced() && r.stored())
    {
        let objects = store.list(res, Some(ns), &ListOptions::default()).await?;
        for obj in &objects.items {
            remaining += 1;
            let name = obj["metadata"]["name"].as_str().unwrap_or_default();
            match store
                .delete(res, Some(ns), name, &DeleteOptions::default(), None)
                .await
            {
                Ok(d) if d.deleted => remaining -= 1,
                Ok(_) => {}
                Err(e) if e.is_not_found() => remaining -= 1,
                Err(e) => return Err(e),
            }
        }
    }
    Ok(remaining == 0)
}
