//! An example resource defined in Rust. `cargo run -p codegen` reads this file for the
//! catalog, routes and OpenAPI; the server compiles it as it is for the typed struct.
//! Copy it to add your own Rust-defined kind.
//!
//! With a `metadata` field (k8s-openapi's `ObjectMeta`), the derive also implements
//! k8s-openapi's `Resource`, `ListableResource` and `Metadata` traits, so the struct is a
//! `kube::Resource` and `kube::Api<Gadget>` works; with `api_version` and `kind` too, it
//! gets `Gadget::new(name, spec)`. The server compiles those fields only with its `client`
//! feature (its own build needs no k8s-openapi); codegen leaves them out of the schema.

use apiserver_macros::Resource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A Gadget is an example cluster-scoped resource defined with Rust attributes.
#[derive(Resource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[resource(
    group = "example.dev",
    version = "v1",
    kind = "Gadget",
    cluster,
    shortnames = ["gd"],
    categories = ["examples"],
    status,
    printcolumn(name = "Mode", type = "string", json_path = ".spec.mode"),
    printcolumn(name = "Level", type = "integer", json_path = ".spec.level")
)]
#[serde(rename_all = "camelCase")]
pub struct Gadget {
    /// `example.dev/v1` (`new` fills it in).
    #[cfg(feature = "client")]
    #[serde(default)]
    #[schemars(skip)]
    pub api_version: String,
    /// `Gadget` (`new` fills it in).
    #[cfg(feature = "client")]
    #[serde(default)]
    #[schemars(skip)]
    pub kind: String,
    /// Standard object metadata.
    #[cfg(feature = "client")]
    #[serde(default)]
    #[schemars(skip)]
    pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    /// The desired state of the gadget.
    pub spec: GadgetSpec,
    /// The observed state of the gadget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<GadgetStatus>,
}

/// Desired state of a Gadget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GadgetSpec {
    /// How the gadget runs.
    pub mode: GadgetMode,
    /// Power level, 0 to 11.
    #[serde(default)]
    pub level: i32,
    /// Optional free-text owner.
    pub owner_email: Option<String>,
    /// Named features switched on.
    #[serde(default)]
    pub features: Vec<String>,
}

/// How a gadget runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub enum GadgetMode {
    Manual,
    Automatic,
}

/// Observed state of a Gadget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GadgetStatus {
    /// Whether the gadget is on.
    pub powered: bool,
}
