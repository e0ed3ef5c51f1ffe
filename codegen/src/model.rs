//! The one model every definition is lowered to, whatever file format it came from.
//!
//! Loaders (`load::yaml`, `load::rust`) produce [`ResourceDef`]s; `validate` checks them;
//! the emitters in `emit` turn the checked set into files.

use serde::{Deserialize, Serialize};

use crate::diagnostics::Location;

/// The per-kind hooks the server provides by name (`strategy:` in a definition): what
/// kube-apiserver keeps in each built-in kind's `strategy.go`.
pub const STRATEGIES: &[&str] = &[
    "APIService",
    "CertificateSigningRequest",
    "ComponentStatus",
    "ConfigMap",
    "CronJob",
    "CustomResourceDefinition",
    "Deployment",
    "Event",
    "EventsV1",
    "HorizontalPodAutoscaler",
    "Job",
    "Namespace",
    "Node",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Pod",
    "PodTemplate",
    "PodTemplateOwner",
    "PriorityClass",
    "RBAC",
    "Secret",
    "Service",
    "SpecGeneration",
];

/// The server's named hooks that answer a create of a kind that is not stored
/// (`createOnly: true`, the reviews) or of a create-only subresource whose body is
/// another kind (`serviceaccounts/token`): each takes the decoded, defaulted and
/// validated request object and returns the answer.
pub const CREATE_HOOKS: &[&str] = &[
    "Binding",
    "Eviction",
    "LocalSubjectAccessReview",
    "SelfSubjectAccessReview",
    "SelfSubjectReview",
    "SelfSubjectRulesReview",
    "SubjectAccessReview",
    "TokenRequest",
    "TokenReview",
];

/// The server's named hooks of subresources that read the whole object and write one part
/// of it (`subresources.parts`): each says which part a write through it may change and
/// checks the change, as upstream's per-subresource strategies do.
pub const PART_HOOKS: &[&str] = &[
    "CertificateApproval",
    "EphemeralContainers",
    "NamespaceFinalize",
    "PodResize",
];

/// A resource as a user declared it: identity, REST shape, schema and presentation.
///
/// It is also the compiled-in catalog's wire form (`server/src/generated/catalog.json`),
/// which the server reads at start-up, so it (de)serializes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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
    /// A Kubernetes built-in kind (declared `builtin: true`): it accepts strategic merge
    /// patch and, with field numbers, protobuf, and a delete answers a `Status`. Other
    /// kinds behave as custom resources do.
    #[serde(default)]
    pub builtin: bool,
    /// The server's named per-kind hooks (one of [`STRATEGIES`]); `None` for the generic
    /// ones (built-in or custom defaults).
    #[serde(default)]
    pub strategy: Option<String>,
    /// Objects are not stored: the only endpoint is POST on the collection, answered by
    /// the hook `strategy` names (one of [`CREATE_HOOKS`]), as upstream's reviews are.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub create_only: bool,
    /// The OpenAPI component names of the kind and its list are `<prefix>.<Kind>`; by
    /// default the reversed group (`dev.example.v1`), or `io.k8s.api.core.v1` for the core
    /// group. Built-in kinds name upstream's (`io.k8s.api.rbac.v1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_api_prefix: Option<String>,
    /// The verbs the kind serves, when not all of them (`verbs: [get, list]`, as
    /// upstream's componentstatuses; namespaces have no `deletecollection`). Empty: every
    /// verb. `watch` is served only where it is listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verbs: Vec<String>,
    /// This definition is its kind's storage version (`storage: true`): when a kind is
    /// defined in several versions, objects are stored in this one and converted to
    /// and from the others. A kind defined once is stored in its only version.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub storage: bool,
    /// How this version converts to and from the storage version, beyond the fields
    /// both have at the same path (`conversion:`); only on a version that is not the
    /// storage version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversion: Option<Conversion>,
}

