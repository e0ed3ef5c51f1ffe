//! `#[derive(Resource)]` on real structs: the constants and URL paths it generates.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use apiserver_macros::Resource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A namespaced resource in a named group, with every optional key given.
#[derive(Resource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[resource(
    group = "example.dev",
    version = "v1alpha1",
    kind = "Widget",
    namespaced,
    plural = "widgetz",
    singular = "widgetone",
    shortnames = ["wd", "wdg"],
    categories = ["all", "examples"],
    status,
    scale(spec_replicas_path = ".spec.replicas", status_replicas_path = ".status.replicas"),
    printcolumn(name = "Replicas", type = "integer", json_path = ".spec.replicas", priority = 1)
)]
#[serde(rename_all = "camelCase")]
pub struct Widget {
    pub spec: WidgetSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<WidgetStatus>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WidgetSpec {
    pub replicas: i32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WidgetStatus {
    pub replicas: i32,
}

/// A core-group resource (`group = ""`) with defaults inferred, split over two attributes.
#[derive(Resource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[resource(group = "", version = "v1")]
#[resource(kind = "Policy")]
pub struct Policy {
    #[serde(default)]
    pub data: BTreeMap<String, String>,
}

/// A cluster-scoped resource.
#[derive(Resource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[resource(group = "storage.example.dev", version = "v1", kind = "Box", cluster)]
pub struct StorageBox {
    pub size: u64,
}

/// Generics and where clauses are carried through to the impl.
#[derive(Resource)]
#[resource(group = "example.dev", version = "v2", kind = "Holder")]
pub struct Holder<'a, T: Clone, const N: usize>
where
    T: std::fmt::Debug,
{
    pub items: [T; N],
    pub name: &'a str,
    pub marker: PhantomData<T>,
}

#[test]
fn namespaced_group_resource() {
    assert_eq!(Widget::GROUP, "example.dev");
    assert_eq!(Widget::VERSION, "v1alpha1");
    assert_eq!(Widget::KIND, "Widget");
    assert_eq!(Widget::API_VERSION, "example.dev/v1alpha1");
    assert_eq!(Widget::PLURAL, "widgetz");
    assert_eq!(Widget::SINGULAR, "widgetone");
    const { assert!(Widget::NAMESPACED) };
    assert_eq!(Widget::SHORT_NAMES, &["wd", "wdg"]);
    assert_eq!(Widget::CATEGORIES, &["all", "examples"]);
    const { assert!(Widget::HAS_STATUS) };
    assert_eq!(
        Widget::api_resource_path(Some("team-a")),
        "/apis/example.dev/v1alpha1/namespaces/team-a/widgetz"
    );
    assert_eq!(
        Widget::api_resource_path(None),
        "/apis/example.dev/v1alpha1/widgetz"
    );
    assert_eq!(
        Widget::api_resource_path(Some("")),
        "/apis/example.dev/v1alpha1/widgetz"
    );
}

#[test]
fn derive_coexists_with_serde_and_schemars() {
    let schema = schemars::schema_for!(Widget);
    let props = schema
        .get("properties")
        .expect("object schema has properties");
    assert!(props.get("spec").is_some());
    assert!(props.get("status").is_some());
}

#[test]
fn core_group_resource_with_defaults() {
    assert_eq!(Policy::GROUP, "");
    assert_eq!(Policy::VERSION, "v1");
    assert_eq!(Policy::KIND, "Policy");
    assert_eq!(Policy::API_VERSION, "v1");
    assert_eq!(Policy::PLURAL, "policies");
    assert_eq!(Policy::SINGULAR, "policy");
    const { assert!(Policy::NAMESPACED) };
    assert!(Policy::SHORT_NAMES.is_empty());
    assert!(Policy::CATEGORIES.is_empty());
    const { assert!(!Policy::HAS_STATUS) };
    assert_eq!(
        Policy::api_resource_path(Some("default")),
        "/api/v1/namespaces/default/policies"
    );
    assert_eq!(Policy::api_resource_path(None), "/api/v1/policies");
    assert!(Policy::default().data.is_empty());
}

#[test]
fn cluster_scoped_resource() {
    assert_eq!(StorageBox::KIND, "Box");
    assert_eq!(StorageBox::API_VERSION, "storage.example.dev/v1");
    assert_eq!(StorageBox::PLURAL, "boxes");
    assert_eq!(StorageBox::SINGULAR, "box");
    const { assert!(!StorageBox::NAMESPACED) };
    assert_eq!(
        StorageBox::api_resource_path(None),
        "/apis/storage.example.dev/v1/boxes"
    );
    // A namespace means nothing for a cluster-scoped resource.
    assert_eq!(
        StorageBox::api_resource_path(Some("default")),
        "/apis/storage.example.dev/v1/boxes"
    );
    assert_eq!(StorageBox { size: 1 }.size, 1);
}

#[test]
fn generic_resource() {
    type H = Holder<'static, u8, 2>;
    assert_eq!(H::API_VERSION, "example.dev/v2");
    assert_eq!(H::PLURAL, "holders");
    assert_eq!(
        H::api_resource_path(Some("ns")),
        "/apis/example.dev/v2/namespaces/ns/holders"
    );
    let h: H = Holder {
        items: [1, 2],
        name: "h",
        marker: PhantomData,
    };
    assert_eq!(h.items.len() + h.name.len(), 3);
}
