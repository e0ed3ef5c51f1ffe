//! The meta.k8s.io schemas every group-version document references (ObjectMeta, ListMeta,
//! Status, DeleteOptions, ...), written from the Kubernetes API reference.

use serde_json::{json, Value};

const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";

fn r(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{META}.{name}") })
}

fn all_of(name: &str) -> Value {
    json!({ "allOf": [r(name)], "default": {} })
}

/// `(name, schema)` of each shared meta type.
pub fn schemas() -> Vec<(String, Value)> {
    let s = |d: &str| json!({ "type": "string", "description": d });
    let string_map = |d: &str| json!({ "type": "object", "additionalProperties": { "type": "string", "default": "" }, "description": d });
    let list = vec![
        (
            "DeleteOptions",
            json!({
                "description": "DeleteOptions may be provided when deleting an API object.",
                "type": "object",
                "properties": {
                    "apiVersion": s("APIVersion defines the versioned schema of this representation of an object."),
                    "kind": s("Kind is a string value representing the REST resource this object represents."),
                    "dryRun": { "type": "array", "items": { "type": "string", "default": "" }, "description": "When present, indicates that modifications should not be persisted. Valid value: All." },
                    "gracePeriodSeconds": { "type": "integer", "format": "int64", "description": "The duration in seconds before the object should be deleted." },
                    "preconditions": all_of("Preconditions"),
                    "propagationPolicy": s("Whether and how garbage collection will be performed: Orphan, Background or Foreground."),
                },
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
                    "time": all_of("Time"),
                },
            }),
        ),
        (
            "ObjectMeta",
            json!({
                "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
                "type": "object",
                "properties": {
                    "annotations": string_map("Annotations is an unstructured key value map stored with a resource."),
                    "creationTimestamp": all_of("Time"),
                    "deletionGracePeriodSeconds": { "type": "integer", "format": "int64", "description": "Number of seconds allowed for this object to gracefully terminate." },
                    "deletionTimestamp": all_of("Time"),
                    "finalizers": { "type": "array", "items": { "type": "string", "default": "" }, "x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge", "description": "Must be empty before the object is deleted from the registry." },
                    "generateName": s("An optional prefix, used by the server, to generate a unique name only if the name field has not been provided."),
                    "generation": { "type": "integer", "format": "int64", "description": "A sequence number representing a specific generation of the desired state." },
                    "labels": string_map("Map of string keys and values that can be used to organize and categorize objects."),
                    "managedFields": { "type": "array", "items": { "allOf": [r("ManagedFieldsEntry")], "default": {} }, "x-kubernetes-list-type": "atomic", "description": "Maps workflow-id and version to the set of fields that are managed by that workflow." },
                    "name": s("Name must be unique within a namespace."),
                    "namespace": s("Namespace defines the space within which each name must be unique."),
                    "ownerReferences": { "type": "array", "items": { "allOf": [r("OwnerReference")], "default": {} }, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"], "x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge", "description": "List of objects depended by this object." },
                    "resourceVersion": s("An opaque value that represents the internal version of this object."),
                    "selfLink": s("Deprecated: selfLink is a legacy read-only field that is no longer populated."),
                    "uid": s("UID is the unique in time and space value for this object."),
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
                    "apiVersion": s("APIVersion defines the versioned schema of this representation of an object."),
                    "code": { "type": "integer", "format": "int32", "description": "Suggested HTTP return code for this status, 0 if not set." },
                    "details": { "allOf": [r("StatusDetails")], "description": "Extended data associated with the reason." },
                    "kind": s("Kind is a string value representing the REST resource this object represents."),
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
                    "object": { "type": "object", "description": "Object is: ADDED or MODIFIED: the new state; DELETED: the state before deletion; ERROR: a Status." },
                    "type": { "type": "string", "default": "" },
                },
            }),
        ),
    ];
    list.into_iter()
        .map(|(n, v)| (format!("{META}.{n}"), v))
        .collect()
}

/// Reference to a shared meta type, for use in kind schemas and operations.
pub fn meta_ref(name: &str) -> Value {
    r(name)
}
