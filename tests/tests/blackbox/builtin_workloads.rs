//! The whole built-in API as a user meets it (issue 16): `kubectl api-resources` against
//! upstream's own API description, the typed kubectl commands that create pods and
//! workloads (protobuf bodies), their Table columns, `kubectl explain`, a multi-document
//! `kubectl apply`, and a kube-rs program on k8s-openapi's Pod, Deployment and Service.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use apiserver_tests::{shared_dir, TestServer};
use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent};
use kube::ResourceExt;
use serde_json::{json, Value};

/// kube-apiserver v1.36.2's API description (`../shared/upstream-api`, or
/// `UPSTREAM_API_DIR`); a missing copy fails the test, naming where it looked.
fn upstream_api() -> PathBuf {
    let dir = match std::env::var("UPSTREAM_API_DIR") {
        Ok(d) => PathBuf::from(d),
        Err(_) => shared_dir("upstream-api"),
    };
    assert!(
        dir.join("openapi/v3").is_dir(),
        "upstream's API description is not at {}",
        dir.display()
    );
    dir
}

/// The GA group-versions kubectl shows (the preferred version of each group).
const GA: &[&str] = &[
    "api/v1",
    "apis/apps/v1",
    "apis/batch/v1",
    "apis/autoscaling/v2",
    "apis/policy/v1",
    "apis/networking.k8s.io/v1",
    "apis/discovery.k8s.io/v1",
    "apis/events.k8s.io/v1",
    "apis/coordination.k8s.io/v1",
    "apis/rbac.authorization.k8s.io/v1",
    "apis/storage.k8s.io/v1",
    "apis/scheduling.k8s.io/v1",
    "apis/node.k8s.io/v1",
    "apis/certificates.k8s.io/v1",
    "apis/flowcontrol.apiserver.k8s.io/v1",
    "apis/admissionregistration.k8s.io/v1",
    "apis/authentication.k8s.io/v1",
    "apis/authorization.k8s.io/v1",
    "apis/apiextensions.k8s.io/v1",
    "apis/apiregistration.k8s.io/v1",
    "apis/resource.k8s.io/v1",
];

/// (apiVersion, resource) → (namespaced, verbs), from upstream's OpenAPI v3 paths.
fn upstream_resources() -> BTreeMap<(String, String), (bool, BTreeSet<String>)> {
    let dir = upstream_api();
    let mut out: BTreeMap<(String, String), (bool, BTreeSet<String>)> = BTreeMap::new();
    for gv in GA {
        let file = dir.join(format!("openapi/v3/{}_openapi.json", gv.replace('/', "__")));
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let api_version = gv.trim_start_matches("api/").trim_start_matches("apis/");
        let prefix = format!("/{gv}/");
        for (path, item) in doc["paths"].as_object().unwrap() {
            let Some(rest) = path.strip_prefix(&prefix) else {
                continue;
            };
            let mut segs: Vec<&str> = rest.split('/').collect();
            if segs.first() == Some(&"watch") {
                segs.remove(0);
            }
            let namespaced = segs.len() > 2 && segs[0] == "namespaces" && segs[1] == "{namespace}";
            if namespaced {
                segs.drain(..2);
            }
            if segs.first().is_none_or(|s| s.is_empty()) || segs.len() > 2 {
                continue; // the group root, or a subresource
            }
            let entry = out
                .entry((api_version.to_string(), segs[0].to_string()))
                .or_default();
            entry.0 |= namespaced;
            for op in item.as_object().unwrap().values() {
                let verb = match op["x-kubernetes-action"].as_str() {
                    Some("post") => "create",
                    Some("put") => "update",
                    Some("watchlist") => "watch",
                    Some(v) => v,
                    None => continue,
                };
                entry.1.insert(verb.to_string());
            }
        }
    }
    out
}

/// `kubectl api-resources -o wide` as rows of cells, cut at the header's columns (the
/// SHORTNAMES and CATEGORIES cells may be empty).
fn api_resources(s: &TestServer) -> Vec<BTreeMap<String, String>> {
    let out = s.kubectl_ok(&["api-resources", "-o", "wide"]);
    let mut lines = out.lines();
    let header = lines.next().expect("a header");
    let starts: Vec<(usize, &str)> = header
        .split_whitespace()
        .map(|name| (header.find(name).unwrap(), name))
        .collect();
    lines
        .map(|line| {
            starts
                .iter()
                .enumerate()
                .map(|(i, (start, name))| {
                    let end = starts
                        .get(i + 1)
                        .map_or(line.len(), |(e, _)| *e)
                        .min(line.len());
                    let cell = line.get(*start..end).unwrap_or_default().trim();
                    (name.to_string(), cell.to_string())
                })
                .collect()
        })
        .collect()
}

