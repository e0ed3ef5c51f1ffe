//! The server driven by the real kubectl binary: what a user types, what a user sees.

use apiserver_tests::TestServer;

const WIDGET: &str = "\
apiVersion: example.dev/v1
kind: Widget
metadata:
  name: w1
spec:
  color: blue
  replicas: 3
";

const GADGET: &str = "\
apiVersion: example.dev/v1
kind: Gadget
metadata:
  name: g1
spec:
  mode: Automatic
  level: 7
";

/// The whitespace-separated cells of the table row whose first cell is `name`.
fn row<'a>(table: &'a str, name: &str) -> Vec<&'a str> {
    table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|cells| cells.first() == Some(&name))
        .unwrap_or_else(|| panic!("no row {name:?} in:\n{table}"))
}

/// The cells of the header row.
fn header(table: &str) -> Vec<&str> {
    table
        .lines()
        .next()
        .unwrap_or_else(|| panic!("empty table output"))
        .split_whitespace()
        .collect()
}

#[test]
fn create_configmap_from_literal_then_get_yaml() {
    let s = TestServer::start();
    // `kubectl create configmap` sends a protobuf body.
    let out = s.kubectl_ok(&["create", "configmap", "x", "--from-literal=a=b"]);
    assert_eq!(out.trim(), "configmap/x created");

    let yaml = s.kubectl_ok(&["get", "cm", "x", "-o", "yaml"]);
    let obj: serde_yaml::Value = serde_yaml::from_str(&yaml).expect("kubectl printed YAML");
    assert_eq!(obj["apiVersion"].as_str(), Some("v1"), "{yaml}");
    assert_eq!(obj["kind"].as_str(), Some("ConfigMap"), "{yaml}");
    assert_eq!(obj["data"]["a"].as_str(), Some("b"), "{yaml}");
    let meta = &obj["metadata"];
    assert_eq!(meta["name"].as_str(), Some("x"));
    assert_eq!(meta["namespace"].as_str(), Some("default"));
    for field in ["uid", "resourceVersion", "creationTimestamp"] {
        let v = meta[field].as_str().unwrap_or_default();
        assert!(!v.is_empty(), "metadata.{field} missing in:\n{yaml}");
    }
    assert!(
        meta["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .is_ok(),
        "resourceVersion is not a number: {yaml}"
    );
    assert!(
        meta["creationTimestamp"].as_str().unwrap().ends_with('Z'),
        "creationTimestamp is not RFC 3339 UTC: {yaml}"
    );
}

#[test]
fn create_from_file_and_list_both() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "configmap", "x", "--from-literal=a=b"]);
    let file = s.write_file(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-file\ndata:\n  key: value\n",
    );
    let out = s.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
    assert_eq!(out.trim(), "configmap/from-file created");

    let table = s.kubectl_ok(&["get", "cm"]);
    assert_eq!(header(&table), ["NAME", "DATA", "AGE"], "{table}");
    assert_eq!(row(&table, "x")[1], "1", "{table}");
    assert_eq!(row(&table, "from-file")[1], "1", "{table}");

    let names = s.kubectl_ok(&["get", "configmaps", "-o", "name"]);
    let mut names: Vec<&str> = names.lines().collect();
    names.sort_unstable();
    // The root CA published in every namespace is not this test's.
    names.retain(|n| *n != "configmap/kube-root-ca.crt");
    assert_eq!(names, ["configmap/from-file", "configmap/x"]);

    let value = s.kubectl_ok(&["get", "cm", "from-file", "-o", "jsonpath={.data.key}"]);
    assert_eq!(value, "value");
}

#[test]
fn create_secret_generic_is_base64_and_opaque() {
    let s = TestServer::start();
    let out = s.kubectl_ok(&["create", "secret", "generic", "s", "--from-literal=k=v"]);
    assert_eq!(out.trim(), "secret/s created");
    let data = s.kubectl_ok(&["get", "secret", "s", "-o", "jsonpath={.data.k}"]);
    assert_eq!(data, "dg==", "base64 of \"v\"");
    let ty = s.kubectl_ok(&["get", "secret", "s", "-o", "jsonpath={.type}"]);
    assert_eq!(ty, "Opaque");
    let table = s.kubectl_ok(&["get", "secrets"]);
    assert_eq!(header(&table), ["NAME", "TYPE", "DATA", "AGE"], "{table}");
    assert_eq!(&row(&table, "s")[..3], ["s", "Opaque", "1"], "{table}");
}

