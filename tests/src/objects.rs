//! The objects the black-box tests send and the errors they expect back: URL paths,
//! content types, ConfigMaps and Widgets (the example custom kind) to create, the CronTab
//! CRD to install, and the `Status` of a refused request. Shared by the test files so each
//! builds them the same way.

use std::path::Path;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ObjectMeta};
use kube::core::Status;
use serde_json::{json, Value};

use crate::TestServer;

/// ConfigMaps in the `default` namespace.
pub const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// Widgets (`example.dev/v1`) in the `default` namespace.
pub const WIDGETS: &str = "/apis/example.dev/v1/namespaces/default/widgets";

/// Gadgets (`example.dev/v1`, cluster-scoped).
pub const GADGETS: &str = "/apis/example.dev/v1/gadgets";

/// The CronTab CustomResourceDefinition (`stable.example.com/v1`, namespaced, short name
/// `ct`): a status subresource, a Schedule column, `spec.replicas` at least 1.
pub const CRONTABS_CRD: &str = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
  versions:
    - name: v1
      served: true
      storage: true
      subresources:
        status: {}
      additionalPrinterColumns:
        - {name: Schedule, type: string, jsonPath: .spec.cronSpec}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                cronSpec: {type: string}
                replicas: {type: integer, minimum: 1}
            status:
              type: object
              properties:
                lastRun: {type: string}
                active: {type: integer}
";

/// The Gizmo CustomResourceDefinition, served as `example.com/v1` (stored) and `v2`
/// with conversion None: one kind in two versions, for matchPolicy Equivalent.
pub const GIZMOS_CRD: &str = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}
    - name: v2
      served: true
      storage: false
      schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}
";

/// Applies the CRD in `file` and waits (as users do, with kubectl) until it is
/// Established.
pub fn install_crd(s: &TestServer, file: &Path, name: &str) {
    s.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    s.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/{name}"),
        "--timeout=10s",
    ]);
}

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
