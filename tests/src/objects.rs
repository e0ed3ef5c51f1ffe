//! The objects the black-box tests send and the errors they expect back: URL paths,
//! content types, ConfigMaps and Widgets (the example custom kind) to create, and the
//! `Status` of a refused request. Shared by the test files so each builds them the same
//! way.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ObjectMeta};
use kube::core::Status;
use serde_json::{json, Value};

/// ConfigMaps in the `default` namespace.
pub const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// Widgets (`example.dev/v1`) in the `default` namespace.
pub const WIDGETS: &str = "/apis/example.dev/v1/namespaces/default/widgets";

/// Gadgets (`example.dev/v1`, cluster-scoped).
pub const GADGETS: &str = "/apis/example.dev/v1/gadgets";

/// A JSON request body, as [`crate::raw_request`]'s content type.
pub const JSON: Option<&str> = Some("application/json");

/// A JSON merge patch body, as [`crate::raw_request`]'s content type.
pub const MERGE: Option<&str> = Some("application/merge-patch+json");

/// The Widget kind (`example.dev/v1`, plural `widgets`) for the kube crate's dynamic API.
pub fn widgets_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.dev", "v1", "Widget"),
        "widgets",
    )
}

/// The Gadget kind (`example.dev/v1`, cluster-scoped, plural `gadgets`).
pub fn gadgets_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.dev", "v1", "Gadget"),
        "gadgets",
    )
}

/// Widgets in the client's default namespace.
pub fn widgets(c: &kube::Client) -> Api<DynamicObject> {
    Api::default_namespaced_with(c.clone(), &widgets_resource())
}

/// A Widget named `name` with the given `spec`.
pub fn widget(name: &str, spec: Value) -> DynamicObject {
    DynamicObject::new(name, &widgets_resource()).data(json!({ "spec": spec }))
}

/// A ConfigMap named `name` holding `data`.
pub fn configmap(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        ..Default::default()
    }
}

/// An empty ConfigMap named `name` with `labels`.
pub fn labelled(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let mut cm = configmap(name, &[]);
    cm.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    cm
}

/// The `Status` of an API error.
///
/// # Panics
///
/// When `result` is not an API error; the message says `what` was expected.
pub fn api_status<T: std::fmt::Debug>(result: kube::Result<T>, what: &str) -> Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("{what}: expected an API error, got {other:?}"),
    }
}
