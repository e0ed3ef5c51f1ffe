//! The resource catalog: one table (GVK, plural, scope, verbs, subresources, short names,
//! printer columns, schema) that drives routes, discovery, OpenAPI and storage keys.
//! Generated entries are registered at start-up; CustomResourceDefinitions will add
//! entries at run time through the same [`Catalog`].

use std::sync::{Arc, RwLock};

/// A definition as codegen emits it (`generated::catalog::RESOURCES`).
#[derive(Debug)]
pub struct ResourceDefinition {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub list_kind: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    pub status_subresource: bool,
    pub scale: Option<ScaleDefinition>,
    pub printer_columns: &'static [PrinterColumnDefinition],
    /// Fields (JSON paths without the leading dot) usable in field selectors besides
    /// `metadata.name` and `metadata.namespace`.
    pub selectable_fields: &'static [&'static str],
    /// OpenAPI v3 schema of the kind's own fields, JSON, with `x-protobuf-field` numbers.
    pub schema: &'static str,
    /// The definition file it came from.
    pub source: &'static str,
}

/// Replica and selector paths of the scale subresource.
#[derive(Debug)]
pub struct ScaleDefinition {
    pub spec_replicas_path: &'static str,
    pub status_replicas_path: &'static str,
    pub label_selector_path: Option<&'static str>,
}

/// One additional printer column.
#[derive(Debug)]
pub struct PrinterColumnDefinition {
    pub name: &'static str,
    pub type_: &'static str,
    pub format: Option<&'static str>,
    pub description: Option<&'static str>,
    pub priority: i32,
    pub json_path: &'static str,
}

/// A served resource, as the handlers see it.
#[derive(Debug)]
pub struct ApiResource {
    pub def: &'static ResourceDefinition,
    /// The parsed schema (kept parsed: validation and protobuf decoding walk it).
    pub schema: serde_json::Value,
    /// Whether bodies may use Kubernetes' protobuf encoding.
    pub protobuf: bool,
}

impl ApiResource {
    fn new(def: &'static ResourceDefinition) -> Self {
        let schema: serde_json::Value =
            serde_json::from_str(def.schema).expect("codegen emits valid schema JSON");
        let protobuf = def.schema.contains("\"x-protobuf-field\"");
        ApiResource {
            def,
            schema,
            protobuf,
        }
    }

    /// `apiVersion` as written in objects: `v1` or `group/version`.
    pub fn api_version(&self) -> String {
        if self.def.group.is_empty() {
            self.def.version.to_string()
        } else {
            format!("{}/{}", self.def.group, self.def.version)
        }
    }

    /// The group-version path: `api/v1` or `apis/<group>/<version>`.
    pub fn group_version_path(&self) -> String {
        if self.def.group.is_empty() {
            format!("api/{}", self.def.version)
        } else {
            format!("apis/{}/{}", self.def.group, self.def.version)
        }
    }

    /// Group-qualified resource for messages: `configmaps` or `widgets.example.dev`.
    pub fn qualified_resource(&self) -> String {
        if self.def.group.is_empty() {
            self.def.plural.to_string()
        } else {
            format!("{}.{}", self.def.plural, self.def.group)
        }
    }

    /// Verbs the generic handlers serve for this resource (sorted, as discovery lists
    /// them): every generated route, plus `watch` on the collections.
    pub fn verbs(&self) -> &'static [&'static str] {
        &[
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
    }
}

/// A resource for unit tests: core group, namespaced, with `schema`.
#[cfg(test)]
pub(crate) fn test_resource(schema: serde_json::Value) -> ApiResource {
    let def: &'static ResourceDefinition = Box::leak(Box::new(ResourceDefinition {
        group: "",
        version: "v1",
        kind: "ConfigMap",
        list_kind: "ConfigMapList",
        plural: "configmaps",
        singular: "configmap",
        namespaced: true,
        short_names: &[],
        categories: &[],
        status_subresource: false,
        scale: None,
        printer_columns: &[],
        selectable_fields: &[],
        schema: "{}",
        source: "test",
    }));
    ApiResource {
        def,
        schema,
        protobuf: false,
    }
}

/// The live catalog: generated resources plus (later) custom resources.
#[derive(Debug, Default)]
pub struct Catalog {
    resources: RwLock<Vec<Arc<ApiResource>>>,
}

impl Catalog {
    /// A catalog holding every generated definition.
    pub fn from_generated(defs: &'static [ResourceDefinition]) -> Self {
        Catalog {
            resources: RwLock::new(defs.iter().map(|d| Arc::new(ApiResource::new(d))).collect()),
        }
    }

    /// The resource served at `group/version/plural`.
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ApiResource>> {
        self.read()
            .iter()
            .find(|r| r.def.group == group && r.def.version == version && r.def.plural == plural)
            .cloned()
    }

    /// Every resource, in catalog order (sorted by group, version, kind).
    pub fn all(&self) -> Vec<Arc<ApiResource>> {
        self.read().clone()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<ApiResource>>> {
        self.resources.read().unwrap_or_else(|e| e.into_inner())
    }
}
