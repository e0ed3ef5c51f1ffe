//! API aggregation, as a user meets it: server B serves a group (a CRD installed on B
//! only); server A gets an ExternalName Service and an APIService pointing at B; kubectl
//! and kube-rs against A then list, get, create, patch and watch B's objects, A's
//! discovery and OpenAPI show them, and B going away makes only that group unavailable.

use std::time::{Duration, Instant};

use std::path::PathBuf;

use apiserver_tests::credentials::{TestCa, UserCredentials};
use apiserver_tests::objects::{install_crd, CRONTABS_CRD};
use apiserver_tests::{client_without_retries, raw_request, TestServer};
use base64::Engine;
use futures_util::{StreamExt, TryStreamExt};
use kube::api::{Api, ApiResource, DynamicObject, PostParams, WatchEvent, WatchParams};
use serde_json::{json, Value};

const GROUP_VERSION: &str = "stable.example.com/v1";
const API_SERVICE: &str = "v1.stable.example.com";

/// Two servers, set up as a cluster runs an aggregated API server: A (the parent) has
/// a front-proxy client certificate, the front-proxy CA and a token for alice; B has a
/// serving certificate for the Service name A will use, the CronTab CRD, and takes its
/// users from A (front-proxy CA from A's extension-apiserver-authentication ConfigMap,
/// tokens and authorization through A's TokenReview and SubjectAccessReview). A's
/// Service and APIService send the group to B (not yet waited for).
struct Pair {
    a: TestServer,
    b: TestServer,
    alice: PathBuf,
    _dir: tempfile::TempDir,
}

fn start_pair() -> Pair {
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = TestCa::new("aggregation-test-ca");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("writing a test file");
        path.to_str().expect("utf-8 path").to_string()
    };
    let ca_file = write("ca.crt", &ca.pem);
    let (cert, key) = ca.serving_cert(&["b-api.default.svc", "localhost", "127.0.0.1"]);
    let (b_cert, b_key) = (write("b.crt", &cert), write("b.key", &key));
    let (cert, key) = ca.client_cert("front-proxy-client", None);
    let (proxy_cert, proxy_key) = (write("proxy.crt", &cert), write("proxy.key", &key));
    let tokens = write("tokens.csv", "alice-token,alice,1001,\"devs\"\n");
    let a = TestServer::start_with_flags(&[
        "--proxy-client-cert-file",
        &proxy_cert,
        "--proxy-client-key-file",
        &proxy_key,
        "--requestheader-client-ca-file",
        &ca_file,
        "--requestheader-allowed-names=front-proxy-client",
        "--token-auth-file",
        &tokens,
    ]);
    let parent = a.kubeconfig().to_str().expect("utf-8 path").to_string();
    let b = TestServer::start_with_flags(&[
        "--tls-cert-file",
        &b_cert,
        "--tls-private-key-file",
        &b_key,
        "--authentication-kubeconfig",
        &parent,
        "--authorization-kubeconfig",
        &parent,
        "--logging-format=json",
        "-v=3",
    ]);
    let crd = b.write_file("crontabs.yaml", CRONTABS_CRD);
    install_crd(&b, &crd, "crontabs.stable.example.com");
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&ca.pem);
    let manifest = format!(
        "apiVersion: v1
kind: Service
metadata: {{name: b-api, namespace: default}}
spec: {{type: ExternalName, externalName: localhost}}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {{name: {API_SERVICE}}}
spec:
  group: stable.example.com
  version: v1
  service: {{namespace: default, name: b-api, port: {port}}}
  caBundle: {ca_bundle}
  groupPriorityMinimum: 1000
  versionPriority: 15
",
        port = b.port()
    );
    let file = a.write_file("apiservice.yaml", &manifest);
    a.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    let alice = a.kubeconfig_for("alice", &UserCredentials::Token("alice-token".into()));
    Pair {
        a,
        b,
        alice,
        _dir: dir,
    }
}