/// The server's named conversion hooks (`conversion: {hook: ..}`): hand-written Rust
/// for what a declarative rule cannot say, run after the rules on the way to the
/// storage version and before them on the way back.
pub const CONVERSION_HOOKS: &[&str] = &["HorizontalPodAutoscalerV1"];

/// How a version's objects map onto the storage version's (`conversion:` in a
/// definition). Fields at the same path with the same type map without a rule.
/// Paths are written as JSON paths of objects' fields (`.spec.colour`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Conversion {
    /// A field of this version named differently in the storage version, under the
    /// same parent (`.spec.colour` → `.spec.color`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub renames: Vec<FieldMapping>,
    /// A field of this version found elsewhere in the storage version
    /// (`.spec.replicas` → `.spec.scaling.replicas`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moves: Vec<FieldMapping>,
    /// Storage-version fields this version lacks, and the value they take when an
    /// object written in this version carries none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub defaults: Vec<FieldDefault>,
    /// Storage-version fields this version cannot hold: kept in the annotation
    /// [`Conversion::annotation`] of objects read in this version, and restored from it
    /// when they are written back, so a round trip loses nothing (as upstream keeps
    /// autoscaling/v2 fields in annotations of autoscaling/v1 objects).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preserve: Vec<FieldPath>,
    /// A hand-written conversion for the rest (one of [`CONVERSION_HOOKS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<String>,
    /// The `apiVersion` of the storage version when it is in another group (`v1` for
    /// events.k8s.io/v1 Event, stored as core/v1 Event): this version joins that
    /// group's family and shares its objects, as upstream's cohabiting resources do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_as: Option<String>,
    /// Where `hook` was given, for diagnostics.
    #[serde(skip)]
    pub hook_location: Option<Location>,
}

impl Conversion {
    /// Whether the version maps onto the storage version field for field, with no rule
    /// and no hook.
    pub fn is_identity(&self) -> bool {
        self.renames.is_empty()
            && self.moves.is_empty()
            && self.defaults.is_empty()
            && self.preserve.is_empty()
            && self.hook.is_none()
    }

    /// The annotation that keeps preserved fields: `<group>/<storage version>-fields`
    /// (`example.dev/v2-fields`); `conversion.k8s.io/...` for the core group.
    pub fn annotation(group: &str, storage_version: &str) -> String {
        let group = if group.is_empty() {
            "conversion.k8s.io"
        } else {
            group
        };
        format!("{group}/{storage_version}-fields")
    }

    /// The group of `stored_as`, when given (`""` for `v1`, `apps` for `apps/v1`).
    pub fn stored_as_group(&self) -> Option<&str> {
        let api_version = self.stored_as.as_deref()?;
        Some(api_version.rsplit_once('/').map_or("", |(g, _)| g))
    }
}

/// `from` in this version is `to` in the storage version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FieldMapping {
    pub from: String,
    pub to: String,
    /// Where the rule was written, for diagnostics.
    #[serde(skip)]
    pub location: Option<Location>,
}

/// A storage-version field and the value it takes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FieldDefault {
    pub path: String,
    pub value: serde_json::Value,
    /// Where the rule was written, for diagnostics.
    #[serde(skip)]
    pub location: Option<Location>,
}

/// A storage-version field, for `preserve`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FieldPath {
    pub path: String,
    /// Where the rule was written, for diagnostics.
    #[serde(skip)]
    pub location: Option<Location>,
}

/// Which definition format a resource came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Origin {
    /// A YAML file; codegen emits the typed Rust structs.
    Yaml,
    /// A Rust file with `#[derive(Resource)]`; the server compiles that file as it is.
    Rust {
        /// Name of the struct carrying `#[derive(Resource)]`.
        #[serde(rename = "typeName")]
        type_name: String,
    },
}

/// Whether objects live in a namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

    /// Whether the kind accepts Kubernetes' protobuf encoding: a built-in kind whose
    /// schema carries field numbers.
    pub fn has_protobuf(&self) -> bool {
        self.builtin && self.schema.has_protobuf()
    }

    /// Whether objects live in a namespace.
    pub fn namespaced(&self) -> bool {
        self.scope == Scope::Namespaced
    }
}

