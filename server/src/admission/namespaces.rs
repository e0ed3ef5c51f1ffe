//! The namespace plugins: `NamespaceLifecycle` (nothing is created in a namespace that
//! does not exist or is being deleted; the namespaces the cluster depends on cannot be
//! deleted), and upstream's optional `NamespaceExists` and `NamespaceAutoProvision`.
//! They read namespaces as upstream's informer does, from the watch cache.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{Attributes, MutatingPlugin, Operation};
use crate::api::ApiError;
use crate::catalog::ApiResource;
use crate::registry::Store;

/// Namespaces that may not be deleted (upstream's default set).
pub const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

fn is_namespace(a: &Attributes<'_>) -> bool {
    a.resource.def.group.is_empty() && a.resource.def.kind == "Namespace"
}

/// The namespace a write needs to exist: not for namespaces themselves, not for deletes,
/// not for the reviews (which are not stored).
fn needs_namespace<'a>(a: &Attributes<'a>) -> Option<&'a str> {
    if is_namespace(a) || a.operation == Operation::Delete || !a.resource.stored() {
        return None;
    }
    a.namespace
}

/// `NamespaceLifecycle`.
pub struct NamespaceLifecycle {
    pub store: Store,
}

#[async_trait]
impl MutatingPlugin for NamespaceLifecycle {
    async fn admit(&self, a: &Attributes<'_>, _: Option<&mut Value>) -> Result<(), ApiError> {
        if is_namespace(a)
            && a.operation == Operation::Delete
            && IMMORTAL_NAMESPACES.contains(&a.name)
        {
            return Err(ApiError::forbidden_request(
                "",
                "namespaces",
                a.name,
                "this namespace may not be deleted",
            ));
        }
        let Some(ns) = needs_namespace(a) else {
            return Ok(());
        };
        let Some(namespace) = self.store.namespace(ns).await? else {
            return Err(ApiError::namespace_not_found(ns));
        };
        let terminating = namespace["metadata"]["deletionTimestamp"].is_string()
            || namespace["status"]["phase"] == "Terminating";
        if a.operation == Operation::Create && terminating {
            return Err(ApiError::namespace_terminating(a.resource, a.name, ns));
        }
        Ok(())
    }
}

/// `NamespaceExists`: a write into a namespace that does not exist is refused (404).
pub struct NamespaceExists {
    pub store: Store,
}

#[async_trait]
impl MutatingPlugin for NamespaceExists {
    async fn admit(&self, a: &Attributes<'_>, _: Option<&mut Value>) -> Result<(), ApiError> {
        match needs_namespace(a) {
            Some(ns) if self.store.namespace(ns).await?.is_none() => {
                Err(ApiError::namespace_not_found(ns))
            }
            _ => Ok(()),
        }
    }
}

/// `NamespaceAutoProvision`: creating into a namespace that does not exist creates it.
pub struct NamespaceAutoProvision {
    pub store: Store,
    /// The Namespace kind's catalog entry.
    pub namespaces: Arc<ApiResource>,
}

#[async_trait]
impl MutatingPlugin for NamespaceAutoProvision {
    async fn admit(&self, a: &Attributes<'_>, _: Option<&mut Value>) -> Result<(), ApiError> {
        let Some(ns) = needs_namespace(a).filter(|_| a.operation == Operation::Create) else {
            return Ok(());
        };
        if a.dry_run || self.store.namespace(ns).await?.is_some() {
            return Ok(());
        }
        let obj = json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": ns } });
        self.store.ensure(&self.namespaces, obj).await
    }
}
