//! The server driven by the kube crate: typed k8s-openapi objects and DynamicObjects.

use std::collections::BTreeMap;

use apiserver_tests::objects::{api_status, configmap, gadgets_resource, widgets_resource};
use apiserver_tests::TestServer;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::ByteString;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, ObjectMeta, Patch, PatchParams, PostParams,
};
use kube::ResourceExt;
use serde_json::json;

fn generation(obj: &DynamicObject) -> i64 {
    obj.metadata.generation.expect("metadata.generation is set")
}

#[tokio::test(flavor = "multi_thread")]
async fn configmap_create_get_list_replace_delete() {
    let s = TestServer::start();
    let cms: Api<ConfigMap> = Api::default_namespaced(s.client().await);

    let created = cms
        .create(&PostParams::default(), &configmap("cm1", &[("a", "b")]))
        .await
        .expect("create");
    let uid = created.metadata.uid.clone().expect("uid");
    let rv1 = created.resource_version().expect("resourceVersion");
    assert!(created.metadata.creation_timestamp.is_some());
    assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(created.data.as_ref().unwrap()["a"], "b");

    let got = cms.get("cm1").await.expect("get");
    assert_eq!(got.metadata.uid.as_deref(), Some(uid.as_str()));
    assert_eq!(got.resource_version().as_deref(), Some(rv1.as_str()));
    assert_eq!(got, created, "get returns what create returned");

    cms.create(&PostParams::default(), &configmap("cm2", &[]))
        .await
        .expect("create cm2");
    let list = cms.list(&ListParams::default()).await.expect("list");
    let mut names: Vec<String> = list.items.iter().map(ResourceExt::name_any).collect();
    names.sort();
    // The root CA published in every namespace is not this test's.
    names.retain(|n| n != "kube-root-ca.crt");
    assert_eq!(names, ["cm1", "cm2"]);
    let list_rv: u64 = list
        .metadata
        .resource_version
        .as_deref()
        .expect("list resourceVersion")
        .parse()
        .expect("numeric list resourceVersion");
    assert!(list_rv >= rv1.parse::<u64>().unwrap());

    let mut changed = got.clone();
    changed.data = Some(BTreeMap::from([("a".to_string(), "changed".to_string())]));
    let replaced = cms
        .replace("cm1", &PostParams::default(), &changed)
        .await
        .expect("replace");
    assert_eq!(replaced.data.as_ref().unwrap()["a"], "changed");
    assert_eq!(replaced.metadata.uid.as_deref(), Some(uid.as_str()));
    assert_eq!(
        replaced.metadata.creation_timestamp,
        created.metadata.creation_timestamp
    );
    let rv2 = replaced.resource_version().unwrap();
    assert_ne!(rv2, rv1, "an update changes resourceVersion");
    assert_eq!(cms.get("cm1").await.unwrap(), replaced);

    let deleted = cms
        .delete("cm1", &DeleteParams::default())
        .await
        .expect("delete");
    // Core kinds answer a delete with a Success Status, as kube-apiserver does.
    let status = deleted.right().expect("a Status for a deleted ConfigMap");
    assert!(status.is_success(), "{status:?}");
    let status = api_status(cms.get("cm1").await, "get after delete");
    assert_eq!(status.code, 404);
    assert!(cms.get_opt("cm1").await.unwrap().is_none());
    let list = cms.list(&ListParams::default()).await.unwrap();
    let left: Vec<String> = list.items.iter().map(ResourceExt::name_any).collect();
    assert!(
        left.contains(&"cm2".to_string()) && !left.contains(&"cm1".to_string()),
        "{left:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn configmap_replace_with_stale_resource_version_conflicts() {
    let s = TestServer::start();
    let cms: Api<ConfigMap> = Api::default_namespaced(s.client().await);
    let original = cms
        .create(&PostParams::default(), &configmap("c", &[("v", "1")]))
        .await
        .unwrap();

    let mut first = original.clone();
    first.data = Some(BTreeMap::from([("v".to_string(), "2".to_string())]));
    cms.replace("c", &PostParams::default(), &first)
        .await
        .expect("first replace with the current resourceVersion");

    // `original` still carries the old resourceVersion.
    let mut stale = original.clone();
    stale.data = Some(BTreeMap::from([("v".to_string(), "3".to_string())]));
    let status = api_status(
        cms.replace("c", &PostParams::default(), &stale).await,
        "replace with a stale resourceVersion",
    );
    assert_eq!(status.code, 409, "{status:?}");
    assert_eq!(status.reason, "Conflict", "{status:?}");
    assert!(
        status
            .message
            .contains(r#"Operation cannot be fulfilled on configmaps "c""#),
        "{status:?}"
    );
    assert_eq!(
        cms.get("c").await.unwrap().data.unwrap()["v"],
        "2",
        "the stale write did not land"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn configmap_get_missing_is_not_found() {
    let s = TestServer::start();
    let cms: Api<ConfigMap> = Api::default_namespaced(s.client().await);
    let status = api_status(cms.get("nope").await, "get of a missing ConfigMap");
    assert_eq!(status.code, 404, "{status:?}");
    assert_eq!(status.reason, "NotFound", "{status:?}");
    assert_eq!(status.message, r#"configmaps "nope" not found"#);
    let details = status.details.expect("details");
    assert_eq!(details.name, "nope");
    assert_eq!(details.kind, "configmaps");
}

#[tokio::test(flavor = "multi_thread")]
async fn namespace_list_contains_the_system_namespaces() {
    let s = TestServer::start();
    let nss: Api<Namespace> = Api::all(s.client().await);
    let list = nss.list(&ListParams::default()).await.expect("list");
    let names: Vec<String> = list.items.iter().map(ResourceExt::name_any).collect();
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(names.iter().any(|n| n == ns), "{ns} missing from {names:?}");
    }
    let default = nss.get("default").await.unwrap();
    assert_eq!(
        default.status.and_then(|s| s.phase).as_deref(),
        Some("Active")
    );
    assert!(
        default.metadata.namespace.is_none(),
        "namespaces are cluster-scoped"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn secret_string_data_is_stored_as_data() {
    let s = TestServer::start();
    let secrets: Api<Secret> = Api::default_namespaced(s.client().await);
    let input = BTreeMap::from([
        ("user".to_string(), "admin".to_string()),
        ("multi".to_string(), "line one\nline two ✓".to_string()),
    ]);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("creds".into()),
            ..Default::default()
        },
        string_data: Some(input.clone()),
        ..Default::default()
    };
    let created = secrets
        .create(&PostParams::default(), &secret)
        .await
        .expect("create");
    for got in [created, secrets.get("creds").await.expect("get")] {
        assert!(got.string_data.is_none(), "stringData is write-only");
        assert_eq!(got.type_.as_deref(), Some("Opaque"));
        let decoded: BTreeMap<String, String> = got
            .data
            .expect("data")
            .into_iter()
            .map(|(k, ByteString(v))| (k, String::from_utf8(v).expect("utf-8")))
            .collect();
        assert_eq!(decoded, input);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn widget_dynamic_create_get_list_patch_delete() {
    let s = TestServer::start();
    let ar = widgets_resource();
    let widgets: Api<DynamicObject> = Api::default_namespaced_with(s.client().await, &ar);

    let w =
        DynamicObject::new("w1", &ar).data(json!({ "spec": { "color": "red", "replicas": 2 } }));
    let created = widgets
        .create(&PostParams::default(), &w)
        .await
        .expect("create");
    assert_eq!(generation(&created), 1);
    assert_eq!(
        created.data["spec"],
        json!({ "color": "red", "replicas": 2 })
    );
    assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
    let types = created.types.as_ref().expect("apiVersion and kind");
    assert_eq!(
        (types.api_version.as_str(), types.kind.as_str()),
        ("example.dev/v1", "Widget")
    );
    let uid = created.metadata.uid.clone().expect("uid");

    let got = widgets.get("w1").await.expect("get");
    assert_eq!(got.metadata.uid.as_deref(), Some(uid.as_str()));
    assert_eq!(got.data["spec"]["color"], "red");

    // spec.replicas defaults to 1.
    let defaulted = widgets
        .create(
            &PostParams::default(),
            &DynamicObject::new("w2", &ar).data(json!({ "spec": { "color": "green" } })),
        )
        .await
        .expect("create w2");
    assert_eq!(defaulted.data["spec"]["replicas"], 1);

    let list = widgets.list(&ListParams::default()).await.expect("list");
    let mut names: Vec<String> = list.items.iter().map(ResourceExt::name_any).collect();
    names.sort();
    assert_eq!(names, ["w1", "w2"]);
    // The cluster-wide list sees them too.
    let everywhere: Api<DynamicObject> = Api::all_with(s.client().await, &ar);
    assert_eq!(
        everywhere
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        2
    );

    let patched = widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "replicas": 5 } })),
        )
        .await
        .expect("merge patch");
    assert_eq!(
        patched.data["spec"],
        json!({ "color": "red", "replicas": 5 })
    );
    assert_eq!(generation(&patched), 2, "a spec change bumps generation");
    assert_ne!(patched.resource_version(), created.resource_version());

    // Metadata-only changes leave generation alone.
    let labelled = widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "tier": "web" } } })),
        )
        .await
        .expect("label patch");
    assert_eq!(generation(&labelled), 2);
    assert_eq!(labelled.labels()["tier"], "web");

    // Invalid patches are refused and change nothing.
    let status = api_status(
        widgets
            .patch(
                "w1",
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": { "color": "pink" } })),
            )
            .await,
        "patch to an unsupported colour",
    );
    assert_eq!(
        (status.code, status.reason.as_str()),
        (422, "Invalid"),
        "{status:?}"
    );
    assert_eq!(
        widgets.get("w1").await.unwrap().data["spec"]["color"],
        "red"
    );

    let deleted = widgets
        .delete("w1", &DeleteParams::default())
        .await
        .expect("delete");
    let deleted = deleted
        .left()
        .expect("custom kinds answer a delete with the object");
    assert_eq!(deleted.metadata.uid.as_deref(), Some(uid.as_str()));
    let status = api_status(widgets.get("w1").await, "get after delete");
    assert_eq!(status.code, 404);
    assert_eq!(status.message, r#"widgets.example.dev "w1" not found"#);
}