#[test]
fn kubectl_api_resources_lists_upstreams_ga_resources() {
    let s = TestServer::start();
    let mut served: BTreeMap<(String, String), (bool, BTreeSet<String>, String)> = BTreeMap::new();
    for row in api_resources(&s) {
        let verbs = row["VERBS"]
            .trim_matches(['[', ']'])
            .split([',', ' '])
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .collect();
        served.insert(
            (row["APIVERSION"].clone(), row["NAME"].clone()),
            (
                row["NAMESPACED"] == "true",
                verbs,
                row["SHORTNAMES"].clone(),
            ),
        );
    }
    let upstream = upstream_resources();
    assert!(
        upstream.len() > 60,
        "upstream's description lists {} resources",
        upstream.len()
    );
    for (key, (namespaced, verbs)) in &upstream {
        let Some((n, v, _)) = served.get(key) else {
            panic!("kubectl api-resources does not list {key:?}");
        };
        assert_eq!((n, v), (namespaced, verbs), "{key:?}");
    }
    // Short names as kube-apiserver's discovery gives them, for the core group (its
    // recorded answer) and the others a user types most.
    for (api_version, resource, short) in [
        ("v1", "pods", "po"),
        ("v1", "services", "svc"),
        ("v1", "componentstatuses", "cs"),
        ("v1", "persistentvolumeclaims", "pvc"),
        ("v1", "resourcequotas", "quota"),
        ("v1", "limitranges", "limits"),
        ("v1", "replicationcontrollers", "rc"),
        ("apps/v1", "deployments", "deploy"),
        ("apps/v1", "statefulsets", "sts"),
        ("batch/v1", "cronjobs", "cj"),
        ("autoscaling/v2", "horizontalpodautoscalers", "hpa"),
        ("networking.k8s.io/v1", "networkpolicies", "netpol"),
        ("storage.k8s.io/v1", "storageclasses", "sc"),
    ] {
        let key = (api_version.to_string(), resource.to_string());
        assert_eq!(served[&key].2, short, "{key:?}");
    }
    // Nothing served that upstream does not serve, but our example kinds.
    let extra: Vec<_> = served
        .keys()
        .filter(|k| !upstream.contains_key(*k) && !k.0.starts_with("example.dev/"))
        .collect();
    assert!(extra.is_empty(), "served but not upstream's: {extra:?}");
}

/// The whitespace-separated cells of the row whose first cell is `name`.
fn row(table: &str, name: &str) -> Vec<String> {
    table
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .find(|cells| cells.first().map(String::as_str) == Some(name))
        .unwrap_or_else(|| panic!("no row {name:?} in:\n{table}"))
}

