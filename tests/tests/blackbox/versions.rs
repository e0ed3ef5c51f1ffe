//! Compiled-in kinds served in several versions (issue 18 item 1): the example Gear
//! (`api-defs/examples/gear.yaml` v1, `gear-v2.yaml` v2, stored; v1's `size` is v2's
//! `diameter`, v2's `material` rides in an annotation of v1 objects) and
//! autoscaling/v1 HorizontalPodAutoscaler (stored as v2, converted by a hook), read,
//! written and watched in either version through kubectl and raw requests; and
//! `apiserver migrate-storage`, which rewrites objects stored in an older version in the
//! current storage version (the stored bytes read from the backend, either backend).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use apiserver_tests::objects::install_crd;
use apiserver_tests::{raw_request, server_binary, TestServer};
use serde_json::{json, Value};

const GEARS_V1: &str = "/apis/example.dev/v1/namespaces/default/gears";

fn get_json(s: &TestServer, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let out = s.kubectl_ok(&all);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// The first row of a `kubectl get` table, as cells, and its header.
fn table(s: &TestServer, args: &[&str]) -> (Vec<String>, Vec<String>) {
    let out = s.kubectl_ok(args);
    let mut lines = out
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>());
    let header = lines.next().unwrap_or_default();
    let row = lines.next().unwrap_or_default();
    (header, row)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gear_written_as_v1_is_read_written_and_watched_as_v1_and_v2() {
    let s = TestServer::start();
    let gear = s.write_file(
        "gear.yaml",
        "apiVersion: example.dev/v1\nkind: Gear\nmetadata:\n  name: g\nspec:\n  teeth: 12\n  size: 40\n",
    );
    s.kubectl_ok(&["create", "-f", gear.to_str().unwrap()]);

    // The same object in either version: v1 as written, v2 with v1's size as its
    // diameter and the material v1 objects get.
    let v1 = get_json(&s, &["get", "gears.v1.example.dev", "g"]);
    assert_eq!(v1["apiVersion"], "example.dev/v1");
    assert_eq!(v1["spec"], json!({"teeth": 12, "size": 40}));
    assert!(v1["metadata"].get("annotations").is_none(), "{v1}");
    let v2 = get_json(&s, &["get", "gears.v2.example.dev", "g"]);
    assert_eq!(v2["apiVersion"], "example.dev/v2");
    assert_eq!(
        v2["spec"],
        json!({"teeth": 12, "diameter": 40, "material": "steel"})
    );
    assert_eq!(v2["metadata"]["uid"], v1["metadata"]["uid"]);
    assert_eq!(
        v2["metadata"]["resourceVersion"],
        v1["metadata"]["resourceVersion"]
    );
    let raw: Value = serde_json::from_str(&s.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/example.dev/v2/namespaces/default/gears/g",
    ]))
    .unwrap();
    assert_eq!(raw["spec"]["diameter"], 40);

    // Tables carry each version's columns; the short name is the preferred version's.
    let (header, row) = table(&s, &["get", "ge", "g"]);
    assert_eq!(header, ["NAME", "TEETH", "DIAMETER", "MATERIAL", "AGE"]);
    assert_eq!(row[..4], ["g", "12", "40", "steel"]);
    let (header, row) = table(&s, &["get", "gears.v1.example.dev", "g"]);
    assert_eq!(header, ["NAME", "TEETH", "SIZE", "AGE"]);
    assert_eq!(row[..3], ["g", "12", "40"]);

    // A write through v2 leaves what the v1 writer owns, renamed fields included, to it:
    // its managedFields entry stays in v1's terms.
    s.kubectl_ok(&[
        "patch",
        "gears.v2.example.dev",
        "g",
        "--type=merge",
        "-p",
        r#"{"spec":{"material":"nylon"}}"#,
    ]);
    let v1 = get_json(
        &s,
        &["get", "gears.v1.example.dev", "g", "--show-managed-fields"],
    );
    let entries = v1["metadata"]["managedFields"].as_array().unwrap();
    let creator = entries
        .iter()
        .find(|e| e["manager"] == "kubectl-create")
        .unwrap_or_else(|| panic!("no kubectl-create entry: {v1}"));
    assert_eq!(creator["apiVersion"], "example.dev/v1");
    assert!(
        creator["fieldsV1"]["f:spec"].get("f:size").is_some(),
        "{creator}"
    );
    let patcher = entries
        .iter()
        .find(|e| e["manager"] == "kubectl-patch")
        .unwrap_or_else(|| panic!("no kubectl-patch entry: {v1}"));
    assert_eq!(patcher["apiVersion"], "example.dev/v2");
    assert!(
        patcher["fieldsV1"]["f:spec"].get("f:material").is_some(),
        "{patcher}"
    );

    // An update through v2 shows in v1; what v1 cannot hold is kept in an annotation.
    s.kubectl_ok(&[
        "patch",
        "gears.v2.example.dev",
        "g",
        "--type=merge",
        "-p",
        r#"{"spec":{"material":"brass","diameter":50}}"#,
    ]);
    let v1 = get_json(&s, &["get", "gears.v1.example.dev", "g"]);
    assert_eq!(v1["spec"], json!({"teeth": 12, "size": 50}));
    assert_eq!(
        v1["metadata"]["annotations"]["example.dev/v2-fields"],
        r#"{".spec.material":"brass"}"#
    );

    // A v1 client writing the whole object back loses nothing of v2's.
    let mut edited = v1.clone();
    edited["spec"]["size"] = json!(60);
    let file = s.write_file("edited.json", &edited.to_string());
    s.kubectl_ok(&["replace", "-f", file.to_str().unwrap()]);
    let v2 = get_json(&s, &["get", "gears.v2.example.dev", "g"]);
    assert_eq!(
        v2["spec"],
        json!({"teeth": 12, "diameter": 60, "material": "brass"})
    );
    assert!(v2["metadata"].get("annotations").is_none(), "{v2}");

    // A v1 watch sees a change made through v2 as a v1 object.
    let from = v2["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let c = s.client().await;
    let watch = {
        let c = c.clone();
        let path = format!("{GEARS_V1}?watch=true&resourceVersion={from}&timeoutSeconds=5");
        tokio::spawn(async move { raw_request(&c, "GET", &path, None, "").await })
    };
    s.kubectl_ok(&[
        "patch",
        "gears.v2.example.dev",
        "g",
        "--type=merge",
        "-p",
        r#"{"spec":{"teeth":20}}"#,
    ]);
    let answer = tokio::time::timeout(Duration::from_secs(30), watch)
        .await
        .expect("the watch ends at its timeout")
        .unwrap();
    let body = answer.text;
    assert_eq!(answer.status, 200, "{body}");
    let events: Vec<Value> = body
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 1, "{body}");
    assert_eq!(events[0]["type"], "MODIFIED");
    assert_eq!(events[0]["object"]["apiVersion"], "example.dev/v1");
    assert_eq!(
        events[0]["object"]["spec"],
        json!({"teeth": 20, "size": 60})
    );

    // Discovery: v2 preferred, one storage version hash in both versions' lists.
    let group: Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "--raw", "/apis/example.dev"])).unwrap();
    assert_eq!(group["preferredVersion"]["version"], "v2");
    let hash = |version: &str| {
        let list: Value = serde_json::from_str(&s.kubectl_ok(&[
            "get",
            "--raw",
            &format!("/apis/example.dev/{version}"),
        ]))
        .unwrap();
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "gears")
            .map(|r| r["storageVersionHash"].clone())
            .unwrap_or_else(|| panic!("no gears in {version}: {list}"))
    };
    assert!(hash("v1").is_string());
    assert_eq!(hash("v1"), hash("v2"));
}

