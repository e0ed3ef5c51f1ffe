//! API machinery semantics (issue 3), tried as a user would: kubectl where a kubectl
//! command exists, the kube crate otherwise, and raw HTTP where only the wire shows it.
//! Every expectation is what kube-apiserver answers.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use apiserver_tests::{kubectl_binary, raw_request, RawResponse, TestServer};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GetParams, GroupVersionKind, ListParams,
    ObjectMeta, Patch, PatchParams, PostParams, Preconditions, VersionMatch,
};
use kube::core::Status;
use kube::ResourceExt;
use serde_json::{json, Value};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const WIDGETS: &str = "/apis/example.dev/v1/namespaces/default/widgets";
const JSON: Option<&str> = Some("application/json");
const MERGE: Option<&str> = Some("application/merge-patch+json");
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

fn widgets_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.dev", "v1", "Widget"),
        "widgets",
    )
}

fn widgets(c: &kube::Client) -> Api<DynamicObject> {
    Api::default_namespaced_with(c.clone(), &widgets_resource())
}

fn widget(name: &str, spec: Value) -> DynamicObject {
    DynamicObject::new(name, &widgets_resource()).data(json!({ "spec": spec }))
}

fn configmap(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        ..Default::default()
    }
}

fn labelled(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let mut cm = configmap(name, &[]);
    cm.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    cm
}

/// The `Status` of an API error, or a panic naming what was expected.
fn api_status<T: std::fmt::Debug>(result: kube::Result<T>, what: &str) -> Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("{what}: expected an API error, got {other:?}"),
    }
}

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

/// A response to [`send`]: status, headers and the raw body.
struct Reply {
    status: u16,
    headers: http::HeaderMap,
    body: Vec<u8>,
}

impl Reply {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
    fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    }
}

/// A raw request with the given headers (no Accept header unless given).
async fn send(
    c: &kube::Client,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Vec<u8>>,
) -> Reply {
    let mut builder = http::Request::builder().method(method).uri(path);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let request = builder
        .body(kube::client::Body::from(body.into()))
        .unwrap_or_else(|e| panic!("building {method} {path}: {e}"));
    let response = c
        .send(request)
        .await
        .unwrap_or_else(|e| panic!("sending {method} {path}: {e}"));
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect_bytes()
        .await
        .unwrap_or_else(|e| panic!("reading the body of {method} {path}: {e}"))
        .to_vec();
    Reply {
        status,
        headers,
        body,
    }
}

