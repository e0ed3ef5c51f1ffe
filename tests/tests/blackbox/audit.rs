//! The audit log (`--audit-policy-file`, `--audit-log-path`) as an operator reads it:
//! kubectl's requests become `audit.k8s.io/v1` events with the verb, user, object and
//! status of each stage; the policy decides what is recorded and how much; refusals,
//! impersonation, watches and admission's annotations are recorded; the file rotates;
//! a bad policy or a log that cannot be written is never silent.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use apiserver_tests::credentials::{get_as, TestCa, UserCredentials};
use apiserver_tests::webhooks::WebhookServer;
use apiserver_tests::TestServer;
use serde_json::Value;

/// A server auditing with `policy` into `<dir>/audit.log`, plus `flags`.
struct Audited {
    server: TestServer,
    log: PathBuf,
    dir: tempfile::TempDir,
}

fn audited(policy: &str, flags: &[&str]) -> Audited {
    let dir = tempfile::tempdir().unwrap();
    let policy_file = dir.path().join("policy.yaml");
    std::fs::write(&policy_file, policy).unwrap();
    let log = dir.path().join("audit.log");
    let mut all = vec![format!("--audit-policy-file={}", policy_file.display())];
    if !flags.iter().any(|f| f.starts_with("--audit-log-path=")) {
        all.push(format!("--audit-log-path={}", log.display()));
    }
    all.extend(flags.iter().map(|f| f.to_string()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    Audited {
        server: TestServer::start_with_flags(&all),
        log,
        dir,
    }
}

const EVERYTHING_AT_METADATA: &str = "\
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: Metadata
";

/// Every event in the log so far.
fn events(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The log's events once one of them satisfies `found`.
fn wait_for(log: &Path, what: &str, found: impl Fn(&Value) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let all = events(log);
        if all.iter().any(&found) {
            return all;
        }
        assert!(
            Instant::now() < deadline,
            "no event {what} in the audit log:\n{}",
            lines(&all)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn lines(events: &[Value]) -> String {
    events
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The ResponseComplete event of `verb` on the object `name`.
fn completed<'a>(events: &'a [Value], verb: &str, name: &str) -> &'a Value {
    events
        .iter()
        .find(|e| {
            e["verb"] == verb && e["objectRef"]["name"] == name && e["stage"] == "ResponseComplete"
        })
        .unwrap_or_else(|| panic!("no {verb} of {name}:\n{}", lines(events)))
}

/// Every event of one request, in order.
fn of_request<'a>(events: &'a [Value], one: &Value) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["auditID"] == one["auditID"])
        .collect()
}

fn stages(events: &[&Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["stage"].as_str().unwrap().to_string())
        .collect()
}

/// RFC 3339 in UTC with six fraction digits: `2026-12-02T10:11:12.123456Z`.
fn is_micro_time(v: &Value) -> bool {
    let s = v.as_str().unwrap_or_default();
    s.len() == 27 && s.ends_with('Z') && s.as_bytes()[19] == b'.' && s.as_bytes()[10] == b'T'
}

#[test]
fn kubectl_requests_become_events_with_verb_user_object_and_status() {
    let a = audited(EVERYTHING_AT_METADATA, &[]);
    let s = &a.server;
    s.kubectl_ok(&["create", "configmap", "audited", "--from-literal=k=v"]);
    s.kubectl_ok(&["get", "configmap", "audited"]);
    let all = wait_for(&a.log, "for the get", |e| {
        e["verb"] == "get"
            && e["objectRef"]["name"] == "audited"
            && e["stage"] == "ResponseComplete"
    });

    let create = of_request(&all, completed(&all, "create", "audited"));
    assert_eq!(
        stages(&create),
        ["RequestReceived", "ResponseComplete"],
        "{}",
        lines(&all)
    );
    let (received, done) = (create[0], create[1]);
    assert_eq!(received["auditID"], done["auditID"]);
    assert_eq!(done["kind"], "Event");
    assert_eq!(done["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(done["level"], "Metadata");
    assert_eq!(done["user"]["username"], "admin");
    assert!(
        done["user"]["groups"]
            .to_string()
            .contains("system:masters"),
        "{done}"
    );
    assert!(
        done["userAgent"].as_str().unwrap().starts_with("kubectl"),
        "{done}"
    );
    assert!(
        done["sourceIPs"].to_string().contains("127.0.0.1"),
        "{done}"
    );
    assert_eq!(done["requestURI"], received["requestURI"]);
    assert!(done["requestURI"]
        .as_str()
        .unwrap()
        .starts_with("/api/v1/namespaces/default/configmaps?"));
    let object = &done["objectRef"];
    assert_eq!(object["resource"], "configmaps");
    assert_eq!(object["namespace"], "default");
    assert_eq!(object["apiVersion"], "v1");
    assert!(
        object.get("apiGroup").is_none(),
        "the core group is empty: {object}"
    );
    assert!(
        !object["uid"].as_str().unwrap_or_default().is_empty(),
        "{object}"
    );
    assert!(!object["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .is_empty());
    assert_eq!(done["responseStatus"]["code"], 201);
    assert_eq!(
        done["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );
    assert!(done.get("requestObject").is_none() && done.get("responseObject").is_none());
    assert!(received.get("responseStatus").is_none());
    assert!(is_micro_time(&done["requestReceivedTimestamp"]), "{done}");
    assert!(is_micro_time(&done["stageTimestamp"]));
    assert_eq!(
        received["stageTimestamp"],
        received["requestReceivedTimestamp"]
    );

    // A failure carries its Status' reason and message.
    s.kubectl_err(&["get", "configmap", "missing"]);
    let all = wait_for(&a.log, "for the 404", |e| {
        e["objectRef"]["name"] == "missing" && e["stage"] == "ResponseComplete"
    });
    let status = &completed(&all, "get", "missing")["responseStatus"];
    assert_eq!(status["code"], 404);
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["message"], "configmaps \"missing\" not found");

    // The Audit-ID a client sends is the event's, and is sent back; else one is made.
    let path = "/api/v1/namespaces/default/configmaps/audited";
    let r = get_as(s.kubeconfig(), path, &[("Audit-ID", "my-own-id")]);
    assert_eq!(r.headers["audit-id"], "my-own-id");
    wait_for(&a.log, "with the client's audit ID", |e| {
        e["auditID"] == "my-own-id"
    });
    let r = get_as(s.kubeconfig(), path, &[]);
    let made = r.headers["audit-id"].to_str().unwrap().to_string();
    assert_eq!(made.len(), 36, "a UUID: {made}");
    wait_for(&a.log, "with the made audit ID", |e| {
        e["auditID"] == made.as_str()
    });
}

#[test]
fn the_policy_decides_what_is_recorded_and_how_much() {
    let a = audited(
        "\
apiVersion: audit.k8s.io/v1
kind: Policy
omitManagedFields: true
rules:
  - level: None
    namespaces: [quiet]
  - level: RequestResponse
    namespaces: [loud]
  - level: Request
    namespaces: [medium]
  - level: Metadata
    omitStages: [RequestReceived]
    resources: [{group: '', resources: [namespaces]}]
  - level: Metadata
    nonResourceURLs: ['/version*']
",
        &[],
    );
    let s = &a.server;
    for ns in ["quiet", "loud", "medium"] {
        s.kubectl_ok(&["create", "namespace", ns]);
        s.kubectl_ok(&["create", "configmap", "c", "-n", ns, "--from-literal=k=v"]);
    }
    s.kubectl_ok(&["get", "--raw", "/healthz"]);
    // The last request: once it is in the log, the ones before it are too.
    s.kubectl_ok(&["get", "--raw", "/version"]);
    let uri = |e: &Value, path: &str| {
        e["requestURI"]
            .as_str()
            .is_some_and(|u| u.starts_with(path))
    };
    let all = wait_for(&a.log, "for /version", |e| uri(e, "/version"));

    let in_ns = |ns: &str| -> Vec<&Value> {
        all.iter()
            .filter(|e| {
                e["objectRef"]["namespace"] == ns && e["objectRef"]["resource"] == "configmaps"
            })
            .collect()
    };
    assert!(in_ns("quiet").is_empty(), "{}", lines(&all));
    assert!(
        all.iter().all(|e| !uri(e, "/healthz")),
        "no rule names /healthz: {}",
        lines(&all)
    );

    let loud = in_ns("loud");
    assert_eq!(stages(&loud), ["RequestReceived", "ResponseComplete"]);
    assert!(
        loud[0].get("requestObject").is_none(),
        "bodies come after the handler"
    );
    let done = loud[1];
    assert_eq!(done["level"], "RequestResponse");
    assert_eq!(done["requestObject"]["data"]["k"], "v", "{done}");
    assert_eq!(done["responseObject"]["data"]["k"], "v");
    assert!(!done["responseObject"]["metadata"]["uid"].is_null());
    assert!(done["responseObject"]["metadata"]
        .get("managedFields")
        .is_none());

    let medium = in_ns("medium");
    assert_eq!(medium[1]["level"], "Request");
    assert_eq!(medium[1]["requestObject"]["data"]["k"], "v");
    assert!(medium[1].get("responseObject").is_none());

    // Namespaces at Metadata, without their RequestReceived stage.
    let namespaces: Vec<&Value> = all
        .iter()
        .filter(|e| e["objectRef"]["resource"] == "namespaces" && e["verb"] == "create")
        .collect();
    assert_eq!(
        stages(&namespaces),
        ["ResponseComplete"; 3],
        "{}",
        lines(&all)
    );
    assert!(namespaces.iter().all(|e| e.get("requestObject").is_none()));
    let version = all.iter().find(|e| uri(e, "/version")).unwrap();
    assert_eq!(version["verb"], "get");
    assert!(version.get("objectRef").is_none());
}

const TOKENS: &str = "bob-token,bob,1002,dev\n";

/// kubectl's discovery requests come first; the ones asserted on are about ConfigMaps.
fn is_configmaps(e: &Value) -> bool {
    e["objectRef"]["resource"] == "configmaps"
}

#[test]
fn refusals_and_impersonation_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, TOKENS).unwrap();
    let a = audited(
        EVERYTHING_AT_METADATA,
        &[&format!("--token-auth-file={}", tokens.display())],
    );
    let s = &a.server;
    let bob = s.kubeconfig_for("bob", &UserCredentials::Token("bob-token".into()));
    let out = s.kubectl_as(&bob, &["get", "configmaps", "-n", "default"]);
    assert!(!out.status.success());
    let all = wait_for(&a.log, "of bob's refused list", |e| {
        is_configmaps(e) && e["user"]["username"] == "bob" && e["stage"] == "ResponseComplete"
    });
    let refused = all
        .iter()
        .find(|e| {
            is_configmaps(e) && e["user"]["username"] == "bob" && e["stage"] == "ResponseComplete"
        })
        .unwrap();
    assert_eq!(refused["verb"], "list");
    assert_eq!(refused["user"]["uid"], "1002");
    assert!(
        refused["user"]["groups"].to_string().contains("\"dev\""),
        "{refused}"
    );
    assert_eq!(refused["responseStatus"]["code"], 403);
    assert_eq!(refused["responseStatus"]["reason"], "Forbidden");
    assert_eq!(
        refused["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );
    assert!(refused["annotations"]
        .as_object()
        .unwrap()
        .contains_key("authorization.k8s.io/reason"));

    // The admin acting as bob: the admin is the user, bob the impersonated one.
    let out = s.kubectl(&["get", "configmaps", "-n", "kube-system", "--as=bob"]);
    assert!(!out.status.success());
    let all = wait_for(&a.log, "impersonating bob", |e| {
        is_configmaps(e)
            && e["impersonatedUser"]["username"] == "bob"
            && e["stage"] == "ResponseComplete"
    });
    let as_bob = all
        .iter()
        .find(|e| {
            is_configmaps(e)
                && e["impersonatedUser"]["username"] == "bob"
                && e["stage"] == "ResponseComplete"
        })
        .unwrap();
    assert_eq!(as_bob["user"]["username"], "admin");
    assert_eq!(as_bob["objectRef"]["namespace"], "kube-system");
    assert_eq!(as_bob["responseStatus"]["code"], 403);

    // A refused credential: one event, no user, the method tried.
    let stranger = s.kubeconfig_for("stranger", &UserCredentials::Token("wrong".into()));
    let r = get_as(&stranger, "/api/v1/namespaces/default/secrets", &[]);
    assert_eq!(r.status, 401);
    assert!(r.headers.contains_key("audit-id"));
    let all = wait_for(&a.log, "of the 401", |e| e["responseStatus"]["code"] == 401);
    let failed: Vec<&Value> = all
        .iter()
        .filter(|e| e["responseStatus"]["code"] == 401)
        .collect();
    assert_eq!(stages(&failed), ["ResponseStarted"], "as upstream");
    assert_eq!(
        failed[0]["responseStatus"]["message"],
        "Authentication failed, attempted: bearer"
    );
    assert_eq!(failed[0]["user"], serde_json::json!({}));
    assert_eq!(failed[0]["objectRef"]["resource"], "secrets");
}

#[test]
fn a_watch_is_recorded_when_it_starts_and_when_it_ends() {
    let a = audited(EVERYTHING_AT_METADATA, &[]);
    let s = &a.server;
    s.kubectl_ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1",
    ]);
    let all = wait_for(&a.log, "ending the watch", |e| {
        e["verb"] == "watch" && e["stage"] == "ResponseComplete"
    });
    let watch: Vec<&Value> = all.iter().filter(|e| e["verb"] == "watch").collect();
    assert_eq!(
        stages(&watch),
        ["RequestReceived", "ResponseStarted", "ResponseComplete"],
        "{}",
        lines(&all)
    );
    assert!(watch.iter().all(|e| e["auditID"] == watch[0]["auditID"]));
    assert_eq!(watch[1]["responseStatus"]["code"], 200);
    assert_eq!(watch[2]["objectRef"]["resource"], "configmaps");
}

#[test]
fn the_log_rotates_at_maxsize_and_keeps_maxbackup_files() {
    let a = audited(
        "\
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: RequestResponse
    resources: [{group: '', resources: [configmaps]}]
",
        &["--audit-log-maxsize=1", "--audit-log-maxbackup=2"],
    );
    let s = &a.server;
    // Each create's ResponseComplete event carries ~0.6 MB (request and response), so
    // each file holds one: eight creates rotate seven times.
    let big = s.write_file("big.txt", &"x".repeat(300 * 1024));
    let from_file = format!("--from-file=big={}", big.display());
    for i in 0..8 {
        s.kubectl_ok(&["create", "configmap", &format!("big-{i}"), &from_file]);
    }
    wait_for(&a.log, "of the last create", |e| {
        e["objectRef"]["name"] == "big-7" && e["stage"] == "ResponseComplete"
    });
    let mut backups: Vec<String> = std::fs::read_dir(a.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("audit-"))
        .collect();
    backups.sort();
    assert_eq!(backups.len(), 2, "{backups:?}");
    for name in &backups {
        // audit-2026-12-02T10-11-12.123.log
        let stamp = name
            .strip_prefix("audit-")
            .and_then(|n| n.strip_suffix(".log"))
            .unwrap_or_else(|| panic!("{name}"));
        let b = stamp.as_bytes();
        assert!(
            stamp.len() == 23 && b[10] == b'T' && b[13] == b'-' && b[16] == b'-' && b[19] == b'.',
            "{name}"
        );
        let size = std::fs::metadata(a.dir.path().join(name)).unwrap().len();
        assert!(size <= 1024 * 1024, "{name}: {size} bytes");
        for line in std::fs::read_to_string(a.dir.path().join(name))
            .unwrap()
            .lines()
        {
            serde_json::from_str::<Value>(line).expect("whole events in every file");
        }
    }
}

#[test]
fn bad_audit_flags_stop_the_server_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n  - level: Everything\n",
    )
    .unwrap();
    let out = Command::new(apiserver_tests::server_binary())
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg(format!("--audit-policy-file={}", policy.display()))
        .arg(format!(
            "--audit-log-path={}",
            dir.path().join("a.log").display()
        ))
        .args(["--audit-log-mode=sometimes", "--audit-log-format=legacy"])
        .args([
            "--audit-webhook-mode=often",
            "--audit-webhook-batch-max-size=0",
            "--audit-webhook-config-file=/no/such/webhook.kubeconfig",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    let level = format!(
        "--audit-policy-file {}: rules[0].level: unsupported level \"Everything\"",
        policy.display()
    );
    for message in [
        level.as_str(),
        "--audit-log-mode \"sometimes\": unknown mode; supported: blocking, blocking-strict, batch",
        "--audit-log-format=legacy is not supported",
        "--audit-webhook-mode \"often\": unknown mode; supported: blocking, blocking-strict, batch",
        "--audit-webhook-batch-max-size 0 must be greater than 0",
        "--audit-webhook-config-file /no/such/webhook.kubeconfig: No such file",
    ] {
        assert!(err.contains(message), "{message}: {err}");
    }

    let out = Command::new(apiserver_tests::server_binary())
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--audit-policy-file=/no/such/policy.yaml")
        .arg("--audit-log-path=-")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("/no/such/policy.yaml"),
        "{err}"
    );
}

#[test]
fn a_log_that_cannot_be_written_fails_requests_only_in_blocking_strict() {
    // Every write to /dev/full fails (ENOSPC).
    let strict = audited(
        EVERYTHING_AT_METADATA,
        &[
            "--audit-log-path=/dev/full",
            "--audit-log-mode=blocking-strict",
        ],
    );
    let r = get_as(strict.server.kubeconfig(), "/api/v1/namespaces", &[]);
    assert_eq!(r.status, 500, "{}", r.text);
    assert_eq!(
        r.json["message"],
        "Internal error occurred: failed to store audit event"
    );

    let blocking = audited(EVERYTHING_AT_METADATA, &["--audit-log-path=/dev/full"]);
    let r = get_as(blocking.server.kubeconfig(), "/api/v1/namespaces", &[]);
    assert_eq!(r.status, 200, "{}", r.text);
    // The server's stderr is read by another thread: wait for the line to arrive.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !blocking.server.stderr().contains("audit event not written") {
        assert!(
            std::time::Instant::now() < deadline,
            "{}",
            blocking.server.stderr_tail()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn admission_audit_annotations_are_recorded() {
    let a = audited(EVERYTHING_AT_METADATA, &[]);
    let s = &a.server;
    let policy = s.write_file(
        "policy.yaml",
        "\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: want-team
spec:
  matchConstraints:
    resourceRules:
      - {apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
    - expression: \"has(object.metadata.labels) && 'team' in object.metadata.labels\"
      message: a ConfigMap should have a team label
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: want-team
spec:
  policyName: want-team
  validationActions: [Audit]
",
    );
    s.kubectl_ok(&["apply", "-f", policy.to_str().unwrap()]);
    // The policy reaches admission through the watch caches, a moment after it is
    // stored: create until a create is annotated.
    let key = "validation.policy.admission.k8s.io/validation_failure";
    let deadline = Instant::now() + Duration::from_secs(20);
    for i in 0.. {
        let name = format!("c-{i}");
        s.kubectl_ok(&["create", "configmap", &name]);
        let all = wait_for(&a.log, "of the create", |e| {
            e["objectRef"]["name"] == name.as_str() && e["stage"] == "ResponseComplete"
        });
        let done = completed(&all, "create", &name);
        if let Some(failure) = done["annotations"][key].as_str() {
            assert_eq!(done["responseStatus"]["code"], 201, "Audit does not refuse");
            let failure: Value = serde_json::from_str(failure).unwrap();
            assert_eq!(
                failure[0]["message"],
                "a ConfigMap should have a team label"
            );
            assert_eq!(failure[0]["policy"], "want-team");
            assert_eq!(failure[0]["binding"], "want-team");
            return;
        }
        assert!(Instant::now() < deadline, "never annotated: {done}");
    }
}

/// An audit webhook: every POST's EventList is appended to the log file as a line
/// `{"path", "authorization", "list"}`, answered 200.
const AUDIT_RECEIVER: &str = r#"
import json, ssl, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = sys.argv[3]

class Receive(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        line = {"path": self.path, "authorization": self.headers.get("Authorization"),
                "list": body}
        with open(LOG, "a") as log:
            log.write(json.dumps(line) + "\n")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Receive)
tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
tls.load_cert_chain(sys.argv[1], sys.argv[2])
server.socket = tls.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

/// A receiving audit webhook on loopback HTTPS (its own CA), and the kubeconfig that
/// names it for `--audit-webhook-config-file`.
struct AuditReceiver {
    _webhook: WebhookServer,
    kubeconfig: PathBuf,
    received: PathBuf,
    _dir: tempfile::TempDir,
}

impl AuditReceiver {
    fn start() -> AuditReceiver {
        let dir = tempfile::tempdir().unwrap();
        let ca = TestCa::new("audit-webhook-ca");
        let (cert, key) = ca.serving_cert(&["127.0.0.1"]);
        let (cert_file, key_file) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        std::fs::write(&cert_file, cert).unwrap();
        std::fs::write(&key_file, key).unwrap();
        let received = dir.path().join("received.log");
        std::fs::write(&received, "").unwrap();
        let webhook = WebhookServer::start_in(
            dir.path(),
            "receive.py",
            AUDIT_RECEIVER,
            (&cert_file, &key_file),
            &[&received],
        );
        let kubeconfig = dir.path().join("audit-webhook.kubeconfig");
        std::fs::write(
            &kubeconfig,
            webhook_kubeconfig(&webhook.url("/audit"), &ca.pem),
        )
        .unwrap();
        AuditReceiver {
            _webhook: webhook,
            kubeconfig,
            received,
            _dir: dir,
        }
    }

    fn flag(&self) -> String {
        format!("--audit-webhook-config-file={}", self.kubeconfig.display())
    }

    /// The POSTs received so far.
    fn posts(&self) -> Vec<Value> {
        events(&self.received)
    }

    /// Every event received so far, in the order sent.
    fn events(&self) -> Vec<Value> {
        self.posts()
            .iter()
            .flat_map(|p| p["list"]["items"].as_array().cloned().unwrap_or_default())
            .collect()
    }
}

/// A kubeconfig naming an audit webhook at `url`, trusted through `ca_pem`, with a
/// bearer token.
fn webhook_kubeconfig(url: &str, ca_pem: &str) -> String {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    format!(
        "\
apiVersion: v1
kind: Config
clusters:
  - name: audit
    cluster: {{server: '{url}', certificate-authority-data: {ca}}}
users:
  - name: apiserver
    user: {{token: audit-sender}}
contexts:
  - name: audit
    context: {{cluster: audit, user: apiserver}}
current-context: audit
"
    )
}

#[test]
fn a_blocking_audit_webhook_has_each_event_before_the_request_is_answered() {
    let receiver = AuditReceiver::start();
    let a = audited(
        EVERYTHING_AT_METADATA,
        &[&receiver.flag(), "--audit-webhook-mode=blocking"],
    );
    a.server
        .kubectl_ok(&["create", "configmap", "sent", "--from-literal=k=v"]);

    // No waiting: blocking mode sent the events before kubectl heard back.
    let sent = receiver.events();
    let create = of_request(&sent, completed(&sent, "create", "sent"));
    assert_eq!(stages(&create), ["RequestReceived", "ResponseComplete"]);
    let post = &receiver.posts()[0];
    assert_eq!(post["path"], "/audit");
    assert_eq!(post["authorization"], "Bearer audit-sender");
    assert_eq!(post["list"]["kind"], "EventList");
    assert_eq!(post["list"]["apiVersion"], "audit.k8s.io/v1");
    // One event a POST, each as the log has it.
    assert!(receiver
        .posts()
        .iter()
        .all(|p| p["list"]["items"].as_array().unwrap().len() == 1));
    let logged = wait_for(&a.log, "for the create", |e| {
        e["verb"] == "create" && e["objectRef"]["name"] == "sent"
    });
    let done = create[1];
    let same = logged
        .iter()
        .find(|e| e["auditID"] == done["auditID"] && e["stage"] == "ResponseComplete")
        .unwrap_or_else(|| panic!("not in the log: {done}\n{}", lines(&logged)));
    assert_eq!(same, done);
}

#[test]
fn a_batching_audit_webhook_sends_lists_of_at_most_max_size() {
    let receiver = AuditReceiver::start();
    let policy = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(policy.path(), EVERYTHING_AT_METADATA).unwrap();
    // No log: the webhook alone is a backend.
    let policy_flag = format!("--audit-policy-file={}", policy.path().display());
    let s = TestServer::start_with_flags(&[
        &policy_flag,
        &receiver.flag(),
        "--audit-webhook-batch-max-size=3",
        "--audit-webhook-batch-max-wait=1s",
    ]);
    let names = ["batch-1", "batch-2", "batch-3", "batch-4"];
    for name in names {
        s.kubectl_ok(&["create", "configmap", name]);
    }

    let deadline = Instant::now() + Duration::from_secs(20);
    let sent = loop {
        let sent = receiver.events();
        let done = |name: &str| {
            sent.iter().any(|e| {
                e["verb"] == "create"
                    && e["objectRef"]["name"] == name
                    && e["stage"] == "ResponseComplete"
            })
        };
        if names.iter().all(|n| done(n)) {
            break sent;
        }
        assert!(Instant::now() < deadline, "not all sent:\n{}", lines(&sent));
        std::thread::sleep(Duration::from_millis(50));
    };
    let sizes: Vec<usize> = receiver
        .posts()
        .iter()
        .map(|p| p["list"]["items"].as_array().unwrap().len())
        .collect();
    assert!(sizes.iter().all(|n| (1..=3).contains(n)), "{sizes:?}");
    assert!(
        sizes.iter().any(|n| *n > 1),
        "nothing was batched: {sizes:?}"
    );
    let create = of_request(&sent, completed(&sent, "create", "batch-4"));
    assert_eq!(stages(&create), ["RequestReceived", "ResponseComplete"]);
}

#[test]
fn an_audit_webhook_that_is_down_fails_requests_in_blocking_strict_after_its_retries() {
    let policy = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(policy.path(), EVERYTHING_AT_METADATA).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("nobody");
    let down = format!("https://127.0.0.1:{}/audit", apiserver_tests::free_port());
    let kubeconfig = dir.path().join("down.kubeconfig");
    std::fs::write(&kubeconfig, webhook_kubeconfig(&down, &ca.pem)).unwrap();
    let s = TestServer::start_with_flags(&[
        &format!("--audit-policy-file={}", policy.path().display()),
        &format!("--audit-webhook-config-file={}", kubeconfig.display()),
        "--audit-webhook-mode=blocking-strict",
        "--audit-webhook-initial-backoff=50ms",
    ]);
    let started = Instant::now();
    let r = get_as(s.kubeconfig(), "/api/v1/namespaces", &[]);
    assert_eq!(r.status, 500, "{}", r.text);
    assert_eq!(
        r.json["message"],
        "Internal error occurred: failed to store audit event"
    );
    // Five tries, 50 ms × 1.5ⁿ (+20 %) apart: about half a second, never at once.
    assert!(started.elapsed() >= Duration::from_millis(400));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !s.stderr().contains("audit events not sent to the webhook") {
        assert!(Instant::now() < deadline, "{}", s.stderr_tail());
        std::thread::sleep(Duration::from_millis(50));
    }
}
