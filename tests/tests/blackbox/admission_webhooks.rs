//! Admission webhooks: a real HTTPS webhook (a small Python server answering
//! AdmissionReview v1) refuses, warns and mutates through kubectl; webhooks that are down
//! or slow follow their failurePolicy within their timeout; rules, selectors, match
//! conditions and dry-run rules decide who is called.

use std::net::TcpListener;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use apiserver_tests::credentials::TestCa;
use apiserver_tests::webhooks::{ca_bundle, WebhookServer};
use apiserver_tests::TestServer;
use base64::Engine;
use serde_json::Value;

/// `/validate` refuses objects labelled `deny=true` (403, with a message) and every
/// service account token request, and warns about `warn=true`; `/mutate` adds the label `mutated-by=webhook`; `/slow` answers after 20
/// seconds. Every request's AdmissionReview is appended as a line to the log file.
const WEBHOOK: &str = r#"
import base64, json, ssl, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = sys.argv[3]

class Admit(BaseHTTPRequestHandler):
    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        req = review["request"]
        with open(LOG, "a") as log:
            log.write(json.dumps({"path": self.path, "request": req}) + "\n")
        obj = req.get("object") or req.get("oldObject") or {}
        labels = (obj.get("metadata") or {}).get("labels") or {}
        response = {"uid": req["uid"], "allowed": True}
        path = self.path.split("?")[0]
        if path == "/slow":
            time.sleep(20)
        elif path == "/validate":
            if labels.get("deny") == "true":
                response["allowed"] = False
                response["status"] = {"code": 403, "reason": "Forbidden",
                                      "message": "objects labelled deny=true are not allowed"}
            if req.get("subResource") == "token":
                response["allowed"] = False
                response["status"] = {"code": 403, "message": "tokens are not issued here"}
            if labels.get("warn") == "true":
                response["warnings"] = ["this object is labelled warn=true"]
        elif path == "/mutate":
            if "labels" in obj.get("metadata", {}):
                patch = [{"op": "add", "path": "/metadata/labels/mutated-by", "value": "webhook"}]
            else:
                patch = [{"op": "add", "path": "/metadata/labels", "value": {"mutated-by": "webhook"}}]
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "response": response}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Admit)
tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
tls.load_cert_chain(sys.argv[1], sys.argv[2])
server.socket = tls.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

/// The test server and its webhook.
struct Setup {
    s: TestServer,
    webhook: WebhookServer,
    log: PathBuf,
    ca_bundle: String,
}

impl Setup {
    fn start() -> Setup {
        let s = TestServer::start();
        let log = s.data_dir().join("admission-requests.log");
        std::fs::write(&log, "").unwrap();
        let webhook = WebhookServer::start(&s, "admit.py", WEBHOOK, &[&log]);
        let ca_bundle = ca_bundle(&s);
        Setup {
            s,
            webhook,
            log,
            ca_bundle,
        }
    }

    /// The AdmissionReview requests the webhook received on `path`, in order.
    fn received(&self, path: &str) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|l| l["path"].as_str().unwrap().split('?').next() == Some(path))
            .map(|l| l["request"].clone())
            .collect()
    }

    /// Applies a webhook configuration (`kind`: Mutating or Validating) with one webhook.
    fn configure(&self, kind: &str, name: &str, url: &str, extra: &str) {
        let client = format!("{{url: '{url}', caBundle: {}}}", self.ca_bundle);
        configure_webhook(&self.s, kind, name, &client, extra);
    }
}

/// Applies a webhook configuration (`kind`: Mutating or Validating) with one webhook
/// for ConfigMap creates and updates, whose `clientConfig` is `client` (YAML flow).
fn configure_webhook(s: &TestServer, kind: &str, name: &str, client: &str, extra: &str) {
    let manifest = format!(
        "\
apiVersion: admissionregistration.k8s.io/v1
kind: {kind}WebhookConfiguration
metadata:
  name: {name}
webhooks:
  - name: {name}
    admissionReviewVersions: [v1]
    sideEffects: None
    clientConfig: {client}
    rules:
      - {{operations: [CREATE, UPDATE], apiGroups: [''], apiVersions: [v1], resources: [configmaps]}}
{extra}"
    );
    let file = s.write_file(&format!("{name}.yaml"), &manifest);
    s.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
}