#[tokio::test(flavor = "multi_thread")]
async fn gadget_cluster_scoped_create_get_list_patch_delete() {
    let s = TestServer::start();
    let ar = gadgets_resource();
    let gadgets: Api<DynamicObject> = Api::all_with(s.client().await, &ar);

    let g = DynamicObject::new("g1", &ar).data(json!({ "spec": { "mode": "Manual", "level": 3 } }));
    let created = gadgets
        .create(&PostParams::default(), &g)
        .await
        .expect("create");
    assert!(created.metadata.namespace.is_none(), "cluster-scoped");
    assert_eq!(generation(&created), 1);
    assert_eq!(created.data["spec"]["mode"], "Manual");
    assert_eq!(created.data["spec"]["level"], 3);

    let got = gadgets.get("g1").await.expect("get");
    assert_eq!(got.metadata.uid, created.metadata.uid);

    let list = gadgets.list(&ListParams::default()).await.expect("list");
    let names: Vec<String> = list.items.iter().map(ResourceExt::name_any).collect();
    assert_eq!(names, ["g1"]);

    let patched = gadgets
        .patch(
            "g1",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "level": 11, "mode": "Automatic" } })),
        )
        .await
        .expect("merge patch");
    assert_eq!(patched.data["spec"]["mode"], "Automatic");
    assert_eq!(patched.data["spec"]["level"], 11);
    assert_eq!(generation(&patched), 2);

    let status = api_status(
        gadgets
            .create(
                &PostParams::default(),
                &DynamicObject::new("bad", &ar).data(json!({ "spec": { "level": 1 } })),
            )
            .await,
        "a Gadget without spec.mode",
    );
    assert_eq!(
        (status.code, status.reason.as_str()),
        (422, "Invalid"),
        "{status:?}"
    );
    assert!(status.message.contains("spec.mode"), "{status:?}");

    gadgets
        .delete("g1", &DeleteParams::default())
        .await
        .expect("delete");
    let status = api_status(gadgets.get("g1").await, "get after delete");
    assert_eq!(status.code, 404);
    assert_eq!(status.message, r#"gadgets.example.dev "g1" not found"#);
}