/// The `status` and `scale` subresources, as a CRD declares them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Subresources {
    pub status: bool,
    pub scale: Option<ScaleSubresource>,
    /// Create-only subresources whose body and answer are another kind, each answered by
    /// a named hook (`serviceaccounts/token` takes and answers a `TokenRequest`).
    #[serde(default, rename = "createOnly", skip_serializing_if = "Vec::is_empty")]
    pub create_only: Vec<CreateOnlySubresource>,
    /// Subresources that answer the whole object and write one part of it through a
    /// named hook (`pods/ephemeralcontainers`, `namespaces/finalize`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<PartSubresource>,
}

/// A subresource whose body and answer are the object itself, of which a write changes
/// only the part its hook names (as `status` changes only status).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartSubresource {
    /// The path segment after the object's name (`ephemeralcontainers`).
    pub name: String,
    /// The hook that decides what a write changes (one of [`PART_HOOKS`]).
    pub strategy: String,
    /// The verbs served, of `get`, `update` and `patch`; empty for all three
    /// (`namespaces/finalize` serves `update` alone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verbs: Vec<String>,
}

/// A subresource served only by POST, whose body is a kind of its own (not stored).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateOnlySubresource {
    /// The path segment after the object's name (`token`).
    pub name: String,
    /// Group, version and kind of the body and answer (`authentication.k8s.io/v1
    /// TokenRequest`).
    pub group: String,
    pub version: String,
    pub kind: String,
    /// The hook that answers (one of [`CREATE_HOOKS`]).
    pub strategy: String,
    /// OpenAPI component name prefix of the body kind (see [`ResourceDef`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_api_prefix: Option<String>,
    /// The body's own fields (`apiVersion`, `kind`, `metadata` implied).
    pub schema: Schema,
}

impl CreateOnlySubresource {
    /// `group/version`, or just `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The body kind as a definition of its own (not served at a path of its own): what
    /// decoding, validation, protobuf and OpenAPI of the body work from. `parent` gives
    /// the scope, plural and the built-in flag.
    pub fn body_def(&self, parent: &ResourceDef) -> ResourceDef {
        ResourceDef {
            location: self
                .schema
                .location
                .clone()
                .unwrap_or_else(|| parent.location.clone()),
            origin: Origin::Yaml,
            group: self.group.clone(),
            version: self.version.clone(),
            kind: self.kind.clone(),
            list_kind: format!("{}List", self.kind),
            plural: parent.plural.clone(),
            singular: String::new(),
            scope: parent.scope,
            short_names: vec![],
            categories: vec![],
            schema: self.schema.clone(),
            subresources: Subresources::default(),
            printer_columns: vec![],
            selectable_fields: vec![],
            builtin: parent.builtin,
            strategy: Some(self.strategy.clone()),
            create_only: true,
            open_api_prefix: self.open_api_prefix.clone(),
            verbs: vec![],
            storage: false,
            conversion: None,
        }
    }
}

/// JSON paths (`.spec.replicas` style) the scale subresource maps to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleSubresource {
    pub spec_replicas_path: String,
    pub status_replicas_path: String,
    pub label_selector_path: Option<String>,
}

/// One `additionalPrinterColumns` entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrinterColumn {
    pub name: String,
    /// OpenAPI type: integer, number, string, boolean or date.
    #[serde(rename = "type")]
    pub type_: String,
    pub format: Option<String>,
    pub description: Option<String>,
    pub priority: i32,
    pub json_path: String,
}

/// One `x-kubernetes-validations` entry: a CEL rule and how its failure is reported.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ValidationRule {
    pub rule: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_expression: Option<String>,
    /// `FieldValueInvalid` (the default), `FieldValueForbidden`, `FieldValueRequired`
    /// or `FieldValueDuplicate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Where the failure is reported, relative to the value (`.spec.replicas`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_path: Option<String>,
    /// A transition rule runs even when there is no old value (`oldSelf` is then absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional_old_self: Option<bool>,
}

