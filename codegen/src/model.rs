//! The one model every definition is lowered to, whatever file format it came from.
//!
//! Loaders (`load::yaml`, `load::rust`) produce [`ResourceDef`]s; `validate` checks them;
//! the emitters in `emit` turn the checked set into files.

use crate::diagnostics::Location;

/// A resource as a user declared it: identity, REST shape, schema and presentation.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceDef {
    /// Where the definition starts, for diagnostics and the "generated from" header.
    pub location: Location,
    /// Where it came from; decides how the typed Rust side is produced.
    pub origin: Origin,
    /// API group; empty for the legacy core group (`/api/v1`).
    pub group: String,
    pub version: String,
    pub kind: String,
    pub list_kind: String,
    /// Lower-case plural used in URLs, e.g. `configmaps`.
    pub plural: String,
    pub singular: String,
    pub scope: Scope,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Schema of the object's own top-level fields; `apiVersion`, `kind` and `metadata`
    /// are implied, as in a CRD's `openAPIV3Schema`.
    pub schema: Schema,
    pub subresources: Subresources,
    pub printer_columns: Vec<PrinterColumn>,
    /// JSON paths (`.spec.color`) usable in field selectors besides `metadata.name` and
    /// `metadata.namespace`, as a CRD's `selectableFields`.
    pub selectable_fields: Vec<String>,
}

/// Which definition format a resource came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A YAML file; codegen emits the typed Rust structs.
    Yaml,
    /// A Rust file with `#[derive(Resource)]`; the server compiles that file as it is.
    Rust {
        /// Name of the struct carrying `#[derive(Resource)]`.
        type_name: String,
    },
}

/// Whether objects live in a namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Namespaced,
    Cluster,
}

impl ResourceDef {
    /// `group/version`, or just `version` for the core group (as `apiVersion` is written).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// URL prefix of the group-version: `/api/v1` or `/apis/<group>/<version>`.
    pub fn url_prefix(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }

    /// Whether any schema property carries a protobuf field number, which makes the kind
    /// accept Kubernetes' protobuf encoding.
    pub fn has_protobuf(&self) -> bool {
        self.schema.has_protobuf()
    }
}

/// The `status` and `scale` subresources, as a CRD declares them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Subresources {
    pub status: bool,
    pub scale: Option<ScaleSubresource>,
}

/// JSON paths (`.spec.replicas` style) the scale subresource maps to.
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleSubresource {
    pub spec_replicas_path: String,
    pub status_replicas_path: String,
    pub label_selector_path: Option<String>,
}

/// One `additionalPrinterColumns` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct PrinterColumn {
    pub name: String,
    /// OpenAPI type: integer, number, string, boolean or date.
    pub type_: String,
    pub format: Option<String>,
    pub description: Option<String>,
    pub priority: i32,
    pub json_path: String,
}

/// The OpenAPI v3 subset CRDs accept in `openAPIV3Schema`, plus a protobuf field number.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schema {
    pub location: Option<Location>,
    pub type_: Option<String>,
    pub format: Option<String>,
    pub description: Option<String>,
    /// Properties in declaration order (kept for stable output and readable structs).
    pub properties: Vec<(String, Schema)>,
    pub required: Vec<String>,
    pub items: Option<Box<Schema>>,
    pub additional_properties: Option<Box<Schema>>,
    pub enum_values: Vec<serde_json::Value>,
    pub default: Option<serde_json::Value>,
    pub minimum: Option<serde_json::Number>,
    pub maximum: Option<serde_json::Number>,
    pub pattern: Option<String>,
    pub nullable: bool,
    pub preserve_unknown_fields: bool,
    pub int_or_string: bool,
    pub list_type: Option<String>,
    pub list_map_keys: Vec<String>,
    pub map_type: Option<String>,
    /// Field number in the kind's protobuf message (`x-protobuf-field`), when it has one.
    pub protobuf_field: Option<u32>,
}

impl Schema {
    /// Whether this schema or anything below it has a protobuf field number.
    pub fn has_protobuf(&self) -> bool {
        self.protobuf_field.is_some()
            || self.properties.iter().any(|(_, s)| s.has_protobuf())
            || self.items.as_ref().is_some_and(|s| s.has_protobuf())
            || self
                .additional_properties
                .as_ref()
                .is_some_and(|s| s.has_protobuf())
    }

    /// The schema as OpenAPI v3 JSON. `with_protobuf` keeps `x-protobuf-field`, which
    /// the server's catalog needs and published OpenAPI documents do not.
    pub fn to_json(&self, with_protobuf: bool) -> serde_json::Value {
        use serde_json::{Map, Value};
        let mut m = Map::new();
        if let Some(d) = &self.description {
            m.insert("description".into(), Value::String(d.clone()));
        }
        if let Some(t) = &self.type_ {
            m.insert("type".into(), Value::String(t.clone()));
        }
        if let Some(f) = &self.format {
            m.insert("format".into(), Value::String(f.clone()));
        }
        if !self.properties.is_empty() {
            let props = self
                .properties
                .iter()
                .map(|(k, s)| (k.clone(), s.to_json(with_protobuf)))
                .collect();
            m.insert("properties".into(), Value::Object(props));
        }
        if !self.required.is_empty() {
            m.insert("required".into(), self.required.clone().into());
        }
        if let Some(i) = &self.items {
            m.insert("items".into(), i.to_json(with_protobuf));
        }
        if let Some(a) = &self.additional_properties {
            m.insert("additionalProperties".into(), a.to_json(with_protobuf));
        }
        if !self.enum_values.is_empty() {
            m.insert("enum".into(), Value::Array(self.enum_values.clone()));
        }
        if let Some(d) = &self.default {
            m.insert("default".into(), d.clone());
        }
        if let Some(n) = &self.minimum {
            m.insert("minimum".into(), Value::Number(n.clone()));
        }
        if let Some(n) = &self.maximum {
            m.insert("maximum".into(), Value::Number(n.clone()));
        }
        if let Some(p) = &self.pattern {
            m.insert("pattern".into(), Value::String(p.clone()));
        }
        if self.nullable {
            m.insert("nullable".into(), Value::Bool(true));
        }
        if self.preserve_unknown_fields {
            m.insert(
                "x-kubernetes-preserve-unknown-fields".into(),
                Value::Bool(true),
            );
        }
        if self.int_or_string {
            m.insert("x-kubernetes-int-or-string".into(), Value::Bool(true));
        }
        if let Some(t) = &self.list_type {
            m.insert("x-kubernetes-list-type".into(), Value::String(t.clone()));
        }
        if !self.list_map_keys.is_empty() {
            m.insert(
                "x-kubernetes-list-map-keys".into(),
                self.list_map_keys.clone().into(),
            );
        }
        if let Some(t) = &self.map_type {
            m.insert("x-kubernetes-map-type".into(), Value::String(t.clone()));
        }
        if with_protobuf {
            if let Some(n) = self.protobuf_field {
                m.insert("x-protobuf-field".into(), n.into());
            }
        }
        Value::Object(m)
    }
}
