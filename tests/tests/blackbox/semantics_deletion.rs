//! Deletion (issue 3, items 9 and 12): finalizers, preconditions, propagation policies,
//! delete collection, and the namespace lifecycle (no content in a missing or
//! terminating namespace; a namespace goes once its objects have gone).

use std::time::{Duration, Instant};

use apiserver_tests::objects::{api_status, configmap, labelled, widget, widgets, CONFIGMAPS};
use apiserver_tests::tables::row;
use apiserver_tests::{raw_request, TestServer};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use kube::ResourceExt;
use serde_json::{json, Value};

/// Polls `cond` every 100 ms until it holds or `timeout` passes.
async fn eventually<F, Fut>(timeout: Duration, mut cond: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if cond().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

// ---------------------------------------------------------------------------------------
// 9. Deletion
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn finalizers_hold_a_deleted_object_until_removed() {
    let s = TestServer::start();
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let mut held = configmap("held", &[("a", "b")]);
    held.metadata.finalizers = Some(vec!["example.dev/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();

    // The delete answers 200 with the object, now carrying deletionTimestamp.
    let resp = raw_request(&c, "DELETE", &format!("{CONFIGMAPS}/held"), None, "").await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert_eq!(
        resp.json["kind"], "ConfigMap",
        "a delete that is pending on finalizers answers with the object: {}",
        resp.text
    );
    assert!(
        resp.json["metadata"]["deletionTimestamp"].is_string(),
        "{}",
        resp.text
    );

    let out = s.kubectl_ok(&["get", "cm", "held", "-o", "json"]);
    let obj: Value = serde_json::from_str(&out).unwrap();
    assert!(obj["metadata"]["deletionTimestamp"].is_string(), "{out}");
    assert_eq!(obj["metadata"]["deletionGracePeriodSeconds"], 0, "{out}");
    // A second delete is accepted and changes nothing.
    s.kubectl_ok(&["delete", "cm", "held", "--wait=false"]);
    // Updates still work, but no new finalizer may be added.
    s.kubectl_ok(&["label", "cm", "held", "still=here"]);
    // deletionTimestamp cannot be cleared by an update.
    let back = cms
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"deletionTimestamp": null}})),
        )
        .await
        .unwrap();
    assert!(back.metadata.deletion_timestamp.is_some());

    // Removing the last finalizer lets the object go.
    s.kubectl_ok(&[
        "patch",
        "cm",
        "held",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    let err = s.kubectl_err(&["get", "cm", "held"]);
    assert!(err.contains(r#"configmaps "held" not found"#), "{err}");

    // No finalizer may be added once deletion started: kube-apiserver answers 422
    // `metadata.finalizers: Forbidden: no new finalizers can be added if the object is
    // being deleted, found new finalizers []string{"example.dev/more"}`.
    let mut again = configmap("again", &[]);
    again.metadata.finalizers = Some(vec!["example.dev/hold".into()]);
    cms.create(&PostParams::default(), &again).await.unwrap();
    cms.delete("again", &DeleteParams::default()).await.unwrap();
    let result = cms
        .patch(
            "again",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"finalizers": ["example.dev/hold", "example.dev/more"]}}),
            ),
        )
        .await;
    cms.patch(
        "again",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let status = api_status(
        result,
        "merge patch adding finalizer example.dev/more to a ConfigMap with deletionTimestamp set (kube-apiserver: 422 Invalid `metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.dev/more\"}`)",
    );
    assert_eq!(
        (status.code, status.reason.as_str()),
        (422, "Invalid"),
        "{status:?}"
    );
    assert!(
        status.message.contains(
            "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted"
        ),
        "{status:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_preconditions_and_propagation_policy() {
    let s = TestServer::start();
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let created = cms
        .create(&PostParams::default(), &configmap("p", &[]))
        .await
        .unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    let rv = created.resource_version().unwrap();

    let status = api_status(
        cms.delete(
            "p",
            &DeleteParams::default().preconditions(Preconditions {
                uid: Some("wrong-uid".into()),
                resource_version: None,
            }),
        )
        .await,
        "delete with a uid precondition that does not match",
    );
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert!(
        status.message.contains(&format!(
            "Precondition failed: UID in precondition: wrong-uid, UID in object meta: {uid}"
        )),
        "{status:?}"
    );
    let status = api_status(
        cms.delete(
            "p",
            &DeleteParams::default().preconditions(Preconditions {
                uid: None,
                resource_version: Some("1".into()),
            }),
        )
        .await,
        "delete with a resourceVersion precondition that does not match",
    );
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert!(
        status.message.contains(&format!(
            "Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: {rv}"
        )),
        "{status:?}"
    );
    assert!(cms.get_opt("p").await.unwrap().is_some());
    cms.delete(
        "p",
        &DeleteParams::default().preconditions(Preconditions {
            uid: Some(uid),
            resource_version: Some(rv),
        }),
    )
    .await
    .expect("delete with matching preconditions");
    assert!(cms.get_opt("p").await.unwrap().is_none());

    for (name, dp) in [
        ("bg", DeleteParams::background()),
        ("fg", DeleteParams::foreground()),
        ("or", DeleteParams::orphan()),
    ] {
        cms.create(&PostParams::default(), &configmap(name, &[]))
            .await
            .unwrap();
        cms.delete(name, &dp)
            .await
            .unwrap_or_else(|e| panic!("delete {name} with {dp:?}: {e}"));
    }
    assert!(cms.get_opt("bg").await.unwrap().is_none());
    // kubectl's --cascade flag maps to propagationPolicy.
    for (name, cascade) in [("k1", "background"), ("k2", "foreground"), ("k3", "orphan")] {
        s.kubectl_ok(&["create", "configmap", name]);
        let out = s.kubectl_ok(&[
            "delete",
            "cm",
            name,
            &format!("--cascade={cascade}"),
            "--wait=false",
        ]);
        assert_eq!(
            out.trim(),
            format!(r#"configmap "{name}" deleted from default namespace"#)
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_all_and_delete_collection_with_selectors() {
    let s = TestServer::start();
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    for (name, tier) in [("w1", "web"), ("w2", "web"), ("d1", "db"), ("x1", "other")] {
        cms.create(&PostParams::default(), &labelled(name, &[("tier", tier)]))
            .await
            .unwrap();
    }
    let deleted = cms
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("tier=web"),
        )
        .await
        .expect("deletecollection");
    let list = deleted
        .left()
        .expect("deletecollection answers the list of what it deleted");
    let mut names: Vec<String> = list.items.iter().map(ResourceExt::name_any).collect();
    names.sort();
    assert_eq!(names, ["w1", "w2"]);
    let left: Vec<String> = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
        // The root CA published in every namespace is not this test's.
        .filter(|n| n != "kube-root-ca.crt")
        .collect();
    assert_eq!(left, ["d1", "x1"]);

    // deletecollection by field selector on a custom kind.
    let api = widgets(&c);
    for (n, color) in [("r", "red"), ("b", "blue")] {
        api.create(&PostParams::default(), &widget(n, json!({"color": color})))
            .await
            .unwrap();
    }
    api.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().fields("spec.color=red"),
    )
    .await
    .expect("deletecollection by field");
    let names: Vec<String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    assert_eq!(names, ["b"]);

    // kubectl delete -l and --all.
    let out = s.kubectl_ok(&["delete", "cm", "-l", "tier=db"]);
    assert_eq!(
        out.trim(),
        r#"configmap "d1" deleted from default namespace"#
    );
    s.kubectl_ok(&["create", "configmap", "y1"]);
    let out = s.kubectl_ok(&["delete", "cm", "--all"]);
    assert!(
        out.contains(r#"configmap "x1" deleted"#) && out.contains(r#"configmap "y1" deleted"#),
        "{out}"
    );
    let out = s.kubectl_ok(&["get", "cm", "-o", "name"]);
    assert!(
        !out.contains("configmap/x1") && !out.contains("configmap/y1"),
        "{out}"
    );
    let out = s.kubectl_ok(&["delete", "wd", "--all"]);
    assert_eq!(
        out.trim(),
        r#"widget.example.dev "b" deleted from default namespace"#
    );
}

// ---------------------------------------------------------------------------------------
// 12. Namespace lifecycle
// ---------------------------------------------------------------------------------------

#[test]
fn create_in_a_missing_namespace_is_not_found() {
    let s = TestServer::start();
    let err = s.kubectl_err(&["create", "configmap", "x", "-n", "nope"]);
    assert!(err.contains(r#"namespaces "nope" not found"#), "{err}");
    let f = s.write_file(
        "x.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: nope\n",
    );
    let err = s.kubectl_err(&["create", "-f", f.to_str().unwrap()]);
    assert!(
        err.contains(r#"Error from server (NotFound)"#)
            && err.contains(r#"namespaces "nope" not found"#),
        "{err}"
    );
    let ns = s.kubectl_ok(&["get", "ns", "-o", "name"]);
    for n in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(ns.lines().any(|l| l == format!("namespace/{n}")), "{ns}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn terminating_namespace_refuses_new_content_until_its_objects_go() {
    let s = TestServer::start();
    let c = s.client().await;
    s.kubectl_ok(&["create", "namespace", "t"]);
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "t");
    let mut held = configmap("held", &[]);
    held.metadata.finalizers = Some(vec!["example.dev/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();

    let out = s.kubectl_ok(&["delete", "namespace", "t", "--wait=false"]);
    assert_eq!(out.trim(), r#"namespace "t" deleted"#);
    let t = s.kubectl_ok(&["get", "ns", "t"]);
    assert_eq!(row(&t, "t")[..2], ["t", "Terminating"], "{t}");

    let f = s.write_file(
        "new.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: new\n  namespace: t\n",
    );
    let err = s.kubectl_err(&["create", "-f", f.to_str().unwrap()]);
    assert!(
        err.contains("Error from server (Forbidden)")
            && err.contains(
                r#"configmaps "new" is forbidden: unable to create new content in namespace t because it is being terminated"#
            ),
        "{err}"
    );

    // The held object is being deleted but stays; so does the namespace.
    let nss: Api<Namespace> = Api::all(c.clone());
    let deleting = eventually(Duration::from_secs(10), || async {
        cms.get_opt("held")
            .await
            .ok()
            .flatten()
            .is_some_and(|cm| cm.metadata.deletion_timestamp.is_some())
    })
    .await;
    assert!(
        deleting,
        "the namespace's objects should be deleted (held one pending on its finalizer)"
    );
    let ns = nss.get("t").await.expect("namespace t still exists");
    assert_eq!(
        ns.status.and_then(|s| s.phase).as_deref(),
        Some("Terminating")
    );

    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let gone = eventually(Duration::from_secs(15), || async {
        nss.get_opt("t").await.ok().flatten().is_none()
    })
    .await;
    assert!(gone, "the namespace should go once its last object is gone");
}