/// B's access log line for a request of `user` whose URI contains `uri`.
fn access_line(b: &TestServer, user: &str, uri: &str) -> Option<Value> {
    b.stderr()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| {
            l["msg"] == "HTTP"
                && l["user"] == user
                && l["URI"].as_str().is_some_and(|u| u.contains(uri))
        })
}

fn wait_available(a: &TestServer, status: &str) {
    a.kubectl_ok(&[
        "wait",
        &format!("--for=condition=Available={status}"),
        &format!("apiservice/{API_SERVICE}"),
        "--timeout=30s",
    ]);
}

fn crontab(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: {GROUP_VERSION}\nkind: CronTab\nmetadata: {{name: {name}, namespace: default}}\nspec: {{cronSpec: '{spec}', replicas: 1}}\n"
    )
}

fn create(s: &TestServer, name: &str, spec: &str) {
    let file = s.write_file(&format!("{name}.yaml"), &crontab(name, spec));
    s.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
}

/// A GET whose answer is seen as it is (503 included: no retries).
async fn get_raw(s: &TestServer, path: &str) -> (u16, Value) {
    let client = client_without_retries(s.kubeconfig()).await;
    let r = raw_request(&client, "GET", path, None, Vec::<u8>::new()).await;
    (r.status, r.json)
}