/// The OpenAPI v3 subset CRDs accept in `openAPIV3Schema`, plus a protobuf field number.
/// (De)serializes as that OpenAPI JSON, field numbers included.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(into = "serde_json::Value", try_from = "serde_json::Value")]
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
    /// OpenAPI 3.0's boolean forms: `minimum`/`maximum` themselves are excluded.
    pub exclusive_minimum: bool,
    pub exclusive_maximum: bool,
    pub multiple_of: Option<serde_json::Number>,
    pub pattern: Option<String>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub unique_items: bool,
    pub min_properties: Option<u64>,
    pub max_properties: Option<u64>,
    /// Value validations composed from other schemas (no structure of their own).
    pub all_of: Vec<Schema>,
    pub any_of: Vec<Schema>,
    pub one_of: Vec<Schema>,
    pub not: Option<Box<Schema>>,
    /// CEL rules (`x-kubernetes-validations`), checked against the value here.
    pub validations: Vec<ValidationRule>,
    /// The value is a whole object (`apiVersion`, `kind`, `metadata`), as a Pod template.
    pub embedded_resource: bool,
    /// Documentation only: shown by `kubectl explain` and published in OpenAPI.
    pub title: Option<String>,
    pub example: Option<serde_json::Value>,
    pub external_docs: Option<serde_json::Value>,
    pub nullable: bool,
    pub preserve_unknown_fields: bool,
    pub int_or_string: bool,
    pub list_type: Option<String>,
    pub list_map_keys: Vec<String>,
    pub map_type: Option<String>,
    /// `x-kubernetes-patch-strategy` (`merge`, `retainKeys`, `merge,retainKeys`): how a
    /// strategic merge patch treats the value. Built-in kinds only; when unset, a keyed
    /// list (`list-type: map` with one key) of a built-in kind merges on its key.
    pub patch_strategy: Option<String>,
    /// `x-kubernetes-patch-merge-key`: the item field a merging list is keyed by.
    pub patch_merge_key: Option<String>,
    /// Field number in the kind's protobuf message (`x-protobuf-field`), when it has one.
    pub protobuf_field: Option<u32>,
    /// `x-protobuf-embedded`: the property belongs to a Go-embedded message, whose JSON
    /// fields are flattened into the parent object (a Volume's VolumeSource). The field
    /// numbers of the messages that carry it, outermost first; `protobuf_field` is its
    /// number inside the innermost one.
    pub protobuf_embedded: Vec<u32>,
    /// `x-protobuf-raw-json`: a message `{1 bytes}` whose bytes are JSON text (FieldsV1,
    /// RawExtension).
    pub protobuf_raw_json: bool,
    /// `x-openapi-component`: the OpenAPI component this object is (an imported kind's
    /// `io.k8s.api.core.v1.PodSpec`); published documents name it once and refer to it,
    /// as kube-apiserver's do, instead of repeating it inline.
    pub component: Option<String>,
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
        if self.exclusive_minimum {
            m.insert("exclusiveMinimum".into(), Value::Bool(true));
        }
        if self.exclusive_maximum {
            m.insert("exclusiveMaximum".into(), Value::Bool(true));
        }
        if let Some(n) = &self.multiple_of {
            m.insert("multipleOf".into(), Value::Number(n.clone()));
        }
        if let Some(p) = &self.pattern {
            m.insert("pattern".into(), Value::String(p.clone()));
        }
        for (key, bound) in [
            ("minLength", self.min_length),
            ("maxLength", self.max_length),
            ("minItems", self.min_items),
            ("maxItems", self.max_items),
            ("minProperties", self.min_properties),
            ("maxProperties", self.max_properties),
        ] {
            if let Some(n) = bound {
                m.insert(key.into(), n.into());
            }
        }
        if self.unique_items {
            m.insert("uniqueItems".into(), Value::Bool(true));
        }
        for (key, list) in [
            ("allOf", &self.all_of),
            ("anyOf", &self.any_of),
            ("oneOf", &self.one_of),
        ] {
            if !list.is_empty() {
                let list = list.iter().map(|s| s.to_json(with_protobuf)).collect();
                m.insert(key.into(), Value::Array(list));
            }
        }
        if let Some(n) = &self.not {
            m.insert("not".into(), n.to_json(with_protobuf));
        }
        if !self.validations.is_empty() {
            m.insert(
                "x-kubernetes-validations".into(),
                serde_json::to_value(&self.validations).unwrap_or_default(),
            );
        }
        if self.embedded_resource {
            m.insert("x-kubernetes-embedded-resource".into(), Value::Bool(true));
        }
        if let Some(t) = &self.title {
            m.insert("title".into(), Value::String(t.clone()));
        }
        if let Some(e) = &self.example {
            m.insert("example".into(), e.clone());
        }
        if let Some(e) = &self.external_docs {
            m.insert("externalDocs".into(), e.clone());
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
        if let Some(k) = &self.patch_merge_key {
            m.insert(
                "x-kubernetes-patch-merge-key".into(),
                Value::String(k.clone()),
            );
        }
        if let Some(t) = &self.patch_strategy {
            m.insert(
                "x-kubernetes-patch-strategy".into(),
                Value::String(t.clone()),
            );
        }
        if let Some(c) = &self.component {
            m.insert("x-openapi-component".into(), Value::String(c.clone()));
        }
        if with_protobuf {
            if let Some(n) = self.protobuf_field {
                m.insert("x-protobuf-field".into(), n.into());
            }
            if !self.protobuf_embedded.is_empty() {
                m.insert(
                    "x-protobuf-embedded".into(),
                    self.protobuf_embedded.clone().into(),
                );
            }
            if self.protobuf_raw_json {
                m.insert("x-protobuf-raw-json".into(), Value::Bool(true));
            }
        }
        Value::Object(m)
    }
}