#[test]
fn kubectl_runs_pods_and_creates_workloads() {
    let s = TestServer::start();
    // Typed commands: protobuf bodies with pod templates (Go-embedded messages inside).
    assert_eq!(
        s.kubectl_ok(&["run", "nginx", "--image=nginx", "--port=80"])
            .trim(),
        "pod/nginx created"
    );
    assert_eq!(
        s.kubectl_ok(&[
            "create",
            "deployment",
            "web",
            "--image=nginx:1.27",
            "--replicas=2"
        ])
        .trim(),
        "deployment.apps/web created"
    );
    assert_eq!(
        s.kubectl_ok(&["create", "job", "once", "--image=busybox"])
            .trim(),
        "job.batch/once created"
    );
    assert_eq!(
        s.kubectl_ok(&["scale", "deployment", "web", "--replicas=3"])
            .trim(),
        "deployment.apps/web scaled"
    );

    // Defaults a Pod gets from the server, as upstream's.
    let pod: Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "pod", "nginx", "-o", "json"])).unwrap();
    assert_eq!(pod["spec"]["restartPolicy"], "Always");
    assert_eq!(pod["spec"]["dnsPolicy"], "ClusterFirst");
    assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "Always");
    assert_eq!(pod["spec"]["containers"][0]["ports"][0]["protocol"], "TCP");
    assert_eq!(pod["status"]["phase"], "Pending");

    let deploy: Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "deploy", "web", "-o", "json"])).unwrap();
    assert_eq!(deploy["spec"]["replicas"], 3);
    assert_eq!(deploy["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(
        deploy["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "IfNotPresent"
    );
    assert_eq!(
        deploy["metadata"]["generation"], 2,
        "the scale changed the spec"
    );

    // Table columns, with and without -o wide.
    let pods = s.kubectl_ok(&["get", "pods"]);
    assert_eq!(
        pods.lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
        "{pods}"
    );
    assert_eq!(&row(&pods, "nginx")[..4], ["nginx", "0/1", "Pending", "0"]);
    let wide = s.kubectl_ok(&["get", "pods", "-o", "wide"]);
    assert_eq!(
        wide.lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED",
            "NODE",
            "READINESS",
            "GATES"
        ],
        "{wide}"
    );
    assert_eq!(
        &row(&wide, "nginx")[5..],
        ["<none>", "<none>", "<none>", "<none>"]
    );
    let deploys = s.kubectl_ok(&["get", "deployments", "-o", "wide"]);
    assert_eq!(
        row(&deploys, "web"),
        [
            "web",
            "0/3",
            "0",
            "0",
            &row(&deploys, "web")[4],
            "nginx",
            "nginx:1.27",
            "app=web"
        ],
        "{deploys}"
    );

    // kubectl explain reads the OpenAPI v3 document of the group-version.
    let explain = s.kubectl_ok(&["explain", "pod.spec.containers"]);
    assert!(
        explain.contains("FIELD: containers <[]Container>")
            || explain.contains("FIELD: containers <[]Object>"),
        "{explain}"
    );
    for field in ["image", "livenessProbe", "volumeMounts"] {
        assert!(
            explain.contains(&format!("  {field}\t")),
            "{field}:\n{explain}"
        );
    }
}

#[test]
fn a_multi_document_apply_reads_back_equal() {
    let s = TestServer::start();
    let manifest = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: shop, labels: {app: shop}}
spec:
  replicas: 2
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      serviceAccountName: shop
      containers:
        - name: web
          image: nginx:1.27
          ports: [{containerPort: 80}]
          volumeMounts: [{name: conf, mountPath: /etc/shop}]
      volumes:
        - name: conf
          configMap: {name: shop}
