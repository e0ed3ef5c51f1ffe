//! The ServiceAccount controller: a `default` ServiceAccount in every namespace, created
//! when the namespace appears and again when it is deleted, as kube-controller-manager's
//! `serviceaccount-controller` keeps it. An existing one is left as the user made it.

use serde_json::{json, Value};

use super::per_namespace::PerNamespace;

/// The ServiceAccount every namespace holds.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";

/// The `default` ServiceAccount as a [`PerNamespace`] object.
pub struct ServiceAccounts;

impl PerNamespace for ServiceAccounts {
    fn controller(&self) -> &'static str {
        "serviceaccount-controller"
    }

    fn resource(&self) -> (&'static str, &'static str, &'static str) {
        ("", "v1", "serviceaccounts")
    }

    fn name(&self) -> &'static str {
        DEFAULT_SERVICE_ACCOUNT
    }

    fn wanted(&self, _namespace: &str) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": { "name": DEFAULT_SERVICE_ACCOUNT },
        })
    }
}
