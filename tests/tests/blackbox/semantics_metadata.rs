//! Object metadata (issue 3, items 1 and 2): generated names, immutable uid and
//! creationTimestamp, one global resourceVersion, generation, metadata validation, the
//! body's namespace and name against the URL's, and optimistic concurrency on updates.

use std::collections::BTreeMap;

use apiserver_tests::objects::{
    api_status, configmap, widget, widgets, CONFIGMAPS, JSON, MERGE, WIDGETS,
};
use apiserver_tests::{raw_request, RawResponse, TestServer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::ResourceExt;
use serde_json::{json, Value};

fn rv_of(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no numeric metadata.resourceVersion in {obj}"))
}

fn causes(resp: &RawResponse) -> Vec<String> {
    resp.json["details"]["causes"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| c["field"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// 1. Object metadata
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn generate_name_gives_unique_names_and_uids() {
    let s = TestServer::start();
    let file = s.write_file(
        "gen.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: gen-\ndata:\n  a: b\n",
    );
    let mut names = Vec::new();
    for _ in 0..3 {
        let out = s.kubectl_ok(&["create", "-f", file.to_str().unwrap(), "-o", "name"]);
        names.push(out.trim().trim_start_matches("configmap/").to_string());
    }
    for n in &names {
        assert!(
            n.starts_with("gen-") && n.len() == "gen-".len() + 5,
            "generateName gen- must give gen- plus 5 random characters, got {n:?}"
        );
    }
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 3, "generated names collide: {names:?}");

    let cms: Api<ConfigMap> = Api::default_namespaced(s.client().await);
    let mut uids = Vec::new();
    for n in &names {
        let cm = cms.get(n).await.expect("get generated");
        assert_eq!(cm.metadata.generate_name.as_deref(), Some("gen-"));
        uids.push(cm.metadata.uid.expect("uid"));
    }
    uids.sort();
    uids.dedup();
    assert_eq!(uids.len(), 3, "uids must be unique");
    // Neither name nor generateName: 422.
    let mut nameless = configmap("x", &[]);
    nameless.metadata.name = None;
    let status = api_status(
        cms.create(&PostParams::default(), &nameless).await,
        "create without name or generateName",
    );
    assert_eq!(status.code, 422, "{status:?}");
    assert!(
        status
            .message
            .contains("metadata.name: Required value: name or generateName is required"),
        "{status:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn uid_and_creation_timestamp_are_immutable() {
    let s = TestServer::start();
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let created = cms
        .create(&PostParams::default(), &configmap("c", &[("a", "b")]))
        .await
        .unwrap();
    let ts = created.metadata.creation_timestamp.clone().expect("ts");

    // kube-apiserver silently keeps the stored creationTimestamp on update.
    let patched = raw_request(
        &c,
        "PATCH",
        &format!("{CONFIGMAPS}/c"),
        MERGE,
        r#"{"metadata":{"creationTimestamp":"2001-01-01T00:00:00Z"},"data":{"a":"c"}}"#,
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.text);
    assert_eq!(
        patched.json["metadata"]["creationTimestamp"],
        serde_json::to_value(&ts).unwrap(),
        "creationTimestamp must not change on update: {}",
        patched.text
    );
    assert_eq!(
        cms.get("c").await.unwrap().metadata.creation_timestamp,
        Some(ts)
    );

    // A body carrying another uid is a precondition on the uid (kube-apiserver's
    // defaultUpdatedObjectInfo.Preconditions): 409 Conflict `Operation cannot be
    // fulfilled on configmaps "c": Precondition failed: UID in precondition: ...`.
    let real_uid = created.metadata.uid.clone().unwrap();
    let mut other = cms.get("c").await.unwrap();
    other.metadata.uid = Some("00000000-0000-0000-0000-000000000000".into());
    other.data = Some(BTreeMap::from([("a".into(), "other".into())]));
    let result = cms.replace("c", &PostParams::default(), &other).await;
    let after = cms.get("c").await.unwrap();
    assert_eq!(after.metadata.uid.as_deref(), Some(real_uid.as_str()));
    let status = api_status(
        result,
        "PUT of configmap c with another metadata.uid (kube-apiserver: 409 Conflict `Operation cannot be fulfilled on configmaps \"c\": Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000000, UID in object meta: <uid>`, nothing written)",
    );
    assert_eq!(
        (status.code, status.reason.as_str()),
        (409, "Conflict"),
        "{status:?}"
    );
    assert!(
        status.message.contains(&format!(
            "Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000000, UID in object meta: {real_uid}"
        )),
        "{status:?}"
    );
    assert_eq!(after.data.unwrap()["a"], "c", "the update must not land");
}

#[tokio::test(flavor = "multi_thread")]
async fn resource_version_is_one_global_increasing_revision() {
    let s = TestServer::start();
    let c = s.client().await;
    s.kubectl_ok(&["create", "namespace", "other"]);
    let mut rvs = Vec::new();
    for (path, body) in [
        (
            CONFIGMAPS.to_string(),
            json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}),
        ),
        (
            "/api/v1/namespaces/other/configmaps".to_string(),
            json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}),
        ),
        (
            WIDGETS.to_string(),
            json!({"apiVersion":"example.dev/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"red"}}),
        ),
        (
            "/api/v1/namespaces".to_string(),
            json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"third"}}),
        ),
    ] {
        let resp = raw_request(&c, "POST", &path, JSON, body.to_string()).await;
        assert_eq!(resp.status, 201, "{}", resp.text);
        rvs.push(rv_of(&resp.json));
    }
    assert!(
        rvs.windows(2).all(|w| w[0] < w[1]),
        "resourceVersions across kinds and namespaces must increase: {rvs:?}"
    );
    let list = raw_request(&c, "GET", CONFIGMAPS, None, "").await;
    let list_rv: u64 = list.json["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .expect("list resourceVersion");
    assert!(
        list_rv >= *rvs.last().unwrap(),
        "a list is served at the current global revision ({list_rv} < {rvs:?})"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn generation_bumps_on_spec_changes_only() {
    let s = TestServer::start();
    let c = s.client().await;
    let api = widgets(&c);
    let gen = |o: &DynamicObject| o.metadata.generation.expect("generation");
    let created = api
        .create(
            &PostParams::default(),
            &widget("w", json!({"color": "red", "replicas": 1})),
        )
        .await
        .unwrap();
    assert_eq!(gen(&created), 1);

    let labelled = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}, "annotations": {"n": "1"}}})),
        )
        .await
        .unwrap();
    assert_eq!(gen(&labelled), 1, "metadata changes do not bump generation");

    let status1 = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 1}})),
        )
        .await
        .unwrap();
    assert_eq!(gen(&status1), 1, "status writes never bump generation");
    assert_ne!(status1.resource_version(), labelled.resource_version());

    let spec = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(gen(&spec), 2, "a spec change bumps generation");

    let mut whole = api.get_status("w").await.unwrap();
    whole.data["status"]["replicas"] = json!(2);
    let status2 = api
        .replace_status("w", &PostParams::default(), &whole)
        .await
        .unwrap();
    assert_eq!(gen(&status2), 2, "PUT /status does not bump generation");

    // kubectl label / annotate do not either; kubectl scale (spec) does.
    s.kubectl_ok(&["label", "wd", "w", "x=y"]);
    s.kubectl_ok(&["annotate", "wd", "w", "note=hello"]);
    let g = s.kubectl_ok(&["get", "wd", "w", "-o", "jsonpath={.metadata.generation}"]);
    assert_eq!(g, "2");
    s.kubectl_ok(&["scale", "wd", "w", "--replicas=4"]);
    let g = s.kubectl_ok(&["get", "wd", "w", "-o", "jsonpath={.metadata.generation}"]);
    assert_eq!(g, "3", "scaling changes spec.replicas and so generation");
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_metadata_is_422_with_causes() {
    let s = TestServer::start();
    let c = s.client().await;
    let big = "x".repeat(256 * 1024 + 1);
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            json!({"name": "l1", "labels": {"a b": "c"}}),
            "metadata.labels",
            "name part must consist of alphanumeric characters",
        ),
        (
            json!({"name": "l2", "labels": {"ok": "v".repeat(64)}}),
            "metadata.labels",
            "must be no more than 63 characters",
        ),
        (
            json!({"name": "an", "annotations": {"big": big}}),
            "metadata.annotations",
            "Too long: may not be more than 262144 bytes",
        ),
        (
            json!({"name": "f", "finalizers": ["bad finalizer"]}),
            "metadata.finalizers[0]",
            "name part must consist of alphanumeric characters",
        ),
        (
            json!({"name": "o", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": ""}]}),
            "metadata.ownerReferences.uid",
            r#"metadata.ownerReferences.uid: Invalid value: "": uid must not be empty"#,
        ),
        (
            json!({"name": "o2", "ownerReferences": [{"apiVersion": "v1", "kind": "", "name": "owner", "uid": "1"}]}),
            "metadata.ownerReferences.kind",
            r#"metadata.ownerReferences.kind: Invalid value: "": kind must not be empty"#,
        ),
    ];
    let mut failures = Vec::new();
    for (meta, field, text) in cases {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta});
        let resp = raw_request(&c, "POST", CONFIGMAPS, JSON, body.to_string()).await;
        let ok = resp.status == 422
            && resp.json["reason"] == "Invalid"
            && resp.json["details"]["kind"] == "ConfigMap"
            && causes(&resp).iter().any(|f| f == field)
            && resp.json["message"]
                .as_str()
                .unwrap_or_default()
                .contains(text);
        if !ok {
            let shown: String = resp.text.chars().take(600).collect();
            failures.push(format!(
                "metadata {}: expected 422 Invalid with a cause for {field} and {text:?}; got {} {shown}",
                meta["name"], resp.status
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // Valid ones are stored as given.
    let cms: Api<ConfigMap> = Api::default_namespaced(c);
    let owner = cms
        .create(&PostParams::default(), &configmap("owner", &[]))
        .await
        .unwrap();
    let mut child = configmap("child", &[]);
    child.metadata.finalizers = Some(vec!["example.dev/keep".into()]);
    child.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "owner".into(),
            uid: owner.metadata.uid.clone().unwrap(),
            controller: Some(true),
            block_owner_deletion: None,
        },
    ]);
    let stored = cms.create(&PostParams::default(), &child).await.unwrap();
    assert_eq!(
        stored.metadata.finalizers.as_deref(),
        Some(&["example.dev/keep".to_string()][..])
    );
    assert_eq!(
        stored.owner_references()[0].uid,
        owner.metadata.uid.unwrap()
    );
    cms.patch(
        "child",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn namespace_in_body_must_match_the_url() {
    let s = TestServer::start();
    let c = s.client().await;
    s.kubectl_ok(&["create", "namespace", "other"]);
    let resp = raw_request(
        &c,
        "POST",
        CONFIGMAPS,
        JSON,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"other"}}"#,
    )
    .await;
    assert_eq!(resp.status, 400, "{}", resp.text);
    assert_eq!(resp.json["reason"], "BadRequest", "{}", resp.text);
    assert_eq!(
        resp.json["message"],
        "the namespace of the provided object does not match the namespace sent on the request",
        "{}",
        resp.text
    );
    // The same on update.
    raw_request(
        &c,
        "POST",
        CONFIGMAPS,
        JSON,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#,
    )
    .await;
    let resp = raw_request(
        &c,
        "PUT",
        &format!("{CONFIGMAPS}/x"),
        JSON,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"other"}}"#,
    )
    .await;
    assert_eq!(resp.status, 400, "PUT: {}", resp.text);
    // A body naming another object than the URL: 400 as well.
    let resp = raw_request(
        &c,
        "PUT",
        &format!("{CONFIGMAPS}/x"),
        JSON,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"y"}}"#,
    )
    .await;
    assert_eq!(resp.status, 400, "PUT with another name: {}", resp.text);
    assert_eq!(
        resp.json["message"], "the name of the object (y) does not match the name on the URL (x)",
        "{}",
        resp.text
    );
}