/// Waits (up to 30 s) until `check` holds.
async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn another_servers_group_is_served_through_the_aggregator() {
    let mut pair = start_pair();
    let (a, b) = (&pair.a, &pair.b);
    wait_available(a, "True");

    // Every group-version A serves itself has its local APIService.
    let listed = a.kubectl_ok(&["get", "apiservices", "-o", "name"]);
    for name in ["v1.", "v1.apps", "v1.apiextensions.k8s.io", API_SERVICE] {
        assert!(
            listed
                .lines()
                .any(|l| l == format!("apiservice.apiregistration.k8s.io/{name}")),
            "{name} missing from:\n{listed}"
        );
    }
    let local = a.kubectl_ok(&["get", "apiservice", "v1.apps", "-o", "json"]);
    let local: Value = serde_json::from_str(&local).unwrap();
    assert_eq!(local["spec"]["groupPriorityMinimum"], 17800);
    assert_eq!(local["status"]["conditions"][0]["reason"], "Local");

    // Created through A, stored by B.
    create(a, "through-a", "*/5 * * * *");
    let on_b = b.kubectl_ok(&[
        "get",
        "crontab",
        "through-a",
        "-o",
        "jsonpath={.spec.cronSpec}",
    ]);
    assert_eq!(on_b, "*/5 * * * *");
    // Created on B, listed and read through A (Table output included).
    create(b, "on-b", "0 * * * *");
    let table = a.kubectl_ok(&["get", "crontabs"]);
    assert!(
        table.contains("through-a") && table.contains("on-b") && table.contains("SCHEDULE"),
        "{table}"
    );
    // Patched through A.
    a.kubectl_ok(&[
        "patch",
        "crontab",
        "on-b",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":3}}"#,
    ]);
    let replicas = b.kubectl_ok(&["get", "ct", "on-b", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(replicas, "3");

    // A user A authenticated reaches B as herself (front-proxy headers over A's proxy
    // certificate), allowed by what A's RBAC grants her, which B asks A about.
    let denied = a.kubectl_as(&pair.alice, &["get", "crontabs"]);
    assert!(
        !denied.status.success(),
        "alice listed crontabs before any grant"
    );
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains("forbidden"),
        "{}",
        String::from_utf8_lossy(&denied.stderr)
    );
    a.grant(
        "default",
        "crontab-reader",
        "get,list",
        "crontabs.stable.example.com",
        "--user=alice",
    );
    let listed = a.kubectl_as(&pair.alice, &["get", "crontabs", "-o", "name"]);
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert!(String::from_utf8_lossy(&listed.stdout).contains("crontab.stable.example.com/on-b"));
    eventually("B logs alice's request as alice's", async || {
        access_line(b, "alice", "/crontabs").is_some_and(|l| l["resp"] == 200)
    })
    .await;

    // A's discovery and OpenAPI carry B's group, so api-resources and explain work.
    let resources = a.kubectl_ok(&["api-resources", "--api-group=stable.example.com"]);
    assert!(
        resources.contains("crontabs") && resources.contains("CronTab"),
        "{resources}"
    );
    let explained = a.kubectl_ok(&["explain", "crontab.spec"]);
    assert!(explained.contains("cronSpec"), "{explained}");
    let (code, groups) = get_raw(a, "/apis").await;
    assert_eq!(code, 200);
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert!(names.contains(&"stable.example.com"), "{names:?}");
    // Ordered by priority, as upstream: apiregistration first, B's group (1000) last.
    assert_eq!(names.first(), Some(&"apiregistration.k8s.io"), "{names:?}");
    assert_eq!(names.last(), Some(&"stable.example.com"), "{names:?}");

    // A watch through A sees a create made on B.
    let client = a.client().await;
    let resource = ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("stable.example.com", "v1", "CronTab"),
        "crontabs",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &resource);
    let rv = api
        .list(&Default::default())
        .await
        .expect("list through A")
        .metadata
        .resource_version
        .expect("a list resourceVersion");
    let mut events = api
        .watch(&WatchParams::default().timeout(20), &rv)
        .await
        .expect("watch through A")
        .boxed();
    create(b, "watched", "1 * * * *");
    match events.try_next().await.expect("a watch event") {
        Some(WatchEvent::Added(obj)) => assert_eq!(obj.metadata.name.as_deref(), Some("watched")),
        other => panic!("expected ADDED watched, got {other:?}"),
    }
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": GROUP_VERSION, "kind": "CronTab",
        "metadata": { "name": "from-kube-rs" }, "spec": { "cronSpec": "2 * * * *" },
    }))
    .unwrap();
    api.create(&PostParams::default(), &obj)
        .await
        .expect("kube-rs create through A");

    // B goes away: its group answers 503, the APIService turns unavailable and leaves
    // discovery, and everything else on A keeps working.
    pair.b.stop();
    let a = &pair.a;
    let (code, status) =
        get_raw(a, "/apis/stable.example.com/v1/namespaces/default/crontabs").await;
    assert_eq!(code, 503, "{status}");
    assert_eq!(status["reason"], "ServiceUnavailable", "{status}");
    wait_available(a, "False");
    let condition = a.kubectl_ok(&[
        "get",
        "apiservice",
        API_SERVICE,
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"Available\")].reason}",
    ]);
    assert_eq!(condition, "FailedDiscoveryCheck");
    eventually("B's group leaves A's discovery", async || {
        let (_, groups) = get_raw(a, "/apis").await;
        !groups.to_string().contains("stable.example.com")
    })
    .await;
    a.kubectl_ok(&["get", "namespaces"]);
    a.kubectl_ok(&["create", "configmap", "still-works", "--from-literal=k=v"]);

    // B comes back on the same port: available again, its objects served through A.
    pair.b.restart();
    let a = &pair.a;
    wait_available(a, "True");
    let back = a.kubectl_ok(&[
        "get",
        "crontab",
        "through-a",
        "-o",
        "jsonpath={.metadata.name}",
    ]);
    assert_eq!(back, "through-a");
}

#[tokio::test]
async fn an_api_service_whose_service_is_missing_is_unavailable_with_upstreams_reason() {
    let a = TestServer::start();
    let manifest = "apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.nowhere.example.com}
spec:
  group: nowhere.example.com
  version: v1alpha1
  service: {namespace: default, name: missing, port: 443}
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 100
  versionPriority: 10
";
    let file = a.write_file("missing.yaml", manifest);
    a.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    a.kubectl_ok(&[
        "wait",
        "--for=condition=Available=False",
        "apiservice/v1alpha1.nowhere.example.com",
        "--timeout=30s",
    ]);
    let reason = a.kubectl_ok(&[
        "get",
        "apiservice",
        "v1alpha1.nowhere.example.com",
        "-o",
        "jsonpath={.status.conditions[0].reason}: {.status.conditions[0].message}",
    ]);
    assert_eq!(
        reason,
        "ServiceNotFound: service/missing in \"default\" is not present"
    );
    let (code, status) = get_raw(&a, "/apis/nowhere.example.com/v1alpha1").await;
    assert_eq!(code, 503, "{status}");
    // Its group is not in discovery while it is unavailable.
    let (_, groups) = get_raw(&a, "/apis").await;
    assert!(
        !groups.to_string().contains("nowhere.example.com"),
        "{groups}"
    );
}