#[test]
fn kubectl_autoscale_reads_back_as_autoscaling_v1_and_v2() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "deployment", "web", "--image=nginx"]);
    // kubectl autoscale writes autoscaling/v1.
    s.kubectl_ok(&[
        "autoscale",
        "deployment",
        "web",
        "--cpu-percent=50",
        "--min=1",
        "--max=3",
    ]);
    let v1 = get_json(
        &s,
        &["get", "horizontalpodautoscalers.v1.autoscaling", "web"],
    );
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 50);
    assert_eq!(v1["spec"]["minReplicas"], 1);
    assert_eq!(v1["spec"]["maxReplicas"], 3);
    assert_eq!(v1["spec"]["scaleTargetRef"]["name"], "web");
    let v2 = get_json(
        &s,
        &["get", "horizontalpodautoscalers.v2.autoscaling", "web"],
    );
    assert_eq!(v2["apiVersion"], "autoscaling/v2");
    assert_eq!(
        v2["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}])
    );

    // What v1 cannot say (a memory metric, behavior) is kept in upstream's annotations
    // and survives a v1 client's update.
    s.kubectl_ok(&[
        "patch",
        "horizontalpodautoscalers.v2.autoscaling",
        "web",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/spec/metrics/-","value":{"type":"Resource","resource":{"name":"memory","target":{"type":"AverageValue","averageValue":"100Mi"}}}},
            {"op":"add","path":"/spec/behavior","value":{"scaleDown":{"stabilizationWindowSeconds":30}}}]"#,
    ]);
    let v1 = get_json(
        &s,
        &["get", "horizontalpodautoscalers.v1.autoscaling", "web"],
    );
    let annotations = &v1["metadata"]["annotations"];
    let metrics: Value = serde_json::from_str(
        annotations["autoscaling.alpha.kubernetes.io/metrics"]
            .as_str()
            .unwrap_or_else(|| panic!("no metrics annotation: {v1}")),
    )
    .unwrap();
    assert_eq!(
        metrics,
        json!([{"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "100Mi"}}])
    );
    let mut edited = v1.clone();
    edited["spec"]["maxReplicas"] = json!(4);
    let file = s.write_file("hpa.json", &edited.to_string());
    s.kubectl_ok(&["replace", "-f", file.to_str().unwrap()]);
    let v2 = get_json(
        &s,
        &["get", "horizontalpodautoscalers.v2.autoscaling", "web"],
    );
    assert_eq!(v2["spec"]["maxReplicas"], 4);
    assert_eq!(
        v2["spec"]["metrics"].as_array().map(Vec::len),
        Some(2),
        "{v2}"
    );
    assert_eq!(
        v2["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"],
        30
    );
    assert!(v2["metadata"].get("annotations").is_none(), "{v2}");
    // `kubectl get hpa` lists it once, in the preferred version.
    let names = s.kubectl_ok(&["get", "hpa", "-o", "name"]);
    assert_eq!(names.trim(), "horizontalpodautoscaler.autoscaling/web");
}

/// `apiserver migrate-storage --resources <resource>` against `s`: its standard output,
/// which must report success.
fn migrate_storage(s: &TestServer, resource: &str) -> String {
    let out = std::process::Command::new(server_binary())
        .arg("migrate-storage")
        .arg("--kubeconfig")
        .arg(s.kubeconfig())
        .args(["--resources", resource])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "migrate-storage {resource}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The stored objects whose keys end in `/<suffix>/<name>`, by name, decoded.
fn stored_objects(s: &mut TestServer, suffix: &str) -> BTreeMap<String, Value> {
    crate::stored::raw(s, "/registry/")
        .into_iter()
        .filter_map(|(key, value)| {
            let (dir, name) = key.rsplit_once('/')?;
            dir.ends_with(suffix).then(|| {
                let obj = serde_json::from_slice(&value)
                    .unwrap_or_else(|e| panic!("{key} is not JSON ({e})"));
                (name.to_string(), obj)
            })
        })
        .collect()
}

fn resource_version(obj: &Value) -> &str {
    obj["metadata"]["resourceVersion"].as_str().unwrap()
}

#[test]
fn migrate_storage_rewrites_gears_stored_as_v1_in_v2_and_leaves_the_others() {
    let mut s = TestServer::start();
    for (name, size) in [("old", 40), ("new", 50)] {
        let file = s.write_file(
            &format!("{name}.yaml"),
            &format!("apiVersion: example.dev/v1\nkind: Gear\nmetadata:\n  name: {name}\nspec:\n  teeth: 12\n  size: {size}\n"),
        );
        s.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
    }
    // Stored in v2 today; `old` is made what a server whose storage version was v1 left:
    // v1's apiVersion and field names.
    let stored = stored_objects(&mut s, "/gears/default");
    assert_eq!(stored.len(), 2, "{stored:?}");
    let mut old = stored["old"].clone();
    assert_eq!(old["apiVersion"], "example.dev/v2");
    assert_eq!(
        old["spec"],
        json!({"teeth": 12, "diameter": 40, "material": "steel"})
    );
    let key = crate::stored::raw(&mut s, "/registry/")
        .into_keys()
        .find(|k| k.ends_with("/gears/default/old"))
        .unwrap();
    old["apiVersion"] = json!("example.dev/v1");
    old["spec"] = json!({"teeth": 12, "size": 40});
    crate::stored::overwrite(&mut s, &key, &serde_json::to_vec(&old).unwrap());

    // Clients read it as before in both versions.
    let v1_before = get_json(&s, &["get", "gears.v1.example.dev", "old"]);
    assert_eq!(v1_before["spec"], json!({"teeth": 12, "size": 40}));
    let v2_before = get_json(&s, &["get", "gears.v2.example.dev", "old"]);
    assert_eq!(
        v2_before["spec"],
        json!({"teeth": 12, "diameter": 40, "material": "steel"})
    );
    let new_before = get_json(&s, &["get", "gears.v2.example.dev", "new"]);

    assert_eq!(
        migrate_storage(&s, "gears.example.dev"),
        "gears.example.dev: 2 objects, 1 rewritten\n"
    );
    let after = stored_objects(&mut s, "/gears/default");
    assert_eq!(after["old"]["apiVersion"], "example.dev/v2");
    assert_eq!(
        after["old"]["spec"],
        json!({"teeth": 12, "diameter": 40, "material": "steel"})
    );
    assert_eq!(
        after["new"], stored["new"],
        "an object already in v2 is not written"
    );

    // Unchanged for clients, but for the rewritten object's resourceVersion.
    let v1_after = get_json(&s, &["get", "gears.v1.example.dev", "old"]);
    let v2_after = get_json(&s, &["get", "gears.v2.example.dev", "old"]);
    assert_eq!(v1_after["spec"], v1_before["spec"]);
    assert_eq!(v2_after["spec"], v2_before["spec"]);
    assert_eq!(v2_after["metadata"]["uid"], v2_before["metadata"]["uid"]);
    assert_ne!(resource_version(&v2_after), resource_version(&v2_before));
    let new_after = get_json(&s, &["get", "gears.v2.example.dev", "new"]);
    assert_eq!(resource_version(&new_after), resource_version(&new_before));

    // Nothing is left to migrate.
    assert_eq!(
        migrate_storage(&s, "gears.example.dev"),
        "gears.example.dev: 2 objects, 0 rewritten\n"
    );
    let again = get_json(&s, &["get", "gears.v2.example.dev", "old"]);
    assert_eq!(resource_version(&again), resource_version(&v2_after));
}

/// A CRD served as v1 and v2 with the same schema; `STORAGE` is the stored one.
const SPROCKETS: &str = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: sprockets.migrate.example.com
spec:
  group: migrate.example.com
  scope: Namespaced
  names: {plural: sprockets, singular: sprocket, kind: Sprocket}
  versions:
    - name: v1
      served: true
      storage: V1_STORED
      schema: &schema
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, properties: {teeth: {type: integer}}}
    - name: v2
      served: true
      storage: V2_STORED
      schema: *schema
";

fn sprockets_crd(storage: &str) -> String {
    SPROCKETS
        .replace("V1_STORED", &(storage == "v1").to_string())
        .replace("V2_STORED", &(storage == "v2").to_string())
}

#[test]
fn migrate_storage_rewrites_a_crds_objects_after_its_storage_version_moved() {
    let mut s = TestServer::start();
    let crd = s.write_file("sprockets.yaml", &sprockets_crd("v1"));
    install_crd(&s, &crd, "sprockets.migrate.example.com");
    let sprocket = |name: &str, teeth: u32| {
        let file = s.write_file(
            &format!("{name}.yaml"),
            &format!("apiVersion: migrate.example.com/v1\nkind: Sprocket\nmetadata:\n  name: {name}\nspec:\n  teeth: {teeth}\n"),
        );
        s.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
    };
    sprocket("a", 10);
    sprocket("b", 20);

    // Storage moves to v2: objects written from now on are stored in v2.
    let moved = s.write_file("sprockets-v2.yaml", &sprockets_crd("v2"));
    s.kubectl_ok(&["apply", "-f", moved.to_str().unwrap()]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.kubectl_ok(&[
        "get",
        "crd",
        "sprockets.migrate.example.com",
        "-o",
        "jsonpath={.status.storedVersions}",
    ]) != r#"["v1","v2"]"# {
        assert!(
            Instant::now() < deadline,
            "storedVersions v1 and v2 within 10 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    sprocket("c", 30);
    let stored = stored_objects(&mut s, "/sprockets/default");
    let versions = |objs: &BTreeMap<String, Value>| -> Vec<String> {
        objs.values()
            .map(|o| o["apiVersion"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        versions(&stored),
        [
            "migrate.example.com/v1",
            "migrate.example.com/v1",
            "migrate.example.com/v2"
        ]
    );
    let read = |s: &TestServer, version: &str, name: &str| {
        get_json(
            s,
            &[
                "get",
                &format!("sprockets.{version}.migrate.example.com"),
                name,
            ],
        )
    };
    let before: Vec<Value> = ["a", "b", "c"].iter().map(|n| read(&s, "v1", n)).collect();

    assert_eq!(
        migrate_storage(&s, "sprockets.migrate.example.com"),
        "sprockets.migrate.example.com: 3 objects, 2 rewritten\n"
    );
    let after = stored_objects(&mut s, "/sprockets/default");
    assert_eq!(versions(&after), ["migrate.example.com/v2"; 3]);
    assert_eq!(
        after["c"], stored["c"],
        "an object already in v2 is not written"
    );
    for (name, was) in ["a", "b", "c"].into_iter().zip(&before) {
        for version in ["v1", "v2"] {
            let now = read(&s, version, name);
            assert_eq!(now["spec"], was["spec"], "{name} in {version}");
            assert_eq!(
                resource_version(&now) == resource_version(was),
                name == "c",
                "{name}: only objects stored in v1 are rewritten"
            );
        }
    }
    assert_eq!(
        migrate_storage(&s, "sprockets.migrate.example.com"),
        "sprockets.migrate.example.com: 3 objects, 0 rewritten\n"
    );
}

#[test]
fn migrate_storage_names_a_resource_the_server_does_not_have() {
    let s = TestServer::start();
    let out = std::process::Command::new(server_binary())
        .args(["migrate-storage", "--kubeconfig"])
        .arg(s.kubeconfig())
        .args(["--resources", "cogs.example.dev"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: cogs.example.dev: the server doesn't have a resource type \"cogs\" in example.dev/v2\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_preserving_annotation_is_a_422_naming_it() {
    let s = TestServer::start();
    let c = s.client().await;
    let create = |name: &str, annotation: &str| {
        let body = json!({
            "apiVersion": "example.dev/v1",
            "kind": "Gear",
            "metadata": { "name": name, "annotations": { "example.dev/v2-fields": annotation } },
            "spec": { "teeth": 12, "size": 40 },
        });
        let c = c.clone();
        async move {
            raw_request(
                &c,
                "POST",
                GEARS_V1,
                Some("application/json"),
                body.to_string(),
            )
            .await
        }
    };
    let field = "metadata.annotations[example.dev/v2-fields]";
    for (name, annotation, detail) in [
        (
            "not-json",
            "steel please",
            "Invalid value: \"steel please\": must be a JSON object of the example.dev/v2 fields this version cannot hold, by path (.spec.material)",
        ),
        (
            "unknown-path",
            r#"{".spec.colour":"red"}"#,
            ".spec.colour is not a field this version preserves (.spec.material)",
        ),
        (
            "bad-value",
            r#"{".spec.material":"gold"}"#,
            ".spec.material: Unsupported value: \"gold\": supported values: \"steel\", \"brass\", \"nylon\"",
        ),
    ] {
        let refused = create(name, annotation).await;
        assert_eq!(refused.status, 422, "{name}: {}", refused.text);
        assert_eq!(refused.json["reason"], "Invalid");
        let cause = &refused.json["details"]["causes"][0];
        assert_eq!(cause["field"], field, "{name}: {}", refused.text);
        assert!(
            cause["message"].as_str().unwrap().ends_with(detail),
            "{name}: {}",
            refused.text
        );
        let missing = raw_request(&c, "GET", &format!("{GEARS_V1}/{name}"), None, "").await;
        assert_eq!(missing.status, 404, "{name} was not stored");
    }
    // A well-formed one is restored into v2's field, and kubectl shows the refusal.
    let made = create("brass", r#"{".spec.material":"brass"}"#).await;
    assert_eq!(made.status, 201, "{}", made.text);
    let v2 = get_json(&s, &["get", "gears.v2.example.dev", "brass"]);
    assert_eq!(v2["spec"]["material"], "brass");
    let file = s.write_file(
        "bad.yaml",
        "apiVersion: example.dev/v1\nkind: Gear\nmetadata:\n  name: bad\n  annotations:\n    example.dev/v2-fields: nope\nspec:\n  teeth: 12\n",
    );
    let err = s.kubectl_err(&["create", "-f", file.to_str().unwrap()]);
    assert!(
        err.contains("metadata.annotations[example.dev/v2-fields]: Invalid value: \"nope\""),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_get_hpa_prints_upstreams_columns_in_both_versions() {
    use apiserver_tests::tables::{header, row};
    let s = TestServer::start();
    s.kubectl_ok(&["create", "deployment", "web", "--image=nginx"]);
    s.kubectl_ok(&[
        "autoscale",
        "deployment",
        "web",
        "--cpu-percent=50",
        "--min=1",
        "--max=3",
    ]);
    for resource in [
        "hpa",
        "horizontalpodautoscalers.v1.autoscaling",
        "horizontalpodautoscalers.v2.autoscaling",
    ] {
        let table = s.kubectl_ok(&["get", resource]);
        assert_eq!(
            header(&table),
            [
                "NAME",
                "REFERENCE",
                "TARGETS",
                "MINPODS",
                "MAXPODS",
                "REPLICAS",
                "AGE"
            ],
            "{resource}"
        );
        // TARGETS is "cpu: <unknown>/50%" (two cells once split at spaces).
        assert_eq!(
            row(&table, "web")[..7],
            [
                "web",
                "Deployment/web",
                "cpu:",
                "<unknown>/50%",
                "1",
                "3",
                "0"
            ],
            "{resource}: {table}"
        );
    }

    // Observed values, and more metrics than TARGETS lists, as Table cells.
    s.kubectl_ok(&[
        "patch",
        "horizontalpodautoscalers.v2.autoscaling",
        "web",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/spec/metrics/-","value":{"type":"Resource","resource":{"name":"memory","target":{"type":"AverageValue","averageValue":"100Mi"}}}},
            {"op":"add","path":"/spec/metrics/-","value":{"type":"Pods","pods":{"metric":{"name":"qps"},"target":{"type":"AverageValue","averageValue":"10"}}}},
            {"op":"remove","path":"/spec/minReplicas"}]"#,
    ]);
    s.kubectl_ok(&[
        "patch",
        "horizontalpodautoscalers.v2.autoscaling",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"currentReplicas":2,"desiredReplicas":2,"currentMetrics":[{"type":"Resource","resource":{"name":"cpu","current":{"averageUtilization":30}}}]}}"#,
    ]);
    let c = s.client().await;
    let cells = |version: &'static str| {
        let c = c.clone();
        async move {
            let path = format!(
                "/apis/autoscaling/{version}/namespaces/default/horizontalpodautoscalers/web"
            );
            let request = http::Request::get(&path)
                .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
                .body(kube::client::Body::from(Vec::new()))
                .unwrap();
            let answer = c.send(request).await.unwrap();
            assert_eq!(answer.status(), 200);
            let body = answer.into_body().collect_bytes().await.unwrap();
            let table: Value = serde_json::from_slice(&body).unwrap();
            let cells = table["rows"][0]["cells"]
                .as_array()
                .unwrap_or_else(|| panic!("not a Table: {table}"))
                .clone();
            cells[..6].to_vec()
        }
    };
    assert_eq!(
        cells("v2").await,
        [
            json!("web"),
            json!("Deployment/web"),
            json!("cpu: 30%/50%, memory: <unknown>/100Mi + 1 more..."),
            json!("<unset>"),
            json!(3),
            json!(2),
        ]
    );
    // The same through v1, whose other metrics come back from their annotations.
    let v1 = cells("v1").await;
    assert_eq!(v1[2].as_str().unwrap().matches(", ").count(), 1, "{v1:?}");
    assert!(v1[2].as_str().unwrap().ends_with(" + 1 more..."), "{v1:?}");
    assert_eq!(v1[3..], [json!("<unset>"), json!(3), json!(2)]);
}

/// `name`'s managedFields entry of `manager` (Apply or Update), read in `version`.
fn entry_of(s: &TestServer, resource: &str, name: &str, manager: &str) -> Value {
    let obj = get_json(s, &["get", resource, name, "--show-managed-fields"]);
    obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|es| es.iter().find(|e| e["manager"] == manager).cloned())
        .unwrap_or_else(|| panic!("no entry of {manager}: {obj}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn server_side_apply_sees_a_renamed_field_owned_in_another_version() {
    let s = TestServer::start();
    let v1 = s.write_file(
        "v1.yaml",
        "apiVersion: example.dev/v1\nkind: Gear\nmetadata:\n  name: g\nspec:\n  teeth: 12\n  size: 40\n",
    );
    let v1 = v1.to_str().unwrap();
    s.kubectl_ok(&["apply", "--server-side", "--field-manager=v1-ctl", "-f", v1]);

    // v2's diameter is v1's size: another manager changing it conflicts with v1-ctl, as
    // kube-apiserver words it (the field named as v1-ctl's entry has it).
    let v2 = s.write_file(
        "v2.yaml",
        "apiVersion: example.dev/v2\nkind: Gear\nmetadata:\n  name: g\nspec:\n  diameter: 50\n",
    );
    let v2 = v2.to_str().unwrap();
    let err = s.kubectl_err(&["apply", "--server-side", "--field-manager=v2-ctl", "-f", v2]);
    assert!(
        err.contains(r#"Apply failed with 1 conflict: conflict with "v1-ctl": .spec.size"#),
        "stderr: {err}"
    );
    let c = s.client().await;
    let intent = json!({"apiVersion": "example.dev/v2", "kind": "Gear", "metadata": {"name": "g"}, "spec": {"diameter": 50}});
    let resp = raw_request(
        &c,
        "PATCH",
        "/apis/example.dev/v2/namespaces/default/gears/g?fieldManager=v2-ctl",
        Some("application/apply-patch+yaml"),
        intent.to_string(),
    )
    .await;
    assert_eq!(resp.status, 409, "{}", resp.text);
    assert_eq!(
        resp.json["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"v1-ctl\"", "field": ".spec.size"}]),
        "{}",
        resp.text
    );
    assert_eq!(
        s.kubectl_ok(&[
            "get",
            "gears.v1.example.dev",
            "g",
            "-o",
            "jsonpath={.spec.size}"
        ]),
        "40"
    );

    // A field no v1 manager owns is not a conflict.
    let brass = s.write_file(
        "brass.yaml",
        "apiVersion: example.dev/v2\nkind: Gear\nmetadata:\n  name: g\nspec:\n  material: brass\n",
    );
    s.kubectl_ok(&[
        "apply",
        "--server-side",
        "--field-manager=material-ctl",
        "-f",
        brass.to_str().unwrap(),
    ]);

    // Forced, the diameter is v2-ctl's and the size no longer v1-ctl's; each entry stays
    // in its own version, whichever version reads them.
    s.kubectl_ok(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=v2-ctl",
        "-f",
        v2,
    ]);
    for resource in ["gears.v1.example.dev", "gears.v2.example.dev"] {
        let old = entry_of(&s, resource, "g", "v1-ctl");
        assert_eq!(old["apiVersion"], "example.dev/v1", "{old}");
        assert_eq!(old["fieldsV1"], json!({"f:spec": {"f:teeth": {}}}), "{old}");
        let new = entry_of(&s, resource, "g", "v2-ctl");
        assert_eq!(new["apiVersion"], "example.dev/v2", "{new}");
        assert_eq!(
            new["fieldsV1"],
            json!({"f:spec": {"f:diameter": {}}}),
            "{new}"
        );
    }
    let read = get_json(&s, &["get", "gears.v1.example.dev", "g"]);
    assert_eq!(read["spec"], json!({"teeth": 12, "size": 50}));

    // v1-ctl applying its old manifest now conflicts the other way, in v2's words.
    let err = s.kubectl_err(&["apply", "--server-side", "--field-manager=v1-ctl", "-f", v1]);
    assert!(
        err.contains(r#"Apply failed with 1 conflict: conflict with "v2-ctl": .spec.diameter"#),
        "stderr: {err}"
    );
}

#[test]
fn a_field_its_applier_drops_in_another_version_goes_and_is_no_longer_owned() {
    let s = TestServer::start();
    let v1 = s.write_file(
        "v1.yaml",
        "apiVersion: example.dev/v1\nkind: Gear\nmetadata:\n  name: g\nspec:\n  teeth: 12\n  size: 40\n",
    );
    s.kubectl_ok(&[
        "apply",
        "--server-side",
        "--field-manager=ctl",
        "-f",
        v1.to_str().unwrap(),
    ]);

    // The same manager moves to v2 and no longer applies the size (v2's diameter).
    let v2 = s.write_file(
        "v2.yaml",
        "apiVersion: example.dev/v2\nkind: Gear\nmetadata:\n  name: g\nspec:\n  teeth: 14\n",
    );
    s.kubectl_ok(&[
        "apply",
        "--server-side",
        "--field-manager=ctl",
        "-f",
        v2.to_str().unwrap(),
    ]);
    let read = get_json(&s, &["get", "gears.v2.example.dev", "g"]);
    assert_eq!(
        read["spec"],
        json!({"teeth": 14, "material": "steel"}),
        "{read}"
    );
    let read = get_json(&s, &["get", "gears.v1.example.dev", "g"]);
    assert_eq!(read["spec"], json!({"teeth": 14}), "{read}");
    let entry = entry_of(&s, "gears.v1.example.dev", "g", "ctl");
    assert_eq!(entry["apiVersion"], "example.dev/v2", "{entry}");
    assert_eq!(
        entry["fieldsV1"],
        json!({"f:spec": {"f:teeth": {}}}),
        "{entry}"
    );
}

#[test]
fn server_side_apply_across_versions_of_a_crd_converted_none() {
    let s = TestServer::start();
    let crd = s.write_file("sprockets.yaml", &sprockets_crd("v1"));
    install_crd(&s, &crd, "sprockets.migrate.example.com");
    let sprocket = |file: &str, version: &str, body: &str| {
        let path = s.write_file(
            file,
            &format!("apiVersion: migrate.example.com/{version}\nkind: Sprocket\nmetadata:\n  name: p\n{body}"),
        );
        path.to_str().unwrap().to_string()
    };
    let v1 = sprocket("v1.yaml", "v1", "spec:\n  teeth: 10\n");
    s.kubectl_ok(&[
        "apply",
        "--server-side",
        "--field-manager=v1-ctl",
        "-f",
        &v1,
    ]);
    let v2 = sprocket("v2.yaml", "v2", "spec:\n  teeth: 20\n");
    let err = s.kubectl_err(&[
        "apply",
        "--server-side",
        "--field-manager=v2-ctl",
        "-f",
        &v2,
    ]);
    assert!(
        err.contains(r#"Apply failed with 1 conflict: conflict with "v1-ctl": .spec.teeth"#),
        "stderr: {err}"
    );
    s.kubectl_ok(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=v2-ctl",
        "-f",
        &v2,
    ]);
    let obj = get_json(
        &s,
        &[
            "get",
            "sprockets.v1.migrate.example.com",
            "p",
            "--show-managed-fields",
        ],
    );
    assert_eq!(obj["spec"]["teeth"], 20);
    let entries = obj["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "v1-ctl owns nothing left: {obj}");
    assert_eq!(entries[0]["manager"], "v2-ctl");
    assert_eq!(entries[0]["apiVersion"], "migrate.example.com/v2");
}
