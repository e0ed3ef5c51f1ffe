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
    json!({ "type": "string", "description": "The group and version this object is written in, e.g. v1 or example.dev/v1; the server refuses versions it does not serve. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources" })
}

/// The `kind` property every object carries.
pub fn kind_property() -> Value {
    json!({ "type": "string", "description": "The UpperCamelCase type of the object, e.g. ConfigMap; the request path implies it when it is left out. It cannot change. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds" })
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
                "description": "Optional settings sent with a delete.",
                "type": "object",
                "properties": {
                    "apiVersion": api_version_property(),
                    "kind": kind_property(),
                    "dryRun": { "type": "array", "items": { "type": "string", "default": "" }, "description": "All: run the delete without storing its result." },
                    "gracePeriodSeconds": { "type": "integer", "format": "int64", "description": "Seconds to wait before deleting; 0 deletes at once." },
                    "preconditions": all_of("Preconditions"),
                    "propagationPolicy": s("What happens to dependents: Orphan, Background or Foreground."),
                },
                "x-kubernetes-group-version-kind": gvk("DeleteOptions"),
            }),
        ),
        (
            "FieldsV1",
            json!({ "description": "A set of field paths as a nested JSON object, one key per step.", "type": "object" }),
        ),
        (
            "ListMeta",
            json!({
                "description": "The metadata of a list: its resourceVersion and where the next page starts.",
                "type": "object",
                "properties": {
                    "continue": s("Present when a limit cut the list short: send it back as continue for the next page."),
                    "remainingItemCount": { "type": "integer", "format": "int64", "description": "How many objects the following pages hold." },
                    "resourceVersion": s("The state of storage the list shows."),
                    "selfLink": s("Deprecated and always empty."),
                },
            }),
        ),
        (
            "ManagedFieldsEntry",
            json!({
                "description": "Which fields one manager set, through which operation and API version.",
                "type": "object",
                "properties": {
                    "apiVersion": s("The API version the field paths are written in."),
                    "fieldsType": s("The format of the field set; only FieldsV1."),
                    "fieldsV1": all_of("FieldsV1"),
                    "manager": s("The name of the manager (fieldManager, or the client's user agent)."),
                    "operation": s("Apply for server-side apply, Update for every other write."),
                    "subresource": s("The subresource written through (status, scale), empty for the object itself."),
                    "time": time("When this entry was last changed: set when it is added, and again whenever the manager adds, changes or removes one of its fields."),
                },
            }),
        ),
        (
            "ObjectMeta",
            json!({
                "description": "The metadata every stored object carries: identity, labels, ownership and lifecycle.",
                "type": "object",
                "properties": {
                    "annotations": string_map("Free-form string keys and values for tools to keep notes on the object; selectors do not match them. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/annotations"),
                    "creationTimestamp": time("The server time at which the object was created, in RFC 3339 form and UTC. Set by the server; read-only."),
                    "deletionGracePeriodSeconds": { "type": "integer", "format": "int64", "description": "The grace period a pending delete was given, in seconds. Read-only." },
                    "deletionTimestamp": time("The time (RFC 3339) after which the object will be removed, set by the server when a graceful deletion is requested. Clients cannot set it; read-only."),
                    "finalizers": { "type": "array", "items": { "type": "string", "default": "" }, "x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge", "description": "Finalizers name the pending clean-up steps that must complete before the object is removed. While the list is non-empty, a delete only sets deletionTimestamp; each finalizer's owner removes its entry when done, and the object goes away when the list is empty." },
                    "generateName": s("A prefix from which the server generates a unique name when name is not set: it appends a random suffix. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#idempotency"),
                    "generation": { "type": "integer", "format": "int64", "description": "A sequence number of the desired state: the server sets it to 1 on create and increments it whenever the spec changes. Read-only." },
                    "labels": string_map("Labels are string keys and values that organize and categorize objects; label selectors on list and watch match them. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels"),
                    "managedFields": { "type": "array", "items": { "allOf": [r("ManagedFieldsEntry")], "default": {} }, "x-kubernetes-list-type": "atomic", "description": "Who set which fields: one entry per manager and operation, kept by the server." },
                    "name": s("The object's name, unique among objects of its kind in its namespace (or in the cluster, for cluster-scoped kinds). Required on create unless generateName is set; cannot be changed. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"),
                    "namespace": s("The namespace the object lives in; empty for cluster-scoped kinds. Defaults to the namespace of the request path; cannot be changed. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces"),
                    "ownerReferences": { "type": "array", "items": { "allOf": [r("OwnerReference")] }, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"], "x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge", "description": "The objects that own this one; when they are gone, the garbage collector deletes it." },
                    "resourceVersion": s("An opaque value identifying the version of the object that the server stored. Clients pass it back unchanged for optimistic concurrency (an update with a stale value fails with 409 Conflict) and to start watches; they must not interpret it. Read-only. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#concurrency-control-and-consistency"),
                    "selfLink": s("Deprecated and always empty."),
                    "uid": s("A value the server generates on create that is unique for all time: a new object with the same name gets a different uid. Read-only. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids"),
                },
            }),
        ),
        (
            "OwnerReference",
            json!({
                "description": "Names one owner of an object.",
                "type": "object",
                "required": ["apiVersion", "kind", "name", "uid"],
                "properties": {
                    "apiVersion": { "type": "string", "default": "", "description": "The owner's apiVersion." },
                    "blockOwnerDeletion": { "type": "boolean", "description": "With foreground deletion, the owner waits for this object to be deleted first." },
                    "controller": { "type": "boolean", "description": "Whether the owner is the controller that manages this object (at most one is)." },
                    "kind": { "type": "string", "default": "", "description": "The owner's kind." },
                    "name": { "type": "string", "default": "", "description": "The owner's name." },
                    "uid": { "type": "string", "default": "", "description": "The owner's uid." },
                },
                "x-kubernetes-map-type": "atomic",
            }),
        ),
        (
            "Patch",
            json!({ "description": "The body of a PATCH, in the format its Content-Type names.", "type": "object" }),
        ),
        (
            "Preconditions",
            json!({
                "description": "Conditions the object must still meet for the delete to happen.",
                "type": "object",
                "properties": { "resourceVersion": s("The resourceVersion the object must have."), "uid": s("The uid the object must have.") },
            }),
        ),
        (
            "Status",
            json!({
                "description": "The answer to a request that has no object to return, or that failed.",
                "type": "object",
                "properties": {
                    "apiVersion": api_version_property(),
                    "code": { "type": "integer", "format": "int32", "description": "The HTTP status code of the answer." },
                    "details": { "allOf": [r("StatusDetails")], "description": "Which object the answer is about, and field-level causes." },
                    "kind": kind_property(),
                    "message": s("What happened, for people."),
                    "metadata": all_of("ListMeta"),
                    "reason": s("Why the request failed, as a single UpperCamelCase word for programs."),
                    "status": s("Success or Failure."),
                },
                "x-kubernetes-group-version-kind": [{ "group": "", "kind": "Status", "version": "v1" }],
            }),
        ),
        (
            "StatusCause",
            json!({
                "description": "One field-level reason a request failed.",
                "type": "object",
                "properties": { "field": s("The path of the field at fault, e.g. spec.replicas."), "message": s("What is wrong with the field, for people."), "reason": s("What is wrong with the field, as a word for programs, e.g. FieldValueInvalid.") },
            }),
        ),
        (
            "StatusDetails",
            json!({
                "description": "The object a failure concerns and the causes of it.",
                "type": "object",
                "properties": {
                    "causes": { "type": "array", "items": { "allOf": [r("StatusCause")], "default": {} }, "x-kubernetes-list-type": "atomic", "description": "Each field-level problem found." },
                    "group": s("The API group of the object concerned."),
                    "kind": s("The resource (or kind) of the object concerned."),
                    "name": s("The name of the object concerned."),
                    "retryAfterSeconds": { "type": "integer", "format": "int32", "description": "Seconds to wait before trying again, when the server suggests it." },
                    "uid": s("The uid of the object concerned."),
                },
            }),
        ),
        (
            "Time",
            json!({ "description": "A point in time as an RFC 3339 string in UTC.", "type": "string", "format": "date-time" }),
        ),
        (
            "WatchEvent",
            json!({
                "description": "One change seen by a watch.",
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
