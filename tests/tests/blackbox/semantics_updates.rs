//! Changing existing objects (issue 3, item 7, and the "Done when" kubectl commands):
//! JSON, merge and strategic merge patches, the managedFields of Update operations, and
//! kubectl edit, replace, annotate and client-side apply.

use apiserver_tests::objects::{api_status, configmap, CONFIGMAPS};
use apiserver_tests::{raw_request, TestServer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{json, Value};

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
    let out = s
        .kubectl_command(&["edit", "cm", "e"])
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
    let out = s
        .kubectl_command(&["edit", "wd", "w"])
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