/// A small API server in Python for `echo.example.com/v1` (arguments: serving
/// certificate, key, the front-proxy CA whose client certificate it requires, and a
/// file holding the name of the one property its `Echo` schema has). It serves the
/// group's `APIResourceList`, OpenAPI v2 and v3 (with ETags, as upstream's servers),
/// and a WebSocket on `echoes/<name>/exec`: its first message names the user from the
/// front-proxy headers, then it echoes every message back. A SPDY/3.1 upgrade (POST) on
/// the same path switches too: a line naming the user, then every byte echoed until
/// `bye` (then it closes) or the client closes (then it appends `client closed` to the
/// field file's path + `.events`).
const ECHO_API: &str = r#"
import base64, hashlib, json, ssl, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GV = "apis/echo.example.com/v1"

def field():
    with open(sys.argv[4]) as f:
        return f.read().strip()

def read_exact(f, n):
    data = b""
    while len(data) < n:
        chunk = f.read(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data

def read_frame(f):
    b0, b1 = read_exact(f, 2)
    n = b1 & 0x7F
    if n == 126:
        n = int.from_bytes(read_exact(f, 2), "big")
    elif n == 127:
        n = int.from_bytes(read_exact(f, 8), "big")
    mask = read_exact(f, 4) if b1 & 0x80 else b"\0\0\0\0"
    return b0 & 0x0F, bytes(b ^ mask[i % 4] for i, b in enumerate(read_exact(f, n)))

def write_frame(f, opcode, data):
    n = len(data)
    head = bytes([0x80 | opcode]) + (bytes([n]) if n < 126 else bytes([126]) + n.to_bytes(2, "big"))
    f.write(head + data)
    f.flush()

class EchoApi(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, doc, etag=None):
        if etag and self.headers.get("If-None-Match") == etag:
            self.send_response(304)
            self.send_header("ETag", etag)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = json.dumps(doc).encode()
        self.send_response(200 if doc is not None else 404)
        self.send_header("Content-Type", "application/json")
        if etag:
            self.send_header("ETag", etag)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = self.path.split("?")[0]
        name = field()
        schema = {"type": "object", "properties": {name: {"type": "string"}}}
        etag = '"' + hashlib.sha256(name.encode()).hexdigest()[:16] + '"'
        if path == "/" + GV:
            self.answer({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "echo.example.com/v1",
                         "resources": [
                             {"name": "echoes", "singularName": "echo", "namespaced": True, "kind": "Echo", "verbs": ["get"]},
                             {"name": "echoes/exec", "singularName": "", "namespaced": True, "kind": "Echo", "verbs": ["get", "create"]}]})
        elif path == "/openapi/v3":
            self.answer({"paths": {GV: {"serverRelativeURL": "/openapi/v3/" + GV + "?hash=" + etag.strip('"')}}})
        elif path == "/openapi/v3/" + GV:
            self.answer({"openapi": "3.0.0", "info": {"title": "echo", "version": "v1"}, "paths": {},
                         "components": {"schemas": {"com.example.echo.v1.Echo": schema}}}, etag)
        elif path == "/openapi/v2":
            self.answer({"swagger": "2.0", "info": {"title": "echo", "version": "v1"}, "paths": {},
                         "definitions": {"com.example.echo.v1.Echo": schema}}, etag)
        elif path.endswith("/exec") and self.headers.get("Upgrade", "").lower() == "websocket":
            self.echo()
        else:
            self.answer(None)

    def do_POST(self):
        path = self.path.split("?")[0]
        if path.endswith("/exec") and self.headers.get("Upgrade", "").lower() == "spdy/3.1":
            self.spdy_echo()
        else:
            self.answer(None)

    def spdy_echo(self):
        self.send_response(101)
        self.send_header("Upgrade", "SPDY/3.1")
        self.send_header("Connection", "Upgrade")
        self.send_header("X-Stream-Protocol-Version", self.headers.get_all("X-Stream-Protocol-Version")[0])
        self.end_headers()
        self.close_connection = True
        user = "user=%s groups=%s\n" % (self.headers.get("X-Remote-User"), ",".join(self.headers.get_all("X-Remote-Group") or []))
        self.wfile.write(user.encode())
        while True:
            data = self.rfile.read1(4096)
            if not data:
                with open(sys.argv[4] + ".events", "a") as f:
                    f.write("client closed\n")
                return
            self.wfile.write(data)
            if data.endswith(b"bye"):
                return

    def echo(self):
        key = self.headers["Sec-WebSocket-Key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", base64.b64encode(hashlib.sha1(key.encode()).digest()).decode())
        protocols = self.headers.get("Sec-WebSocket-Protocol")
        if protocols:
            self.send_header("Sec-WebSocket-Protocol", protocols.split(",")[0].strip())
        self.end_headers()
        self.close_connection = True
        user = "user=%s groups=%s" % (self.headers.get("X-Remote-User"), ",".join(self.headers.get_all("X-Remote-Group") or []))
        write_frame(self.wfile, 1, user.encode())
        try:
            while True:
                opcode, data = read_frame(self.rfile)
                if opcode == 8:
                    write_frame(self.wfile, 8, data)
                    return
                if opcode in (1, 2):
                    write_frame(self.wfile, opcode, data)
        except EOFError:
            return

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), EchoApi)
tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
tls.load_cert_chain(sys.argv[1], sys.argv[2])
tls.verify_mode = ssl.CERT_REQUIRED
tls.load_verify_locations(sys.argv[3])
server.socket = tls.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