impl Schema {
    /// The inverse of [`Schema::to_json`] (with field numbers): reads an OpenAPI v3 schema
    /// in the subset CRDs accept. Other keywords are an error naming the path.
    pub fn from_json(v: &serde_json::Value) -> Result<Schema, String> {
        Self::read_json(v, "schema", false)
    }

    /// [`Schema::from_json`] for a schema sent to the server (a CRD's, at `path` such as
    /// `spec.versions[0].schema.openAPIV3Schema`): errors name paths under `path`, and
    /// each node's location is its field path (line 0), so the validator's diagnostics
    /// about it name the field.
    pub fn from_json_at(v: &serde_json::Value, path: &str) -> Result<Schema, String> {
        Self::read_json(v, path, true)
    }

    fn read_json(v: &serde_json::Value, path: &str, locate: bool) -> Result<Schema, String> {
        use serde_json::Value;
        let obj = v
            .as_object()
            .ok_or_else(|| format!("{path}: a schema must be an object"))?;
        let string = |k: &str, v: &Value| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("{path}.{k}: must be a string"))
        };
        let flag = |k: &str, v: &Value| {
            v.as_bool()
                .ok_or_else(|| format!("{path}.{k}: must be true or false"))
        };
        let strings = |k: &str, v: &Value| -> Result<Vec<String>, String> {
            v.as_array()
                .and_then(|a| a.iter().map(|s| s.as_str().map(str::to_string)).collect())
                .ok_or_else(|| format!("{path}.{k}: must be a list of strings"))
        };
        let number = |k: &str, v: &Value| match v {
            Value::Number(n) => Ok(n.clone()),
            _ => Err(format!("{path}.{k}: must be a number")),
        };
        let count = |k: &str, v: &Value| {
            v.as_u64()
                .ok_or_else(|| format!("{path}.{k}: must be a non-negative integer"))
        };
        let schemas = |k: &str, v: &Value| -> Result<Vec<Schema>, String> {
            let list = v
                .as_array()
                .ok_or_else(|| format!("{path}.{k}: must be a list of schemas"))?;
            list.iter()
                .enumerate()
                .map(|(i, s)| Self::read_json(s, &format!("{path}.{k}[{i}]"), locate))
                .collect()
        };
        let mut s = Schema {
            location: locate.then(|| Location {
                file: path.to_string(),
                line: 0,
                column: 0,
            }),
            ..Schema::default()
        };
        for (k, v) in obj {
            match k.as_str() {
                "description" => s.description = Some(string(k, v)?),
                "type" => s.type_ = Some(string(k, v)?),
                "format" => s.format = Some(string(k, v)?),
                "title" => s.title = Some(string(k, v)?),
                "example" => s.example = Some(v.clone()),
                "externalDocs" => s.external_docs = Some(v.clone()),
                "properties" => {
                    let props = v
                        .as_object()
                        .ok_or_else(|| format!("{path}.properties: must be an object"))?;
                    for (name, p) in props {
                        let at = format!("{path}.properties[{name}]");
                        s.properties
                            .push((name.clone(), Self::read_json(p, &at, locate)?));
                    }
                }
                "required" => s.required = strings(k, v)?,
                "items" => {
                    let at = format!("{path}.items");
                    s.items = Some(Box::new(Self::read_json(v, &at, locate)?));
                }
                "additionalProperties" => {
                    let at = format!("{path}.additionalProperties");
                    s.additional_properties = match v {
                        Value::Bool(true) => Some(Box::new(Schema {
                            preserve_unknown_fields: true,
                            ..Schema::default()
                        })),
                        Value::Bool(false) => None,
                        other => Some(Box::new(Self::read_json(other, &at, locate)?)),
                    };
                }
                "enum" => {
                    s.enum_values = v
                        .as_array()
                        .cloned()
                        .ok_or_else(|| format!("{path}.enum: must be a list"))?
                }
                "default" => s.default = Some(v.clone()),
                "minimum" => s.minimum = Some(number(k, v)?),
                "maximum" => s.maximum = Some(number(k, v)?),
                "exclusiveMinimum" => s.exclusive_minimum = flag(k, v)?,
                "exclusiveMaximum" => s.exclusive_maximum = flag(k, v)?,
                "multipleOf" => s.multiple_of = Some(number(k, v)?),
                "pattern" => s.pattern = Some(string(k, v)?),
                "minLength" => s.min_length = Some(count(k, v)?),
                "maxLength" => s.max_length = Some(count(k, v)?),
                "minItems" => s.min_items = Some(count(k, v)?),
                "maxItems" => s.max_items = Some(count(k, v)?),
                "uniqueItems" => s.unique_items = flag(k, v)?,
                "minProperties" => s.min_properties = Some(count(k, v)?),
                "maxProperties" => s.max_properties = Some(count(k, v)?),
                "allOf" => s.all_of = schemas(k, v)?,
                "anyOf" => s.any_of = schemas(k, v)?,
                "oneOf" => s.one_of = schemas(k, v)?,
                "not" => {
                    let at = format!("{path}.not");
                    s.not = Some(Box::new(Self::read_json(v, &at, locate)?));
                }
                "x-kubernetes-validations" => {
                    s.validations =
                        serde_json::from_value(v.clone()).map_err(|e| format!("{path}.{k}: {e}"))?
                }
                "x-kubernetes-embedded-resource" => s.embedded_resource = flag(k, v)?,
                "nullable" => s.nullable = flag(k, v)?,
                "x-kubernetes-preserve-unknown-fields" => s.preserve_unknown_fields = flag(k, v)?,
                "x-kubernetes-int-or-string" => s.int_or_string = flag(k, v)?,
                "x-kubernetes-list-type" => s.list_type = Some(string(k, v)?),
                "x-kubernetes-list-map-keys" => s.list_map_keys = strings(k, v)?,
                "x-kubernetes-map-type" => s.map_type = Some(string(k, v)?),
                // Not part of a CRD's schema language (`locate`: a schema sent to us).
                "x-kubernetes-patch-strategy" if !locate => s.patch_strategy = Some(string(k, v)?),
                "x-kubernetes-patch-merge-key" if !locate => {
                    s.patch_merge_key = Some(string(k, v)?)
                }
                "x-protobuf-field" => {
                    s.protobuf_field = Some(
                        v.as_u64()
                            .and_then(|n| u32::try_from(n).ok())
                            .ok_or_else(|| format!("{path}.{k}: must be a field number"))?,
                    )
                }
                "x-protobuf-embedded" => {
                    s.protobuf_embedded = v
                        .as_array()
                        .and_then(|a| {
                            a.iter()
                                .map(|n| n.as_u64().and_then(|n| u32::try_from(n).ok()))
                                .collect()
                        })
                        .ok_or_else(|| format!("{path}.{k}: must be a list of field numbers"))?
                }
                "x-protobuf-raw-json" => s.protobuf_raw_json = flag(k, v)?,
                // Only definitions name components; a CRD's schema does not.
                "x-openapi-component" if !locate => s.component = Some(string(k, v)?),
                other => return Err(format!("{path}: unsupported keyword `{other}`")),
            }
        }
        Ok(s)
    }
}