#[test]
fn create_namespace_then_configmap_in_it() {
    let s = TestServer::start();
    let out = s.kubectl_ok(&["create", "namespace", "n1"]);
    assert_eq!(out.trim(), "namespace/n1 created");
    let phase = s.kubectl_ok(&["get", "ns", "n1", "-o", "jsonpath={.status.phase}"]);
    assert_eq!(phase, "Active");

    s.kubectl_ok(&[
        "create",
        "configmap",
        "inside",
        "-n",
        "n1",
        "--from-literal=a=b",
    ]);
    let ns = s.kubectl_ok(&[
        "get",
        "cm",
        "inside",
        "-n",
        "n1",
        "-o",
        "jsonpath={.metadata.namespace}",
    ]);
    assert_eq!(ns, "n1");
    // Not visible from the default namespace, visible across all namespaces.
    let err = s.kubectl_err(&["get", "cm", "inside"]);
    assert!(
        err.contains(r#"configmaps "inside" not found"#),
        "stderr: {err}"
    );
    let all = s.kubectl_ok(&["get", "cm", "-A"]);
    assert_eq!(row(&all, "n1")[1], "inside", "{all}");
}

#[test]
fn apply_widget_and_gadget_then_get_shows_printer_columns() {
    let s = TestServer::start();
    let w = s.write_file("widget.yaml", WIDGET);
    let g = s.write_file("gadget.yaml", GADGET);
    let out = s.kubectl_ok(&["apply", "-f", w.to_str().unwrap()]);
    assert_eq!(out.trim(), "widget.example.dev/w1 created");
    let out = s.kubectl_ok(&["apply", "-f", g.to_str().unwrap()]);
    assert_eq!(out.trim(), "gadget.example.dev/g1 created");

    for resource in ["widgets", "wd", "widget", "widgets.example.dev"] {
        let table = s.kubectl_ok(&["get", resource]);
        assert_eq!(
            header(&table),
            ["NAME", "COLOR", "REPLICAS", "AGE"],
            "kubectl get {resource}:\n{table}"
        );
        assert_eq!(&row(&table, "w1")[..3], ["w1", "blue", "3"], "{table}");
    }
    // The priority-1 column shows with -o wide.
    let wide = s.kubectl_ok(&["get", "wd", "-o", "wide"]);
    assert_eq!(
        header(&wide),
        ["NAME", "COLOR", "REPLICAS", "READY", "AGE"],
        "{wide}"
    );

    for resource in ["gadgets", "gd"] {
        let table = s.kubectl_ok(&["get", resource]);
        assert_eq!(
            header(&table),
            ["NAME", "MODE", "LEVEL", "AGE"],
            "kubectl get {resource}:\n{table}"
        );
        assert_eq!(&row(&table, "g1")[..3], ["g1", "Automatic", "7"], "{table}");
    }

    // Re-applying a change patches the object.
    let w2 = s.write_file(
        "widget2.yaml",
        &WIDGET.replace("replicas: 3", "replicas: 5"),
    );
    let out = s.kubectl_ok(&["apply", "-f", w2.to_str().unwrap()]);
    assert_eq!(out.trim(), "widget.example.dev/w1 configured");
    let table = s.kubectl_ok(&["get", "wd", "w1"]);
    assert_eq!(&row(&table, "w1")[..3], ["w1", "blue", "5"], "{table}");
    let generation = s.kubectl_ok(&["get", "wd", "w1", "-o", "jsonpath={.metadata.generation}"]);
    assert_eq!(generation, "2");
    // Applying the same file again changes nothing.
    let out = s.kubectl_ok(&["apply", "-f", w2.to_str().unwrap()]);
    assert_eq!(out.trim(), "widget.example.dev/w1 unchanged");
}

#[test]
fn api_resources_lists_every_kind_with_short_names() {
    let s = TestServer::start();
    let table = s.kubectl_ok(&["api-resources"]);
    assert_eq!(
        header(&table),
        ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"],
        "{table}"
    );
    assert_eq!(
        row(&table, "configmaps"),
        ["configmaps", "cm", "v1", "true", "ConfigMap"]
    );
    assert_eq!(row(&table, "secrets"), ["secrets", "v1", "true", "Secret"]);
    assert_eq!(
        row(&table, "namespaces"),
        ["namespaces", "ns", "v1", "false", "Namespace"]
    );
    assert_eq!(
        row(&table, "widgets"),
        ["widgets", "wd", "example.dev/v1", "true", "Widget"]
    );
    assert_eq!(
        row(&table, "gadgets"),
        ["gadgets", "gd", "example.dev/v1", "false", "Gadget"]
    );
    let group = s.kubectl_ok(&["api-resources", "--api-group=example.dev", "-o", "name"]);
    let mut names: Vec<&str> = group.lines().collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "gadgets.example.dev",
            "gears.example.dev",
            "widgets.example.dev"
        ]
    );
}

