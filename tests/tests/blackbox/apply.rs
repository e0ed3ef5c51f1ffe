//! Server-side apply (issue 4), tried as a user would: `kubectl apply --server-side`,
//! the kube crate's `Patch::Apply`, and raw HTTP where only the wire shows it. Every
//! expectation is what kube-apiserver answers.

use apiserver_tests::objects::{api_status, gadgets_resource, widgets, CONFIGMAPS, WIDGETS};
use apiserver_tests::{raw_request, TestServer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, ObjectMeta, Patch, PatchParams};
use kube::ResourceExt;
use serde_json::{json, Value};

const APPLY: Option<&str> = Some("application/apply-patch+yaml");

/// A Widget apply configuration: apiVersion, kind, name and the given spec.
fn widget_intent(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "example.dev/v1",
        "kind": "Widget",
        "metadata": { "name": name },
        "spec": spec,
    })
}

fn cm_intent(name: &str, data: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": name },
        "data": data,
    })
}

/// The managedFields entries of an object as JSON.
fn entries(obj: &impl serde::Serialize) -> Vec<Value> {
    let v = serde_json::to_value(obj).unwrap();
    v["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The fieldsV1 of the entry for `manager` with `operation` (None when there is none).
fn fields_of(obj: &impl serde::Serialize, manager: &str, operation: &str) -> Option<Value> {
    entries(obj)
        .into_iter()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
        .map(|e| e["fieldsV1"].clone())
}

fn manifest(s: &TestServer, name: &str, yaml: &str) -> String {
    s.write_file(name, yaml).to_str().unwrap().to_string()
}

fn get_json(s: &TestServer, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&s.kubectl_ok(&all)).expect("kubectl printed JSON")
}

// ---------------------------------------------------------------------------------------
// kubectl apply --server-side
// ---------------------------------------------------------------------------------------

#[test]
fn kubectl_server_side_apply_creates_updates_and_removes_dropped_fields() {
    let s = TestServer::start();
    let v1 = manifest(
        &s,
        "v1.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\n  labels:\n    app: demo\ndata:\n  a: one\n  b: two\n",
    );
    let out = s.kubectl_ok(&["apply", "--server-side", "-f", &v1]);
    assert_eq!(out.trim(), "configmap/ssa serverside-applied");
    let obj = get_json(&s, &["get", "cm", "ssa"]);
    assert_eq!(obj["data"], json!({"a": "one", "b": "two"}));
    assert_eq!(obj["metadata"]["labels"], json!({"app": "demo"}));
    let rv1 = obj["metadata"]["resourceVersion"].clone();

    // Re-applying the same manifest writes nothing.
    s.kubectl_ok(&["apply", "--server-side", "-f", &v1]);
    let obj = get_json(&s, &["get", "cm", "ssa"]);
    assert_eq!(
        obj["metadata"]["resourceVersion"], rv1,
        "an apply that changes nothing must not write"
    );

    // Changing one value and dropping another field (and the label).
    let v2 = manifest(
        &s,
        "v2.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: uno\n",
    );
    let out = s.kubectl_ok(&["apply", "--server-side", "-f", &v2]);
    assert_eq!(out.trim(), "configmap/ssa serverside-applied");
    let obj = get_json(&s, &["get", "cm", "ssa"]);
    assert_eq!(
        obj["data"],
        json!({"a": "uno"}),
        "data.b was dropped from the manifest and must be removed"
    );
    assert!(
        obj["metadata"]["labels"].get("app").is_none(),
        "the dropped label must be removed: {obj}"
    );

    // The same for a Widget: a dropped spec field goes, defaults stay.
    let w1 = manifest(
        &s,
        "w1.yaml",
        "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  color: red\n  size: 10Gi\n  labels:\n    tier: web\n",
    );
    let out = s.kubectl_ok(&["apply", "--server-side", "-f", &w1]);
    assert_eq!(out.trim(), "widget.example.dev/w serverside-applied");
    let w2 = manifest(
        &s,
        "w2.yaml",
        "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  color: blue\n",
    );
    s.kubectl_ok(&["apply", "--server-side", "-f", &w2]);
    let obj = get_json(&s, &["get", "wd", "w"]);
    assert_eq!(
        obj["spec"],
        json!({"color": "blue", "replicas": 1}),
        "size and labels were dropped from the manifest; replicas is the default"
    );
    assert_eq!(obj["metadata"]["generation"], 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn conflicting_manager_gets_kube_apiserver_message_and_force_conflicts_wins() {
    let s = TestServer::start();
    let mine = manifest(
        &s,
        "mine.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v1\n  other: x\n",
    );
    s.kubectl_ok(&["apply", "--server-side", "-f", &mine]);
    let theirs = manifest(
        &s,
        "theirs.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v2\n",
    );
    let err = s.kubectl_err(&[
        "apply",
        "--server-side",
        "--field-manager=other",
        "-f",
        &theirs,
    ]);
    assert!(
        err.contains(r#"Apply failed with 1 conflict: conflict with "kubectl": .data.k"#),
        "stderr: {err}"
    );
    assert!(
        err.contains("--force-conflicts"),
        "kubectl explains how to resolve it: {err}"
    );
    assert_eq!(
        s.kubectl_ok(&["get", "cm", "c", "-o", "jsonpath={.data.k}"]),
        "v1"
    );

    // The Status behind it: 409 Conflict with one cause per field.
    let c = s.client().await;
    let resp = raw_request(
        &c,
        "PATCH",
        &format!("{CONFIGMAPS}/c?fieldManager=other"),
        APPLY,
        cm_intent("c", json!({"k": "v2"})).to_string(),
    )
    .await;
    assert_eq!(resp.status, 409, "{}", resp.text);
    assert_eq!(resp.json["reason"], "Conflict", "{}", resp.text);
    assert_eq!(
        resp.json["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"kubectl\"", "field": ".data.k"}]),
        "{}",
        resp.text
    );

    let out = s.kubectl_ok(&[
        "apply",
        "--server-side",
        "--field-manager=other",
        "--force-conflicts",
        "-f",
        &theirs,
    ]);
    assert_eq!(out.trim(), "configmap/c serverside-applied");
    let obj = get_json(&s, &["get", "cm", "c", "--show-managed-fields"]);
    assert_eq!(obj["data"], json!({"k": "v2", "other": "x"}));
    assert_eq!(
        fields_of(&obj, "other", "Apply"),
        Some(json!({"f:data": {"f:k": {}}})),
        "{obj}"
    );
    assert_eq!(
        fields_of(&obj, "kubectl", "Apply"),
        Some(json!({"f:data": {"f:other": {}}})),
        "forcing takes .data.k away from kubectl: {obj}"
    );

    // kubectl no longer owns k: applying its old manifest now conflicts the other way.
    let err = s.kubectl_err(&["apply", "--server-side", "-f", &mine]);
    assert!(
        err.contains(r#"Apply failed with 1 conflict: conflict with "other": .data.k"#),
        "stderr: {err}"
    );

    // Several conflicts are listed per manager, one line each.
    let both = manifest(
        &s,
        "both.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v3\n  other: y\n",
    );
    let err = s.kubectl_err(&[
        "apply",
        "--server-side",
        "--field-manager=third",
        "-f",
        &both,
    ]);
    assert!(
        err.contains(
            "Apply failed with 2 conflicts: conflicts with \"kubectl\":\n- .data.other\nconflicts with \"other\":\n- .data.k"
        ),
        "stderr: {err}"
    );
}

#[test]
fn conflicts_with_update_managers_name_their_api_version() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "configmap", "c", "--from-literal=k=created"]);
    let f = manifest(
        &s,
        "c.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: applied\n",
    );
    let err = s.kubectl_err(&["apply", "--server-side", "-f", &f]);
    assert!(
        err.contains(
            r#"Apply failed with 1 conflict: conflict with "kubectl-create" using v1: .data.k"#
        ),
        "stderr: {err}"
    );
    s.kubectl_ok(&["apply", "--server-side", "--force-conflicts", "-f", &f]);
    let obj = get_json(&s, &["get", "cm", "c", "--show-managed-fields"]);
    assert_eq!(obj["data"]["k"], "applied");
    assert!(
        fields_of(&obj, "kubectl-create", "Update")
            .is_none_or(|f| f["f:data"].get("f:k").is_none()),
        "kubectl-create lost .data.k: {obj}"
    );
}

