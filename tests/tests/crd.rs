//! CustomResourceDefinitions: a definition created with kubectl becomes a served kind
//! (discovery, OpenAPI, kubectl get and explain, validation by its schema), its status
//! says so, a definition whose names are taken is not served, and deleting it stops
//! serving the kind.

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

    // A schema that cannot be served is refused with the field at fault; keywords not
    // enforced yet (lengths, CEL rules) do not keep a CRD from being served.
    let typo = s.write_file(
        "typo.yaml",
        &CRONTABS_CRD.replace("cronSpec: {type: string}", "cronSpec: {type: strin}"),
    );
    let err = s.kubectl_err(&["apply", "-f", typo.to_str().unwrap()]);
    assert!(
        err.contains("is invalid") && err.contains("unknown type `strin`"),
        "{err}"
    );
    let lenient = s.write_file(
        "lenient.yaml",
        &CRONTABS_CRD
            .replace("crontabs", "jobs")
            .replace("crontab", "job")
            .replace("CronTab", "Job")
            .replace("[ct]", "[jb]")
            .replace(
                "cronSpec: {type: string}",
                "cronSpec: {type: string, maxLength: 64, x-kubernetes-validations: [{rule: 'self.size() > 0'}]}",
            ),
    );
    install_crd(&s, &lenient, "jobs.stable.example.com");

    // Deleting the definition stops serving the kind and deletes its objects: once
    // kubectl has seen the definition go, a new one of the same name starts empty.
    s.kubectl_ok(&["delete", "crd", "crontabs.stable.example.com"]);
    assert_eq!(
        status("/apis/stable.example.com/v1/namespaces/default/crontabs"),
        404
    );
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
    }
}