---
apiVersion: v1
kind: Service
metadata: {name: shop}
spec:
  clusterIP: None
  selector: {app: shop}
  ports: [{port: 80, targetPort: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: shop}
data: {greeting: hello}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: shop}
"#;
    let path = s.write_file("shop.yaml", manifest);
    let out = s.kubectl_ok(&["apply", "-f", path.to_str().unwrap()]);
    for line in [
        "deployment.apps/shop created",
        "service/shop created",
        "configmap/shop created",
        "serviceaccount/shop created",
    ] {
        assert!(out.contains(line), "{line}:\n{out}");
    }
    let d: Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "deploy", "shop", "-o", "json"])).unwrap();
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["volumes"][0]["name"], "conf");
    assert_eq!(pod["volumes"][0]["configMap"]["name"], "shop");
    assert_eq!(
        pod["containers"][0]["volumeMounts"][0]["mountPath"],
        "/etc/shop"
    );
    assert_eq!(pod["serviceAccountName"], "shop");
    let svc: Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "svc", "shop", "-o", "json"])).unwrap();
    assert_eq!(svc["spec"]["clusterIP"], "None");
    assert_eq!(svc["spec"]["selector"], json!({"app": "shop"}));
    // Applying the same file again changes nothing.
    let again = s.kubectl_ok(&["apply", "-f", path.to_str().unwrap()]);
    for line in again.lines() {
        assert!(line.ends_with(" unchanged"), "{again}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn kube_rs_with_k8s_openapi_types_does_crud_and_watch() {
    let s = TestServer::start();
    let client = s.client().await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let services: Api<Service> = Api::default_namespaced(client);

    // A watch on pods from the start, to see the create, the patch and the delete.
    let mut events = pods
        .watch(&kube::api::WatchParams::default().timeout(30), "0")
        .await
        .expect("watch")
        .boxed();

    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p1", "labels": {"app": "p"}},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "1d"]}],
                 "volumes": [{"name": "scratch", "emptyDir": {}}]}
    }))
    .unwrap();
    let created = pods
        .create(&PostParams::default(), &pod)
        .await
        .expect("create pod");
    assert_eq!(
        created.spec.as_ref().unwrap().restart_policy.as_deref(),
        Some("Always")
    );
    assert!(created.spec.as_ref().unwrap().volumes.as_ref().unwrap()[0]
        .empty_dir
        .is_some());
    let patched = pods
        .patch(
            "p1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"tier": "db"}}})),
        )
        .await
        .expect("patch pod");
    assert_eq!(patched.labels()["tier"], "db");
    pods.delete("p1", &DeleteParams::default())
        .await
        .expect("delete pod");
    let mut seen = Vec::new();
    while seen.len() < 3 {
        match events.try_next().await.expect("watch event") {
            Some(WatchEvent::Added(p)) => seen.push(("ADDED", p.name_any())),
            Some(WatchEvent::Modified(p)) => seen.push(("MODIFIED", p.name_any())),
            Some(WatchEvent::Deleted(p)) => seen.push(("DELETED", p.name_any())),
            Some(WatchEvent::Bookmark(_)) => {}
            Some(WatchEvent::Error(e)) => panic!("watch error {e:?}"),
            None => panic!("the watch ended after {seen:?}"),
        }
    }
    assert_eq!(
        seen,
        [
            ("ADDED", "p1".to_string()),
            ("MODIFIED", "p1".to_string()),
            ("DELETED", "p1".to_string())
        ]
    );

    // A scheduler's binding: pods/<name>/binding assigns a node, once.
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": "p2"},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}
        }))
        .unwrap(),
    )
    .await
    .expect("create pod p2");
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p2"},
                         "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}});
    let status: Value = pods
        .create_subresource::<Value, Value>("binding", "p2", &PostParams::default(), &binding)
        .await
        .expect("bind p2");
    assert_eq!(status["status"], "Success");
    let bound = pods.get("p2").await.expect("get p2");
    assert_eq!(bound.spec.unwrap().node_name.as_deref(), Some("node-1"));
    let conditions = bound.status.unwrap().conditions.unwrap();
    assert!(conditions
        .iter()
        .any(|c| c.type_ == "PodScheduled" && c.status == "True"));
    let again = pods
        .create_subresource::<Value, Value>("binding", "p2", &PostParams::default(), &binding)
        .await
        .expect_err("a bound pod cannot be bound again");
    assert!(
        matches!(again, kube::Error::Api(ref e) if e.code == 409 && e.message.contains("already assigned to node \"node-1\"")),
        "{again:?}"
    );

    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "d1"},
        "spec": {"selector": {"matchLabels": {"app": "d1"}},
                 "template": {"metadata": {"labels": {"app": "d1"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}
    }))
    .unwrap();
    let d = deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("create deployment");
    assert_eq!(d.spec.as_ref().unwrap().replicas, Some(1));
    let listed = deployments
        .list(&ListParams::default())
        .await
        .expect("list");
    assert_eq!(
        listed
            .items
            .iter()
            .map(|d| d.name_any())
            .collect::<Vec<_>>(),
        ["d1"]
    );

    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "s1"},
        "spec": {"clusterIP": "None", "selector": {"app": "d1"}, "ports": [{"port": 80}]}
    }))
    .unwrap();
    let created = services
        .create(&PostParams::default(), &svc)
        .await
        .expect("create service");
    assert_eq!(
        created.spec.as_ref().unwrap().ports.as_ref().unwrap()[0].port,
        80
    );
    let got = services.get("s1").await.expect("get service");
    assert_eq!(got.spec.unwrap().selector.unwrap()["app"], "d1");
    services
        .delete("s1", &DeleteParams::default())
        .await
        .expect("delete service");
    deployments
        .delete("d1", &DeleteParams::default())
        .await
        .expect("delete deployment");
    let err = services.get("s1").await.expect_err("gone");
    assert!(
        matches!(err, kube::Error::Api(ref e) if e.code == 404),
        "{err:?}"
    );
}