#[test]
fn applying_the_same_value_shares_ownership() {
    let s = TestServer::start();
    let a = manifest(
        &s,
        "a.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\ndata:\n  k: same\n  onlya: a\n",
    );
    let b = manifest(
        &s,
        "b.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\ndata:\n  k: same\n",
    );
    s.kubectl_ok(&["apply", "--server-side", "--field-manager=mgr-a", "-f", &a]);
    let out = s.kubectl_ok(&["apply", "--server-side", "--field-manager=mgr-b", "-f", &b]);
    assert_eq!(
        out.trim(),
        "configmap/shared serverside-applied",
        "applying a value another manager owns with the same value is not a conflict"
    );
    let obj = get_json(&s, &["get", "cm", "shared", "--show-managed-fields"]);
    assert_eq!(
        fields_of(&obj, "mgr-a", "Apply"),
        Some(json!({"f:data": {"f:k": {}, "f:onlya": {}}})),
        "{obj}"
    );
    assert_eq!(
        fields_of(&obj, "mgr-b", "Apply"),
        Some(json!({"f:data": {"f:k": {}}})),
        "both managers own .data.k: {obj}"
    );

    // mgr-a stops applying k: it stays, mgr-b still owns it.
    let a2 = manifest(
        &s,
        "a2.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\ndata:\n  onlya: a\n",
    );
    s.kubectl_ok(&["apply", "--server-side", "--field-manager=mgr-a", "-f", &a2]);
    let obj = get_json(&s, &["get", "cm", "shared"]);
    assert_eq!(obj["data"], json!({"k": "same", "onlya": "a"}), "{obj}");
    // mgr-b stops too: now nobody owns k and it is removed.
    let b2 = manifest(
        &s,
        "b2.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n",
    );
    s.kubectl_ok(&["apply", "--server-side", "--field-manager=mgr-b", "-f", &b2]);
    let obj = get_json(&s, &["get", "cm", "shared"]);
    assert_eq!(obj["data"], json!({"onlya": "a"}), "{obj}");
}