/// A WebSocket client in Python (arguments: host, port, CA file, path): for each
/// token, the upgrade's status and, when it switched, the subprotocol, the server's
/// first message and the echoes of a text and a binary message. Prints the JSON.
const UPGRADE_CLIENT: &str = r#"
import json, sys, websocket

host, port, ca, path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

def ws(token):
    try:
        c = websocket.create_connection("wss://%s:%d%s" % (host, port, path), timeout=10,
                                        header=["Authorization: Bearer " + token],
                                        sslopt={"ca_certs": ca}, subprotocols=["v5.channel.k8s.io"])
    except websocket.WebSocketBadStatusException as e:
        return {"status": e.status_code}
    out = {"status": c.getstatus(), "subprotocol": c.getsubprotocol(), "first": c.recv()}
    c.send("hello")
    out["text"] = c.recv()
    c.send_binary(b"\x01\x02\xff")
    out["binary"] = list(c.recv())
    c.close()
    return out

print(json.dumps({"alice": ws("alice-token"), "bob": ws("bob-token")}))
"#;

/// A SPDY/3.1 client in Python (arguments: host, port, CA file, the echo path, a pod's
/// exec path, the admin token's file), each upgrade sent with the headers kubectl
/// sends, on a connection of its own unless said otherwise. Prints as JSON: `alice`,
/// switched on the echo path (the 101's headers, the backend's first line, the echo of
/// some bytes, the echo of `bye` and whether the connection then ended); `bob` (status
/// and Status); `pod` (a pod's exec as the admin, which this server does not proxy,
/// and whether its connection then ended); on one connection `version` (GET /version)
/// then `later` (the echo upgrade, no longer the connection's first request); and
/// `hang_up`, a switched connection the client closes after the first line.
const SPDY_CLIENT: &str = r#"
import json, socket, ssl, sys

host, port, ca, echo, pod = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
admin = open(sys.argv[6]).read().strip()
tls = ssl.create_default_context(cafile=ca)

def connect():
    return tls.wrap_socket(socket.create_connection((host, port), timeout=10), server_hostname=host)