#[tokio::test(flavor = "multi_thread")]
async fn widget_status_subresource_owns_status() {
    let s = TestServer::start();
    let ar = widgets_resource();
    let widgets: Api<DynamicObject> = Api::default_namespaced_with(s.client().await, &ar);
    let created = widgets
        .create(
            &PostParams::default(),
            &DynamicObject::new("w", &ar).data(json!({
                "spec": { "color": "blue", "replicas": 2 },
            })),
        )
        .await
        .expect("create");
    assert_eq!(generation(&created), 1);

    // replace_status: status changes, the spec change in the same body is ignored.
    let mut body = widgets.get_status("w").await.expect("get_status");
    body.data["status"] = json!({ "replicas": 2 });
    body.data["spec"]["color"] = json!("green");
    let updated = widgets
        .replace_status("w", &PostParams::default(), &body)
        .await
        .expect("replace_status");
    assert_eq!(updated.data["status"], json!({ "replicas": 2 }));
    assert_eq!(
        updated.data["spec"],
        json!({ "color": "blue", "replicas": 2 })
    );
    assert_eq!(
        generation(&updated),
        1,
        "a status write does not bump generation"
    );

    // patch_status likewise.
    let patched = widgets
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "replicas": 7 }, "status": { "replicas": 3 } })),
        )
        .await
        .expect("patch_status");
    assert_eq!(patched.data["status"], json!({ "replicas": 3 }));
    assert_eq!(patched.data["spec"]["replicas"], 2);
    assert_eq!(generation(&patched), 1);

    // The main endpoint ignores status: a status-only patch changes nothing visible ...
    let ignored = widgets
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "replicas": 99 } })),
        )
        .await
        .expect("main-endpoint status patch");
    assert_eq!(ignored.data["status"], json!({ "replicas": 3 }));
    assert_eq!(ignored.data["spec"], patched.data["spec"]);
    assert_eq!(generation(&ignored), 1);

    // ... and a replace keeps the stored status while applying the spec.
    let mut whole = widgets.get("w").await.unwrap();
    whole.data["spec"]["replicas"] = json!(4);
    whole.data["status"] = json!({ "replicas": 100 });
    let replaced = widgets
        .replace("w", &PostParams::default(), &whole)
        .await
        .expect("replace");
    assert_eq!(replaced.data["spec"]["replicas"], 4);
    assert_eq!(replaced.data["status"], json!({ "replicas": 3 }));
    assert_eq!(generation(&replaced), 2);
    assert_eq!(
        widgets.get("w").await.unwrap().data["status"]["replicas"],
        3
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn gadget_status_subresource_owns_status() {
    let s = TestServer::start();
    let ar = gadgets_resource();
    let gadgets: Api<DynamicObject> = Api::all_with(s.client().await, &ar);
    gadgets
        .create(
            &PostParams::default(),
            &DynamicObject::new("g", &ar).data(json!({ "spec": { "mode": "Manual" } })),
        )
        .await
        .expect("create");
    let patched = gadgets
        .patch_status(
            "g",
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "powered": true } })),
        )
        .await
        .expect("patch_status");
    assert_eq!(patched.data["status"], json!({ "powered": true }));
    assert_eq!(
        gadgets.get_status("g").await.unwrap().data["status"]["powered"],
        true
    );
    let status = api_status(
        gadgets
            .patch_status(
                "g",
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": { "powered": "yes" } })),
            )
            .await,
        "a non-boolean status.powered",
    );
    assert_eq!(status.code, 422, "{status:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn dry_run_create_stores_nothing() {
    let s = TestServer::start();
    let cms: Api<ConfigMap> = Api::default_namespaced(s.client().await);
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let answered = cms
        .create(&pp, &configmap("dry", &[("a", "b")]))
        .await
        .expect("dry-run create");
    assert_eq!(answered.data.unwrap()["a"], "b");
    assert!(cms.get_opt("dry").await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn list_pages_with_limit_and_continue() {
    let s = TestServer::start();
    let cms: Api<ConfigMap> = Api::default_namespaced(s.client().await);
    for i in 0..5 {
        cms.create(&PostParams::default(), &configmap(&format!("p{i}"), &[]))
            .await
            .unwrap();
    }
    let mut seen = Vec::new();
    let mut lp = ListParams::default().limit(2);
    loop {
        let page = cms.list(&lp).await.expect("list page");
        assert!(page.items.len() <= 2);
        seen.extend(page.items.iter().map(ResourceExt::name_any));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => lp = lp.continue_token(&token),
            None => break,
        }
    }
    // The root CA published in every namespace is not this test's.
    seen.retain(|n| n != "kube-root-ca.crt");
    assert_eq!(seen, ["p0", "p1", "p2", "p3", "p4"]);
}