#[test]
fn show_managed_fields_lists_apply_entries() {
    let s = TestServer::start();
    let f = manifest(
        &s,
        "c.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m\n  labels:\n    app: demo\ndata:\n  a: one\n  b: two\n",
    );
    s.kubectl_ok(&["apply", "--server-side", "-f", &f]);
    s.kubectl_ok(&["label", "cm", "m", "extra=yes"]);
    let yaml = s.kubectl_ok(&["get", "cm", "m", "-o", "yaml", "--show-managed-fields"]);
    let obj: serde_yaml::Value = serde_yaml::from_str(&yaml).unwrap();
    let entries = obj["metadata"]["managedFields"]
        .as_sequence()
        .unwrap_or_else(|| panic!("no managedFields:\n{yaml}"));
    assert_eq!(entries.len(), 2, "{yaml}");
    let apply = &entries[0];
    assert_eq!(apply["manager"].as_str(), Some("kubectl"), "{yaml}");
    assert_eq!(apply["operation"].as_str(), Some("Apply"), "{yaml}");
    assert_eq!(apply["apiVersion"].as_str(), Some("v1"), "{yaml}");
    assert_eq!(apply["fieldsType"].as_str(), Some("FieldsV1"), "{yaml}");
    assert!(apply["time"].as_str().is_some(), "{yaml}");
    assert!(
        apply.get("subresource").is_none(),
        "no subresource for a main-endpoint apply:\n{yaml}"
    );
    let want: serde_yaml::Value =
        serde_yaml::from_str("f:data: {f:a: {}, f:b: {}}\nf:metadata: {f:labels: {f:app: {}}}\n")
            .unwrap();
    assert_eq!(apply["fieldsV1"], want, "{yaml}");
    let label = &entries[1];
    assert_eq!(label["manager"].as_str(), Some("kubectl-label"), "{yaml}");
    assert_eq!(label["operation"].as_str(), Some("Update"), "{yaml}");
    let want: serde_yaml::Value =
        serde_yaml::from_str("f:metadata: {f:labels: {f:extra: {}}}").unwrap();
    assert_eq!(label["fieldsV1"], want, "{yaml}");
}