class Conn:
    def __init__(self):
        self.s = connect()
        self.buf = b""

    def fill(self):
        data = self.s.recv(65536)
        if not data:
            raise EOFError
        self.buf += data

    def until(self, end):
        while end not in self.buf:
            self.fill()
        i = self.buf.index(end) + len(end)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def exactly(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def ended(self):
        try:
            self.fill()
            return False
        except (EOFError, ConnectionResetError, ssl.SSLError):
            return True

    def request(self, method, path, token, upgrade):
        head = "%s %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: kubectl/v1.30.0\r\nAuthorization: Bearer %s\r\n" % (method, path, host, port, token)
        if upgrade:
            head += "Content-Length: 0\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
            for v in ["v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io"]:
                head += "X-Stream-Protocol-Version: %s\r\n" % v
        self.s.sendall((head + "\r\n").encode())
        lines = self.until(b"\r\n\r\n").decode().split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            if line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        if status == 101:
            return status, headers, None
        body = self.exactly(int(headers["content-length"]))
        return status, headers, json.loads(body)

def switched(c, status, headers):
    return {"status": status, "upgrade": headers.get("upgrade"), "connection": headers.get("connection", "").lower(),
            "version": headers.get("x-stream-protocol-version")}

out = {}
c = Conn()
status, headers, _ = c.request("POST", echo, "alice-token", True)
alice = switched(c, status, headers)
alice["first"] = c.until(b"\n").decode()
c.s.sendall(b"\x80\x03\x00\x01hello\xff")
alice["echo"] = list(c.exactly(10))
c.s.sendall(b"bye")
alice["bye"] = c.exactly(3).decode()
alice["ended"] = c.ended()
out["alice"] = alice

status, _, body = Conn().request("POST", echo, "bob-token", True)
out["bob"] = {"status": status, "reason": body["reason"]}

c = Conn()
status, _, body = c.request("POST", pod, admin, True)
out["pod"] = {"status": status, "kind": body["kind"], "reason": body["reason"], "ended": c.ended()}

c = Conn()
status, _, body = c.request("GET", "/version", "alice-token", False)
out["version"] = {"status": status, "has_git_version": "gitVersion" in body}
status, _, body = c.request("POST", echo, "alice-token", True)
out["later"] = {"status": status, "reason": body["reason"], "message": body["message"]}

c = Conn()
status, headers, _ = c.request("POST", echo, "alice-token", True)
out["hang_up"] = {"status": status, "first": c.until(b"\n").decode()}
c.s.close()
print(json.dumps(out))
"#;

const ECHO_API_SERVICE: &str = "v1.echo.example.com";

/// Server A with a Python backend for `echo.example.com/v1` (`ECHO_API`) behind an
/// APIService, available; alice may get and create `echoes/exec` in default, bob
/// nothing. The backend's schema property starts as `colour`.
struct EchoApi {
    a: TestServer,
    _backend: apiserver_tests::webhooks::WebhookServer,
    schema_field: PathBuf,
    _dir: tempfile::TempDir,
}

fn start_echo_api(flags: &[&str]) -> EchoApi {
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = TestCa::new("echo-api-ca");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("writing a test file");
        path
    };
    let ca_file = write("ca.crt", &ca.pem);
    let (cert, key) = ca.serving_cert(&["echo-api.default.svc"]);
    let (cert, key) = (write("echo.crt", &cert), write("echo.key", &key));
    let (proxy_cert, proxy_key) = ca.client_cert("front-proxy-client", None);
    let (proxy_cert, proxy_key) = (
        write("proxy.crt", &proxy_cert),
        write("proxy.key", &proxy_key),
    );
    let tokens = write(
        "tokens.csv",
        "alice-token,alice,1001,\"devs\"\nbob-token,bob,1002\n",
    );
    let schema_field = write("field", "colour");
    let mut args: Vec<String> = vec![
        format!("--proxy-client-cert-file={}", proxy_cert.display()),
        format!("--proxy-client-key-file={}", proxy_key.display()),
        format!("--token-auth-file={}", tokens.display()),
    ];
    args.extend(flags.iter().map(|f| f.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let a = TestServer::start_with_flags(&args);
    let backend = apiserver_tests::webhooks::WebhookServer::start_with_cert(
        &a,
        "echo_api.py",
        ECHO_API,
        (&cert, &key),
        &[&ca_file, &schema_field],
    );
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&ca.pem);
    let manifest = format!(
        "apiVersion: v1
kind: Service
metadata: {{name: echo-api, namespace: default}}
spec: {{type: ExternalName, externalName: localhost}}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {{name: {ECHO_API_SERVICE}}}
spec:
  group: echo.example.com
  version: v1
  service: {{namespace: default, name: echo-api, port: {port}}}
  caBundle: {ca_bundle}
  groupPriorityMinimum: 1000
  versionPriority: 15
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: echo-exec, namespace: default}}
rules: [{{apiGroups: [echo.example.com], resources: [echoes/exec], verbs: [get, create]}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: echo-exec, namespace: default}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: echo-exec}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}}]
",
        port = backend.port
    );
    let file = a.write_file("echo-api.yaml", &manifest);
    a.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    a.kubectl_ok(&[
        "wait",
        "--for=condition=Available=True",
        &format!("apiservice/{ECHO_API_SERVICE}"),
        "--timeout=30s",
    ]);
    EchoApi {
        a,
        _backend: backend,
        schema_field,
        _dir: dir,
    }
}

