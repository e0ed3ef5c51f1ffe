//! The root CA publisher: a `kube-root-ca.crt` ConfigMap in every namespace whose `ca.crt`
//! is the CA that clients trust this server by (the one in the admin kubeconfig), put
//! back when deleted or changed, as kube-controller-manager's
//! `root-ca-certificate-publisher-controller` keeps it.

use serde_json::{json, Value};

use super::per_namespace::PerNamespace;

/// The ConfigMap's name.
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
/// The key holding the PEM bundle.
pub const CA_KEY: &str = "ca.crt";
/// The annotation upstream writes on the ConfigMap.
const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
/// Upstream's wording of that annotation (users and tools may read it).
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// The `kube-root-ca.crt` ConfigMap as a [`PerNamespace`] object.
pub struct RootCaPublisher {
    /// The PEM of the CA that signs the serving certificate.
    pub ca_pem: String,
}

impl PerNamespace for RootCaPublisher {
    fn controller(&self) -> &'static str {
        "root-ca-certificate-publisher-controller"
    }

    fn resource(&self) -> (&'static str, &'static str, &'static str) {
        ("", "v1", "configmaps")
    }

    fn name(&self) -> &'static str {
        ROOT_CA_CONFIG_MAP
    }

    fn wanted(&self, _namespace: &str) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": ROOT_CA_CONFIG_MAP,
                "annotations": { DESCRIPTION_ANNOTATION: DESCRIPTION },
            },
            "data": { CA_KEY: self.ca_pem },
        })
    }

    /// Only `ca.crt` in `data` (nothing in `binaryData`) and the description annotation;
    /// other metadata is the user's.
    fn repaired(&self, current: &Value) -> Option<Value> {
        let wanted_data = json!({ CA_KEY: self.ca_pem });
        let described = current["metadata"]["annotations"][DESCRIPTION_ANNOTATION] == DESCRIPTION;
        if current["data"] == wanted_data && current.get("binaryData").is_none() && described {
            return None;
        }
        let mut updated = current.clone();
        updated["data"] = wanted_data;
        if let Some(o) = updated.as_object_mut() {
            o.remove("binaryData");
        }
        if !updated["metadata"]["annotations"].is_object() {
            updated["metadata"]["annotations"] = json!({});
        }
        updated["metadata"]["annotations"][DESCRIPTION_ANNOTATION] = json!(DESCRIPTION);
        Some(updated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edited_root_ca_config_map_is_put_back_and_a_current_one_left_alone() {
        let publisher = RootCaPublisher {
            ca_pem: "PEM".into(),
        };
        let wanted = publisher.wanted("ns");
        assert_eq!(publisher.repaired(&wanted), None);
        let mut edited = wanted.clone();
        edited["data"]["extra"] = json!("x");
        edited["metadata"]["labels"] = json!({ "mine": "yes" });
        let repaired = publisher.repaired(&edited).expect("an update");
        assert_eq!(repaired["data"], json!({ "ca.crt": "PEM" }));
        assert_eq!(repaired["metadata"]["labels"]["mine"], "yes");
    }
}