#[test]
fn unknown_fields_in_an_apply_are_rejected() {
    let s = TestServer::start();
    let f = manifest(
        &s,
        "w.yaml",
        "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  color: red\n  bogus: 1\n",
    );
    let err = s.kubectl_err(&["apply", "--server-side", "-f", &f]);
    // kube-apiserver's own answer is a 500 `failed to create typed patch object
    // (default/w; example.dev/v1, Kind=Widget): .spec.bogus: field not declared in
    // schema`; a 4xx naming the field is what matters to the user.
    assert!(
        err.contains("Error from server (BadRequest)") && err.contains("spec.bogus"),
        "stderr: {err}"
    );
    let err = s.kubectl_err(&["get", "wd", "w"]);
    assert!(err.contains("NotFound"), "nothing stored: {err}");
    // An invalid value is 422 like any other write.
    let f = manifest(
        &s,
        "pink.yaml",
        "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  color: pink\n",
    );
    let err = s.kubectl_err(&["apply", "--server-side", "-f", &f]);
    assert!(
        err.contains(r#"spec.color: Unsupported value: "pink""#),
        "stderr: {err}"
    );
}

// ---------------------------------------------------------------------------------------
// The kube crate's Patch::Apply
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn kube_patch_apply_round_trips_a_configmap() {
    let s = TestServer::start();
    let cms: Api<ConfigMap> = Api::default_namespaced(s.client().await);
    let pp = PatchParams::apply("mgr");
    let intent = ConfigMap {
        metadata: ObjectMeta {
            name: Some("rt".into()),
            ..Default::default()
        },
        data: Some([("a".to_string(), "1".to_string())].into()),
        ..Default::default()
    };
    let created = cms
        .patch("rt", &pp, &Patch::Apply(&intent))
        .await
        .expect("apply creates");
    assert_eq!(created.data.as_ref().unwrap()["a"], "1");
    assert!(created.metadata.uid.is_some());
    assert_eq!(
        fields_of(&created, "mgr", "Apply"),
        Some(json!({"f:data": {"f:a": {}}}))
    );
    let got = cms.get("rt").await.unwrap();
    assert_eq!(got.metadata.uid, created.metadata.uid);

    // Apply again with a change: updated, same object.
    let mut changed = intent.clone();
    changed.data = Some([("a".to_string(), "2".to_string())].into());
    let updated = cms
        .patch("rt", &pp, &Patch::Apply(&changed))
        .await
        .expect("apply updates");
    assert_eq!(updated.data.as_ref().unwrap()["a"], "2");
    assert_eq!(updated.metadata.uid, created.metadata.uid);
    assert_ne!(updated.resource_version(), created.resource_version());
    assert_eq!(
        entries(&updated).len(),
        1,
        "one entry per manager and operation"
    );

    // The same intent again: nothing written.
    let same = cms.patch("rt", &pp, &Patch::Apply(&changed)).await.unwrap();
    assert_eq!(same.resource_version(), updated.resource_version());

    // A merge patch by another manager is recorded as an Update entry.
    let merged = cms
        .patch(
            "rt",
            &PatchParams {
                field_manager: Some("editor".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"data": {"b": "x"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        fields_of(&merged, "editor", "Update"),
        Some(json!({"f:data": {"f:b": {}}}))
    );
    assert_eq!(
        fields_of(&merged, "mgr", "Apply"),
        Some(json!({"f:data": {"f:a": {}}}))
    );
    // The applier's next apply leaves the editor's field alone.
    let after = cms.patch("rt", &pp, &Patch::Apply(&changed)).await.unwrap();
    assert_eq!(after.data.unwrap()["b"], "x");
}

#[tokio::test(flavor = "multi_thread")]
async fn kube_patch_apply_round_trips_a_widget() {
    let s = TestServer::start();
    let c = s.client().await;
    let api = widgets(&c);
    let pp = PatchParams::apply("widget-ctl");
    let created = api
        .patch(
            "w",
            &pp,
            &Patch::Apply(widget_intent("w", json!({"color": "red", "replicas": 2}))),
        )
        .await
        .expect("apply creates a Widget");
    assert_eq!(created.data["spec"], json!({"color": "red", "replicas": 2}));
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(
        fields_of(&created, "widget-ctl", "Apply"),
        Some(json!({"f:spec": {"f:color": {}, "f:replicas": {}}})),
        "{:?}",
        created.metadata.managed_fields
    );

    let updated = api
        .patch(
            "w",
            &pp,
            &Patch::Apply(widget_intent("w", json!({"color": "green", "replicas": 2}))),
        )
        .await
        .expect("apply updates a Widget");
    assert_eq!(updated.data["spec"]["color"], "green");
    assert_eq!(updated.metadata.generation, Some(2));

    let same = api
        .patch(
            "w",
            &pp,
            &Patch::Apply(widget_intent("w", json!({"color": "green", "replicas": 2}))),
        )
        .await
        .unwrap();
    assert_eq!(same.resource_version(), updated.resource_version());
    assert_eq!(same.metadata.generation, Some(2));

    // Forcing through the kube crate.
    let status = api_status(
        api.patch(
            "w",
            &PatchParams::apply("intruder"),
            &Patch::Apply(widget_intent("w", json!({"color": "blue"}))),
        )
        .await,
        "a conflicting apply without force",
    );
    assert_eq!(status.code, 409, "{status:?}");
    assert_eq!(
        status.message,
        r#"Apply failed with 1 conflict: conflict with "widget-ctl": .spec.color"#
    );
    let forced = api
        .patch(
            "w",
            &PatchParams::apply("intruder").force(),
            &Patch::Apply(widget_intent("w", json!({"color": "blue"}))),
        )
        .await
        .expect("forced apply");
    assert_eq!(forced.data["spec"]["color"], "blue");
    assert_eq!(forced.data["spec"]["replicas"], 2);

    // A body that is not an object of the URL's kind, or of another name: 400.
    let resp = raw_request(
        &c,
        "PATCH",
        &format!("{WIDGETS}/w?fieldManager=x"),
        APPLY,
        widget_intent("other", json!({"color": "red"})).to_string(),
    )
    .await;
    assert_eq!(
        resp.status, 400,
        "apply body naming another object: {}",
        resp.text
    );
}

// ---------------------------------------------------------------------------------------
// List and map semantics
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn map_list_merges_by_key_on_widget_ports() {
    let s = TestServer::start();
    let api = widgets(&s.client().await);
    let a = PatchParams::apply("mgr-a");
    let b = PatchParams::apply("mgr-b");
    api.patch(
        "w",
        &a,
        &Patch::Apply(widget_intent(
            "w",
            json!({"color": "red", "ports": [{"port": 80, "name": "http"}]}),
        )),
    )
    .await
    .unwrap();
    let both = api
        .patch(
            "w",
            &b,
            &Patch::Apply(widget_intent(
                "w",
                json!({"color": "red", "ports": [{"port": 443, "name": "https"}]}),
            )),
        )
        .await
        .expect("a second manager adds its own port");
    let mut ports: Vec<Value> = both.data["spec"]["ports"].as_array().unwrap().clone();
    ports.sort_by_key(|p| p["port"].as_i64());
    assert_eq!(
        ports,
        [
            json!({"port": 80, "name": "http"}),
            json!({"port": 443, "name": "https"})
        ],
        "spec.ports is a map list keyed by port: both items are kept"
    );
    assert_eq!(
        fields_of(&both, "mgr-b", "Apply"),
        Some(json!({"f:spec": {"f:color": {}, "f:ports": {
            "k:{\"port\":443}": {".": {}, "f:name": {}, "f:port": {}}
        }}})),
        "{:?}",
        both.metadata.managed_fields
    );

    // Another name for b's port conflicts on that item's field only.
    let status = api_status(
        api.patch(
            "w",
            &a,
            &Patch::Apply(widget_intent(
                "w",
                json!({"color": "red", "ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "tls"}]}),
            )),
        )
        .await,
        "renaming another manager's port",
    );
    assert_eq!(status.code, 409, "{status:?}");
    assert_eq!(
        status.message,
        r#"Apply failed with 1 conflict: conflict with "mgr-b": .spec.ports[port=443].name"#
    );

    // A granular map (spec.labels): two managers each own their key.
    api.patch(
        "w",
        &a,
        &Patch::Apply(widget_intent(
            "w",
            json!({"color": "red", "ports": [{"port": 80, "name": "http"}], "labels": {"a": "1"}}),
        )),
    )
    .await
    .unwrap();
    let labels = api
        .patch(
            "w",
            &b,
            &Patch::Apply(widget_intent(
                "w",
                json!({"color": "red", "ports": [{"port": 443, "name": "https"}], "labels": {"b": "2"}}),
            )),
        )
        .await
        .unwrap();
    assert_eq!(labels.data["spec"]["labels"], json!({"a": "1", "b": "2"}));

    // mgr-a drops its port: only port 80 goes.
    let after = api
        .patch(
            "w",
            &a,
            &Patch::Apply(widget_intent("w", json!({"color": "red"}))),
        )
        .await
        .unwrap();
    assert_eq!(
        after.data["spec"]["ports"],
        json!([{"port": 443, "name": "https"}]),
        "dropping a port removes only that manager's item"
    );
    assert_eq!(
        after.data["spec"]["labels"],
        json!({"b": "2"}),
        "mgr-a no longer applies labels.a"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn set_and_atomic_list_semantics() {
    let s = TestServer::start();
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    // metadata.finalizers is a set (x-kubernetes-list-type: set): the union of what each
    // manager applies; each manager's removal removes only its own value.
    let with_finalizers = |fins: &[&str]| {
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "s", "finalizers": fins},
        })
    };
    cms.patch(
        "s",
        &PatchParams::apply("mgr-a"),
        &Patch::Apply(with_finalizers(&["example.dev/a", "example.dev/shared"])),
    )
    .await
    .unwrap();
    let both = cms
        .patch(
            "s",
            &PatchParams::apply("mgr-b"),
            &Patch::Apply(with_finalizers(&["example.dev/b", "example.dev/shared"])),
        )
        .await
        .expect("set items from two managers do not conflict");
    let mut fins = both.finalizers().to_vec();
    fins.sort();
    assert_eq!(
        fins,
        ["example.dev/a", "example.dev/b", "example.dev/shared"],
        "a set merges the values of all managers"
    );
    assert_eq!(
        fields_of(&both, "mgr-b", "Apply"),
        Some(json!({"f:metadata": {"f:finalizers": {
            "v:\"example.dev/b\"": {}, "v:\"example.dev/shared\"": {}
        }}}))
    );
    let after = cms
        .patch(
            "s",
            &PatchParams::apply("mgr-a"),
            &Patch::Apply(with_finalizers(&[])),
        )
        .await
        .unwrap();
    let mut fins = after.finalizers().to_vec();
    fins.sort();
    assert_eq!(
        fins,
        ["example.dev/b", "example.dev/shared"],
        "mgr-a's own value goes; the shared one stays (mgr-b still applies it)"
    );
    cms.patch(
        "s",
        &PatchParams::apply("mgr-b"),
        &Patch::Apply(with_finalizers(&[])),
    )
    .await
    .unwrap();
    assert!(cms.get("s").await.unwrap().finalizers().is_empty());

    // Gadget spec.features is an atomic list: one owner for the whole list.
    let gadgets: Api<DynamicObject> = Api::all_with(c.clone(), &gadgets_resource());
    let gadget = |features: &[&str]| {
        json!({
            "apiVersion": "example.dev/v1",
            "kind": "Gadget",
            "metadata": {"name": "g"},
            "spec": {"mode": "Manual", "features": features},
        })
    };
    gadgets
        .patch(
            "g",
            &PatchParams::apply("mgr-a"),
            &Patch::Apply(gadget(&["x"])),
        )
        .await
        .unwrap();
    let status = api_status(
        gadgets
            .patch(
                "g",
                &PatchParams::apply("mgr-b"),
                &Patch::Apply(gadget(&["y"])),
            )
            .await,
        "applying another value to an atomic list",
    );
    assert_eq!(status.code, 409, "{status:?}");
    assert_eq!(
        status.message,
        r#"Apply failed with 1 conflict: conflict with "mgr-a": .spec.features"#
    );
    let forced = gadgets
        .patch(
            "g",
            &PatchParams::apply("mgr-b").force(),
            &Patch::Apply(gadget(&["y"])),
        )
        .await
        .unwrap();
    assert_eq!(
        forced.data["spec"]["features"],
        json!(["y"]),
        "an atomic list is replaced whole"
    );
}

// ---------------------------------------------------------------------------------------
// Options and errors
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn dry_run_apply_persists_nothing() {
    let s = TestServer::start();
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let dry = PatchParams::apply("mgr").dry_run();
    let answered = cms
        .patch("d", &dry, &Patch::Apply(cm_intent("d", json!({"a": "1"}))))
        .await
        .expect("dry-run apply of a new object");
    assert_eq!(answered.data.unwrap()["a"], "1");
    assert!(
        cms.get_opt("d").await.unwrap().is_none(),
        "a dry-run apply must not create"
    );

    let real = cms
        .patch(
            "d",
            &PatchParams::apply("mgr"),
            &Patch::Apply(cm_intent("d", json!({"a": "1"}))),
        )
        .await
        .unwrap();
    let answered = cms
        .patch("d", &dry, &Patch::Apply(cm_intent("d", json!({"a": "2"}))))
        .await
        .unwrap();
    assert_eq!(answered.data.unwrap()["a"], "2");
    let now = cms.get("d").await.unwrap();
    assert_eq!(now.data.unwrap()["a"], "1", "dry-run apply must not update");
    assert_eq!(
        now.metadata.resource_version,
        real.metadata.resource_version
    );

    // kubectl's --dry-run=server says so.
    let f = manifest(
        &s,
        "d.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\ndata:\n  a: \"3\"\n",
    );
    let out = s.kubectl_ok(&[
        "apply",
        "--server-side",
        "--field-manager=mgr",
        "--dry-run=server",
        "-f",
        &f,
    ]);
    assert_eq!(
        out.trim(),
        "configmap/d serverside-applied (server dry run)"
    );
    assert_eq!(
        s.kubectl_ok(&["get", "cm", "d", "-o", "jsonpath={.data.a}"]),
        "1"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn apply_without_field_manager_is_invalid() {
    let s = TestServer::start();
    let c = s.client().await;
    let resp = raw_request(
        &c,
        "PATCH",
        &format!("{CONFIGMAPS}/nomgr"),
        APPLY,
        cm_intent("nomgr", json!({"a": "1"})).to_string(),
    )
    .await;
    assert_eq!(resp.status, 422, "{}", resp.text);
    assert_eq!(resp.json["reason"], "Invalid", "{}", resp.text);
    assert_eq!(
        resp.json["message"],
        r#"PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch"#,
        "{}",
        resp.text
    );
    // A YAML body works as well as JSON.
    let resp = raw_request(
        &c,
        "PATCH",
        &format!("{CONFIGMAPS}/yaml?fieldManager=yaml-mgr"),
        APPLY,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yaml\ndata:\n  a: \"1\"\n",
    )
    .await;
    assert_eq!(
        resp.status, 201,
        "apply creating an object answers 201: {}",
        resp.text
    );
    assert_eq!(resp.json["data"]["a"], "1");
    let resp = raw_request(
        &c,
        "PATCH",
        &format!("{CONFIGMAPS}/yaml?fieldManager=yaml-mgr"),
        APPLY,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yaml\ndata:\n  a: \"2\"\n",
    )
    .await;
    assert_eq!(
        resp.status, 200,
        "apply updating answers 200: {}",
        resp.text
    );
    // force=true is only for apply patches.
    let resp = raw_request(
        &c,
        "PATCH",
        &format!("{CONFIGMAPS}/yaml?force=true"),
        Some("application/merge-patch+json"),
        r#"{"data":{"a":"3"}}"#,
    )
    .await;
    assert_eq!(resp.status, 422, "force on a merge patch: {}", resp.text);
    // A body that is not YAML or JSON: 400.
    let resp = raw_request(
        &c,
        "PATCH",
        &format!("{CONFIGMAPS}/yaml?fieldManager=yaml-mgr"),
        APPLY,
        "data: [unclosed",
    )
    .await;
    assert_eq!(resp.status, 400, "{}", resp.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn apply_to_widget_status_changes_status_only() {
    let s = TestServer::start();
    let c = s.client().await;
    let api = widgets(&c);
    api.patch(
        "w",
        &PatchParams::apply("spec-owner"),
        &Patch::Apply(widget_intent("w", json!({"color": "red", "replicas": 2}))),
    )
    .await
    .unwrap();
    let intent = json!({
        "apiVersion": "example.dev/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "status": {"replicas": 2, "selector": "app=w"},
    });
    let updated = api
        .patch_status(
            "w",
            &PatchParams::apply("status-ctl"),
            &Patch::Apply(&intent),
        )
        .await
        .expect("apply to /status");
    assert_eq!(
        updated.data["status"],
        json!({"replicas": 2, "selector": "app=w"})
    );
    assert_eq!(
        updated.data["spec"]["color"], "red",
        "spec is not changed through /status"
    );
    assert_eq!(
        updated.metadata.generation,
        Some(1),
        "status writes never bump generation"
    );
    let entry = entries(&updated)
        .into_iter()
        .find(|e| e["manager"] == "status-ctl")
        .unwrap_or_else(|| {
            panic!(
                "no entry for status-ctl: {:?}",
                updated.metadata.managed_fields
            )
        });
    assert_eq!(entry["operation"], "Apply");
    assert_eq!(entry["subresource"], "status");
    assert_eq!(
        entry["fieldsV1"],
        json!({"f:status": {"f:replicas": {}, "f:selector": {}}}),
        "the status applier owns only status fields"
    );

    // The main endpoint's apply ignores status.
    let main = api
        .patch(
            "w",
            &PatchParams::apply("spec-owner"),
            &Patch::Apply(json!({
                "apiVersion": "example.dev/v1",
                "kind": "Widget",
                "metadata": {"name": "w"},
                "spec": {"color": "red", "replicas": 2},
                "status": {"replicas": 99},
            })),
        )
        .await
        .unwrap();
    assert_eq!(main.data["status"]["replicas"], 2);
    assert_eq!(
        main.resource_version(),
        updated.resource_version(),
        "nothing changed"
    );

    // Dropping a status field from the status applier's intent removes it.
    let dropped = api
        .patch_status(
            "w",
            &PatchParams::apply("status-ctl"),
            &Patch::Apply(json!({
                "apiVersion": "example.dev/v1",
                "kind": "Widget",
                "metadata": {"name": "w"},
                "status": {"replicas": 3},
            })),
        )
        .await
        .unwrap();
    assert_eq!(dropped.data["status"], json!({"replicas": 3}));
    let status = api.get_status("w").await.unwrap();
    assert_eq!(status.data["status"], json!({"replicas": 3}));

    // A status apply whose intent also carries spec (a whole object, as controllers
    // often send) ignores spec: kube-apiserver leaves the status strategy's reset
    // fields out of conflict detection, so spec-owner's .spec.color does not conflict.
    let whole = api
        .patch_status(
            "w",
            &PatchParams::apply("status-ctl"),
            &Patch::Apply(json!({
                "apiVersion": "example.dev/v1",
                "kind": "Widget",
                "metadata": {"name": "w"},
                "spec": {"color": "green", "replicas": 2},
                "status": {"replicas": 4},
            })),
        )
        .await
        .expect(
            "an apply to /status carrying spec must not conflict on spec fields, which /status ignores",
        );
    assert_eq!(whole.data["status"], json!({"replicas": 4}));
    assert_eq!(whole.data["spec"]["color"], "red");
}
