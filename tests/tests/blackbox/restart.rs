//! Durability: a server stopped (killed) and started again on the same data directory
//! serves the same objects, certificates and credentials.
//!
//! Always on the embedded store (`start_in`: the data directory is the store), whatever
//! `APISERVER_TEST_STORAGE` says.

use apiserver_tests::objects::widgets_resource;
use apiserver_tests::{client_from, TestServer};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DynamicObject, ListParams, ObjectMeta, PostParams};
use kube::config::Kubeconfig;
use serde_json::json;
use tempfile::TempDir;

fn ca_data(kubeconfig: &Kubeconfig) -> String {
    kubeconfig.clusters[0]
        .cluster
        .as_ref()
        .and_then(|c| c.certificate_authority_data.clone())
        .expect("certificate-authority-data")
}

#[tokio::test(flavor = "multi_thread")]
async fn objects_survive_a_restart() {
    let dir = TempDir::with_prefix("apiserver-restart-").unwrap();
    let mut first = TestServer::start_in(dir.path());
    let client = first.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let ar = widgets_resource();
    let wds: Api<DynamicObject> = Api::default_namespaced_with(client, &ar);

    let cm = cms
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("keep".into()),
                    labels: Some([("app".to_string(), "demo".to_string())].into()),
                    ..Default::default()
                },
                data: Some([("k".to_string(), "v".to_string())].into()),
                ..Default::default()
            },
        )
        .await
        .expect("create ConfigMap");
    let created = wds
        .create(
            &PostParams::default(),
            &DynamicObject::new("keep", &ar)
                .data(json!({ "spec": { "color": "green", "replicas": 4 } })),
        )
        .await
        .expect("create Widget");
    let w = wds
        .patch_status(
            "keep",
            &Default::default(),
            &kube::api::Patch::Merge(json!({ "status": { "replicas": 4 } })),
        )
        .await
        .expect("patch Widget status");
    assert_eq!(w.metadata.uid, created.metadata.uid);
    first.kubectl_ok(&["create", "namespace", "team-a"]);
    first.stop();
    assert!(!first.is_running());

    let second = TestServer::start_in(dir.path());
    assert_ne!(second.port(), 0);
    let client = second.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let wds: Api<DynamicObject> = Api::default_namespaced_with(client.clone(), &ar);

    let cm2 = cms.get("keep").await.expect("ConfigMap after restart");
    assert_eq!(cm2.metadata.uid, cm.metadata.uid);
    assert_eq!(cm2.metadata.resource_version, cm.metadata.resource_version);
    assert_eq!(
        cm2.metadata.creation_timestamp,
        cm.metadata.creation_timestamp
    );
    assert_eq!(cm2.data, cm.data);
    assert_eq!(cm2.metadata.labels, cm.metadata.labels);

    let w2 = wds.get("keep").await.expect("Widget after restart");
    assert_eq!(w2.metadata.uid, w.metadata.uid);
    assert_eq!(w2.metadata.resource_version, w.metadata.resource_version);
    assert_eq!(w2.metadata.generation, Some(1));
    assert_eq!(w2.data["spec"], json!({ "color": "green", "replicas": 4 }));
    assert_eq!(w2.data["status"], json!({ "replicas": 4 }));

    // Created namespaces persist, and system namespaces are not duplicated.
    let nss: Api<Namespace> = Api::all(client);
    let mut names: Vec<String> = nss
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "default",
            "kube-node-lease",
            "kube-public",
            "kube-system",
            "team-a"
        ]
    );

    // resourceVersions keep increasing after a restart.
    let newer = cms
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("newer".into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let rv = |o: &ObjectMeta| -> u64 { o.resource_version.as_deref().unwrap().parse().unwrap() };
    assert!(
        rv(&newer.metadata) > rv(&w2.metadata),
        "resourceVersion went backwards after restart: {} then {}",
        rv(&w2.metadata),
        rv(&newer.metadata)
    );
    // The same objects are visible through kubectl.
    let table = second.kubectl_ok(&["get", "wd", "keep"]);
    assert!(table.contains("green"), "{table}");
}

/// The bearer token of the kubeconfig's first user, read as plain YAML.
fn token(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let yaml: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let token = yaml["users"][0]["user"]["token"]
        .as_str()
        .unwrap_or_default();
    assert!(!token.is_empty(), "no token in {text}");
    token.to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn admin_kubeconfig_keeps_working_after_a_restart() {
    let dir = TempDir::with_prefix("apiserver-restart-").unwrap();
    let mut first = TestServer::start_in(dir.path());
    let before = Kubeconfig::read_from(first.kubeconfig()).expect("kubeconfig before");
    let token_before = token(first.kubeconfig());
    let ca_file_before = std::fs::read(dir.path().join("certs").join("ca.crt"))
        .expect("the server writes certs/ca.crt");
    first.kubectl_ok(&["get", "ns"]);
    first.stop();

    let second = TestServer::start_in(dir.path());
    assert_eq!(
        second.kubeconfig(),
        first.kubeconfig(),
        "same kubeconfig path"
    );
    let after = Kubeconfig::read_from(second.kubeconfig()).expect("kubeconfig after");
    assert_eq!(ca_data(&after), ca_data(&before), "the CA was regenerated");
    assert_eq!(
        std::fs::read(dir.path().join("certs").join("ca.crt")).unwrap(),
        ca_file_before,
        "certs/ca.crt was rewritten"
    );
    assert_eq!(
        token(second.kubeconfig()),
        token_before,
        "the admin token changed"
    );
    let server = after.clusters[0]
        .cluster
        .as_ref()
        .and_then(|c| c.server.clone())
        .unwrap();
    assert_eq!(server, second.url());

    // A client that kept the old kubeconfig (CA and token) only needs the new address.
    let mut old = before.clone();
    old.clusters[0]
        .cluster
        .as_mut()
        .expect("the kubeconfig names a cluster")
        .server = Some(second.url().to_string());
    let client = client_from(old).await;
    let nss: Api<Namespace> = Api::all(client);
    nss.get("default")
        .await
        .expect("the old CA and token work after restart");

    let out = second.kubectl_ok(&["get", "ns", "default", "-o", "name"]);
    assert_eq!(out.trim(), "namespace/default");
}
