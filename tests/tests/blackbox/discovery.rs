//! Discovery, OpenAPI and the API reference page, black-box: the real binary driven by
//! kubectl, the kube crate, the `openapi-spec-validator` Python package and headless
//! Chromium.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use apiserver_tests::{workspace_root, TestServer};
use http::header::{self, HeaderMap};
use serde_json::{json, Value};

/// The aggregated discovery media type (v2).
const AGGREGATED_V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
/// The aggregated discovery media type (v2beta1).
const AGGREGATED_V2BETA1: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
/// What kubectl v1.32 sends for `/api` and `/apis`.
const KUBECTL_DISCOVERY_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

/// The answer to one GET.
struct Reply {
    status: u16,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: header::HeaderName) -> &str {
        self.headers
            .get(&name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// GETs `path` through the kube client (server URL, TLS and token) with extra headers.
async fn get(client: &kube::Client, path: &str, headers: &[(header::HeaderName, &str)]) -> Reply {
    let mut builder = http::Request::builder().method("GET").uri(path);
    for (k, v) in headers {
        builder = builder.header(k, *v);
    }
    let request = builder
        .body(kube::client::Body::empty())
        .unwrap_or_else(|e| panic!("building GET {path}: {e}"));
    let response = client
        .send(request)
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"));
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect_bytes()
        .await
        .unwrap_or_else(|e| panic!("reading GET {path}: {e}"))
        .to_vec();
    Reply {
        status,
        headers,
        body,
    }
}

/// The checked-in generated OpenAPI documents, sorted.
fn generated_documents() -> Vec<PathBuf> {
    let dir = workspace_root().join("server/src/generated/openapi");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// `api/v1` for `.../api__v1.json`; `None` for the v2 document.
fn v3_path_of(file: &std::path::Path) -> Option<String> {
    let stem = file.file_stem()?.to_str()?;
    (stem.starts_with("api__") || stem.starts_with("apis__")).then(|| stem.replace("__", "/"))
}

#[test]
fn checked_in_openapi_documents_pass_the_validator() {
    let probe = Command::new(apiserver_tests::python_binary())
        .args(["-c", "import openapi_spec_validator"])
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running python3 (needed for openapi-spec-validator): {e}"));
    assert!(
        probe.status.success(),
        "the Python package openapi-spec-validator is missing; install it with \
         `python3 -m pip install openapi-spec-validator` (tests/run.sh does):\n{}",
        String::from_utf8_lossy(&probe.stderr)
    );
    let files = generated_documents();
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for expected in ["api__v1.json", "apis__example.dev__v1.json", "swagger.json"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing: {names:?}"
        );
    }
    let out = Command::new(apiserver_tests::python_binary())
        .args(["-m", "openapi_spec_validator"])
        .args(&files)
        .stdin(Stdio::null())
        .output()
        .expect("running openapi_spec_validator");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "openapi-spec-validator rejected a document:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in &files {
        assert!(
            stdout.contains(&format!("{}: OK", f.display())),
            "no OK for {}:\n{stdout}",
            f.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn served_openapi_equals_the_checked_in_documents() {
    let s = TestServer::start();
    let c = s.client().await;
    let files = generated_documents();

    let index = get(&c, "/openapi/v3", &[]).await;
    assert_eq!(index.status, 200);
    let index = index.json();
    let served: Vec<&String> = index["paths"].as_object().unwrap().keys().collect();
    let expected: Vec<String> = files.iter().filter_map(|f| v3_path_of(f)).collect();
    assert_eq!(served, expected.iter().collect::<Vec<_>>());

    for file in &files {
        let on_disk = std::fs::read(file).unwrap();
        let Some(path) = v3_path_of(file) else {
            continue;
        };
        let url = index["paths"][&path]["serverRelativeURL"]
            .as_str()
            .unwrap()
            .to_string();
        let hash = url
            .split_once("?hash=")
            .map(|(_, h)| h.to_string())
            .unwrap_or_else(|| panic!("no hash in {url}"));
        // With the current hash: the document, immutable.
        let doc = get(&c, &url, &[(header::ACCEPT, "application/json")]).await;
        assert_eq!(doc.status, 200, "{url}");
        assert!(doc.body == on_disk, "{url} differs from {}", file.display());
        assert_eq!(doc.header(header::ETAG), format!("\"{hash}\""));
        assert_eq!(doc.header(header::CACHE_CONTROL), "public, immutable");
        assert!(!doc.header(header::EXPIRES).is_empty());
        // Revalidation.
        let etag = doc.header(header::ETAG).to_string();
        let again = get(&c, &url, &[(header::IF_NONE_MATCH, &etag)]).await;
        assert_eq!(again.status, 304);
        assert!(again.body.is_empty());
        // Without a hash: the same document, not cached for long.
        let plain = get(&c, &format!("/openapi/v3/{path}"), &[]).await;
        assert_eq!(plain.status, 200);
        assert!(plain.body == on_disk);
        assert_eq!(plain.header(header::CACHE_CONTROL), "no-cache, private");
        // A stale hash is redirected to the current one.
        let stale = get(&c, &format!("/openapi/v3/{path}?hash=0123ABCD"), &[]).await;
        assert_eq!(stale.status, 301);
        assert_eq!(stale.header(header::LOCATION), url);
    }

    let v2 = get(&c, "/openapi/v2", &[(header::ACCEPT, "application/json")]).await;
    assert_eq!(v2.status, 200);
    let swagger =
        std::fs::read(workspace_root().join("server/src/generated/openapi/swagger.json")).unwrap();
    assert!(v2.body == swagger, "/openapi/v2 differs from swagger.json");
    assert_eq!(v2.json()["swagger"], "2.0");
    let etag = v2.header(header::ETAG).to_string();
    assert!(etag.len() > 100, "ETag {etag:?}");
    let again = get(&c, "/openapi/v2", &[(header::IF_NONE_MATCH, &etag)]).await;
    assert_eq!(again.status, 304);
    // kubectl's client-side validation asks for gnostic's protobuf form first.
    let proto = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
    let pb = get(&c, "/openapi/v2", &[(header::ACCEPT, proto)]).await;
    assert_eq!(pb.status, 200);
    assert_eq!(
        pb.header(header::CONTENT_TYPE),
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
    assert!(
        pb.body.starts_with(&[0x0a, 3, b'2', b'.', b'0']),
        "Document.swagger comes first"
    );
    let missing = get(&c, "/openapi/v3/apis/nope.dev/v1", &[]).await;
    assert_eq!(missing.status, 404);
}

/// The entry for `resource` in an aggregated group document, in the first version
/// that serves it.
fn aggregated_resource<'a>(group: &'a Value, resource: &str) -> &'a Value {
    group["versions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|v| v["resources"].as_array().unwrap())
        .find(|r| r["resource"] == resource)
        .unwrap_or_else(|| panic!("no {resource} in {group}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn aggregated_discovery_with_etags() {
    let s = TestServer::start();
    let c = s.client().await;

    for path in ["/api", "/apis"] {
        let r = get(&c, path, &[(header::ACCEPT, KUBECTL_DISCOVERY_ACCEPT)]).await;
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header(header::CONTENT_TYPE), AGGREGATED_V2, "{path}");
        let doc = r.json();
        assert_eq!(doc["kind"], "APIGroupDiscoveryList");
        assert_eq!(doc["apiVersion"], "apidiscovery.k8s.io/v2");
        let etag = r.header(header::ETAG).to_string();
        assert!(
            etag.starts_with('"') && etag.len() > 2,
            "{path}: ETag {etag:?}"
        );
        let cached = get(
            &c,
            path,
            &[
                (header::ACCEPT, KUBECTL_DISCOVERY_ACCEPT),
                (header::IF_NONE_MATCH, &etag),
            ],
        )
        .await;
        assert_eq!(cached.status, 304, "{path}");
        assert!(cached.body.is_empty());
        let other = get(
            &c,
            path,
            &[
                (header::ACCEPT, AGGREGATED_V2),
                (header::IF_NONE_MATCH, "\"something-else\""),
            ],
        )
        .await;
        assert_eq!(other.status, 200);

        let beta = get(&c, path, &[(header::ACCEPT, AGGREGATED_V2BETA1)]).await;
        assert_eq!(beta.header(header::CONTENT_TYPE), AGGREGATED_V2BETA1);
        assert_eq!(beta.json()["apiVersion"], "apidiscovery.k8s.io/v2beta1");
    }

    let core = get(&c, "/api", &[(header::ACCEPT, AGGREGATED_V2)])
        .await
        .json();
    let items = core["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["metadata"], json!({}));
    assert_eq!(items[0]["versions"][0]["version"], "v1");
    assert_eq!(items[0]["versions"][0]["freshness"], "Current");
    let cm = aggregated_resource(&items[0], "configmaps");
    assert_eq!(
        *cm,
        json!({
            "resource": "configmaps",
            "responseKind": { "group": "", "version": "", "kind": "ConfigMap" },
            "scope": "Namespaced",
            "singularResource": "configmap",
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            "shortNames": ["cm"],
        })
    );
    let ns = aggregated_resource(&items[0], "namespaces");
    assert_eq!(ns["scope"], "Cluster");
    // Sorted by name, as upstream lists them: `finalize` (PUT alone), then `status`.
    assert_eq!(ns["subresources"][0]["subresource"], "finalize");
    assert_eq!(ns["subresources"][0]["verbs"], json!(["update"]));
    assert_eq!(
        ns["subresources"][0]["responseKind"],
        json!({ "group": "", "version": "", "kind": "Namespace" })
    );
    assert_eq!(ns["subresources"][1]["subresource"], "status");
    assert_eq!(
        ns["subresources"][1]["verbs"],
        json!(["get", "patch", "update"])
    );

    let groups = get(&c, "/apis", &[(header::ACCEPT, AGGREGATED_V2)])
        .await
        .json();
    let example = groups["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "example.dev")
        .expect("example.dev in /apis");
    let widgets = aggregated_resource(example, "widgets");
    assert_eq!(widgets["categories"], json!(["all", "examples"]));
    assert_eq!(
        widgets["subresources"],
        json!([
            { "subresource": "scale", "responseKind": { "group": "autoscaling", "version": "v1", "kind": "Scale" }, "verbs": ["get", "patch", "update"] },
            { "subresource": "status", "responseKind": { "group": "", "version": "", "kind": "Widget" }, "verbs": ["get", "patch", "update"] },
        ])
    );
    let gadgets = aggregated_resource(example, "gadgets");
    assert_eq!(gadgets["scope"], "Cluster");
    assert_eq!(gadgets["subresources"].as_array().unwrap().len(), 1);

    // Without the aggregated media type: the legacy documents, plain JSON.
    let versions = get(&c, "/api", &[(header::ACCEPT, "application/json")]).await;
    assert_eq!(versions.header(header::CONTENT_TYPE), "application/json");
    let versions = versions.json();
    assert_eq!(versions["kind"], "APIVersions");
    assert_eq!(versions["versions"], json!(["v1"]));
    let list = get(&c, "/apis", &[]).await.json();
    assert_eq!(list["kind"], "APIGroupList");
    let group = list["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "example.dev")
        .expect("example.dev in the APIGroupList");
    // Gear is served as v2 too, the group's highest version.
    assert_eq!(
        group["preferredVersion"],
        json!({ "groupVersion": "example.dev/v2", "version": "v2" })
    );
    let one = get(&c, "/apis/example.dev", &[]).await.json();
    assert_eq!(one["kind"], "APIGroup");
    assert_eq!(one["name"], "example.dev");

    // Anything but JSON is refused with a Status.
    let yaml = get(&c, "/api", &[(header::ACCEPT, "application/yaml")]).await;
    assert_eq!(yaml.status, 406);
    assert_eq!(yaml.json()["reason"], "NotAcceptable");
    let missing = get(&c, "/apis/nope.dev", &[]).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["kind"], "Status");
}

#[tokio::test(flavor = "multi_thread")]
async fn legacy_resource_lists_match_kube_apiserver() {
    let s = TestServer::start();
    let c = s.client().await;

    let core = get(&c, "/api/v1", &[]).await.json();
    assert_eq!(core["kind"], "APIResourceList");
    assert_eq!(core["groupVersion"], "v1");
    // kube-apiserver's core list has no apiVersion.
    assert!(core.get("apiVersion").is_none(), "{core}");
    let names: Vec<&str> = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    // kube-apiserver's core resources (recorded), less the subresources a kubelet serves.
    let recorded: Value = serde_json::from_str(&apiserver_tests::shared_file(
        "kube-apiserver-responses/06-api-v1-resources.json",
    ))
    .unwrap();
    let not_served = [
        "nodes/proxy",
        "pods/attach",
        "pods/exec",
        "pods/log",
        "pods/portforward",
        "pods/proxy",
        "services/proxy",
    ];
    let upstream: Vec<&str> = recorded["response"]["body"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .filter(|n| !not_served.contains(n))
        .collect();
    assert_eq!(names, upstream);
    // The hash kube-apiserver publishes for ConfigMap (recorded).
    let by_name = |n: &str| {
        core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == n)
            .cloned()
            .unwrap_or_else(|| panic!("no {n} in {core}"))
    };
    assert_eq!(
        by_name("configmaps"),
        json!({
            "name": "configmaps",
            "singularName": "configmap",
            "namespaced": true,
            "kind": "ConfigMap",
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            "shortNames": ["cm"],
            "storageVersionHash": "qFsyl6wFWjQ=",
        })
    );
    // Each recorded entry of these as kube-apiserver lists it.
    for name in [
        "namespaces/status",
        "namespaces/finalize",
        "pods/ephemeralcontainers",
        "pods/resize",
    ] {
        let recorded_entry = recorded["response"]["body"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} recorded"));
        assert_eq!(by_name(name), recorded_entry);
    }

    let example = get(&c, "/apis/example.dev/v1", &[]).await.json();
    assert_eq!(example["apiVersion"], "v1");
    assert_eq!(example["groupVersion"], "example.dev/v1");
    let resources = example["resources"].as_array().unwrap();
    let names: Vec<&str> = resources
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "gadgets",
            "gadgets/status",
            "gears",
            "gears/status",
            "widgets",
            "widgets/scale",
            "widgets/status"
        ]
    );
    assert_eq!(
        resources[5],
        json!({ "name": "widgets/scale", "singularName": "", "namespaced": true, "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"] })
    );
    assert_eq!(resources[4]["categories"], json!(["all", "examples"]));
    assert_eq!(resources[4]["shortNames"], json!(["wd"]));
    assert!(resources[4]["storageVersionHash"].as_str().unwrap().len() == 12);

    let missing = get(&c, "/apis/example.dev/v9", &[]).await;
    assert_eq!(missing.status, 404);
}

/// The whitespace-separated cells of the row whose first cell is `name`.
fn row<'a>(table: &'a str, name: &str) -> Vec<&'a str> {
    table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|cells| cells.first() == Some(&name))
        .unwrap_or_else(|| panic!("no row {name:?} in:\n{table}"))
}

/// The first cell of every row but the header.
fn first_column(table: &str) -> Vec<&str> {
    let mut v: Vec<&str> = table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    v.sort_unstable();
    v
}

#[test]
fn kubectl_api_resources_and_api_versions() {
    let s = TestServer::start();
    let wide = s.kubectl_ok(&["api-resources", "-o", "wide"]);
    let all_verbs = "create,delete,deletecollection,get,list,patch,update,watch";
    assert_eq!(
        row(&wide, "widgets"),
        [
            "widgets",
            "wd",
            "example.dev/v1",
            "true",
            "Widget",
            all_verbs,
            "all,examples"
        ],
        "{wide}"
    );
    assert_eq!(
        row(&wide, "configmaps"),
        ["configmaps", "cm", "v1", "true", "ConfigMap", all_verbs]
    );
    let group = s.kubectl_ok(&["api-resources", "--api-group=example.dev"]);
    assert_eq!(
        first_column(&group),
        ["gadgets", "gears", "widgets"],
        "{group}"
    );
    let cluster = s.kubectl_ok(&["api-resources", "--namespaced=false"]);
    assert_eq!(
        first_column(&cluster),
        [
            "apiservices",
            "certificatesigningrequests",
            "clusterrolebindings",
            "clusterroles",
            "componentstatuses",
            "csidrivers",
            "csinodes",
            "customresourcedefinitions",
            "deviceclasses",
            "flowschemas",
            "gadgets",
            "ingressclasses",
            "ipaddresses",
            "mutatingadmissionpolicies",
            "mutatingadmissionpolicybindings",
            "mutatingwebhookconfigurations",
            "namespaces",
            "nodes",
            "persistentvolumes",
            "priorityclasses",
            "prioritylevelconfigurations",
            "resourceslices",
            "runtimeclasses",
            "selfsubjectaccessreviews",
            "selfsubjectreviews",
            "selfsubjectrulesreviews",
            "servicecidrs",
            "storageclasses",
            "subjectaccessreviews",
            "tokenreviews",
            "validatingadmissionpolicies",
            "validatingadmissionpolicybindings",
            "validatingwebhookconfigurations",
            "volumeattachments",
            "volumeattributesclasses",
        ],
        "{cluster}"
    );
    let watchable = s.kubectl_ok(&["api-resources", "--verbs=watch", "-o", "name"]);
    // Stored kinds only: the reviews are create-only, componentstatuses get and list.
    assert_eq!(watchable.lines().count(), 62, "{watchable}");
    assert!(
        !watchable.lines().any(|l| l == "componentstatuses"),
        "{watchable}"
    );
    let versions = s.kubectl_ok(&["api-versions"]);
    assert_eq!(
        versions.lines().collect::<Vec<_>>(),
        [
            "admissionregistration.k8s.io/v1",
            "apiextensions.k8s.io/v1",
            "apiregistration.k8s.io/v1",
            "apps/v1",
            "authentication.k8s.io/v1",
            "authorization.k8s.io/v1",
            "autoscaling/v1",
            "autoscaling/v2",
            "batch/v1",
            "certificates.k8s.io/v1",
            "coordination.k8s.io/v1",
            "discovery.k8s.io/v1",
            "events.k8s.io/v1",
            "example.dev/v1",
            "example.dev/v2",
            "flowcontrol.apiserver.k8s.io/v1",
            "networking.k8s.io/v1",
            "node.k8s.io/v1",
            "policy/v1",
            "rbac.authorization.k8s.io/v1",
            "resource.k8s.io/v1",
            "scheduling.k8s.io/v1",
            "storage.k8s.io/v1",
            "v1"
        ]
    );
}

#[test]
fn kubectl_explain_reads_openapi_v3() {
    let s = TestServer::start();
    let cm = s.kubectl_ok(&["explain", "configmap"]);
    for want in [
        "KIND:       ConfigMap\nVERSION:    v1\n",
        "DESCRIPTION:\n    Named configuration values, as text (data) or bytes (binaryData).",
        "FIELDS:\n  apiVersion\t<string>\n",
        "  data\t<map[string]string>\n",
        "  immutable\t<boolean>\n",
        "  metadata\t<ObjectMeta>\n",
    ] {
        assert!(cm.contains(want), "missing {want:?} in:\n{cm}");
    }
    let widget = s.kubectl_ok(&["explain", "widget.spec", "--recursive"]);
    for want in [
        "GROUP:      example.dev\nKIND:       Widget\nVERSION:    v1\n",
        "FIELD: spec <Object>\n",
        "The desired state of the widget.",
        "  color\t<string> -required-\n  enum: red, green, blue\n",
        "  ports\t<[]Object>\n    name\t<string>\n    port\t<integer> -required-\n",
        "  replicas\t<integer>\n",
    ] {
        assert!(widget.contains(want), "missing {want:?} in:\n{widget}");
    }
    let gadget = s.kubectl_ok(&["explain", "gadgets.spec"]);
    for want in [
        "KIND:       Gadget\n",
        "  mode\t<string> -required-\n  enum: Manual, Automatic\n    How the gadget runs.\n",
        "  level\t<integer>\n    Power level, 0 to 11.\n",
    ] {
        assert!(gadget.contains(want), "missing {want:?} in:\n{gadget}");
    }
    let meta = s.kubectl_ok(&["explain", "cm.metadata.labels"]);
    assert!(meta.contains("FIELD: labels <map[string]string>"), "{meta}");
    let err = s.kubectl_err(&["explain", "configmap.nope"]);
    assert!(err.contains(r#"field "nope" does not exist"#), "{err}");
}

/// Headless Chromium, or a loud failure saying how to install it.
fn chromium() -> PathBuf {
    for name in ["chromium", "chromium-browser"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        if let Some(path) = found.filter(|p| !p.is_empty()) {
            return PathBuf::from(path);
        }
    }
    panic!("headless Chromium is needed for the /docs test; install it with `apt-get install -y chromium` (tests/run.sh does)");
}

/// Runs `cmd`, killing it after `limit`.
fn output_within(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {cmd:?}: {e}"));
    let deadline = Instant::now() + limit;
    // Drain stdout on a thread so a large DOM never blocks the child on a full pipe.
    let mut stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut buf);
        buf
    });
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            _ => {
                let _ = child.kill();
                break;
            }
        }
    }
    let mut out = child.wait_with_output().expect("waiting for the child");
    out.stdout = reader.join().unwrap_or_default();
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn docs_page_renders_the_kinds_in_headless_chromium() {
    let browser = chromium();
    // The browser sends no credentials, and anonymous users may not read the API's
    // documents under RBAC: this test is about rendering, so everyone may read.
    let s = TestServer::start_with_flags(&["--authorization-mode=AlwaysAllow"]);
    let c = s.client().await;
    let page = get(&c, "/docs", &[]).await;
    assert_eq!(page.status, 200);
    assert!(page.header(header::CONTENT_TYPE).starts_with("text/html"));

    let profile = tempfile::TempDir::with_prefix("apiserver-test-chromium-").unwrap();
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--ignore-certificate-errors",
        // Let the page's fetches finish before the DOM is dumped.
        "--virtual-time-budget=15000",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .arg("--dump-dom")
    .arg(format!("{}/docs#v1.ConfigMap", s.url()));
    let out = output_within(cmd, Duration::from_secs(90));
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        dom.contains(r#"data-anchor="v1.ConfigMap""#) && dom.contains("<h2>ConfigMap</h2>"),
        "ConfigMap is not in the rendered DOM ({}):\n{dom}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "kinds from 24 OpenAPI documents",
        r#"data-anchor="example.dev/v1.Widget""#,
        "Named configuration values, as text (data) or bytes (binaryData).",
        "/api/v1/namespaces/{namespace}/configmaps/{name}",
    ] {
        assert!(dom.contains(want), "missing {want:?} in the DOM:\n{dom}");
    }
}