/// `kubectl drain` cordons a node and evicts its pods through `pods/<name>/eviction`
/// (field-selecting them by `spec.nodeName`); pods elsewhere stay. An eviction of a
/// running pod respects its PodDisruptionBudget: refused with 429 while the budget's
/// status does not allow it, allowed (and the disruption recorded) once it does.
#[tokio::test(flavor = "multi_thread")]
async fn kubectl_drain_evicts_a_nodes_pods_and_evictions_respect_disruption_budgets() {
    let s = TestServer::start();
    let objects = s.write_file(
        "node.yaml",
        "apiVersion: v1\nkind: Node\nmetadata: {name: node1}\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata: {name: p1}\nspec: {nodeName: node1, containers: [{name: c, image: nginx}]}\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata: {name: p2}\nspec: {nodeName: node1, containers: [{name: c, image: nginx}]}\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata: {name: elsewhere}\nspec: {nodeName: node2, containers: [{name: c, image: nginx}]}\n",
    );
    s.kubectl_ok(&["apply", "-f", objects.to_str().unwrap()]);
    let on_node1 = s.kubectl_ok(&[
        "get",
        "pods",
        "--field-selector=spec.nodeName=node1",
        "-o",
        "name",
    ]);
    assert_eq!(on_node1.trim(), "pod/p1\npod/p2");
    let drained = s.kubectl_ok(&[
        "drain",
        "node1",
        "--force",
        "--ignore-daemonsets",
        // Pods on a node are deleted gracefully; no kubelet ends them sooner.
        "--grace-period=1",
        "--timeout=30s",
    ]);
    assert!(drained.contains("pod/p1 evicted"), "{drained}");
    assert!(drained.contains("pod/p2 evicted"), "{drained}");
    assert!(drained.contains("node/node1 drained"), "{drained}");
    assert_eq!(
        s.kubectl_ok(&["get", "pods", "-o", "name"]).trim(),
        "pod/elsewhere"
    );
    assert_eq!(
        s.kubectl_ok(&[
            "get",
            "node",
            "node1",
            "-o",
            "jsonpath={.spec.unschedulable}"
        ]),
        "true"
    );

    // A running pod under a budget whose controller has not reported yet.
    let guarded = s.write_file(
        "guarded.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: guarded, labels: {app: guarded}}\nspec: {containers: [{name: c, image: nginx}]}\n---\n\
         apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: budget}\nspec: {minAvailable: 0, selector: {matchLabels: {app: guarded}}}\n",
    );
    s.kubectl_ok(&["apply", "-f", guarded.to_str().unwrap()]);
    s.kubectl_ok(&[
        "patch",
        "pod",
        "guarded",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Running"}}"#,
    ]);
    // 429s are what is asserted: a client that does not retry them.
    let client = apiserver_tests::client_without_retries(s.kubeconfig()).await;
    let evict = || async {
        apiserver_tests::raw_request(
            &client,
            "POST",
            "/api/v1/namespaces/default/pods/guarded/eviction",
            Some("application/json"),
            r#"{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"guarded"}}"#,
        )
        .await
    };
    let refused = evict().await;
    assert_eq!(refused.status, 429, "{}", refused.text);
    assert_eq!(refused.json["reason"], "TooManyRequests");
    assert_eq!(
        refused.json["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(
        refused.json["details"]["causes"][0],
        json!({"reason": "DisruptionBudget", "message": "The disruption budget budget is still being processed by the server."})
    );
    // Its controller says no disruption is allowed.
    let status = |allowed: u32| {
        format!(
            r#"{{"status":{{"observedGeneration":1,"disruptionsAllowed":{allowed},"currentHealthy":1,"desiredHealthy":1,"expectedPods":1}}}}"#
        )
    };
    s.kubectl_ok(&[
        "patch",
        "pdb",
        "budget",
        "--subresource=status",
        "--type=merge",
        "-p",
        &status(0),
    ]);
    let refused = evict().await;
    assert_eq!(refused.status, 429, "{}", refused.text);
    assert_eq!(
        refused.json["details"]["causes"][0]["message"],
        "The disruption budget budget needs 1 healthy pods and has 1 currently"
    );
    // One disruption allowed: the eviction spends it.
    s.kubectl_ok(&[
        "patch",
        "pdb",
        "budget",
        "--subresource=status",
        "--type=merge",
        "-p",
        &status(1),
    ]);
    let evicted = evict().await;
    assert_eq!(evicted.status, 201, "{}", evicted.text);
    assert_eq!(evicted.json["status"], "Success");
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    assert!(pods.get_opt("guarded").await.unwrap().is_none());
    let budget: Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "pdb", "budget", "-o", "json"])).unwrap();
    assert_eq!(budget["status"]["disruptionsAllowed"], 0);
    assert!(
        budget["status"]["disruptedPods"]["guarded"].is_string(),
        "{budget}"
    );
}
