//! CustomResourceDefinitions: a definition created with kubectl becomes a served kind
//! (discovery, OpenAPI, kubectl get and explain, validation by its schema), its status
//! says so, a definition whose names are taken is not served, and deleting it stops
//! serving the kind; custom objects are held to every check of their schema.

use std::time::{Duration, Instant};

use apiserver_tests::objects::{install_crd, CRONTABS_CRD};
use apiserver_tests::{raw_request, TestServer};

const CRONTAB: &str = "\
apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: nightly
spec:
  cronSpec: '0 3 * * *'
  replicas: 2
";

/// Waits until `check` holds.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within 10 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_crd_is_served_until_it_is_deleted() {
    let s = TestServer::start();
    let crd = s.write_file("crd.yaml", CRONTABS_CRD);
    install_crd(&s, &crd, "crontabs.stable.example.com");
    let accepted = s.kubectl_ok(&[
        "get",
        "crd",
        "crontabs.stable.example.com",
        "-o",
        "jsonpath={.status.acceptedNames.kind} {.status.acceptedNames.listKind} {.status.storedVersions}",
    ]);
    assert_eq!(accepted, r#"CronTab CronTabList ["v1"]"#);

    // Objects of the new kind, checked by its schema, printed with its columns.
    let ct = s.write_file("ct.yaml", CRONTAB);
    s.kubectl_ok(&["apply", "-f", ct.to_str().unwrap()]);
    let table = s.kubectl_ok(&["get", "ct"]);
    let rows: Vec<&str> = table.lines().collect();
    assert!(
        rows[0].starts_with("NAME") && rows[0].contains("SCHEDULE"),
        "{table}"
    );
    assert!(
        rows[1].starts_with("nightly") && rows[1].contains("0 3 * * *"),
        "{table}"
    );
    let bad = s.write_file("bad.yaml", &CRONTAB.replace("replicas: 2", "replicas: 0"));
    let err = s.kubectl_err(&["apply", "-f", bad.to_str().unwrap()]);
    assert!(
        err.contains("spec.replicas") && err.contains("is invalid"),
        "{err}"
    );
    let explained = s.kubectl_ok(&["explain", "crontabs.spec"]);
    assert!(explained.contains("cronSpec"), "{explained}");

    // A definition whose short name is taken is not served.
    let clash = s.write_file(
        "clash.yaml",
        &CRONTABS_CRD
            .replace("crontabs", "timers")
            .replace("crontab", "timer")
            .replace("CronTab", "Timer"),
    );
    s.kubectl_ok(&["apply", "-f", clash.to_str().unwrap()]);
    eventually("NamesAccepted=False on timers", || {
        s.kubectl_ok(&[
            "get",
            "crd",
            "timers.stable.example.com",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"NamesAccepted\")].reason}",
        ]) == "NameConflict"
    });
    let rt = tokio::runtime::Runtime::new().unwrap();
    let c = rt.block_on(s.client());
    let status = |path: &str| rt.block_on(raw_request(&c, "GET", path, None, "")).status;
    assert_eq!(
        status("/apis/stable.example.com/v1/namespaces/default/timers"),
        404
    );

    // A definition whose name is not <plural>.<group> is refused.
    let misnamed = s.write_file(
        "misnamed.yaml",
        &CRONTABS_CRD.replace(
            "name: crontabs.stable.example.com",
            "name: cron.stable.example.com",
        ),
    );
    let err = s.kubectl_err(&["apply", "-f", misnamed.to_str().unwrap()]);
    assert!(
        err.contains(r#"must be spec.names.plural+"."+spec.group"#),
        "{err}"
    );

    // A schema that cannot be served is refused with the field at fault.
    let typo = s.write_file(
        "typo.yaml",
        &CRONTABS_CRD.replace("cronSpec: {type: string}", "cronSpec: {type: strin}"),
    );
    let err = s.kubectl_err(&["apply", "-f", typo.to_str().unwrap()]);
    assert!(
        err.contains("is invalid")
            && err.contains(
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[cronSpec]: "
            )
            && err.contains("unknown type `strin`"),
        "{err}"
    );

    // Deleting the definition stops serving the kind and deletes its objects; an object
    // with a finalizer of its own holds the definition, which says it is terminating.
    s.kubectl_ok(&[
        "patch",
        "ct",
        "nightly",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":["example.com/hold"]}}"#,
    ]);
    s.kubectl_ok(&[
        "delete",
        "crd",
        "crontabs.stable.example.com",
        "--wait=false",
    ]);
    let terminating = || {
        s.kubectl_ok(&[
            "get",
            "crd",
            "crontabs.stable.example.com",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Terminating\")].reason}",
        ])
    };
    eventually("Terminating=True", || {
        terminating() == "InstanceDeletionInProgress"
    });
    // Meanwhile objects can be read and changed (their finalizers must be able to finish)
    // but not created.
    let held = s.kubectl_ok(&[
        "get",
        "ct",
        "nightly",
        "-o",
        "jsonpath={.metadata.deletionTimestamp}",
    ]);
    assert!(!held.is_empty(), "the object is being deleted");
    let refused = rt.block_on(raw_request(
        &c,
        "POST",
        "/apis/stable.example.com/v1/namespaces/default/crontabs",
        Some("application/json"),
        r#"{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"late"}}"#,
    ));
    assert_eq!(refused.status, 405, "{}", refused.text);
    assert_eq!(
        refused.json["message"],
        "create not allowed while custom resource definition is terminating"
    );
    s.kubectl_ok(&[
        "patch",
        "ct",
        "nightly",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    // Once kubectl has seen the definition go, a new one of the same name starts empty.
    s.kubectl_ok(&[
        "wait",
        "--for=delete",
        "crd/crontabs.stable.example.com",
        "--timeout=10s",
    ]);
    assert_eq!(
        status("/apis/stable.example.com/v1/namespaces/default/crontabs"),
        404
    );
    // The short name it held is free now: the definition that wanted it is served.
    s.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/timers.stable.example.com",
        "--timeout=10s",
    ]);
    assert_eq!(
        status("/apis/stable.example.com/v1/namespaces/default/timers"),
        200
    );
    s.kubectl_ok(&["delete", "crd", "timers.stable.example.com"]);
    install_crd(&s, &crd, "crontabs.stable.example.com");
    let left = rt.block_on(raw_request(
        &c,
        "GET",
        "/apis/stable.example.com/v1/crontabs",
        None,
        "",
    ));
    assert_eq!(left.status, 200, "{}", left.text);
    assert_eq!(left.json["items"], serde_json::json!([]), "{}", left.text);
}

/// The Widget definition's CRD (what `cargo run -p codegen -- crd` prints), moved to
/// group `exported.example.dev` so it can stand beside the compiled-in Widget.
fn exported_widget_crd() -> String {
    let root = apiserver_tests::workspace_root();
    let path = "api-defs/examples/widget.yaml";
    let text = std::fs::read_to_string(root.join(path)).unwrap();
    let defs = codegen::load_definitions(&[codegen::SourceFile {
        path: path.into(),
        text,
    }])
    .unwrap_or_else(|d| panic!("{d}"));
    let manifest = codegen::emit::crd::manifest(&defs[0]).expect("Widget is custom");
    manifest
        .to_string()
        .replace("example.dev", "exported.example.dev")
        .replace(r#"["wd"]"#, r#"["xwd"]"#)
}

#[test]
fn an_exported_definition_serves_its_kind_as_the_compiled_in_one_does() {
    let s = TestServer::start();
    let crd = s.write_file("widget-crd.json", &exported_widget_crd());
    install_crd(&s, &crd, "widgets.exported.example.dev");
    let widget = |group: &str, color: &str| {
        format!(
            "apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  color: {color}\n"
        )
    };
    for (group, short) in [("example.dev", "wd"), ("exported.example.dev", "xwd")] {
        // The same object is defaulted, printed and scaled alike.
        let f = s.write_file("w.yaml", &widget(group, "red"));
        s.kubectl_ok(&["apply", "-f", f.to_str().unwrap()]);
        let replicas = s.kubectl_ok(&[
            "get",
            &format!("widgets.v1.{group}"),
            "w",
            "-o",
            "jsonpath={.spec.replicas}",
        ]);
        assert_eq!(replicas, "1", "{group}: the schema's default");
        let table = s.kubectl_ok(&["get", short]);
        let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
        assert_eq!(
            header,
            ["NAME", "COLOR", "REPLICAS", "AGE"],
            "{group}: {table}"
        );
        s.kubectl_ok(&["scale", &format!("widgets.v1.{group}/w"), "--replicas=3"]);
        let scaled = s.kubectl_ok(&[
            "get",
            &format!("widgets.v1.{group}"),
            "w",
            "-o",
            "jsonpath={.spec.replicas}",
        ]);
        assert_eq!(scaled, "3", "{group}: kubectl scale");
        // The same violation, the same answer.
        let bad = s.write_file("bad.yaml", &widget(group, "purple"));
        let err = s.kubectl_err(&["apply", "-f", bad.to_str().unwrap()]);
        assert!(
            err.contains("The Widget \"w\" is invalid")
                && err.contains("spec.color: Unsupported value: \"purple\""),
            "{group}: {err}"
        );
        // kubectl edit and patch change it alike.
        let script = s.write_file(
            "edit.sh",
            "#!/bin/sh\nsed -i 's/color: red/color: green/' \"$1\"\n",
        );
        let editor = format!("sh {}", script.display());
        let out = s
            .kubectl_command(&["edit", &format!("widgets.v1.{group}"), "w"])
            .env("KUBE_EDITOR", &editor)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{group}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        s.kubectl_ok(&[
            "patch",
            short,
            "w",
            "--type=merge",
            "-p",
            r#"{"spec":{"replicas":5}}"#,
        ]);
        let changed = s.kubectl_ok(&[
            "get",
            short,
            "w",
            "-o",
            "jsonpath={.spec.color} {.spec.replicas}",
        ]);
        assert_eq!(changed, "green 5", "{group}: kubectl edit, then patch");
    }
    // Both kinds answer to their category; both delete alike.
    let listed = s.kubectl_ok(&["get", "examples", "-o", "name"]);
    let mut names: Vec<&str> = listed.lines().collect();
    names.sort();
    assert_eq!(
        names,
        ["widget.example.dev/w", "widget.exported.example.dev/w"],
        "{listed}"
    );
    s.kubectl_ok(&["delete", "wd,xwd", "w"]);
    assert_eq!(s.kubectl_ok(&["get", "examples", "-o", "name"]), "");
}

const QUEUES: &str = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: queues.checks.example.com
spec:
  group: checks.example.com
  scope: Namespaced
  names: {plural: queues, singular: queue, kind: Queue}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              minProperties: 1
              properties:
                name: {type: string, minLength: 3, maxLength: 8, pattern: '^[a-z]+$'}
                weight: {type: number, minimum: 0, exclusiveMinimum: true, multipleOf: 0.5}
                owners: {type: array, maxItems: 2, items: {type: string, format: email}}
                since: {type: string, format: date-time}
                port:
                  x-kubernetes-int-or-string: true
                  anyOf: [{type: integer}, {type: string}]
                fifo: {type: boolean}
                lifo: {type: boolean}
                template:
                  type: object
                  x-kubernetes-embedded-resource: true
                  x-kubernetes-preserve-unknown-fields: true
              not: {required: [fifo, lifo]}
";

/// A manifest of Queue `name` with `spec` (a YAML flow mapping), for `kubectl apply -f`.
fn queue(s: &TestServer, name: &str, spec: &str) -> String {
    let file = s.write_file(
        &format!("{name}.yaml"),
        &format!("apiVersion: checks.example.com/v1\nkind: Queue\nmetadata: {{name: {name}}}\nspec: {spec}\n"),
    );
    file.to_str().unwrap().to_string()
}

#[test]
fn custom_objects_are_held_to_every_check_of_their_schema() {
    let s = TestServer::start();
    let crd = s.write_file("queues.yaml", QUEUES);
    install_crd(&s, &crd, "queues.checks.example.com");

    let ok = "{name: orders, weight: 1.5, owners: [a@example.com], since: '2026-12-02T01:00:00Z', port: http, \
              template: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {}}}";
    s.kubectl_ok(&["apply", "-f", &queue(&s, "good", ok)]);
    let kept = s.kubectl_ok(&[
        "get",
        "queue",
        "good",
        "-o",
        "jsonpath={.spec.template.kind} {.spec.port}",
    ]);
    assert_eq!(kept, "Pod http", "an embedded object keeps its kind");

    // Unknown fields are pruned: kubectl is warned (refused by default), and they are
    // not stored.
    let out = s.kubectl(&[
        "apply",
        "--validate=warn",
        "-f",
        &queue(&s, "pruned", "{name: orders, bogus: 1}"),
    ]);
    assert!(out.status.success(), "{out:?}");
    let warned = String::from_utf8_lossy(&out.stderr);
    assert!(warned.contains(r#"unknown field "spec.bogus""#), "{warned}");
    let stored = s.kubectl_ok(&["get", "queue", "pruned", "-o", "jsonpath={.spec}"]);
    assert_eq!(stored, r#"{"name":"orders"}"#);
    let strict = s.kubectl_err(&[
        "apply",
        "-f",
        &queue(&s, "strict", "{name: orders, bogus: 1}"),
    ]);
    assert!(strict.contains(r#"unknown field "spec.bogus""#), "{strict}");

    // Each violation is named with its field, in kube-apiserver's words.
    let cases = [
        (
            "{name: ab}",
            "spec.name in body should be at least 3 chars long",
        ),
        (
            "{name: waytoolong}",
            "spec.name: Too long: may not be more than 8 bytes",
        ),
        ("{name: Upper}", "spec.name in body should match '^[a-z]+$'"),
        (
            "{weight: 0}",
            "spec.weight in body should be greater than 0",
        ),
        (
            "{weight: 0.7}",
            "spec.weight in body should be a multiple of 0.5",
        ),
        (
            "{owners: [a@x.io, b@x.io, c@x.io]}",
            "spec.owners: Too many: 3: must have at most 2 items",
        ),
        (
            "{since: yesterday}",
            "spec.since in body must be of type date-time",
        ),
        (
            "{port: [80]}",
            "spec.port in body must be of type integer or string",
        ),
        ("{}", "spec in body should have at least 1 properties"),
        (
            "{fifo: true, lifo: true}",
            "spec in body must not validate the schema (not)",
        ),
        (
            "{template: {spec: {}}}",
            "spec.template.kind: Required value",
        ),
    ];
    for (i, (spec, message)) in cases.iter().enumerate() {
        let err = s.kubectl_err(&["apply", "-f", &queue(&s, &format!("bad{i}"), spec)]);
        assert!(
            err.contains("is invalid") && err.contains(message),
            "{spec}: {err}"
        );
    }

    // Schemas kube-apiserver refuses are refused here too, naming the field.
    let refused = [
        (
            "items: {type: string, format: email}",
            "items: {type: string}, uniqueItems: true",
            "uniqueItems: true",
        ),
        (
            "not: {required: [fifo, lifo]}",
            "not: {type: object}",
            "must not set `type`",
        ),
        (
            "pattern: '^[a-z]+$'",
            "pattern: '^[a-z+$'",
            "pattern that does not compile",
        ),
    ];
    for (from, to, message) in refused {
        let file = s.write_file(
            "refused.yaml",
            &QUEUES
                .replace("queues", "others")
                .replace("Queue", "Other")
                .replace("queue,", "other,")
                .replace(from, to),
        );
        let err = s.kubectl_err(&["apply", "-f", file.to_str().unwrap()]);
        assert!(
            err.contains("is invalid") && err.contains(message),
            "{to}: {err}"
        );
    }
}

const SCALERS: &str = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: scalers.checks.example.com
spec:
  group: checks.example.com
  scope: Namespaced
  names: {plural: scalers, singular: scaler, kind: Scaler}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                min: {type: integer}
                max: {type: integer}
                class:
                  type: string
                  x-kubernetes-validations:
                    - {rule: self == oldSelf, message: class is immutable}
                tags:
                  type: array
                  maxItems: 10
                  items: {type: string, maxLength: 32}
                  x-kubernetes-validations:
                    - rule: self.all(t, t.matches('^[a-z]+$'))
                      messageExpression: \"'tags must be lower-case, got ' + self.join(',')\"
              x-kubernetes-validations:
                - {rule: self.min <= self.max, message: min must not exceed max, fieldPath: .min}
                - {rule: \"!has(self.class) || self.class != 'forbidden'\", reason: FieldValueForbidden, message: this class is reserved}
";

#[test]
fn cel_rules_check_custom_objects_and_bad_rules_are_refused() {
    let s = TestServer::start();
    let crd = s.write_file("scalers.yaml", SCALERS);
    install_crd(&s, &crd, "scalers.checks.example.com");
    let scaler = |spec: &str| {
        let file = s.write_file(
            "scaler.yaml",
            &format!("apiVersion: checks.example.com/v1\nkind: Scaler\nmetadata: {{name: web}}\nspec: {spec}\n"),
        );
        file.to_str().unwrap().to_string()
    };
    let err = s.kubectl_err(&["apply", "-f", &scaler("{min: 3, max: 2}")]);
    assert!(
        err.contains("spec.min: Invalid value: \"object\": min must not exceed max"),
        "{err}"
    );
    let err = s.kubectl_err(&["apply", "-f", &scaler("{min: 1, max: 2, class: forbidden}")]);
    assert!(
        err.contains("spec: Forbidden: this class is reserved"),
        "{err}"
    );
    let err = s.kubectl_err(&["apply", "-f", &scaler("{min: 1, max: 2, tags: [ok, Bad]}")]);
    assert!(
        err.contains("spec.tags: Invalid value: \"array\": tags must be lower-case, got ok,Bad"),
        "{err}"
    );

    // A transition rule holds against the stored object, and only on update.
    s.kubectl_ok(&["apply", "-f", &scaler("{min: 1, max: 2, class: gold}")]);
    s.kubectl_ok(&["apply", "-f", &scaler("{min: 2, max: 2, class: gold}")]);
    let err = s.kubectl_err(&["apply", "-f", &scaler("{min: 2, max: 2, class: silver}")]);
    assert!(
        err.contains("spec.class: Invalid value: \"string\": class is immutable"),
        "{err}"
    );
    let kept = s.kubectl_ok(&[
        "get",
        "scaler",
        "web",
        "-o",
        "jsonpath={.spec.class} {.spec.min}",
    ]);
    assert_eq!(kept, "gold 2");

    // Rules that do not compile, or could cost too much, are refused with the rule's field.
    let refused = [
        (
            "rule: self == oldSelf, message: class is immutable",
            "rule: self ==, message: x",
            "x-kubernetes-validations[0].rule",
            "compilation failed",
        ),
        (
            "maxItems: 10\n                  items: {type: string, maxLength: 32}",
            "items: {type: string}",
            "x-kubernetes-validations[0].rule",
            "estimated rule cost exceeds budget",
        ),
    ];
    for (from, to, field, message) in refused {
        let file = s.write_file(
            "refused.yaml",
            &SCALERS
                .replace("scalers", "others")
                .replace("Scaler", "Other")
                .replace("scaler,", "other,")
                .replace(from, to),
        );
        let err = s.kubectl_err(&["apply", "-f", file.to_str().unwrap()]);
        assert!(
            err.contains("is invalid") && err.contains(field) && err.contains(message),
            "{to}: {err}"
        );
    }
}

const RELEASES: &str = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: releases.checks.example.com
spec:
  group: checks.example.com
  scope: Namespaced
  names: {plural: releases, singular: release, kind: Release}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                host:
                  type: string
                  maxLength: 253
                  x-kubernetes-validations:
                    - rule: \"!format.dns1123Subdomain().validate(self).hasValue()\"
                      messageExpression: \"'host: ' + format.dns1123Subdomain().validate(self).value().join(', ')\"
                version:
                  type: string
                  maxLength: 64
                  x-kubernetes-validations:
                    - {rule: \"isSemver(self, true)\", message: version must be a semantic version}
                minVersion: {type: string, maxLength: 64}
                names:
                  type: array
                  maxItems: 500
                  items: {type: string, maxLength: 8}
                  x-kubernetes-validations:
                    - {rule: \"self.all(x, self.exists_one(y, x == y))\", message: names must be unique}
              x-kubernetes-validations:
                - rule: \"!has(self.minVersion) || !isSemver(self.version, true) || !semver(self.version, true).isLessThan(semver(self.minVersion, true))\"
                  message: version must not be below minVersion
";

#[test]
fn cel_format_and_semver_rules_check_objects_and_a_rule_too_costly_for_an_object_refuses_it() {
    let s = TestServer::start();
    let crd = s.write_file("releases.yaml", RELEASES);
    install_crd(&s, &crd, "releases.checks.example.com");
    let release = |spec: &str| {
        let file = s.write_file(
            "release.yaml",
            &format!("apiVersion: checks.example.com/v1\nkind: Release\nmetadata: {{name: r}}\nspec: {spec}\n"),
        );
        file.to_str().unwrap().to_string()
    };
    for (spec, message) in [
        (
            "{host: Bad_Host, version: 1.0.0}",
            "spec.host: Invalid value: \"string\": host: a lowercase RFC 1123 subdomain must consist of",
        ),
        (
            "{host: example.com, version: banana}",
            "spec.version: Invalid value: \"string\": version must be a semantic version",
        ),
        (
            "{host: example.com, version: v1.2, minVersion: 1.10.0}",
            "spec: Invalid value: \"object\": version must not be below minVersion",
        ),
    ] {
        let err = s.kubectl_err(&["apply", "-f", &release(spec)]);
        assert!(err.contains(message), "{spec}: {err}");
    }
    s.kubectl_ok(&[
        "apply",
        "-f",
        &release("{host: example.com, version: v1.10, minVersion: 1.9.0, names: [a, b]}"),
    ]);

    // The rule is affordable for the schema's bounds (so the CRD was accepted) but not
    // for a list this long: refused before it runs, with kube-apiserver's words.
    let names: Vec<String> = (0..500).map(|i| format!("n{i:07}")).collect();
    let body = serde_json::json!({"apiVersion": "checks.example.com/v1", "kind": "Release",
        "metadata": {"name": "long"}, "spec": {"host": "example.com", "version": "1.0.0", "names": names}});
    let rt = tokio::runtime::Runtime::new().unwrap();
    let c = rt.block_on(s.client());
    let refused = rt.block_on(raw_request(
        &c,
        "POST",
        "/apis/checks.example.com/v1/namespaces/default/releases",
        Some("application/json"),
        body.to_string(),
    ));
    assert_eq!(refused.status, 422, "{}", refused.text);
    assert_eq!(refused.json["reason"], "Invalid");
    assert_eq!(
        refused.json["details"]["causes"][0]["message"],
        "Invalid value: \"array\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: names must be unique",
        "{}",
        refused.text
    );
    assert_eq!(refused.json["details"]["causes"][0]["field"], "spec.names");
}

const PLANS: &str = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: plans.versions.example.com
spec:
  group: versions.example.com
  scope: Namespaced
  names: {plural: plans, singular: plan, kind: Plan}
  versions:
    - name: v1
      served: true
      storage: true
      schema: &schema
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, properties: {steps: {type: integer}}}
    - name: v1beta1
      served: true
      storage: false
      deprecated: true
      deprecationWarning: versions.example.com/v1beta1 Plan is going away; use v1
      schema: *schema
    - name: v1alpha1
      served: false
      storage: false
      schema: *schema
";

#[test]
fn a_multi_version_crd_serves_each_object_in_every_served_version() {
    let s = TestServer::start();
    let crd = s.write_file("plans.yaml", PLANS);
    install_crd(&s, &crd, "plans.versions.example.com");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let c = rt.block_on(s.client());
    let get = |path: &str| rt.block_on(raw_request(&c, "GET", path, None, ""));
    let post = |path: &str, body: &str| {
        rt.block_on(raw_request(
            &c,
            "POST",
            path,
            Some("application/json"),
            body.to_string(),
        ))
    };

    // Written in the deprecated version: a warning, and the object is stored in v1.
    let created = post(
        "/apis/versions.example.com/v1beta1/namespaces/default/plans",
        r#"{"apiVersion":"versions.example.com/v1beta1","kind":"Plan","metadata":{"name":"p"},"spec":{"steps":3}}"#,
    );
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.json["apiVersion"], "versions.example.com/v1beta1");
    let warning = created
        .headers
        .get("warning")
        .map(|v| v.to_str().unwrap().to_string());
    assert_eq!(
        warning.as_deref(),
        Some(r#"299 - "versions.example.com/v1beta1 Plan is going away; use v1""#)
    );
    for (version, path) in [
        (
            "v1",
            "/apis/versions.example.com/v1/namespaces/default/plans/p",
        ),
        (
            "v1beta1",
            "/apis/versions.example.com/v1beta1/namespaces/default/plans/p",
        ),
    ] {
        let got = get(path);
        assert_eq!(got.status, 200, "{}", got.text);
        assert_eq!(
            got.json["apiVersion"],
            format!("versions.example.com/{version}")
        );
        assert_eq!(got.json["spec"]["steps"], 3);
        let listed = get(path.trim_end_matches("/p"));
        assert_eq!(
            listed.json["items"][0]["apiVersion"],
            format!("versions.example.com/{version}"),
            "{}",
            listed.text
        );
    }
    // kubectl shows the warning; an unserved version is not there.
    let out = s.kubectl(&["get", "plans.v1beta1.versions.example.com", "p"]);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("Warning: versions.example.com/v1beta1 Plan is going away"),
        "{out:?}"
    );
    assert_eq!(
        get("/apis/versions.example.com/v1alpha1/namespaces/default/plans").status,
        404
    );

    // Moving storage to v1beta1 records both as stored versions.
    let moved = PLANS
        .replace("      storage: true\n", "      storage: STORAGE_V1\n")
        .replace(
            "      storage: false\n      deprecated",
            "      storage: true\n      deprecated",
        )
        .replace("STORAGE_V1", "false");
    let file = s.write_file("plans-moved.yaml", &moved);
    s.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    eventually("storedVersions v1 and v1beta1", || {
        s.kubectl_ok(&[
            "get",
            "crd",
            "plans.versions.example.com",
            "-o",
            "jsonpath={.status.storedVersions}",
        ]) == r#"["v1","v1beta1"]"#
    });
    let got = get("/apis/versions.example.com/v1/namespaces/default/plans/p");
    assert_eq!(
        got.json["apiVersion"], "versions.example.com/v1",
        "{}",
        got.text
    );
}

#[test]
fn after_a_restart_installed_kinds_are_served_once_the_server_is_ready() {
    let mut s = TestServer::start();
    let crd = s.write_file("crd.yaml", CRONTABS_CRD);
    install_crd(&s, &crd, "crontabs.stable.example.com");
    let ct = s.write_file("ct.yaml", CRONTAB);
    s.kubectl_ok(&["apply", "-f", ct.to_str().unwrap()]);
    s.restart();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let c = rt.block_on(s.client());
    let get = |path: &str| rt.block_on(raw_request(&c, "GET", path, None, ""));
    // Ready means every stored CRD is served: the first read after it finds the kind.
    eventually("/readyz answers 200", || get("/readyz").status == 200);
    let found = get("/apis/stable.example.com/v1/namespaces/default/crontabs/nightly");
    assert_eq!(found.status, 200, "{}", found.text);
    let verbose = get("/readyz?verbose").text;
    assert!(
        verbose.contains("[+]poststarthook/crd-informer-synced ok"),
        "{verbose}"
    );
}