impl Setup {
    /// Waits until a server-side dry run of a ConfigMap with `labels` fails with `want`
    /// in kubectl's error (the configuration has reached the server's cache).
    fn wait_until_refused(&self, namespace: &str, labels: &str, want: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = self.s.kubectl_with_stdin(
                &["create", "--dry-run=server", "-n", namespace, "-f", "-"],
                Some(&configmap("probe", labels)),
            );
            let stderr = String::from_utf8_lossy(&out.stderr).to_string();
            if !out.status.success() && stderr.contains(want) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the webhook never refused the probe with {want:?}; last answer: {stderr}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn configmap(name: &str, labels: &str) -> String {
    format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"{name}\",\"labels\":{{{labels}}}}},\"data\":{{\"k\":\"v\"}}}}"
    )
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_validating_webhook_refuses_with_its_message_and_its_warnings_reach_kubectl() {
    let t = Setup::start();
    t.configure(
        "Validating",
        "deny.example.dev",
        &t.webhook.url("/validate"),
        "",
    );
    t.wait_until_refused("default", "\"deny\":\"true\"", "objects labelled deny=true");

    let out = t.s.kubectl_with_stdin(
        &["create", "-f", "-"],
        Some(&configmap("refused", "\"deny\":\"true\"")),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("Error from server (Forbidden)")
            && stderr.contains(
                "admission webhook \"deny.example.dev\" denied the request: objects labelled deny=true are not allowed"
            ),
        "{stderr}"
    );
    let missing = t.s.kubectl(&["get", "configmap", "refused"]);
    assert!(!missing.status.success(), "a refused object was stored");

    let out = t.s.kubectl_with_stdin(
        &["create", "-f", "-"],
        Some(&configmap("warned", "\"warn\":\"true\"")),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Warning: this object is labelled warn=true"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // What the webhook was told: who, what, where; on update the old object too.
    t.s.kubectl_ok(&["label", "configmap", "warned", "extra=1"]);
    let reviews = t.received("/validate");
    let create = reviews
        .iter()
        .find(|r| r["name"] == "warned" && r["operation"] == "CREATE")
        .expect("the create of `warned` was sent to the webhook");
    assert_eq!(create["namespace"], "default");
    assert_eq!(create["userInfo"]["username"], "admin");
    assert_eq!(create["kind"]["kind"], "ConfigMap");
    assert_eq!(create["resource"]["resource"], "configmaps");
    assert_eq!(create["dryRun"], false);
    assert_eq!(create["oldObject"], Value::Null);
    assert_eq!(create["object"]["data"]["k"], "v");
    let update = reviews
        .iter()
        .find(|r| r["name"] == "warned" && r["operation"] == "UPDATE")
        .expect("the update of `warned` was sent to the webhook");
    assert_eq!(update["object"]["metadata"]["labels"]["extra"], "1");
    assert!(update["oldObject"]["metadata"]["labels"]
        .get("extra")
        .is_none());
}

#[test]
fn a_mutating_webhook_adds_a_label_only_where_its_namespace_selector_says() {
    let t = Setup::start();
    t.s.kubectl_ok(&["create", "namespace", "mutated"]);
    t.s.kubectl_ok(&["label", "namespace", "mutated", "webhooks=on"]);
    t.s.kubectl_ok(&["create", "namespace", "plain"]);
    // A validating webhook refusing the unmutated tells when the mutating one is active,
    // and proves validation sees the mutated object.
    t.configure(
        "Mutating",
        "label.example.dev",
        &t.webhook.url("/mutate"),
        "    namespaceSelector: {matchLabels: {webhooks: 'on'}}\n",
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = t.s.kubectl_with_stdin(
            &[
                "create",
                "--dry-run=server",
                "-n",
                "mutated",
                "-o",
                "json",
                "-f",
                "-",
            ],
            Some(&configmap("probe", "")),
        );
        let obj: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if obj["metadata"]["labels"]["mutated-by"] == "webhook" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the mutating webhook never applied"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    t.s.kubectl_ok(&[
        "create",
        "configmap",
        "m",
        "-n",
        "mutated",
        "--from-literal=a=1",
    ]);
    let labels = t.s.kubectl_ok(&[
        "get",
        "configmap",
        "m",
        "-n",
        "mutated",
        "-o",
        "jsonpath={.metadata.labels}",
    ]);
    assert!(labels.contains("\"mutated-by\":\"webhook\""), "{labels}");

    t.s.kubectl_ok(&[
        "create",
        "configmap",
        "p",
        "-n",
        "plain",
        "--from-literal=a=1",
    ]);
    let labels = t.s.kubectl_ok(&[
        "get",
        "configmap",
        "p",
        "-n",
        "plain",
        "-o",
        "jsonpath={.metadata.labels}",
    ]);
    assert!(!labels.contains("mutated-by"), "{labels}");
    assert!(
        t.received("/mutate")
            .iter()
            .all(|r| r["namespace"] == "mutated"),
        "the webhook was called for a namespace its selector does not select"
    );
}

#[test]
fn a_webhook_that_is_down_blocks_with_fail_and_is_skipped_with_ignore() {
    let t = Setup::start();
    let down = format!("https://127.0.0.1:{}/validate", closed_port());
    t.configure(
        "Validating",
        "down-fail.example.dev",
        &down,
        "    failurePolicy: Fail\n    objectSelector: {matchLabels: {policy: fail}}\n",
    );
    t.configure(
        "Validating",
        "down-ignore.example.dev",
        &down,
        "    failurePolicy: Ignore\n    objectSelector: {matchLabels: {policy: ignore}}\n",
    );
    t.wait_until_refused(
        "default",
        "\"policy\":\"fail\"",
        "failed calling webhook \"down-fail.example.dev\"",
    );
    let out = t.s.kubectl_with_stdin(
        &["create", "-f", "-"],
        Some(&configmap("blocked", "\"policy\":\"fail\"")),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Error from server (InternalError)")
            && stderr.contains(
                "failed calling webhook \"down-fail.example.dev\": failed to call webhook: Post"
            ),
        "{stderr}"
    );
    let out = t.s.kubectl_with_stdin(
        &["create", "-f", "-"],
        Some(&configmap("skipped", "\"policy\":\"ignore\"")),
    );
    assert!(
        out.status.success(),
        "failurePolicy Ignore did not skip the webhook: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    t.s.kubectl_ok(&["get", "configmap", "skipped"]);
}

#[test]
fn a_slow_webhook_is_given_up_on_within_its_timeout() {
    let t = Setup::start();
    let slow = t.webhook.url("/slow");
    t.configure(
        "Validating",
        "slow-fail.example.dev",
        &slow,
        "    timeoutSeconds: 2\n    failurePolicy: Fail\n    objectSelector: {matchLabels: {policy: fail}}\n",
    );
    t.configure(
        "Validating",
        "slow-ignore.example.dev",
        &slow,
        "    timeoutSeconds: 2\n    failurePolicy: Ignore\n    objectSelector: {matchLabels: {policy: ignore}}\n",
    );
    t.wait_until_refused("default", "\"policy\":\"fail\"", "slow-fail.example.dev");

    let started = Instant::now();
    let out = t.s.kubectl_with_stdin(
        &["create", "-f", "-"],
        Some(&configmap("timed-out", "\"policy\":\"fail\"")),
    );
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("failed calling webhook \"slow-fail.example.dev\"")
            && stderr.contains("context deadline exceeded"),
        "{stderr}"
    );
    // The webhook answers after 20 s; the server gave up after its 2 s.
    assert!(took < Duration::from_secs(10), "took {took:?}");

    let started = Instant::now();
    let out = t.s.kubectl_with_stdin(
        &["create", "-f", "-"],
        Some(&configmap("went-on", "\"policy\":\"ignore\"")),
    );
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    // The webhook was sent the request with its timeout, as upstream sends it.
    assert!(t.received("/slow").iter().any(|r| r["name"] == "went-on"));
    let log = std::fs::read_to_string(&t.log).unwrap();
    assert!(log.contains("\"path\": \"/slow?timeout=2s\""), "{log}");
}

#[test]
fn deletes_dry_runs_and_match_conditions_decide_what_is_sent() {
    let t = Setup::start();
    // Refuses deletes of objects labelled deny=true (it sees them as oldObject), only
    // for names the match condition selects.
    let manifest = format!(
        "\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: guard.example.dev
webhooks:
  - name: guard.example.dev
    admissionReviewVersions: [v1]
    sideEffects: None
    clientConfig: {{url: '{url}', caBundle: {ca}}}
    rules:
      - {{operations: [DELETE], apiGroups: [''], apiVersions: [v1], resources: [configmaps]}}
    matchConditions:
      - name: guarded-names
        expression: \"oldObject.metadata.name.startsWith('guarded-')\"
  - name: effects.example.dev
    admissionReviewVersions: [v1]
    sideEffects: Some
    clientConfig: {{url: '{url}', caBundle: {ca}}}
    objectSelector: {{matchLabels: {{effects: 'yes'}}}}
    rules:
      - {{operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [configmaps]}}
",
        url = t.webhook.url("/validate"),
        ca = t.ca_bundle
    );
    let file = t.s.write_file("guard.yaml", &manifest);
    t.s.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    t.wait_until_refused(
        "default",
        "\"effects\":\"yes\"",
        "admission webhook \"effects.example.dev\" does not support dry run",
    );

    for name in ["guarded-a", "free-a"] {
        t.s.kubectl_with_stdin(
            &["create", "-f", "-"],
            Some(&configmap(name, "\"deny\":\"true\"")),
        );
    }
    let refused = t.s.kubectl_err(&["delete", "configmap", "guarded-a"]);
    assert!(
        refused.contains("admission webhook \"guard.example.dev\" denied the request: objects labelled deny=true are not allowed"),
        "{refused}"
    );
    t.s.kubectl_ok(&["get", "configmap", "guarded-a"]);
    t.s.kubectl_ok(&["delete", "configmap", "free-a"]);
    let deletes: Vec<Value> = t
        .received("/validate")
        .into_iter()
        .filter(|r| r["operation"] == "DELETE")
        .collect();
    assert_eq!(deletes.len(), 1, "{deletes:?}");
    assert_eq!(deletes[0]["name"], "guarded-a");
    assert_eq!(deletes[0]["object"], Value::Null);
    assert_eq!(deletes[0]["oldObject"]["metadata"]["name"], "guarded-a");
    assert_eq!(deletes[0]["options"]["kind"], "DeleteOptions");

    // A real create with side effects is sent; a dry run is refused before any call.
    t.s.kubectl_with_stdin(
        &["create", "-f", "-"],
        Some(&configmap("effects-real", "\"effects\":\"yes\"")),
    );
    t.s.kubectl_ok(&["get", "configmap", "effects-real"]);
    assert!(t.received("/validate").iter().all(|r| r["dryRun"] == false));
}

#[test]
fn subresources_with_a_kind_of_their_own_are_admitted_too() {
    let t = Setup::start();
    t.s.kubectl_ok(&["create", "serviceaccount", "robot"]);
    let manifest = format!(
        "\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: tokens.example.dev
webhooks:
  - name: tokens.example.dev
    admissionReviewVersions: [v1]
    sideEffects: None
    clientConfig: {{url: '{url}', caBundle: {ca}}}
    rules:
      - {{operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [serviceaccounts/token]}}
",
        url = t.webhook.url("/validate"),
        ca = t.ca_bundle
    );
    let file = t.s.write_file("tokens.yaml", &manifest);
    t.s.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let refused = loop {
        let out = t.s.kubectl(&["create", "token", "robot"]);
        if !out.status.success() {
            break String::from_utf8_lossy(&out.stderr).to_string();
        }
        assert!(Instant::now() < deadline, "the token webhook never applied");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        refused.contains("admission webhook \"tokens.example.dev\" denied the request: tokens are not issued here"),
        "{refused}"
    );
    let review = t
        .received("/validate")
        .into_iter()
        .last()
        .expect("the token request was sent");
    assert_eq!(review["resource"]["resource"], "serviceaccounts");
    assert_eq!(review["subResource"], "token");
    assert_eq!(review["kind"]["kind"], "TokenRequest");
    assert_eq!(review["kind"]["group"], "authentication.k8s.io");
    assert_eq!(review["name"], "robot");
    // The service account itself is not a subresource: writes to it are not sent.
    t.s.kubectl_ok(&["label", "serviceaccount", "robot", "a=b"]);
    assert!(t
        .received("/validate")
        .iter()
        .all(|r| r["subResource"] == "token"));
}

#[test]
fn a_webhook_named_by_a_service_is_called_where_the_service_points() {
    let s = TestServer::start();
    let ca = TestCa::new("webhook-service-ca");
    let (cert, key) = ca.serving_cert(&["admit.webhooks.svc"]);
    let (cert, key) = (
        s.write_file("admit.crt", &cert),
        s.write_file("admit.key", &key),
    );
    let log = s.data_dir().join("admission-requests.log");
    std::fs::write(&log, "").unwrap();
    let webhook = WebhookServer::start_with_cert(&s, "admit.py", WEBHOOK, (&cert, &key), &[&log]);
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&ca.pem);
    let t = Setup {
        s,
        webhook,
        log,
        ca_bundle,
    };
    let client = format!(
        "{{service: {{namespace: webhooks, name: admit, port: {}, path: /validate}}, caBundle: {}}}",
        t.webhook.port, t.ca_bundle
    );
    configure_webhook(&t.s, "Validating", "by-service.example.dev", &client, "");
    // No such Service yet: the call fails (failurePolicy Fail), saying why.
    t.wait_until_refused(
        "default",
        "\"any\":\"thing\"",
        "service/admit in \"webhooks\" is not present",
    );
    // An ExternalName Service to this machine; the certificate names admit.webhooks.svc.
    t.s.kubectl_ok(&["create", "namespace", "webhooks"]);
    t.s.kubectl_ok(&[
        "create",
        "service",
        "externalname",
        "admit",
        "-n",
        "webhooks",
        "--external-name",
        "localhost",
    ]);
    t.wait_until_refused("default", "\"deny\":\"true\"", "objects labelled deny=true");
    let allowed = t.s.kubectl_with_stdin(
        &["create", "-f", "-"],
        Some(&configmap("through-service", "\"ok\":\"true\"")),
    );
    assert!(
        allowed.status.success(),
        "{}",
        String::from_utf8_lossy(&allowed.stderr)
    );
    assert!(
        t.received("/validate")
            .iter()
            .any(|r| r["name"] == "through-service"),
        "the webhook was not called at the Service's path"
    );
}

/// A Gizmo in `version` with `labels` (JSON members).
fn gizmo(version: &str, name: &str, labels: &str) -> String {
    format!(
        "{{\"apiVersion\":\"example.com/{version}\",\"kind\":\"Gizmo\",\"metadata\":{{\"name\":\"{name}\",\"labels\":{{{labels}}}}},\"spec\":{{}}}}"
    )
}

#[test]
fn a_webhook_for_one_crd_version_is_called_for_the_other_converted_unless_exact() {
    let t = Setup::start();
    let crd =
        t.s.write_file("gizmos.yaml", apiserver_tests::objects::GIZMOS_CRD);
    apiserver_tests::objects::install_crd(&t.s, &crd, "gizmos.example.com");
    // Both webhooks name v1 only; matchPolicy is left to its default (Equivalent).
    let client = |path: &str| {
        format!(
            "{{url: '{}', caBundle: {}}}",
            t.webhook.url(path),
            t.ca_bundle
        )
    };
    let manifest = |kind: &str, name: &str, path: &str, extra: &str| {
        format!(
            "\
apiVersion: admissionregistration.k8s.io/v1
kind: {kind}WebhookConfiguration
metadata: {{name: {name}}}
webhooks:
  - name: {name}
    admissionReviewVersions: [v1]
    sideEffects: None
    clientConfig: {}
    rules: [{{operations: [CREATE], apiGroups: [example.com], apiVersions: [v1], resources: [gizmos]}}]
{extra}",
            client(path)
        )
    };
    let apply = |text: String| {
        t.s.kubectl_with_stdin(&["apply", "-f", "-"], Some(&text));
    };
    apply(manifest(
        "Validating",
        "gizmos.example.dev",
        "/validate",
        "",
    ));
    apply(manifest(
        "Mutating",
        "label-gizmos.example.dev",
        "/mutate",
        "",
    ));

    // A v2 write reaches the v1 webhooks once the configurations are in the cache.
    let deadline = Instant::now() + Duration::from_secs(30);
    let refusal = loop {
        let out = t.s.kubectl_with_stdin(
            &["create", "-f", "-"],
            Some(&gizmo("v2", "refused", "\"deny\":\"true\"")),
        );
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        if !out.status.success() {
            break stderr;
        }
        t.s.kubectl_ok(&["delete", "gizmos.v2.example.com", "refused"]);
        assert!(
            Instant::now() < deadline,
            "the webhook never refused a v2 write"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        refusal.contains("objects labelled deny=true are not allowed"),
        "{refusal}"
    );
    let sent = t.received("/validate");
    let review = sent
        .iter()
        .rev()
        .find(|r| r["object"]["metadata"]["name"] == "refused")
        .expect("the refused gizmo's review");
    assert_eq!(review["kind"]["version"], "v1", "{review}");
    assert_eq!(review["resource"]["version"], "v1");
    assert_eq!(review["object"]["apiVersion"], "example.com/v1");
    assert_eq!(review["requestKind"]["version"], "v2");
    assert_eq!(review["requestResource"]["version"], "v2");

    // The mutating webhook's patch, made to the v1 object, lands on the v2 write.
    let deadline = Instant::now() + Duration::from_secs(30);
    for i in 0.. {
        let name = format!("mutated-{i}");
        t.s.kubectl_with_stdin(&["create", "-f", "-"], Some(&gizmo("v2", &name, "")));
        let stored =
            t.s.kubectl_ok(&["get", "gizmos.v2.example.com", &name, "-o", "json"]);
        let stored: Value = serde_json::from_str(&stored).unwrap();
        assert_eq!(stored["apiVersion"], "example.com/v2");
        if stored["metadata"]["labels"]["mutated-by"] == "webhook" {
            break;
        }
        assert!(Instant::now() < deadline, "never mutated: {stored}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mutated = t.received("/mutate");
    assert!(mutated
        .iter()
        .all(|r| r["object"]["apiVersion"] == "example.com/v1"));

    // matchPolicy Exact: called for v1 writes only.
    apply(manifest(
        "Validating",
        "exact-gizmos.example.dev",
        "/validate?exact",
        "    matchPolicy: Exact\n",
    ));
    let exact = || -> Vec<Value> {
        std::fs::read_to_string(&t.log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|l| l["path"].as_str().unwrap().contains("?exact"))
            .map(|l| l["request"]["object"]["metadata"]["name"].clone())
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    for i in 0.. {
        let name = format!("v1-probe-{i}");
        t.s.kubectl_with_stdin(&["create", "-f", "-"], Some(&gizmo("v1", &name, "")));
        if exact().contains(&Value::from(name)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the Exact webhook was never called"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    t.s.kubectl_with_stdin(&["create", "-f", "-"], Some(&gizmo("v2", "v2-write", "")));
    assert!(t
        .received("/validate")
        .iter()
        .any(|r| r["object"]["metadata"]["name"] == "v2-write"));
    assert!(!exact().contains(&Value::from("v2-write")), "{:?}", exact());
}