// ---------------------------------------------------------------------------------------
// 2. Optimistic concurrency
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn stale_updates_conflict_and_no_op_updates_keep_the_resource_version() {
    let s = TestServer::start();
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let v1 = cms
        .create(&PostParams::default(), &configmap("c", &[("v", "1")]))
        .await
        .unwrap();
    let mut v2 = v1.clone();
    v2.data = Some(BTreeMap::from([("v".into(), "2".into())]));
    let v2 = cms.replace("c", &PostParams::default(), &v2).await.unwrap();

    // Stale resourceVersion: 409 with kube-apiserver's wording.
    let mut stale = v1.clone();
    stale.data = Some(BTreeMap::from([("v".into(), "3".into())]));
    let status = api_status(
        cms.replace("c", &PostParams::default(), &stale).await,
        "replace with a stale resourceVersion",
    );
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        status.message,
        r#"Operation cannot be fulfilled on configmaps "c": the object has been modified; please apply your changes to the latest version and try again"#
    );
    // A merge patch carrying a stale resourceVersion conflicts too.
    let status = api_status(
        cms.patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"resourceVersion": v1.resource_version()}, "data": {"v": "4"}}),
            ),
        )
        .await,
        "merge patch with a stale resourceVersion",
    );
    assert_eq!(status.code, 409, "{status:?}");

    // ConfigMaps allow unconditional updates (no resourceVersion).
    let mut unconditional = configmap("c", &[("v", "5")]);
    unconditional.metadata.resource_version = None;
    let v5 = cms
        .replace("c", &PostParams::default(), &unconditional)
        .await
        .expect("an update without resourceVersion is unconditional for ConfigMaps");
    assert_eq!(v5.data.as_ref().unwrap()["v"], "5");
    assert_ne!(v5.resource_version(), v2.resource_version());

    // An update that changes nothing keeps the resourceVersion (nothing is written).
    let same = cms.replace("c", &PostParams::default(), &v5).await.unwrap();
    assert_eq!(
        same.resource_version(),
        v5.resource_version(),
        "a no-op PUT must not write"
    );
    let same = cms
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"v": "5"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        same.resource_version(),
        v5.resource_version(),
        "a no-op patch must not write"
    );

    // Custom resources do not allow unconditional updates: kube-apiserver answers 422
    // `metadata.resourceVersion: Invalid value: 0x0: must be specified for an update`.
    let api = widgets(&c);
    api.create(
        &PostParams::default(),
        &widget("w", json!({"color": "red"})),
    )
    .await
    .unwrap();
    let resp = raw_request(
        &c,
        "PUT",
        &format!("{WIDGETS}/w"),
        JSON,
        r#"{"apiVersion":"example.dev/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"blue"}}"#,
    )
    .await;
    assert_eq!(
        resp.status, 422,
        "PUT of a Widget without metadata.resourceVersion: expected 422 `must be specified for an update`, got {}",
        resp.text
    );
    assert!(
        resp.text.contains("metadata.resourceVersion")
            && resp.text.contains("must be specified for an update"),
        "{}",
        resp.text
    );
}
