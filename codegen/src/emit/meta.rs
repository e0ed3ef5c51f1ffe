//! The meta.k8s.io schemas every group-version document references (ObjectMeta, ListMeta,
//! Status, DeleteOptions, WatchEvent, ...), written from the Kubernetes API reference.

use serde_json::{json, Value};

const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";

fn r(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{META}.{name}") })
}

/// A timestamp field: a reference to `Time` (a string, so no object default).
fn time(description: &str) -> Value {
    json!({ "allOf": [r("Time")], "description": description })
}

fn all_of(name: &str) -> Value {
    json!({ "allOf": [r(name)], "default": {} })
}

/// The `apiVersion` property every object carries.
pub fn api_version_property() -> Value {
    json!({ "type": "string", "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources" })
}

/// The `kind` property every object carries.
pub fn kind_property() -> Value {
    json!({ "type": "string", "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds" })
}

/// `(name, schema)` of each shared meta type, as the document of `group`/`version`
/// carries them: the kinds every group-version serves (`DeleteOptions`, `WatchEvent`)
/// name that group-version in `x-kubernetes-group-version-kind`.
pub fn schemas(group: &str, version: &str) -> Vec<(String, Value)> {
    let gvk = |kind: &str| json!([{ "group": group, "kind": kind, "version": version }]);
    let s = |d: &str| json!({ "type": "string", "description": d });
    let string_map = |d: &str| json!({ "type": "object", "additionalProperties": { "type": "string", "default": "" }, "description": d });
    let list = vec![
        (
            "DeleteOptions",
            json!({
                "description": "DeleteOptions may be provided when deleting an API object.",
                "type": "object",
                "properties": {
                    "apiVersion": api_version_property(),
                    "kind": kind_property(),
                    "dryRun": { "type": "array", "items": { "type": "string", "default": "" }, "description": "When present, indicates that modifications should not be persisted. Valid value: All." },
                    "gracePeriodSeconds": { "type": "integer", "format": "int64", "description": "The duration in seconds before the object should be deleted." },
                    "preconditions": all_of("Preconditions"),
                    "propagationPolicy": s("Whether and how garbage collection will be performed: Orphan, Background or Foreground."),
                },
                "x-kubernetes-group-version-kind": gvk("DeleteOptions"),
            }),
        ),
        (
            "FieldsV1",
            json!({ "description": "FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format.", "type": "object" }),
        ),
        (
            "ListMeta",
            json!({
                "description": "ListMeta describes metadata that synthetic resources must have, including lists.",
                "type": "object",
                "properties": {
                    "continue": s("continue may be set if the user set a limit on the number of items returned; pass it back to get the next page."),
                    "remainingItemCount": { "type": "integer", "format": "int64", "description": "The number of subsequent items in the list which are not included in this list response." },
                    "resourceVersion": s("The version of the list, as of which it is consistent."),
                    "selfLink": s("Deprecated: selfLink is a legacy read-only field that is no longer populated."),
                },
            }),
        ),
        (
            "ManagedFieldsEntry",
            json!({
                "description": "ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource that the fieldset applies to.",
                "type": "object",
                "properties": {
                    "apiVersion": s("The version of this resource that this field set applies to."),
                    "fieldsType": s("The format of the field set; only FieldsV1."),
                    "fieldsV1": all_of("FieldsV1"),
                    "manager": s("An identifier of the workflow managing these fields."),
                    "operation": s("The type of operation which led to this entry being created: Apply or Update."),
                    "subresource": s("The name of the subresource used to update that object, or empty for the main resource."),
                    "time": time("When this entry was last changed: set when it is added, and again whenever the manager adds, changes or removes one of its fields."),
                },
            }),
        ),
        (
            "ObjectMeta",
            json!({
                "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
                "type": "object",
                "properties": {
                    "annotations": string_map("Annotations is an unstructured key/value map that tools and controllers use to store and retrieve arbitrary, non-identifying metadata. Unlike labels they cannot be selected on. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/annotations"),
                    "creationTimestamp": time("The server time at which the object was created, in RFC 3339 form and UTC. Set by the server; read-only."),
                    "deletionGracePeriodSeconds": { "type": "integer", "format": "int64", "description": "Number of seconds allowed for this object to gracefully terminate." },
                    "deletionTimestamp": time("The time (RFC 3339) after which the object will be removed, set by the server when a graceful deletion is requested. Clients cannot set it; read-only."),
                    "finalizers": { "type": "array", "items": { "type": "string", "default": "" }, "x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge", "description": "Finalizers name the pending clean-up steps that must complete before the object is removed. While the list is non-empty, a delete only sets deletionTimestamp; each finalizer's owner removes its entry when done, and the object goes away when the list is empty." },
                    "generateName": s("A prefix from which the server generates a unique name when name is not set: it appends a random suffix. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#idempotency"),
                    "generation": { "type": "integer", "format": "int64", "description": "A sequence number of the desired state: the server sets it to 1 on create and increments it whenever the spec changes. Read-only." },
                    "labels": string_map("Labels are string keys and values that organize and categorize objects; label selectors on list and watch match them. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels"),
                    "managedFields": { "type": "array", "items": { "allOf": [r("ManagedFieldsEntry")], "default": {} }, "x-kubernetes-list-type": "atomic", "description": "Maps workflow-id and version to the set of fields that are managed by that workflow." },
                    "name": s("The object's name, unique among objects of its kind in its namespace (or in the cluster, for cluster-scoped kinds). Required on create unless generateName is set; cannot be changed. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"),
                    "namespace": s("The namespace the object lives in; empty for cluster-scoped kinds. Defaults to the namespace of the request path; cannot be changed. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces"),
                    "ownerReferences": { "type": "array", "items": { "allOf": [r("OwnerReference")] }, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"], "x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge", "description": "List of objects depended by this object." },
                    "resourceVersion": s("An opaque value identifying the version of the object that the server stored. Clients pass it back unchanged for optimistic concurrency (an update with a stale value fails with 409 Conflict) and to start watches; they must not interpret it. Read-only. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#concurrency-control-and-consistency"),
                    "selfLink": s("Deprecated: selfLink is a legacy read-only field that is no longer populated."),
                    "uid": s("A value the server generates on create that is unique for all time: a new object with the same name gets a different uid. Read-only. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids"),
                },
            }),
        ),
        (
            "OwnerReference",
            json!({
                "description": "OwnerReference contains enough information to let you identify an owning object.",
                "type": "object",
                "required": ["apiVersion", "kind", "name", "uid"],
                "properties": {
                    "apiVersion": { "type": "string", "default": "", "description": "API version of the referent." },
                    "blockOwnerDeletion": { "type": "boolean", "description": "If true, the owner cannot be deleted before this reference is removed." },
                    "controller": { "type": "boolean", "description": "If true, this reference points to the managing controller." },
                    "kind": { "type": "string", "default": "", "description": "Kind of the referent." },
                    "name": { "type": "string", "default": "", "description": "Name of the referent." },
                    "uid": { "type": "string", "default": "", "description": "UID of the referent." },
                },
                "x-kubernetes-map-type": "atomic",
            }),
        ),
        (
            "Patch",
            json!({ "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.", "type": "object" }),
        ),
        (
            "Preconditions",
            json!({
                "description": "Preconditions must be fulfilled before an operation (update, delete, etc.) is carried out.",
                "type": "object",
                "properties": { "resourceVersion": s("Specifies the target ResourceVersion"), "uid": s("Specifies the target UID.") },
            }),
        ),
        (
            "Status",
            json!({
                "description": "Status is a return value for calls that don't return other objects.",
                "type": "object",
                "properties": {
                    "apiVersion": api_version_property(),
                    "code": { "type": "integer", "format": "int32", "description": "Suggested HTTP return code for this status, 0 if not set." },
                    "details": { "allOf": [r("StatusDetails")], "description": "Extended data associated with the reason." },
                    "kind": kind_property(),
                    "message": s("A human-readable description of the status of this operation."),
                    "metadata": all_of("ListMeta"),
                    "reason": s("A machine-readable description of why this operation is in the Failure status."),
                    "status": s("Status of the operation. One of: Success or Failure."),
                },
                "x-kubernetes-group-version-kind": [{ "group": "", "kind": "Status", "version": "v1" }],
            }),
        ),
        (
            "StatusCause",
            json!({
                "description": "StatusCause provides more information about an api.Status failure.",
                "type": "object",
                "properties": { "field": s("The field of the resource that has caused this error."), "message": s("A human-readable description of the cause of the error."), "reason": s("A machine-readable description of the cause of the error.") },
            }),
        ),
        (
            "StatusDetails",
            json!({
                "description": "StatusDetails is a set of additional properties that MAY be set by the server to provide additional information about a response.",
                "type": "object",
                "properties": {
                    "causes": { "type": "array", "items": { "allOf": [r("StatusCause")], "default": {} }, "x-kubernetes-list-type": "atomic", "description": "The Causes array includes more details associated with the StatusReason failure." },
                    "group": s("The group attribute of the resource associated with the status StatusReason."),
                    "kind": s("The kind attribute of the resource associated with the status StatusReason."),
                    "name": s("The name attribute of the resource associated with the status StatusReason."),
                    "retryAfterSeconds": { "type": "integer", "format": "int32", "description": "If specified, the time in seconds before the operation should be retried." },
                    "uid": s("UID of the resource."),
                },
            }),
        ),
        (
            "Time",
            json!({ "description": "Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON, in RFC 3339 form.", "type": "string", "format": "date-time" }),
        ),
        (
            "WatchEvent",
            json!({
                "description": "Event represents a single event to a watched resource.",
                "type": "object",
                "required": ["type", "object"],
                "properties": {
                    "object": { "allOf": [raw_extension_ref()], "description": "Object is: ADDED or MODIFIED: the new state of the object; DELETED: the state before deletion; BOOKMARK: an object of the watched kind carrying only its resourceVersion; ERROR: a Status." },
                    "type": { "type": "string", "default": "", "description": "The event type: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR." },
                },
                "x-kubernetes-group-version-kind": gvk("WatchEvent"),
            }),
        ),
    ];
    let mut out: Vec<(String, Value)> = list
        .into_iter()
        .map(|(n, v)| (format!("{META}.{n}"), v))
        .collect();
    out.push((
        RAW_EXTENSION.to_string(),
        json!({ "description": "RawExtension holds an embedded object of any kind, as its JSON.", "type": "object" }),
    ));
    out
}

/// Schema name of `runtime.RawExtension`.
const RAW_EXTENSION: &str = "io.k8s.apimachinery.pkg.runtime.RawExtension";

fn raw_extension_ref() -> Value {
    json!({ "$ref": format!("#/components/schemas/{RAW_EXTENSION}") })
}

/// Reference to a shared meta type, for use in kind schemas and operations.
pub fn meta_ref(name: &str) -> Value {
    r(name)
}