/// `kind: List` files are validated on the client against the OpenAPI v2 document in its
/// protobuf form; without it kubectl refuses them ("failed to download openapi").
#[test]
fn kubectl_validates_list_files_with_the_v2_protobuf_document() {
    let s = TestServer::start();
    let list = json!({ "apiVersion": "v1", "kind": "List", "items": [
        { "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "l1" }, "data": { "a": "1" } },
        { "apiVersion": "example.dev/v1", "kind": "Widget", "metadata": { "name": "l2" }, "spec": { "color": "red" } },
    ] });
    let file = s.write_file("list.json", &list.to_string());
    let out = s.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
    assert!(
        out.contains("configmap/l1 created") && out.contains("widget.example.dev/l2 created"),
        "{out}"
    );
    // The usual round trip: get as a List, apply it back.
    let listed = s.kubectl_ok(&["get", "cm", "l1", "-o", "json"]);
    let again = s.kubectl_with_stdin(&["apply", "-f", "-"], Some(&listed));
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
}

/// A client generator accepts the OpenAPI v3 documents: datamodel-code-generator (PyPI)
/// turns each group-version document into Python models that import and validate an
/// object of a shipped kind.
#[test]
fn a_client_generator_accepts_the_openapi_v3_documents() {
    let probe = Command::new(apiserver_tests::python_binary())
        .args(["-c", "import datamodel_code_generator"])
        .output()
        .expect("python3");
    assert!(
        probe.status.success(),
        "datamodel-code-generator is missing: `python3 -m pip install datamodel-code-generator` (tests/run.sh installs it)"
    );
    let out_dir = tempfile::TempDir::with_prefix("openapi-client-").unwrap();
    for (doc, package, module, class, object) in [
        (
            "api__v1.json",
            "core_client",
            "io.k8s.api.core.v1",
            "ConfigMap",
            r#"{"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}}"#,
        ),
        (
            "apis__example.dev__v1.json",
            "example_client",
            "dev.example.v1",
            "Widget",
            r#"{"apiVersion": "example.dev/v1", "kind": "Widget", "spec": {"color": "red"}}"#,
        ),
    ] {
        let input = workspace_root()
            .join("server/src/generated/openapi")
            .join(doc);
        let target = out_dir.path().join(package);
        let generate = Command::new(apiserver_tests::python_binary())
            .args([
                "-m",
                "datamodel_code_generator",
                "--input-file-type",
                "openapi",
                "--input",
            ])
            .arg(&input)
            .arg("--output")
            .arg(&target)
            .output()
            .expect("running datamodel-code-generator");
        assert!(
            generate.status.success(),
            "generating a client from {doc} failed:\n{}",
            String::from_utf8_lossy(&generate.stderr)
        );
        let script = format!("import json, {package}.{module} as m\nobj = m.{class}.model_validate(json.loads('{object}'))\nprint(type(obj).__name__)");
        let run = Command::new(apiserver_tests::python_binary())
            .arg("-c")
            .arg(&script)
            .current_dir(out_dir.path())
            .output()
            .expect("python3");
        assert!(
            run.status.success(),
            "the generated client for {doc} does not work:\n{}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&run.stdout).trim(), class);
    }
}