#[test]
fn a_websocket_upgrade_is_proxied_both_ways_as_the_caller() {
    let echo = start_echo_api(&[]);
    let a = &echo.a;
    let client = a.write_file("upgrade_client.py", UPGRADE_CLIENT);
    let ca = a.data_dir().join("certs").join("ca.crt");
    let out = std::process::Command::new(apiserver_tests::python_binary())
        .arg(&client)
        .args(["127.0.0.1", &a.port().to_string()])
        .arg(&ca)
        .arg("/apis/echo.example.com/v1/namespaces/default/echoes/e1/exec?command=cat")
        .output()
        .expect("running the WebSocket client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_str(&stdout).expect("the client's JSON");
    // Switched, with the subprotocol the backend chose; the backend saw alice as the
    // front-proxy headers named her, and each message came back before the next went.
    assert_eq!(
        got["alice"],
        json!({
            "status": 101,
            "subprotocol": "v5.channel.k8s.io",
            "first": "user=alice groups=devs,system:authenticated",
            "text": "hello",
            "binary": [1, 2, 255],
        })
    );
    // bob may not get echoes/exec: refused here, before the backend.
    assert_eq!(got["bob"], json!({"status": 403}));
}

/// A SPDY/3.1 upgrade (kubectl before 1.31, and its fallback) switches through the
/// aggregator as a WebSocket one does: the backend sees the caller, bytes pass both
/// ways as sent, and either side closing ends the other. A caller without the grant,
/// a path this server does not proxy and an upgrade that is not its connection's
/// first request are answered with a Status.
#[tokio::test]
async fn a_spdy_upgrade_is_proxied_both_ways_as_the_caller_until_either_side_closes() {
    let audit = tempfile::tempdir().expect("temp dir");
    let policy = audit.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata}]\n",
    )
    .expect("writing the audit policy");
    let log = audit.path().join("audit.log");
    let echo = start_echo_api(&[
        &format!("--audit-policy-file={}", policy.display()),
        &format!("--audit-log-path={}", log.display()),
    ]);
    let a = &echo.a;
    let client = a.write_file("spdy_client.py", SPDY_CLIENT);
    let ca = a.data_dir().join("certs").join("ca.crt");
    let out = std::process::Command::new(apiserver_tests::python_binary())
        .arg(&client)
        .args(["127.0.0.1", &a.port().to_string()])
        .arg(&ca)
        .arg("/apis/echo.example.com/v1/namespaces/default/echoes/e1/exec?command=cat&stdin=true&stdout=true")
        .arg("/api/v1/namespaces/default/pods/p1/exec?command=cat&stdin=true&stdout=true")
        .arg(a.data_dir().join("admin.token"))
        .output()
        .expect("running the SPDY client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_str(&stdout).expect("the client's JSON");
    // Switched with the backend's protocol version; the backend saw alice as the
    // front-proxy headers named her; the bytes came back as sent; the backend's close
    // ended the client's connection.
    assert_eq!(
        got["alice"],
        json!({
            "status": 101,
            "upgrade": "SPDY/3.1",
            "connection": "upgrade",
            "version": "v4.channel.k8s.io",
            "first": "user=alice groups=devs,system:authenticated\n",
            "echo": [0x80, 3, 0, 1, 104, 101, 108, 108, 111, 0xff],
            "bye": "bye",
            "ended": true,
        })
    );
    // bob may not get echoes/exec: refused here, before the backend.
    assert_eq!(got["bob"], json!({"status": 403, "reason": "Forbidden"}));
    // Pods' exec is not proxied (there is no kubelet): a Status, then the connection
    // ends (actix-web keeps no connection whose upgrade it did not switch).
    assert_eq!(
        got["pod"],
        json!({"status": 404, "kind": "Status", "reason": "NotFound", "ended": true})
    );
    // A kept-alive connection's later request cannot switch to SPDY here.
    assert_eq!(
        got["version"],
        json!({"status": 200, "has_git_version": true})
    );
    assert_eq!(
        got["later"],
        json!({
            "status": 400,
            "reason": "BadRequest",
            "message": "upgrading the connection to \"SPDY/3.1\" is supported only by the first request on an HTTP/1.1 connection, without a body",
        })
    );
    // The client hanging up after switching ends the backend's side too.
    assert_eq!(
        got["hang_up"],
        json!({"status": 101, "first": "user=alice groups=devs,system:authenticated\n"})
    );
    let events = PathBuf::from(format!("{}.events", echo.schema_field.display()));
    eventually("the backend saw the client close", async || {
        std::fs::read_to_string(&events).is_ok_and(|e| e.contains("client closed"))
    })
    .await;
    // Audited as any request: who, what, and the answer (101 switched, 403 refused).
    let audited = |user: &str, code: u16| {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|e| {
                e["user"]["username"] == user
                    && e["verb"] == "create"
                    && e["objectRef"]["subresource"] == "exec"
                    && e["objectRef"]["apiGroup"] == "echo.example.com"
                    && e["responseStatus"]["code"] == code
            })
    };
    eventually("alice's switched upgrade is audited", async || {
        audited("alice", 101)
    })
    .await;
    eventually("bob's refused upgrade is audited", async || {
        audited("bob", 403)
    })
    .await;
}