#[test]
fn delete_then_get_is_not_found() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "configmap", "x", "--from-literal=a=b"]);
    let out = s.kubectl_ok(&["delete", "cm", "x"]);
    assert_eq!(
        out.trim(),
        r#"configmap "x" deleted from default namespace"#
    );
    let err = s.kubectl_err(&["get", "cm", "x"]);
    assert!(
        err.contains(r#"Error from server (NotFound): configmaps "x" not found"#),
        "stderr: {err}"
    );
    let err = s.kubectl_err(&["delete", "cm", "x"]);
    assert!(
        err.contains(r#"Error from server (NotFound): configmaps "x" not found"#),
        "stderr: {err}"
    );
}

#[test]
fn create_twice_is_already_exists() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "configmap", "x", "--from-literal=a=b"]);
    let err = s.kubectl_err(&["create", "configmap", "x", "--from-literal=a=b"]);
    assert!(
        err.contains(r#"configmaps "x" already exists"#),
        "stderr: {err}"
    );
    // From a file kubectl prints the reason.
    let file = s.write_file(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
    );
    let err = s.kubectl_err(&["create", "-f", file.to_str().unwrap()]);
    assert!(
        err.contains("Error from server (AlreadyExists)")
            && err.contains(r#"configmaps "x" already exists"#),
        "stderr: {err}"
    );
    let w = s.write_file("widget.yaml", WIDGET);
    s.kubectl_ok(&["create", "-f", w.to_str().unwrap()]);
    let err = s.kubectl_err(&["create", "-f", w.to_str().unwrap()]);
    assert!(
        err.contains("Error from server (AlreadyExists)")
            && err.contains(r#"widgets.example.dev "w1" already exists"#),
        "stderr: {err}"
    );
}

#[test]
fn invalid_name_is_rejected() {
    let s = TestServer::start();
    let err = s.kubectl_err(&["create", "configmap", "Bad_Name"]);
    assert!(
        err.contains(r#"ConfigMap "Bad_Name" is invalid"#)
            && err.contains(r#"metadata.name: Invalid value: "Bad_Name""#),
        "stderr: {err}"
    );
    // Namespaces must be DNS labels: dots are not allowed.
    let err = s.kubectl_err(&["create", "namespace", "a.b"]);
    assert!(
        err.contains(r#"Namespace "a.b" is invalid"#) && err.contains("metadata.name"),
        "stderr: {err}"
    );
    let out = s.kubectl_ok(&["get", "cm", "-o", "name"]);
    let created: Vec<&str> = out
        .lines()
        .filter(|n| *n != "configmap/kube-root-ca.crt")
        .collect();
    assert!(created.is_empty(), "nothing was created: {out}");
}

#[test]
fn widget_with_unknown_field_is_rejected_strictly() {
    let s = TestServer::start();
    let file = s.write_file(
        "bogus.yaml",
        &format!("{}  bogus: 1\n", WIDGET.replace("name: w1", "name: bogus")),
    );
    // kubectl create sends fieldValidation=Strict.
    let err = s.kubectl_err(&["create", "-f", file.to_str().unwrap()]);
    assert!(
        err.contains("Error from server (BadRequest)")
            && err.contains(r#"unknown field "spec.bogus""#),
        "stderr: {err}"
    );
    s.kubectl_err(&["get", "wd", "bogus"]);

    // With validation off the field is dropped, not stored.
    s.kubectl_ok(&["create", "-f", file.to_str().unwrap(), "--validate=false"]);
    let spec = s.kubectl_ok(&["get", "wd", "bogus", "-o", "jsonpath={.spec}"]);
    let spec: serde_json::Value = serde_json::from_str(&spec).expect("spec is JSON");
    assert_eq!(spec, serde_json::json!({"color": "blue", "replicas": 3}));
}

#[test]
fn widget_with_unsupported_color_is_rejected() {
    let s = TestServer::start();
    let file = s.write_file(
        "pink.yaml",
        &WIDGET
            .replace("color: blue", "color: pink")
            .replace("name: w1", "name: pink"),
    );
    let err = s.kubectl_err(&["create", "-f", file.to_str().unwrap()]);
    assert!(
        err.contains(r#"Widget "pink" is invalid"#)
            && err.contains(r#"spec.color: Unsupported value: "pink""#)
            && err.contains(r#"supported values: "red", "green", "blue""#),
        "stderr: {err}"
    );
    let gadget = s.write_file(
        "gadget.yaml",
        &GADGET.replace("mode: Automatic", "mode: Sometimes"),
    );
    let err = s.kubectl_err(&["apply", "-f", gadget.to_str().unwrap()]);
    assert!(
        err.contains(r#"spec.mode: Unsupported value: "Sometimes""#),
        "stderr: {err}"
    );
    let err = s.kubectl_err(&["get", "wd", "pink"]);
    assert!(err.contains("NotFound"), "stderr: {err}");
}

#[test]
fn get_namespaces_shows_the_system_namespaces() {
    let s = TestServer::start();
    let table = s.kubectl_ok(&["get", "ns"]);
    assert_eq!(header(&table), ["NAME", "STATUS", "AGE"], "{table}");
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert_eq!(&row(&table, ns)[..2], [ns, "Active"], "{table}");
    }
    let label = s.kubectl_ok(&[
        "get",
        "ns",
        "default",
        "-o",
        r"jsonpath={.metadata.labels.kubernetes\.io/metadata\.name}",
    ]);
    assert_eq!(label, "default");
}

#[test]
fn patch_label_and_replace_through_kubectl() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "configmap", "x", "--from-literal=a=b"]);
    s.kubectl_ok(&["label", "cm", "x", "tier=web"]);
    s.kubectl_ok(&["annotate", "cm", "x", "note=hi"]);
    s.kubectl_ok(&[
        "patch",
        "cm",
        "x",
        "--type=merge",
        "-p",
        r#"{"data":{"c":"d"}}"#,
    ]);
    let obj = s.kubectl_ok(&["get", "cm", "x", "-o", "json"]);
    let obj: serde_json::Value = serde_json::from_str(&obj).unwrap();
    assert_eq!(obj["metadata"]["labels"]["tier"], "web");
    assert_eq!(obj["metadata"]["annotations"]["note"], "hi");
    assert_eq!(obj["data"], serde_json::json!({"a": "b", "c": "d"}));

    let w = s.write_file("widget.yaml", WIDGET);
    s.kubectl_ok(&["create", "-f", w.to_str().unwrap()]);
    s.kubectl_ok(&[
        "patch",
        "wd",
        "w1",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/color","value":"green"}]"#,
    ]);
    let w2 = s.write_file(
        "widget2.yaml",
        &WIDGET.replace("replicas: 3", "replicas: 9"),
    );
    let out = s.kubectl_ok(&["replace", "-f", w2.to_str().unwrap()]);
    assert_eq!(out.trim(), "widget.example.dev/w1 replaced");
    let table = s.kubectl_ok(&["get", "wd"]);
    assert_eq!(&row(&table, "w1")[..3], ["w1", "blue", "9"], "{table}");
}

#[test]
fn deleting_a_namespace_removes_its_contents() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "gone"]);
    s.kubectl_ok(&["create", "configmap", "c", "-n", "gone"]);
    let w = s.write_file("widget.yaml", WIDGET);
    s.kubectl_ok(&["create", "-n", "gone", "-f", w.to_str().unwrap()]);
    s.kubectl_ok(&["delete", "namespace", "gone", "--wait=true"]);
    let err = s.kubectl_err(&["get", "ns", "gone"]);
    assert!(
        err.contains(r#"namespaces "gone" not found"#),
        "stderr: {err}"
    );
    // Re-creating the namespace does not bring the old objects back.
    s.kubectl_ok(&["create", "namespace", "gone"]);
    let out = s.kubectl_ok(&["get", "cm,wd", "-n", "gone", "-o", "name"]);
    // Only the root CA the new namespace is given.
    let survivors: Vec<&str> = out
        .lines()
        .filter(|n| *n != "configmap/kube-root-ca.crt")
        .collect();
    assert!(
        survivors.is_empty(),
        "objects survived their namespace: {out}"
    );
}
