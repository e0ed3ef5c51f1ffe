//! Conversion webhooks: a CRD with `spec.conversion.strategy: Webhook` has objects
//! converted between its versions by an HTTPS endpoint that answers `ConversionReview`
//! (`apiextensions.k8s.io/v1`), as kube-apiserver asks it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::api::ApiError;
use crate::webhook::Endpoint;

/// How long a webhook may take to answer (kube-apiserver's default).
const TIMEOUT: Duration = Duration::from_secs(30);

/// A conversion webhook, as a CRD's `spec.conversion.webhook.clientConfig` names it.
pub struct Webhook {
    /// The kind it converts, for error messages.
    kind: String,
    target: Result<Endpoint, String>,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook").field("kind", &self.kind).finish()
    }
}

impl Webhook {
    /// The webhook of `crd`, when its conversion strategy is `Webhook`. A client
    /// configuration that cannot be used is kept as the error every conversion answers.
    pub fn of(crd: &Value) -> Option<Arc<Webhook>> {
        let conversion = &crd["spec"]["conversion"];
        if conversion["strategy"] != json!("Webhook") {
            return None;
        }
        let kind = crd["spec"]["names"]["kind"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let target = Endpoint::from_client_config(&conversion["webhook"]["clientConfig"]);
        Some(Arc::new(Webhook { kind, target }))
    }

    /// `objects` converted to `api_version` (in order), or a 500 naming the webhook.
    pub async fn convert(
        &self,
        objects: Vec<Value>,
        api_version: &str,
    ) -> Result<Vec<Value>, ApiError> {
        // Named by what is converted, as kube-apiserver names it: `group/version, Kind=K`.
        let from = objects
            .first()
            .and_then(|o| o["apiVersion"].as_str())
            .unwrap_or_default()
            .to_string();
        let fail = |why: String| {
            ApiError::internal(format!(
                "conversion webhook for {from}, Kind={} failed: {why}",
                self.kind
            ))
        };
        let target = self.target.as_ref().map_err(|e| fail(e.clone()))?;
        let uid = uuid::Uuid::new_v4().to_string();
        let review = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": { "uid": uid, "desiredAPIVersion": api_version, "objects": objects },
        });
        let answer = target
            .post(review.to_string(), TIMEOUT, "ConversionReview")
            .await
            .map_err(fail)?;
        let response = &answer["response"];
        if response["uid"] != json!(uid) {
            return Err(fail(format!(
                "expected response.uid={uid:?}, got {}",
                response["uid"]
            )));
        }
        if response["result"]["status"] != json!("Success") {
            let message = response["result"]["message"]
                .as_str()
                .unwrap_or("no message");
            return Err(fail(message.to_string()));
        }
        let converted = response["convertedObjects"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if converted.len() != objects.len() {
            return Err(fail(format!(
                "returned {} objects, expected {}",
                converted.len(),
                objects.len()
            )));
        }
        objects
            .iter()
            .zip(converted)
            .map(|(old, new)| checked(old, new, api_version).map_err(fail))
            .collect()
    }
}

/// A converted object, held to what a conversion may change: its `apiVersion` must be the
/// one asked for, its kind and identity unchanged; of metadata only labels and
/// annotations are taken from the answer.
fn checked(old: &Value, mut new: Value, api_version: &str) -> Result<Value, String> {
    if new["apiVersion"] != json!(api_version) {
        return Err(format!(
            "invalid converted object: expected apiVersion {api_version:?}, got {}",
            new["apiVersion"]
        ));
    }
    if new["kind"] != old["kind"] {
        return Err(format!(
            "invalid converted object: expected kind {}, got {}",
            old["kind"], new["kind"]
        ));
    }
    let mut meta = old["metadata"].clone();
    for k in ["labels", "annotations"] {
        match new["metadata"].get(k) {
            Some(v) => meta[k] = v.clone(),
            None => {
                if let Some(m) = meta.as_object_mut() {
                    m.remove(k);
                }
            }
        }
    }
    new["metadata"] = meta;
    Ok(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_converted_object_keeps_its_identity() {
        let old = json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a", "uid": "1", "labels": {"x": "1"}}, "spec": {"n": 1}});
        let new = json!({"apiVersion": "g/v2", "kind": "K", "metadata": {"name": "b", "uid": "2", "labels": {"x": "2"}}, "spec": {"m": 1}});
        let kept = checked(&old, new.clone(), "g/v2").unwrap();
        assert_eq!(
            kept["metadata"],
            json!({"name": "a", "uid": "1", "labels": {"x": "2"}})
        );
        assert_eq!(kept["spec"], json!({"m": 1}));
        assert!(checked(&old, new, "g/v3")
            .unwrap_err()
            .contains("expected apiVersion"));
    }

    #[test]
    fn unusable_client_configs_are_reported_on_use() {
        let crd = |config: Value| json!({"spec": {"group": "g", "names": {"kind": "K"}, "conversion": {"strategy": "Webhook", "webhook": {"clientConfig": config}}}});
        let err = |config: Value| {
            Webhook::of(&crd(config))
                .unwrap()
                .target
                .as_ref()
                .err()
                .unwrap()
                .clone()
        };
        assert!(err(json!({"url": "http://x"})).contains("not an https URL"));
        let by_service = json!({"service": {"name": "s", "namespace": "n", "path": "/convert"}, "caBundle": "bm90IGEgY2VydA=="});
        assert!(err(by_service).contains("caBundle"));
        assert!(err(json!({"url": "https://x"})).contains("caBundle"));
        assert!(Webhook::of(&json!({"spec": {"conversion": {"strategy": "None"}}})).is_none());
    }
}