#[tokio::test]
async fn a_backends_schema_change_alone_reaches_the_merged_openapi() {
    let echo = start_echo_api(&["--aggregated-openapi-refresh-interval=1s"]);
    let a = &echo.a;
    let v3 = "/openapi/v3/apis/echo.example.com/v1";
    let properties = async |path: &str, at: &str| {
        let (code, doc) = get_raw(a, path).await;
        assert_eq!(code, 200, "{path}: {doc}");
        doc.pointer(at).cloned().unwrap_or(Value::Null)
    };
    let v3_echo = "/components/schemas/com.example.echo.v1.Echo/properties";
    let v2_echo = "/definitions/com.example.echo.v1.Echo/properties";
    assert_eq!(
        properties(v3, v3_echo).await,
        json!({"colour": {"type": "string"}})
    );
    // Only the schema changes: the backend's APIResourceList stays as it was.
    std::fs::write(&echo.schema_field, "flavour").expect("writing the schema field");
    eventually("A's OpenAPI v3 has the new property", async || {
        properties(v3, v3_echo).await == json!({"flavour": {"type": "string"}})
    })
    .await;
    eventually("A's OpenAPI v2 has it too", async || {
        properties("/openapi/v2", v2_echo).await == json!({"flavour": {"type": "string"}})
    })
    .await;
}