impl From<Schema> for serde_json::Value {
    fn from(s: Schema) -> Self {
        s.to_json(true)
    }
}

impl TryFrom<serde_json::Value> for Schema {
    type Error = String;
    fn try_from(v: serde_json::Value) -> Result<Self, String> {
        Schema::from_json(&v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drops what JSON does not carry (source positions), to compare round trips.
    fn without_locations(mut s: Schema) -> Schema {
        s.location = None;
        s.properties = s
            .properties
            .into_iter()
            .map(|(k, p)| (k, without_locations(p)))
            .collect();
        s.items = s.items.map(|i| Box::new(without_locations(*i)));
        s.additional_properties = s
            .additional_properties
            .map(|a| Box::new(without_locations(*a)));
        s
    }

    #[test]
    fn schemas_and_definitions_round_trip_through_json() {
        let text = include_str!("../../api-defs/examples/widget.yaml");
        let mut diags = crate::Diagnostics::default();
        let def = crate::load::yaml::load("widget.yaml", text, &mut diags).expect("loads");
        let schema = without_locations(def.schema.clone());
        assert_eq!(Schema::from_json(&schema.to_json(true)), Ok(schema.clone()));
        let json = serde_json::to_string(&def).expect("serializes");
        let back: ResourceDef = serde_json::from_str(&json).expect("deserializes");
        assert_eq!(back.schema, schema);
        assert_eq!(
            (back.kind, back.scope, back.subresources),
            (def.kind, def.scope, def.subresources)
        );
    }

    #[test]
    fn every_crd_keyword_round_trips_through_json() {
        let v = serde_json::json!({"type": "object", "title": "T", "minProperties": 1, "maxProperties": 4,
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 8, "example": "a"},
                "n": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "multipleOf": 0.5},
                "l": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "string"}},
                "e": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
            },
            "oneOf": [{"required": ["name"]}, {"required": ["n"]}], "not": {"required": ["l"]},
            "x-kubernetes-validations": [{"rule": "self.name != 'x'", "message": "not x", "fieldPath": ".name"}]});
        let s = Schema::from_json(&v).unwrap();
        assert_eq!(s.one_of.len(), 2);
        assert_eq!(s.validations[0].field_path.as_deref(), Some(".name"));
        assert_eq!(s.to_json(false), v);
    }

    #[test]
    fn unknown_schema_keywords_are_named_with_their_path() {
        let v = serde_json::json!({"type": "object", "properties": {"spec": {"type": "object", "patternProperties": {}}}});
        assert_eq!(
            Schema::from_json(&v),
            Err("schema.properties[spec]: unsupported keyword `patternProperties`".to_string())
        );
    }
}