/// kubectl against `s` as a `Command` the test runs itself (background processes,
/// extra environment). Shares the server's discovery cache with `s.kubectl`.
fn kubectl_command(s: &TestServer, args: &[&str]) -> Command {
    let scratch: PathBuf = s
        .write_file(".kubectl-command", "")
        .parent()
        .expect("scratch dir")
        .to_path_buf();
    let mut cmd = Command::new(kubectl_binary());
    cmd.arg("--kubeconfig")
        .arg(s.kubeconfig())
        .arg("--cache-dir")
        .arg(scratch.join("kube-cache"))
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// A background process whose stdout lines arrive on a channel; killed when dropped.
struct Background {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Background {
    fn spawn(mut cmd: Command) -> Background {
        let mut child = cmd.spawn().expect("spawning kubectl");
        let out = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Background {
            child,
            lines: rx,
            seen: Vec::new(),
        }
    }

    /// Waits until a line satisfying `pred` arrives; panics with everything seen.
    fn wait_for(&mut self, what: &str, timeout: Duration, pred: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + timeout;
        loop {
            if self.seen.iter().any(|l| pred(l)) {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => {
                    let _ = self.child.kill();
                    let stderr = self
                        .child
                        .stderr
                        .take()
                        .map(|mut e| {
                            let mut s = String::new();
                            let _ = std::io::Read::read_to_string(&mut e, &mut s);
                            s
                        })
                        .unwrap_or_default();
                    panic!(
                        "{what}: not seen within {timeout:?}; stdout so far:\n{}\nstderr:\n{stderr}",
                        self.seen.join("\n")
                    );
                }
            }
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A kube client that does not retry 429/503/504 answers (kube's default client retries
/// them with backoff for minutes), for tests that expect such an answer.
async fn client_without_retries(s: &TestServer) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(s.kubeconfig()).expect("kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("config");
    config.default_retry = false;
    kube::Client::try_from(config).expect("client")
}

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

/// Sorted `kubectl get ... -o name` output restricted to names in `mine`.
fn names_among(out: &str, mine: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = out
        .lines()
        .map(|l| l.rsplit('/').next().unwrap_or(l).to_string())
        .filter(|n| mine.contains(&n.as_str()))
        .collect();
    names.sort();
    names
}

/// The whitespace-separated cells of the table row whose first cell is `name`.
fn row<'a>(table: &'a str, name: &str) -> Vec<&'a str> {
    table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|cells| cells.first() == Some(&name))
        .unwrap_or_else(|| panic!("no row {name:?} in:\n{table}"))
}

fn header(table: &str) -> Vec<&str> {
    table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect()
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

// ---------------------------------------------------------------------------------------
// 4. Request options: dryRun, fieldValidation, fieldManager, pretty
// ---------------------------------------------------------------------------------------

#[test]
fn kubectl_dry_run_server_persists_nothing() {
    let s = TestServer::start();
    let out = s.kubectl_ok(&[
        "create",
        "configmap",
        "d",
        "--from-literal=a=b",
        "--dry-run=server",
    ]);
    assert_eq!(out.trim(), "configmap/d created (server dry run)");
    let err = s.kubectl_err(&["get", "cm", "d"]);
    assert!(err.contains(r#"configmaps "d" not found"#), "{err}");
    // The dry-run answer is what would be stored: uid and timestamp filled in.
    let yaml = s.kubectl_ok(&[
        "create",
        "configmap",
        "d",
        "--from-literal=a=b",
        "--dry-run=server",
        "-o",
        "yaml",
    ]);
    let obj: serde_yaml::Value = serde_yaml::from_str(&yaml).unwrap();
    assert!(obj["metadata"]["uid"].as_str().is_some(), "{yaml}");
    assert!(
        obj["metadata"]["creationTimestamp"].as_str().is_some(),
        "{yaml}"
    );

    // Validation still runs.
    let err = s.kubectl_err(&["create", "configmap", "Bad_Name", "--dry-run=server"]);
    assert!(err.contains(r#"ConfigMap "Bad_Name" is invalid"#), "{err}");

    s.kubectl_ok(&["create", "configmap", "real", "--from-literal=a=b"]);
    s.kubectl_ok(&[
        "patch",
        "cm",
        "real",
        "--type=merge",
        "-p",
        r#"{"data":{"a":"patched"}}"#,
        "--dry-run=server",
    ]);
    s.kubectl_ok(&["label", "cm", "real", "x=y", "--dry-run=server"]);
    let f = s.write_file(
        "real.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: real\ndata:\n  a: replaced\n",
    );
    s.kubectl_ok(&["replace", "-f", f.to_str().unwrap(), "--dry-run=server"]);
    let out = s.kubectl_ok(&["delete", "cm", "real", "--dry-run=server"]);
    assert_eq!(out.trim(), r#"configmap "real" deleted (server dry run)"#);
    let obj = s.kubectl_ok(&["get", "cm", "real", "-o", "json"]);
    let obj: Value = serde_json::from_str(&obj).unwrap();
    assert_eq!(obj["data"]["a"], "b", "dry-run patch persisted");
    assert!(
        obj["metadata"]["labels"].is_null(),
        "dry-run label persisted"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kube_dry_run_on_create_replace_patch_delete() {
    let s = TestServer::start();
    let c = s.client().await;
    let api = widgets(&c);
    let dry_post = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let answered = api
        .create(&dry_post, &widget("w", json!({"color": "red"})))
        .await
        .expect("dry-run create");
    assert_eq!(answered.data["spec"]["replicas"], 1, "defaults applied");
    assert!(api.get_opt("w").await.unwrap().is_none());
    let status = api_status(
        api.create(&dry_post, &widget("w", json!({"color": "pink"})))
            .await,
        "dry-run create of an invalid Widget",
    );
    assert_eq!(status.code, 422, "validation runs on dry-run: {status:?}");

    let created = api
        .create(
            &PostParams::default(),
            &widget("w", json!({"color": "red"})),
        )
        .await
        .unwrap();
    let rv = created.resource_version();

    let mut changed = created.clone();
    changed.data["spec"]["color"] = json!("blue");
    let answered = api.replace("w", &dry_post, &changed).await.unwrap();
    assert_eq!(answered.data["spec"]["color"], "blue");

    let answered = api
        .patch(
            "w",
            &PatchParams::default().dry_run(),
            &Patch::Merge(json!({"spec": {"color": "green"}})),
        )
        .await
        .unwrap();
    assert_eq!(answered.data["spec"]["color"], "green");

    api.delete("w", &DeleteParams::default().dry_run())
        .await
        .expect("dry-run delete");

    let now = api
        .get("w")
        .await
        .expect("still there after dry-run delete");
    assert_eq!(now.data["spec"]["color"], "red", "nothing persisted");
    assert_eq!(now.resource_version(), rv, "nothing written");
}

#[tokio::test(flavor = "multi_thread")]
async fn field_validation_strict_warn_ignore() {
    let s = TestServer::start();
    let c = s.client().await;
    let body = |name: &str| {
        json!({"apiVersion":"example.dev/v1","kind":"Widget","metadata":{"name":name},"spec":{"color":"red","bogus":1}})
            .to_string()
    };
    let resp = raw_request(
        &c,
        "POST",
        &format!("{WIDGETS}?fieldValidation=Strict"),
        JSON,
        body("strict"),
    )
    .await;
    assert_eq!(resp.status, 400, "{}", resp.text);
    assert!(
        resp.text
            .contains(r#"strict decoding error: unknown field \"spec.bogus\""#),
        "{}",
        resp.text
    );

    let resp = raw_request(
        &c,
        "POST",
        &format!("{WIDGETS}?fieldValidation=Warn"),
        JSON,
        body("warn"),
    )
    .await;
    assert_eq!(resp.status, 201, "{}", resp.text);
    let warnings: Vec<&str> = resp
        .headers
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert_eq!(
        warnings,
        [r#"299 - "unknown field \"spec.bogus\"""#],
        "Warn answers with a Warning header"
    );
    assert!(resp.json["spec"].get("bogus").is_none(), "{}", resp.text);

    let resp = raw_request(
        &c,
        "POST",
        &format!("{WIDGETS}?fieldValidation=Ignore"),
        JSON,
        body("ignore"),
    )
    .await;
    assert_eq!(resp.status, 201, "{}", resp.text);
    assert!(resp.headers.get("warning").is_none(), "{:?}", resp.headers);

    // Duplicate JSON fields.
    let dup = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup"},"data":{"a":"1","a":"2"}}"#;
    let resp = raw_request(
        &c,
        "POST",
        &format!("{CONFIGMAPS}?fieldValidation=Strict"),
        JSON,
        dup,
    )
    .await;
    assert_eq!(resp.status, 400, "{}", resp.text);
    assert!(
        resp.text.contains(r#"duplicate field \"data.a\""#),
        "{}",
        resp.text
    );
    let resp = raw_request(
        &c,
        "POST",
        &format!("{CONFIGMAPS}?fieldValidation=Warn"),
        JSON,
        dup,
    )
    .await;
    assert_eq!(resp.status, 201, "{}", resp.text);
    let warning = resp
        .headers
        .get("warning")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert_eq!(warning, r#"299 - "duplicate field \"data.a\"""#);
    assert_eq!(resp.json["data"]["a"], "2", "the last duplicate wins");

    // kubectl --validate=warn prints the server's warning.
    let file = s.write_file(
        "w.yaml",
        "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: kw\nspec:\n  color: red\n  bogus: 1\n",
    );
    let out = s.kubectl(&["create", "-f", file.to_str().unwrap(), "--validate=warn"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(r#"Warning: unknown field "spec.bogus""#),
        "stderr: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn field_manager_and_pretty() {
    let s = TestServer::start();
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let pp = PostParams {
        field_manager: Some("my-controller".into()),
        ..Default::default()
    };
    let created = cms
        .create(&pp, &configmap("m", &[("a", "b")]))
        .await
        .unwrap();
    let entries = created.metadata.managed_fields.unwrap_or_default();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].manager.as_deref(), Some("my-controller"));
    assert_eq!(entries[0].operation.as_deref(), Some("Update"));

    let pretty = raw_request(&c, "GET", &format!("{CONFIGMAPS}/m?pretty=true"), None, "").await;
    assert!(
        pretty.text.contains("\n  \"kind\": \"ConfigMap\""),
        "pretty=true indents the JSON: {}",
        pretty.text
    );
    let compact = raw_request(&c, "GET", &format!("{CONFIGMAPS}/m"), None, "").await;
    assert!(!compact.text.contains("\n  "), "{}", compact.text);
}

/// Invalid request options are validated as kube-apiserver's `*Options` kinds: 422
/// Invalid whose message names `CreateOptions.meta.k8s.io ""` (or DeleteOptions,
/// ListOptions), not 400 BadRequest. kubectl shows these as `The request is invalid`.
#[tokio::test(flavor = "multi_thread")]
async fn invalid_request_options_are_422_naming_the_options_kind() {
    let s = TestServer::start();
    let c = s.client().await;
    raw_request(
        &c,
        "POST",
        CONFIGMAPS,
        JSON,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#,
    )
    .await;
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"y"}}"#;
    let long = "m".repeat(129);
    let cases: Vec<(&str, String, &str, &str)> = vec![
        (
            "POST",
            format!("{CONFIGMAPS}?fieldManager={long}"),
            cm,
            r#"CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes"#,
        ),
        (
            "POST",
            format!("{CONFIGMAPS}?fieldValidation=Loud"),
            cm,
            r#"CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loud": supported values: "", "Ignore", "Strict", "Warn""#,
        ),
        (
            "POST",
            format!("{CONFIGMAPS}?dryRun=Some"),
            cm,
            r#"CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Some"}: supported values: "All""#,
        ),
        (
            "DELETE",
            format!("{CONFIGMAPS}/x?dryRun=Some"),
            "",
            r#"DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Some"}: supported values: "All""#,
        ),
        (
            "DELETE",
            format!("{CONFIGMAPS}/x?propagationPolicy=Sideways"),
            "",
            r#"DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil""#,
        ),
        (
            "DELETE",
            format!("{CONFIGMAPS}/x"),
            r#"{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Sideways"}"#,
            r#"DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil""#,
        ),
        (
            "GET",
            format!("{CONFIGMAPS}?resourceVersionMatch=NotOlderThan"),
            "",
            r#"ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"#,
        ),
    ];
    let mut failures = Vec::new();
    for (method, path, body, want) in cases {
        let ct = if body.is_empty() { None } else { JSON };
        let resp = raw_request(&c, method, &path, ct, body).await;
        if resp.status != 422 || resp.json["reason"] != "Invalid" || resp.json["message"] != want {
            let shown: String = path.chars().take(90).collect();
            failures.push(format!(
                "{method} {shown} {body}\n  expected: 422 Invalid `{want}`\n  actual:   {} {}",
                resp.status, resp.json["message"]
            ));
        }
    }
    let cms: Api<ConfigMap> = Api::default_namespaced(c);
    assert!(cms.get_opt("x").await.unwrap().is_some(), "x was deleted");
    assert!(cms.get_opt("y").await.unwrap().is_none(), "y was created");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------
// 5. Selectors
// ---------------------------------------------------------------------------------------

#[test]
fn kubectl_label_selectors_full_grammar() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "configmap", "a"]);
    s.kubectl_ok(&["create", "configmap", "b"]);
    s.kubectl_ok(&["create", "configmap", "c"]);
    s.kubectl_ok(&["create", "configmap", "d"]);
    s.kubectl_ok(&["label", "cm", "a", "env=prod", "tier=web"]);
    s.kubectl_ok(&["label", "cm", "b", "env=dev"]);
    s.kubectl_ok(&["label", "cm", "d", "env=qa", "tier=db"]);
    let mine = ["a", "b", "c", "d"];
    let mut failures = Vec::new();
    for (selector, want) in [
        ("env=prod", vec!["a"]),
        ("env==prod", vec!["a"]),
        ("env!=prod", vec!["b", "c", "d"]),
        ("env in (prod,dev)", vec!["a", "b"]),
        ("env notin (prod,dev)", vec!["c", "d"]),
        ("tier", vec!["a", "d"]),
        ("!tier", vec!["b", "c"]),
        ("env,!tier", vec!["b"]),
        ("env in (prod, qa),tier=db", vec!["d"]),
        ("env=nope", vec![]),
    ] {
        let out = s.kubectl_ok(&["get", "cm", "-l", selector, "-o", "name"]);
        let got = names_among(&out, &mine);
        if got != want {
            failures.push(format!("-l {selector:?}: want {want:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    let err = s.kubectl_err(&["get", "cm", "-l", "a b"]);
    assert!(
        err.contains("Error from server (BadRequest)")
            && err.contains(
                "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
            ),
        "stderr: {err}"
    );
}

#[test]
fn kubectl_field_selectors() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "n1"]);
    s.kubectl_ok(&["create", "configmap", "a"]);
    s.kubectl_ok(&["create", "configmap", "b"]);
    s.kubectl_ok(&["create", "configmap", "c", "-n", "n1"]);
    s.kubectl_ok(&["create", "secret", "generic", "plain", "--from-literal=a=b"]);
    s.kubectl_ok(&[
        "create",
        "secret",
        "docker-registry",
        "pull",
        "--docker-server=r.example",
        "--docker-username=u",
        "--docker-password=p",
    ]);
    for (name, color) in [("red1", "red"), ("blue1", "blue"), ("red2", "red")] {
        let f = s.write_file(
            &format!("{name}.yaml"),
            &format!(
                "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: {name}\nspec:\n  color: {color}\n"
            ),
        );
        s.kubectl_ok(&["create", "-f", f.to_str().unwrap()]);
    }
    let mine = [
        "a", "b", "c", "plain", "pull", "red1", "red2", "blue1", "default", "n1",
    ];
    let mut failures = Vec::new();
    for (args, want) in [
        (
            vec!["get", "cm", "--field-selector", "metadata.name=a"],
            vec!["a"],
        ),
        (
            vec!["get", "cm", "--field-selector", "metadata.name!=a"],
            vec!["b"],
        ),
        (
            vec![
                "get",
                "cm",
                "-A",
                "--field-selector",
                "metadata.namespace=n1",
            ],
            vec!["c"],
        ),
        (
            vec![
                "get",
                "cm",
                "-A",
                "--field-selector",
                "metadata.namespace!=n1,metadata.name!=b",
            ],
            vec!["a"],
        ),
        (
            vec!["get", "secrets", "--field-selector", "type=Opaque"],
            vec!["plain"],
        ),
        (
            vec![
                "get",
                "secrets",
                "--field-selector",
                "type=kubernetes.io/dockerconfigjson",
            ],
            vec!["pull"],
        ),
        (
            vec!["get", "ns", "--field-selector", "status.phase=Active"],
            vec!["default", "n1"],
        ),
        (
            vec!["get", "wd", "--field-selector", "spec.color=red"],
            vec!["red1", "red2"],
        ),
        (
            vec!["get", "wd", "--field-selector", "spec.color!=red"],
            vec!["blue1"],
        ),
    ] {
        let mut full = args.clone();
        full.extend(["-o", "name"]);
        let out = s.kubectl(&full);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let got = names_among(&stdout, &mine);
        if !out.status.success() || got != want {
            failures.push(format!(
                "kubectl {}: want {want:?}, got {got:?} {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    let err = s.kubectl_err(&["get", "cm", "--field-selector", "foo"]);
    assert!(
        err.contains("Error from server (BadRequest)")
            && err.contains("invalid selector: 'foo'; can't understand 'foo'"),
        "stderr: {err}"
    );
    let err = s.kubectl_err(&["get", "secrets", "--field-selector", "data.a=b"]);
    assert!(
        err.contains("field label not supported: data.a"),
        "secrets have their own field label conversion: {err}"
    );
    // ConfigMaps have no field label conversion of their own, so kube-apiserver's
    // default one answers for them.
    let err = s.kubectl_err(&["get", "cm", "--field-selector", "data.a=b"]);
    assert!(
        err.contains(r#""data.a" is not a known field selector: only "metadata.name", "metadata.namespace""#),
        "kube-apiserver answers 400 `\"data.a\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"` for configmaps; stderr: {err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kube_list_with_label_and_field_selectors() {
    let s = TestServer::start();
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    for (name, env) in [("p", "prod"), ("d", "dev")] {
        cms.create(&PostParams::default(), &labelled(name, &[("env", env)]))
            .await
            .unwrap();
    }
    let names = |l: kube::core::ObjectList<ConfigMap>| -> Vec<String> {
        l.items.iter().map(ResourceExt::name_any).collect()
    };
    let got = cms
        .list(&ListParams::default().labels("env in (prod)"))
        .await
        .unwrap();
    assert_eq!(names(got), ["p"]);
    let got = cms
        .list(&ListParams::default().fields("metadata.name=d"))
        .await
        .unwrap();
    assert_eq!(names(got), ["d"]);
    let got = cms
        .list(
            &ListParams::default()
                .labels("env")
                .fields("metadata.name!=d"),
        )
        .await
        .unwrap();
    assert_eq!(names(got), ["p"]);
    let status = api_status(
        cms.list(&ListParams::default().labels("env in prod")).await,
        "list with an invalid label selector",
    );
    assert_eq!(
        (status.code, status.reason.as_str()),
        (400, "BadRequest"),
        "{status:?}"
    );
    assert!(
        status.message.contains("unable to parse requirement"),
        "{status:?}"
    );
}

// ---------------------------------------------------------------------------------------
// 6. List: paging, resourceVersion, cluster-wide
// ---------------------------------------------------------------------------------------

#[test]
fn kubectl_get_chunk_size_pages_through_everything() {
    let s = TestServer::start();
    for i in 0..5 {
        s.kubectl_ok(&["create", "configmap", &format!("c{i}")]);
    }
    let out = s.kubectl(&["get", "cm", "--chunk-size=1", "-o", "name", "-v=6"]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        names,
        [
            "configmap/c0",
            "configmap/c1",
            "configmap/c2",
            "configmap/c3",
            "configmap/c4"
        ]
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let requests = stderr.matches("limit=1").count();
    assert!(
        requests >= 5 && stderr.contains("continue="),
        "kubectl should page with limit=1 and continue tokens:\n{stderr}"
    );
    let table = s.kubectl_ok(&["get", "cm", "--chunk-size=2"]);
    assert_eq!(
        table.lines().count(),
        6,
        "one header and five rows:\n{table}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn continue_pages_are_a_snapshot_of_the_first_page() {
    let s = TestServer::start();
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    for i in 0..5 {
        cms.create(&PostParams::default(), &configmap(&format!("p{i}"), &[]))
            .await
            .unwrap();
    }
    let first = cms.list(&ListParams::default().limit(2)).await.unwrap();
    let first_rv = first.metadata.resource_version.clone();
    assert_eq!(first.items.len(), 2);
    let token = first.metadata.continue_.clone().expect("continue token");
    assert!(
        first.metadata.remaining_item_count == Some(3)
            || first.metadata.remaining_item_count.is_none(),
        "remainingItemCount, when given, counts what is left: {:?}",
        first.metadata.remaining_item_count
    );
    // Changes after the first page are not seen by the rest of the list.
    cms.delete("p3", &DeleteParams::default()).await.unwrap();
    cms.create(&PostParams::default(), &configmap("p5", &[]))
        .await
        .unwrap();
    let mut seen: Vec<String> = first.items.iter().map(ResourceExt::name_any).collect();
    let mut page_rvs = Vec::new();
    let mut lp = ListParams::default().limit(2).continue_token(&token);
    loop {
        let page = cms.list(&lp).await.expect("continue");
        page_rvs.push(page.metadata.resource_version.clone());
        seen.extend(page.items.iter().map(ResourceExt::name_any));
        match page.metadata.continue_.filter(|t| !t.is_empty()) {
            Some(t) => lp = lp.continue_token(&t),
            None => break,
        }
    }
    assert_eq!(
        seen,
        ["p0", "p1", "p2", "p3", "p4"],
        "the pages after the first show the list as of the first page"
    );
    // kube-apiserver serves continue pages at the revision in the token and reports it:
    // every page's metadata.resourceVersion is the first page's.
    assert!(
        page_rvs.iter().all(|rv| *rv == first_rv),
        "every page of a paged list must report the first page's resourceVersion {first_rv:?}, got {page_rvs:?}"
    );

    let resp = raw_request(
        &c,
        "GET",
        &format!("{CONFIGMAPS}?limit=1&continue=garbage"),
        None,
        "",
    )
    .await;
    assert_eq!(resp.status, 400, "{}", resp.text);
    assert!(
        resp.json["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("invalid continue token"),
        "{}",
        resp.text
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn resource_version_and_match_on_get_and_list() {
    let s = TestServer::start();
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let a = cms
        .create(&PostParams::default(), &configmap("a", &[("v", "1")]))
        .await
        .unwrap();
    let old_rv = a.resource_version().unwrap();
    cms.create(&PostParams::default(), &configmap("b", &[]))
        .await
        .unwrap();
    cms.delete("a", &DeleteParams::default()).await.unwrap();
    let now = cms.list(&ListParams::default()).await.unwrap();
    let now_rv = now.metadata.resource_version.clone().unwrap();

    // resourceVersion=0: any version (served from the cache in kube-apiserver).
    let any = cms.list(&ListParams::default().match_any()).await.unwrap();
    assert_eq!(any.items.len(), 1);
    // NotOlderThan the current revision.
    let nb = cms
        .list(
            &ListParams::default()
                .at(&now_rv)
                .matching(VersionMatch::NotOlderThan),
        )
        .await
        .unwrap();
    assert_eq!(nb.items.len(), 1);
    // Exact at the current revision.
    let exact = cms
        .list(
            &ListParams::default()
                .at(&now_rv)
                .matching(VersionMatch::Exact),
        )
        .await
        .unwrap();
    assert_eq!(exact.metadata.resource_version.as_deref(), Some(&*now_rv));
    assert_eq!(exact.items.len(), 1);

    // A revision from the future: 504 Timeout "Too large resource version".
    let future = now_rv.parse::<u64>().unwrap() + 1000;
    let resp = raw_request(
        &client_without_retries(&s).await,
        "GET",
        &format!("{CONFIGMAPS}?resourceVersion={future}&resourceVersionMatch=NotOlderThan"),
        None,
        "",
    )
    .await;
    assert_eq!(resp.status, 504, "{}", resp.text);
    assert_eq!(resp.json["reason"], "Timeout", "{}", resp.text);
    assert!(
        resp.json["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with(&format!("Too large resource version: {future}")),
        "{}",
        resp.text
    );
    assert_eq!(
        resp.json["details"]["causes"][0]["reason"], "ResourceVersionTooLarge",
        "{}",
        resp.text
    );

    let mut failures = Vec::new();

    // get at resourceVersion=0 and at the current revision.
    let b = cms.get_with("b", &GetParams::any()).await.unwrap();
    assert_eq!(b.name_any(), "b");
    let b = cms.get_with("b", &GetParams::at(&now_rv)).await.unwrap();
    assert_eq!(b.name_any(), "b");

    // Exact at an older revision: kube-apiserver answers the list as it was then (before
    // etcd compaction) or, once compacted, 410 Expired with the message
    // "The resourceVersion for the provided list is too old." ("too old resource
    // version: X (Y)" is the wording for watches).
    let resp = raw_request(
        &c,
        "GET",
        &format!("{CONFIGMAPS}?resourceVersion={old_rv}&resourceVersionMatch=Exact"),
        None,
        "",
    )
    .await;
    let names: Vec<&str> = resp.json["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    let ok = match resp.status {
        200 => names == ["a"] && resp.json["metadata"]["resourceVersion"] == json!(old_rv),
        410 => {
            resp.json["reason"] == "Expired"
                && resp.json["message"] == "The resourceVersion for the provided list is too old."
        }
        _ => false,
    };
    if !ok {
        failures.push(format!(
            "GET ?resourceVersion={old_rv}&resourceVersionMatch=Exact: expected 200 with the list as of {old_rv} (only \"a\") or 410 Expired `The resourceVersion for the provided list is too old.`, got {} {}",
            resp.status, resp.text
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn cluster_wide_lists_of_namespaced_kinds() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "n1"]);
    s.kubectl_ok(&["create", "namespace", "n2"]);
    s.kubectl_ok(&["create", "configmap", "x", "-n", "n1"]);
    s.kubectl_ok(&["create", "configmap", "x", "-n", "n2"]);
    s.kubectl_ok(&["create", "configmap", "y"]);
    let table = s.kubectl_ok(&["get", "cm", "-A"]);
    assert_eq!(
        header(&table),
        ["NAMESPACE", "NAME", "DATA", "AGE"],
        "{table}"
    );
    let mut pairs: Vec<(String, String)> = table
        .lines()
        .skip(1)
        .map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            (cells[0].to_string(), cells[1].to_string())
        })
        .filter(|(_, n)| n == "x" || n == "y")
        .collect();
    pairs.sort();
    assert_eq!(
        pairs,
        [
            ("default".to_string(), "y".to_string()),
            ("n1".to_string(), "x".to_string()),
            ("n2".to_string(), "x".to_string())
        ],
        "{table}"
    );
    let all: Api<ConfigMap> = Api::all(s.client().await);
    let list = all
        .list(&ListParams::default().fields("metadata.name=x"))
        .await
        .unwrap();
    let mut namespaces: Vec<String> = list.items.iter().filter_map(|c| c.namespace()).collect();
    namespaces.sort();
    assert_eq!(namespaces, ["n1", "n2"]);
}

// ---------------------------------------------------------------------------------------
// 7. Patch and managedFields for Update operations
// ---------------------------------------------------------------------------------------

#[test]
fn kubectl_patch_json_merge_and_strategic() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "configmap", "c", "--from-literal=a=1"]);
    let out = s.kubectl_ok(&[
        "patch",
        "cm",
        "c",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/data/b","value":"2"},{"op":"replace","path":"/data/a","value":"10"}]"#,
    ]);
    assert_eq!(out.trim(), "configmap/c patched");
    s.kubectl_ok(&[
        "patch",
        "cm",
        "c",
        "--type=merge",
        "-p",
        r#"{"data":{"a":null,"c":"3"}}"#,
    ]);
    s.kubectl_ok(&[
        "patch",
        "cm",
        "c",
        "--type=strategic",
        "-p",
        r#"{"metadata":{"labels":{"l":"v"}},"data":{"d":"4"}}"#,
    ]);
    let data = s.kubectl_ok(&["get", "cm", "c", "-o", "jsonpath={.data}"]);
    let data: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(data, json!({"b": "2", "c": "3", "d": "4"}));
    // A json patch whose test fails changes nothing and is refused.
    let err = s.kubectl_err(&[
        "patch",
        "cm",
        "c",
        "--type=json",
        "-p",
        r#"[{"op":"test","path":"/data/b","value":"nope"},{"op":"remove","path":"/data/b"}]"#,
    ]);
    assert!(
        err.contains("is invalid"),
        "a failed test op is 422 Invalid: {err}"
    );
    let b = s.kubectl_ok(&["get", "cm", "c", "-o", "jsonpath={.data.b}"]);
    assert_eq!(b, "2");

    // Strategic merge is for built-in kinds: on a custom kind it is 415, as kube-apiserver
    // answers for custom resources.
    let w = s.write_file(
        "w.yaml",
        "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  color: red\n  ports:\n  - {port: 80, name: http}\n  - {port: 443, name: https}\n",
    );
    s.kubectl_ok(&["create", "-f", w.to_str().unwrap()]);
    let err = s.kubectl_err(&[
        "patch",
        "wd",
        "w",
        "--type=strategic",
        "-p",
        r#"{"spec":{"color":"blue"}}"#,
    ]);
    // kubectl words the 415 itself, quoting the server's list of accepted types.
    assert!(
        err.contains("application/strategic-merge-patch+json is not supported by example.dev/v1, Kind=Widget")
            && err.contains("accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"),
        "{err}"
    );
    let color = s.kubectl_ok(&["get", "wd", "w", "-o", "jsonpath={.spec.color}"]);
    assert_eq!(color, "red", "the refused patch changed nothing");

    // On a built-in kind's keyed list (Namespace status.conditions, list-type map keyed
    // by type) strategic merge merges by key, and `$patch: delete` removes one item.
    s.kubectl_ok(&["create", "namespace", "smp"]);
    let conditions = |patch_type: &str, patch: &str| {
        s.kubectl_ok(&[
            "patch",
            "ns",
            "smp",
            "--subresource=status",
            &format!("--type={patch_type}"),
            "-p",
            patch,
        ]);
        let out = s.kubectl_ok(&["get", "ns", "smp", "-o", "jsonpath={.status.conditions}"]);
        let mut conditions: Vec<Value> = serde_json::from_str(&out).unwrap();
        conditions.sort_by(|a, b| a["type"].as_str().cmp(&b["type"].as_str()));
        conditions
            .iter()
            .map(|c| {
                format!(
                    "{}={}",
                    c["type"].as_str().unwrap(),
                    c["status"].as_str().unwrap()
                )
            })
            .collect::<Vec<_>>()
    };
    conditions(
        "merge",
        r#"{"status":{"conditions":[{"type":"A","status":"True"},{"type":"B","status":"True"}]}}"#,
    );
    assert_eq!(
        conditions(
            "strategic",
            r#"{"status":{"conditions":[{"type":"C","status":"True"},{"type":"A","status":"False"}]}}"#,
        ),
        ["A=False", "B=True", "C=True"],
        "strategic merge merges status.conditions by type"
    );
    assert_eq!(
        conditions(
            "strategic",
            r#"{"status":{"conditions":[{"type":"B","$patch":"delete"}]}}"#,
        ),
        ["A=False", "C=True"],
        "$patch: delete removes one item"
    );
    s.kubectl_ok(&[
        "patch",
        "wd",
        "w",
        "--type=merge",
        "-p",
        r#"{"spec":{"ports":[{"port":9}]}}"#,
    ]);
    let ports = s.kubectl_ok(&["get", "wd", "w", "-o", "jsonpath={.spec.ports}"]);
    assert_eq!(
        serde_json::from_str::<Value>(&ports).unwrap(),
        json!([{"port": 9}]),
        "a merge patch replaces lists"
    );

    // Errors: a missing object is 404, an invalid result is 422.
    let err = s.kubectl_err(&["patch", "cm", "missing", "--type=merge", "-p", "{}"]);
    assert!(
        err.contains(r#"Error from server (NotFound): configmaps "missing" not found"#),
        "{err}"
    );
    let err = s.kubectl_err(&[
        "patch",
        "wd",
        "w",
        "--type=merge",
        "-p",
        r#"{"spec":{"color":"pink"}}"#,
    ]);
    assert!(
        err.contains(r#""w" is invalid"#)
            && err.contains(r#"spec.color: Unsupported value: "pink""#),
        "{err}"
    );
    let err = s.kubectl_err(&[
        "patch",
        "cm",
        "c",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"bad key":"v"}}}"#,
    ]);
    assert!(
        err.contains(r#"The ConfigMap "c" is invalid"#) && err.contains("metadata.labels"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kube_patch_kinds_and_errors() {
    let s = TestServer::start();
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    cms.create(&PostParams::default(), &configmap("c", &[("a", "1")]))
        .await
        .unwrap();
    // JSON patch (the kube crate's Patch::Json needs its jsonpatch feature: raw).
    let patched = raw_request(
        &c,
        "PATCH",
        &format!("{CONFIGMAPS}/c"),
        Some("application/json-patch+json"),
        r#"[{"op":"add","path":"/data/b","value":"2"},{"op":"remove","path":"/data/a"}]"#,
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.text);
    assert_eq!(patched.json["data"], json!({"b": "2"}));
    let patched = cms
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Strategic(json!({"data": {"c": "3"}})),
        )
        .await
        .expect("strategic merge patch");
    assert_eq!(patched.data.unwrap().len(), 2);

    let status = api_status(
        cms.patch(
            "missing",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": "b"}})),
        )
        .await,
        "merge patch of a missing ConfigMap",
    );
    assert_eq!((status.code, status.reason.as_str()), (404, "NotFound"));
    assert_eq!(status.message, r#"configmaps "missing" not found"#);

    // A JSON patch on a path that does not exist.
    let resp = raw_request(
        &c,
        "PATCH",
        &format!("{CONFIGMAPS}/c"),
        Some("application/json-patch+json"),
        r#"[{"op":"remove","path":"/data/zzz"}]"#,
    )
    .await;
    assert_eq!(resp.status, 422, "{}", resp.text);
    // A body that is not a patch at all.
    let resp = raw_request(
        &c,
        "PATCH",
        &format!("{CONFIGMAPS}/c"),
        Some("application/json-patch+json"),
        r#"{"not":"a list"}"#,
    )
    .await;
    assert_eq!(resp.status, 400, "{}", resp.text);
    // An unknown patch type: 415.
    let resp = raw_request(
        &c,
        "PATCH",
        &format!("{CONFIGMAPS}/c"),
        Some("application/x-patch"),
        "{}",
    )
    .await;
    assert_eq!(resp.status, 415, "{}", resp.text);
}

#[test]
fn managed_fields_record_update_operations() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "configmap", "m", "--from-literal=a=b"]);
    s.kubectl_ok(&["label", "cm", "m", "x=y"]);
    let hidden = s.kubectl_ok(&["get", "cm", "m", "-o", "yaml"]);
    assert!(
        !hidden.contains("managedFields"),
        "kubectl hides managedFields by default:\n{hidden}"
    );
    let yaml = s.kubectl_ok(&["get", "cm", "m", "-o", "yaml", "--show-managed-fields"]);
    let obj: serde_yaml::Value = serde_yaml::from_str(&yaml).unwrap();
    let entries = obj["metadata"]["managedFields"]
        .as_sequence()
        .unwrap_or_else(|| panic!("no managedFields:\n{yaml}"))
        .clone();
    let entry = |manager: &str| {
        entries
            .iter()
            .find(|e| e["manager"].as_str() == Some(manager))
            .unwrap_or_else(|| panic!("no managedFields entry for {manager}:\n{yaml}"))
            .clone()
    };
    for (manager, fields) in [
        (
            "kubectl-create",
            serde_yaml::from_str::<serde_yaml::Value>("f:data: {.: {}, f:a: {}}").unwrap(),
        ),
        (
            "kubectl-label",
            serde_yaml::from_str("f:metadata: {f:labels: {.: {}, f:x: {}}}").unwrap(),
        ),
    ] {
        let e = entry(manager);
        assert_eq!(e["operation"].as_str(), Some("Update"), "{yaml}");
        assert_eq!(e["apiVersion"].as_str(), Some("v1"), "{yaml}");
        assert_eq!(e["fieldsType"].as_str(), Some("FieldsV1"), "{yaml}");
        assert!(
            e["time"].as_str().is_some_and(|t| t.ends_with('Z')),
            "{yaml}"
        );
        assert_eq!(e["fieldsV1"], fields, "{manager}'s fieldsV1:\n{yaml}");
    }
    assert_eq!(entries.len(), 2, "{yaml}");

    // Another write by the same manager updates its entry instead of adding one.
    s.kubectl_ok(&["label", "cm", "m", "z=w"]);
    let yaml = s.kubectl_ok(&["get", "cm", "m", "-o", "yaml", "--show-managed-fields"]);
    let obj: serde_yaml::Value = serde_yaml::from_str(&yaml).unwrap();
    let entries = obj["metadata"]["managedFields"].as_sequence().unwrap();
    let labels: Vec<_> = entries
        .iter()
        .filter(|e| e["manager"].as_str() == Some("kubectl-label"))
        .collect();
    assert_eq!(labels.len(), 1, "{yaml}");
    let want: serde_yaml::Value =
        serde_yaml::from_str("f:metadata: {f:labels: {.: {}, f:x: {}, f:z: {}}}").unwrap();
    assert_eq!(labels[0]["fieldsV1"], want, "{yaml}");
}

// ---------------------------------------------------------------------------------------
// 8. Subresources
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn status_subresource_get_put_patch_touch_only_status() {
    let s = TestServer::start();
    let c = s.client().await;
    let w = r#"{"apiVersion":"example.dev/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"red","replicas":2}}"#;
    assert_eq!(raw_request(&c, "POST", WIDGETS, JSON, w).await.status, 201);
    let status_path = format!("{WIDGETS}/w/status");

    let got = raw_request(&c, "GET", &status_path, None, "").await;
    assert_eq!(got.status, 200, "{}", got.text);
    assert_eq!(got.json["kind"], "Widget");
    assert_eq!(got.json["spec"]["color"], "red");

    let mut body = got.json.clone();
    body["status"] = json!({"replicas": 2, "selector": "app=w"});
    body["spec"]["color"] = json!("blue");
    let put = raw_request(&c, "PUT", &status_path, JSON, body.to_string()).await;
    assert_eq!(put.status, 200, "{}", put.text);
    assert_eq!(
        put.json["status"],
        json!({"replicas": 2, "selector": "app=w"})
    );
    assert_eq!(put.json["spec"]["color"], "red", "PUT /status ignores spec");

    let patch = raw_request(
        &c,
        "PATCH",
        &status_path,
        MERGE,
        r#"{"spec":{"color":"green"},"metadata":{"labels":{"l":"v"}},"status":{"replicas":1}}"#,
    )
    .await;
    assert_eq!(patch.status, 200, "{}", patch.text);
    assert_eq!(patch.json["status"]["replicas"], 1);
    assert_eq!(
        patch.json["spec"]["color"], "red",
        "PATCH /status ignores spec"
    );
    assert_eq!(patch.json["metadata"]["generation"], 1);

    // The main endpoint ignores status.
    let mut main = patch.json.clone();
    main["status"] = json!({"replicas": 50});
    main["spec"]["color"] = json!("blue");
    let put = raw_request(&c, "PUT", &format!("{WIDGETS}/w"), JSON, main.to_string()).await;
    assert_eq!(put.status, 200, "{}", put.text);
    assert_eq!(put.json["spec"]["color"], "blue");
    assert_eq!(
        put.json["status"]["replicas"], 1,
        "main endpoint ignores status"
    );

    // kubectl speaks to /status with --subresource.
    let out = s.kubectl_ok(&[
        "patch",
        "wd",
        "w",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":3}}"#,
    ]);
    assert_eq!(out.trim(), "widget.example.dev/w patched");
    let ready = s.kubectl_ok(&["get", "wd", "w", "-o", "wide"]);
    assert_eq!(
        row(&ready, "w")[..4],
        ["w", "blue", "2", "3"],
        "READY shows status.replicas:\n{ready}"
    );
    // Status of a missing object: 404.
    let resp = raw_request(&c, "GET", &format!("{WIDGETS}/nope/status"), None, "").await;
    assert_eq!(resp.status, 404, "{}", resp.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn scale_subresource_with_kubectl_and_kube() {
    let s = TestServer::start();
    let c = s.client().await;
    let api = widgets(&c);
    let created = api
        .create(
            &PostParams::default(),
            &widget("w", json!({"color": "red", "replicas": 1})),
        )
        .await
        .unwrap();
    api.patch_status(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"replicas": 1, "selector": "app=w"}})),
    )
    .await
    .unwrap();

    let out = s.kubectl_ok(&["scale", "widget", "w", "--replicas=3"]);
    assert_eq!(out.trim(), "widget.example.dev/w scaled");
    let replicas = s.kubectl_ok(&["get", "wd", "w", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(replicas, "3");

    let scale = raw_request(&c, "GET", &format!("{WIDGETS}/w/scale"), None, "").await;
    assert_eq!(scale.status, 200, "{}", scale.text);
    assert_eq!(scale.json["apiVersion"], "autoscaling/v1", "{}", scale.text);
    assert_eq!(scale.json["kind"], "Scale", "{}", scale.text);
    assert_eq!(scale.json["metadata"]["name"], "w");
    assert_eq!(scale.json["metadata"]["namespace"], "default");
    assert_eq!(
        scale.json["metadata"]["uid"],
        json!(created.metadata.uid.clone().unwrap())
    );
    assert_eq!(scale.json["spec"]["replicas"], 3);
    assert_eq!(scale.json["status"]["replicas"], 1);
    assert_eq!(scale.json["status"]["selector"], "app=w");

    // The kube crate's scale helpers.
    let got = api.get_scale("w").await.expect("get_scale");
    assert_eq!(got.spec.as_ref().and_then(|s| s.replicas), Some(3));
    let patched = api
        .patch_scale(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .expect("patch_scale");
    assert_eq!(patched.spec.and_then(|s| s.replicas), Some(5));
    let w = api.get("w").await.unwrap();
    assert_eq!(w.data["spec"]["replicas"], 5);
    assert_eq!(w.data["spec"]["color"], "red");

    // Scale with a stale resourceVersion: 409.
    let mut stale = got.clone();
    stale.spec.as_mut().unwrap().replicas = Some(7);
    let status = api_status(
        api.replace_scale("w", &PostParams::default(), &stale).await,
        "replace_scale with a stale resourceVersion",
    );
    assert_eq!(status.code, 409, "{status:?}");
    // Beyond the schema's maximum (100): 422 naming spec.replicas.
    let status = api_status(
        api.patch_scale(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 101}})),
        )
        .await,
        "scale beyond the maximum",
    );
    assert_eq!(status.code, 422, "{status:?}");
    assert!(status.message.contains("spec.replicas"), "{status:?}");
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
        assert_eq!(out.trim(), format!(r#"configmap "{name}" deleted"#));
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
    if let Some(list) = deleted.left() {
        let mut names: Vec<String> = list.items.iter().map(ResourceExt::name_any).collect();
        names.sort();
        assert_eq!(names, ["w1", "w2"]);
    }
    let left: Vec<String> = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
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
    assert_eq!(out.trim(), r#"configmap "d1" deleted"#);
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
    assert_eq!(out.trim(), r#"widget.example.dev "b" deleted"#);
}

/// `kubectl wait --for=condition=...` and a rollout-style `--for=jsonpath=...` wait watch
/// the object and return once a status write (by a controller, here the test) meets them.
#[tokio::test(flavor = "multi_thread")]
async fn kubectl_wait_for_a_condition_and_a_status_field() {
    let s = TestServer::start();
    let w = s.write_file(
        "w.yaml",
        "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: slow\nspec:\n  color: red\n  replicas: 3\n",
    );
    s.kubectl_ok(&["create", "-f", w.to_str().unwrap()]);
    let wait = |args: &[&str]| {
        kubectl_command(&s, args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawning kubectl wait")
    };
    let ready = wait(&["wait", "--for=condition=Ready", "wd/slow", "--timeout=30s"]);
    let rolled = wait(&[
        "wait",
        "--for=jsonpath={.status.replicas}=3",
        "wd/slow",
        "--timeout=30s",
    ]);
    tokio::time::sleep(Duration::from_millis(800)).await;
    // Not yet: a False condition and too few replicas.
    s.kubectl_ok(&[
        "patch", "wd", "slow", "--subresource=status", "--type=merge", "-p",
        r#"{"status":{"replicas":1,"conditions":[{"type":"Ready","status":"False","reason":"Starting"}]}}"#,
    ]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    s.kubectl_ok(&[
        "patch", "wd", "slow", "--subresource=status", "--type=merge", "-p",
        r#"{"status":{"replicas":3,"observedGeneration":1,"conditions":[{"type":"Ready","status":"True","reason":"AllUp"}]}}"#,
    ]);
    for (what, child) in [("condition=Ready", ready), ("jsonpath", rolled)] {
        let out = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        assert!(
            out.status.success(),
            "kubectl wait --for={what}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "widget.example.dev/slow condition met",
            "kubectl wait --for={what}"
        );
    }
    // A condition that is already met returns at once; one never met times out.
    s.kubectl_ok(&["wait", "--for=condition=Ready", "wd/slow", "--timeout=10s"]);
    let err = s.kubectl_err(&["wait", "--for=condition=Broken", "wd/slow", "--timeout=2s"]);
    assert!(err.contains("timed out"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_wait_for_delete_returns_when_the_object_goes() {
    let s = TestServer::start();
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c);
    let mut held = configmap("going", &[]);
    held.metadata.finalizers = Some(vec!["example.dev/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();
    s.kubectl_ok(&["delete", "cm", "going", "--wait=false"]);

    let waiter = kubectl_command(&s, &["wait", "--for=delete", "cm/going", "--timeout=20s"])
        .spawn()
        .expect("spawning kubectl wait");
    tokio::time::sleep(Duration::from_millis(800)).await;
    cms.patch(
        "going",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let started = Instant::now();
    let out = tokio::task::spawn_blocking(move || waiter.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl wait --for=delete: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "kubectl wait should return soon after the object goes"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "configmap/going condition met"
    );

    // Deleting in the background while kubectl waits.
    s.kubectl_ok(&["create", "configmap", "later"]);
    let waiter = kubectl_command(&s, &["wait", "--for=delete", "cm/later", "--timeout=20s"])
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    s.kubectl_ok(&["delete", "cm", "later"]);
    let out = tokio::task::spawn_blocking(move || waiter.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// ---------------------------------------------------------------------------------------
// 10. Table output
// ---------------------------------------------------------------------------------------

#[test]
fn kubectl_tables_match_kube_apiserver() {
    let s = TestServer::start();
    s.kubectl_ok(&[
        "create",
        "configmap",
        "c",
        "--from-literal=a=1",
        "--from-literal=b=2",
    ]);
    s.kubectl_ok(&["create", "secret", "generic", "s", "--from-literal=a=1"]);
    let w = s.write_file(
        "w.yaml",
        "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  color: green\n  replicas: 2\n",
    );
    s.kubectl_ok(&["create", "-f", w.to_str().unwrap()]);

    let t = s.kubectl_ok(&["get", "cm", "c"]);
    assert_eq!(header(&t), ["NAME", "DATA", "AGE"], "{t}");
    assert_eq!(row(&t, "c")[..2], ["c", "2"], "{t}");
    let t = s.kubectl_ok(&["get", "secrets", "s"]);
    assert_eq!(header(&t), ["NAME", "TYPE", "DATA", "AGE"], "{t}");
    assert_eq!(row(&t, "s")[..3], ["s", "Opaque", "1"], "{t}");
    let t = s.kubectl_ok(&["get", "ns", "default"]);
    assert_eq!(header(&t), ["NAME", "STATUS", "AGE"], "{t}");
    assert_eq!(row(&t, "default")[..2], ["default", "Active"], "{t}");
    let t = s.kubectl_ok(&["get", "wd", "w"]);
    assert_eq!(header(&t), ["NAME", "COLOR", "REPLICAS", "AGE"], "{t}");
    assert_eq!(row(&t, "w")[..3], ["w", "green", "2"], "{t}");
    let t = s.kubectl_ok(&["get", "wd", "-o", "wide"]);
    assert_eq!(
        header(&t),
        ["NAME", "COLOR", "REPLICAS", "READY", "AGE"],
        "{t}"
    );
    let t = s.kubectl_ok(&["get", "cm", "c", "--show-labels"]);
    assert_eq!(header(&t), ["NAME", "DATA", "AGE", "LABELS"], "{t}");
    let t = s.kubectl_ok(&["get", "cm", "c", "--no-headers"]);
    assert_eq!(row(&t, "c")[..2], ["c", "2"], "{t}");
}

#[tokio::test(flavor = "multi_thread")]
async fn table_include_object_none_metadata_object() {
    let s = TestServer::start();
    let c = s.client().await;
    let w = r#"{"apiVersion":"example.dev/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"red","replicas":2}}"#;
    assert_eq!(raw_request(&c, "POST", WIDGETS, JSON, w).await.status, 201);

    let table = send(&c, "GET", WIDGETS, &[("Accept", TABLE)], "").await;
    assert_eq!(table.status, 200, "{}", table.text());
    let t = table.json();
    assert_eq!(t["kind"], "Table", "{t}");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1", "{t}");
    let columns: Vec<(&str, i64)> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or_default(),
                c["priority"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        columns,
        [
            ("Name", 0),
            ("Color", 0),
            ("Replicas", 0),
            ("Ready", 1),
            ("Age", 0)
        ],
        "{t}"
    );
    let cells = &t["rows"][0]["cells"];
    assert_eq!(cells[0], "w", "{t}");
    assert_eq!(cells[1], "red", "{t}");
    assert_eq!(cells[2], 2, "{t}");
    // Default includeObject=Metadata: PartialObjectMetadata.
    let obj = &t["rows"][0]["object"];
    assert_eq!(obj["kind"], "PartialObjectMetadata", "{t}");
    assert_eq!(obj["apiVersion"], "meta.k8s.io/v1", "{t}");
    assert_eq!(obj["metadata"]["name"], "w", "{t}");
    assert!(obj.get("spec").is_none(), "{t}");

    let none = send(
        &c,
        "GET",
        &format!("{WIDGETS}?includeObject=None"),
        &[("Accept", TABLE)],
        "",
    )
    .await
    .json();
    assert!(
        none["rows"][0]["object"].is_null(),
        "includeObject=None leaves object out: {none}"
    );
    let full = send(
        &c,
        "GET",
        &format!("{WIDGETS}/w?includeObject=Object"),
        &[("Accept", TABLE)],
        "",
    )
    .await
    .json();
    assert_eq!(
        full["kind"], "Table",
        "a single get also answers a Table: {full}"
    );
    assert_eq!(full["rows"][0]["object"]["kind"], "Widget", "{full}");
    assert_eq!(full["rows"][0]["object"]["spec"]["color"], "red", "{full}");

    // Built-in kinds: ConfigMap columns and the Data count.
    raw_request(
        &c,
        "POST",
        CONFIGMAPS,
        JSON,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1","b":"2"},"binaryData":{"c":"AA=="}}"#,
    )
    .await;
    let t = send(
        &c,
        "GET",
        &format!("{CONFIGMAPS}/c"),
        &[("Accept", TABLE)],
        "",
    )
    .await
    .json();
    let names: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["Name", "Data", "Age"], "{t}");
    assert_eq!(
        t["rows"][0]["cells"][1], 3,
        "Data counts data and binaryData: {t}"
    );
    let bad = send(
        &c,
        "GET",
        &format!("{WIDGETS}?includeObject=Everything"),
        &[("Accept", TABLE)],
        "",
    )
    .await;
    assert_eq!(bad.status, 400, "unknown includeObject: {}", bad.text());
}

// ---------------------------------------------------------------------------------------
// 11. Encodings
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn yaml_requests_and_responses() {
    let s = TestServer::start();
    let c = s.client().await;
    let created = send(
        &c,
        "POST",
        CONFIGMAPS,
        &[
            ("Content-Type", "application/yaml"),
            ("Accept", "application/yaml"),
        ],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  k: v\n",
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.text());
    assert!(
        created
            .header("content-type")
            .starts_with("application/yaml"),
        "{:?}",
        created.headers
    );
    let obj: serde_yaml::Value = serde_yaml::from_slice(&created.body).expect("a YAML body");
    assert_eq!(obj["kind"].as_str(), Some("ConfigMap"));
    assert_eq!(obj["data"]["k"].as_str(), Some("v"));
    let list = send(&c, "GET", CONFIGMAPS, &[("Accept", "application/yaml")], "").await;
    let list: serde_yaml::Value = serde_yaml::from_slice(&list.body).expect("a YAML list");
    assert_eq!(list["kind"].as_str(), Some("ConfigMapList"));
    // Errors answer in YAML too.
    let missing = send(
        &c,
        "GET",
        &format!("{CONFIGMAPS}/nope"),
        &[("Accept", "application/yaml")],
        "",
    )
    .await;
    assert_eq!(missing.status, 404);
    let status: serde_yaml::Value = serde_yaml::from_slice(&missing.body).expect("a YAML Status");
    assert_eq!(
        status["kind"].as_str(),
        Some("Status"),
        "{}",
        missing.text()
    );
    // Invalid YAML: 400.
    let bad = send(
        &c,
        "POST",
        CONFIGMAPS,
        &[("Content-Type", "application/yaml")],
        "metadata: [unclosed",
    )
    .await;
    assert_eq!(bad.status, 400, "{}", bad.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn protobuf_request_bodies_from_kubectl() {
    let s = TestServer::start();
    // kubectl create configmap|secret|namespace send Kubernetes protobuf.
    let out = s.kubectl(&["create", "configmap", "p", "--from-literal=k=v", "-v=8"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("Content-Type: application/vnd.kubernetes.protobuf"),
        "kubectl create configmap should send protobuf:\n{stderr}"
    );
    s.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "ps",
        "--from-literal=k=v",
        "--type=example.dev/kind",
    ]);
    s.kubectl_ok(&["create", "namespace", "pn"]);
    assert_eq!(
        s.kubectl_ok(&["get", "cm", "p", "-o", "jsonpath={.data.k}"]),
        "v"
    );
    assert_eq!(
        s.kubectl_ok(&["get", "secret", "ps", "-o", "jsonpath={.type}"]),
        "example.dev/kind"
    );
    assert_eq!(
        s.kubectl_ok(&["get", "secret", "ps", "-o", "jsonpath={.data.k}"]),
        "dg=="
    );
    assert_eq!(
        s.kubectl_ok(&["get", "ns", "pn", "-o", "jsonpath={.status.phase}"]),
        "Active"
    );
}

/// A hand-encoded Kubernetes protobuf ConfigMap: `k8s\0` + runtime.Unknown{typeMeta,
/// raw = ConfigMap{metadata{name}, data{k: v}}}.
fn protobuf_configmap(name: &str, k: &str, v: &str) -> Vec<u8> {
    fn field(num: u8, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![(num << 3) | 2];
        let mut len = bytes.len();
        loop {
            let b = (len & 0x7f) as u8;
            len >>= 7;
            if len == 0 {
                out.push(b);
                break;
            }
            out.push(b | 0x80);
        }
        out.extend_from_slice(bytes);
        out
    }
    let meta = field(1, name.as_bytes());
    let entry = [field(1, k.as_bytes()), field(2, v.as_bytes())].concat();
    let cm = [field(1, &meta), field(2, &entry)].concat();
    let type_meta = [field(1, b"v1"), field(2, b"ConfigMap")].concat();
    let unknown = [field(1, &type_meta), field(2, &cm)].concat();
    [b"k8s\0".to_vec(), unknown].concat()
}

#[tokio::test(flavor = "multi_thread")]
async fn protobuf_bodies_negotiation_errors_and_gzip() {
    let s = TestServer::start();
    let c = s.client().await;
    let pb = "application/vnd.kubernetes.protobuf";
    let created = send(
        &c,
        "POST",
        CONFIGMAPS,
        &[("Content-Type", pb), ("Accept", "application/json")],
        protobuf_configmap("handmade", "k", "v"),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.text());
    assert_eq!(created.json()["data"]["k"], "v");

    // 415 for an unknown request body type, 406 for an unacceptable Accept.
    let resp = send(
        &c,
        "POST",
        CONFIGMAPS,
        &[("Content-Type", "text/plain")],
        "hello",
    )
    .await;
    assert_eq!(resp.status, 415, "{}", resp.text());
    assert_eq!(resp.json()["reason"], "UnsupportedMediaType");
    assert!(
        resp.json()["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"),
        "{}",
        resp.text()
    );
    let resp = send(&c, "GET", CONFIGMAPS, &[("Accept", "text/html")], "").await;
    assert_eq!(resp.status, 406, "{}", resp.text());
    assert_eq!(resp.json()["reason"], "NotAcceptable", "{}", resp.text());

    // Large responses are gzip-compressed when the client accepts gzip.
    let big = "x".repeat(300 * 1024);
    let body =
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a": big}});
    let resp = raw_request(&c, "POST", CONFIGMAPS, JSON, body.to_string()).await;
    assert_eq!(resp.status, 201);
    let zipped = send(
        &c,
        "GET",
        CONFIGMAPS,
        &[("Accept", "application/json"), ("Accept-Encoding", "gzip")],
        "",
    )
    .await;
    assert_eq!(zipped.status, 200);
    assert_eq!(zipped.header("content-encoding"), "gzip");
    assert!(
        zipped.body.len() < 100 * 1024,
        "compressed size {}",
        zipped.body.len()
    );
    let plain = send(&c, "GET", CONFIGMAPS, &[("Accept", "application/json")], "").await;
    assert_eq!(plain.header("content-encoding"), "");
}

#[tokio::test(flavor = "multi_thread")]
async fn protobuf_responses_when_the_client_asks_for_protobuf() {
    let s = TestServer::start();
    let c = s.client().await;
    let pb = "application/vnd.kubernetes.protobuf";
    s.kubectl_ok(&["create", "configmap", "p", "--from-literal=k=v"]);
    // kube-apiserver serves every built-in kind (and its List) in protobuf when the
    // client accepts only protobuf (issue 3, item 11); a 406 here breaks clients
    // configured with ContentType protobuf and no JSON fallback.
    let mut failures = Vec::new();
    for path in [format!("{CONFIGMAPS}/p"), CONFIGMAPS.to_string()] {
        let got = send(&c, "GET", &path, &[("Accept", pb)], "").await;
        if got.status != 200
            || !got.header("content-type").starts_with(pb)
            || !got.body.starts_with(b"k8s\0")
        {
            failures.push(format!(
                "GET {path} with Accept: {pb}: expected 200, Content-Type {pb}, a body starting with k8s\\0; got {} {} {}",
                got.status,
                got.header("content-type"),
                got.text()
            ));
        }
    }
    // With JSON as a fallback either is fine, but the answer must say which it is.
    let got = send(
        &c,
        "GET",
        &format!("{CONFIGMAPS}/p"),
        &[(
            "Accept",
            "application/vnd.kubernetes.protobuf,application/json",
        )],
        "",
    )
    .await;
    assert_eq!(got.status, 200, "{}", got.text());
    let ct = got.header("content-type");
    assert!(
        (ct.starts_with(pb) && got.body.starts_with(b"k8s\0"))
            || (ct.starts_with("application/json") && got.json()["kind"] == "ConfigMap"),
        "{ct}: {}",
        got.text()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
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

// ---------------------------------------------------------------------------------------
// kubectl commands from the "Done when" list
// ---------------------------------------------------------------------------------------

#[test]
fn kubectl_edit_with_a_scripted_editor() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "configmap", "e", "--from-literal=greeting=hello"]);
    let script = s.write_file(
        "edit.sh",
        "#!/bin/sh\nsed -i 's/greeting: hello/greeting: edited/' \"$1\"\n",
    );
    let editor = format!("sh {}", script.display());
    let out = kubectl_command(&s, &["edit", "cm", "e"])
        .env("KUBE_EDITOR", &editor)
        .env("EDITOR", &editor)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl edit: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "configmap/e edited"
    );
    assert_eq!(
        s.kubectl_ok(&["get", "cm", "e", "-o", "jsonpath={.data.greeting}"]),
        "edited"
    );

    // Editing a custom kind works the same way.
    let w = s.write_file(
        "w.yaml",
        "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  color: red\n",
    );
    s.kubectl_ok(&["create", "-f", w.to_str().unwrap()]);
    let script = s.write_file(
        "edit2.sh",
        "#!/bin/sh\nsed -i 's/color: red/color: green/' \"$1\"\n",
    );
    let editor = format!("sh {}", script.display());
    let out = kubectl_command(&s, &["edit", "wd", "w"])
        .env("KUBE_EDITOR", &editor)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        s.kubectl_ok(&["get", "wd", "w", "-o", "jsonpath={.spec.color}"]),
        "green"
    );
}

#[test]
fn kubectl_replace_annotate_and_client_side_apply() {
    let s = TestServer::start();
    let f = s.write_file(
        "c.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: r\ndata:\n  a: one\n",
    );
    s.kubectl_ok(&["create", "-f", f.to_str().unwrap()]);
    let f2 = s.write_file(
        "c2.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: r\ndata:\n  b: two\n",
    );
    let out = s.kubectl_ok(&["replace", "-f", f2.to_str().unwrap()]);
    assert_eq!(out.trim(), "configmap/r replaced");
    let data = s.kubectl_ok(&["get", "cm", "r", "-o", "jsonpath={.data}"]);
    assert_eq!(
        serde_json::from_str::<Value>(&data).unwrap(),
        json!({"b": "two"}),
        "replace swaps the whole object"
    );
    let missing = s.write_file(
        "c3.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nothere\n",
    );
    let err = s.kubectl_err(&["replace", "-f", missing.to_str().unwrap()]);
    assert!(
        err.contains("Error from server (NotFound)")
            && err.contains(r#"configmaps "nothere" not found"#),
        "replace of a missing object: {err}"
    );

    let out = s.kubectl_ok(&["annotate", "cm", "r", "note=hello"]);
    assert_eq!(out.trim(), "configmap/r annotated");
    let err = s.kubectl_err(&["annotate", "cm", "r", "note=again"]);
    assert!(err.contains("--overwrite is false"), "{err}");
    s.kubectl_ok(&["annotate", "cm", "r", "note=again", "--overwrite"]);
    s.kubectl_ok(&["annotate", "cm", "r", "note-"]);
    let ann = s.kubectl_ok(&["get", "cm", "r", "-o", "jsonpath={.metadata.annotations}"]);
    assert!(!ann.contains("note"), "{ann}");

    // Client-side apply: create, configure, unchanged.
    let a = s.write_file(
        "a.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\ndata:\n  a: one\n  b: two\n",
    );
    assert_eq!(
        s.kubectl_ok(&["apply", "-f", a.to_str().unwrap()]).trim(),
        "configmap/ap created"
    );
    let a2 = s.write_file(
        "a2.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\ndata:\n  a: uno\n",
    );
    assert_eq!(
        s.kubectl_ok(&["apply", "-f", a2.to_str().unwrap()]).trim(),
        "configmap/ap configured"
    );
    let data = s.kubectl_ok(&["get", "cm", "ap", "-o", "jsonpath={.data}"]);
    assert_eq!(
        serde_json::from_str::<Value>(&data).unwrap(),
        json!({"a": "uno"}),
        "client-side apply removes b (strategic merge patch from the last-applied annotation)"
    );
    assert_eq!(
        s.kubectl_ok(&["apply", "-f", a2.to_str().unwrap()]).trim(),
        "configmap/ap unchanged"
    );
}

// ---------------------------------------------------------------------------------------
// Watch
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_get_watch_sees_changes() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "configmap", "before"]);
    let mut watch = Background::spawn(kubectl_command(
        &s,
        &["get", "cm", "-w", "--output-watch-events"],
    ));
    watch.wait_for("the initial list", Duration::from_secs(10), |l| {
        l.contains("ADDED") && l.contains("before")
    });
    s.kubectl_ok(&["create", "configmap", "watched", "--from-literal=a=b"]);
    watch.wait_for("ADDED watched", Duration::from_secs(10), |l| {
        l.split_whitespace().take(2).collect::<Vec<_>>() == ["ADDED", "watched"]
    });
    s.kubectl_ok(&["label", "cm", "watched", "x=y"]);
    watch.wait_for("MODIFIED watched", Duration::from_secs(10), |l| {
        l.split_whitespace().take(2).collect::<Vec<_>>() == ["MODIFIED", "watched"]
    });
    s.kubectl_ok(&["delete", "cm", "watched"]);
    watch.wait_for("DELETED watched", Duration::from_secs(10), |l| {
        l.split_whitespace().take(2).collect::<Vec<_>>() == ["DELETED", "watched"]
    });

    // Plain -w prints the new object's row.
    let mut plain = Background::spawn(kubectl_command(&s, &["get", "wd", "-w"]));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let w = s.write_file(
        "w.yaml",
        "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: seen\nspec:\n  color: blue\n",
    );
    s.kubectl_ok(&["create", "-f", w.to_str().unwrap()]);
    plain.wait_for("the widget row", Duration::from_secs(10), |l| {
        l.split_whitespace().take(2).collect::<Vec<_>>() == ["seen", "blue"]
    });
}

fn watch_events(text: &str) -> Vec<(String, String, u64)> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let ev: Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("watch line is not JSON ({e}): {l}"));
            let obj = &ev["object"];
            (
                ev["type"].as_str().unwrap_or_default().to_string(),
                obj["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                obj["metadata"]["resourceVersion"]
                    .as_str()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_from_a_resource_version_sees_added_modified_deleted_in_order() {
    let s = TestServer::start();
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let start = cms.list(&ListParams::default()).await.unwrap();
    let from = start.metadata.resource_version.clone().unwrap();

    // A live watch, started before the changes.
    let live = {
        let c = c.clone();
        let path = format!("{CONFIGMAPS}?watch=true&resourceVersion={from}&timeoutSeconds=3");
        tokio::spawn(async move { raw_request(&c, "GET", &path, None, "").await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    cms.create(&PostParams::default(), &configmap("w", &[("v", "1")]))
        .await
        .unwrap();
    cms.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();
    cms.delete("w", &DeleteParams::default()).await.unwrap();
    // Another namespace's object must not show up in a namespaced watch.
    s.kubectl_ok(&["create", "namespace", "elsewhere"]);
    s.kubectl_ok(&["create", "configmap", "w2", "-n", "elsewhere"]);

    let live = tokio::time::timeout(Duration::from_secs(10), live)
        .await
        .expect("a watch with timeoutSeconds=3 must end by itself")
        .unwrap();
    assert_eq!(live.status, 200, "{}", live.text);
    let events = watch_events(&live.text);
    let kinds: Vec<(&str, &str)> = events
        .iter()
        .map(|(t, n, _)| (t.as_str(), n.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")],
        "live watch:\n{}",
        live.text
    );
    let rvs: Vec<u64> = events.iter().map(|e| e.2).collect();
    assert!(rvs.windows(2).all(|w| w[0] < w[1]), "{rvs:?}");

    // Re-watching from the same resourceVersion replays the same events (what
    // kube-runtime does after a dropped connection).
    let replay = raw_request(
        &c,
        "GET",
        &format!("{CONFIGMAPS}?watch=true&resourceVersion={from}&timeoutSeconds=1"),
        None,
        "",
    )
    .await;
    assert_eq!(
        watch_events(&replay.text),
        events,
        "replay:\n{}",
        replay.text
    );

    // A watch from the last event's revision sees nothing more.
    let last = rvs.last().unwrap();
    let after = raw_request(
        &c,
        "GET",
        &format!("{CONFIGMAPS}?watch=true&resourceVersion={last}&timeoutSeconds=1"),
        None,
        "",
    )
    .await;
    assert!(watch_events(&after.text).is_empty(), "{}", after.text);

    // A label-selected watch sees only matching objects.
    let selected = {
        let c = c.clone();
        let path = format!(
            "{CONFIGMAPS}?watch=true&labelSelector=app%3Dyes&resourceVersion={last}&timeoutSeconds=2"
        );
        tokio::spawn(async move { raw_request(&c, "GET", &path, None, "").await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    cms.create(&PostParams::default(), &labelled("yes", &[("app", "yes")]))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &labelled("no", &[("app", "no")]))
        .await
        .unwrap();
    let selected = selected.await.unwrap();
    let names: Vec<String> = watch_events(&selected.text)
        .into_iter()
        .map(|e| e.1)
        .collect();
    assert_eq!(names, ["yes"], "{}", selected.text);
}
