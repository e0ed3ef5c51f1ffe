//! Serving limits: `--request-timeout` answers a request that takes too long with a 504
//! Status; `--max-mutating-requests-inflight` answers writes beyond the limit with 429
//! and Retry-After, while reads and watches go on. A request is held open by a client
//! that sends its headers and then stalls its body, as a slow client would. Dead clients
//! are found: HTTP/2 connections that stop answering pings are closed, and TCP keep-alive
//! probes every connection.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use apiserver_tests::{raw_request, TestServer};

/// Sends a POST's headers (announcing a body it never sends), prints `sent`, then prints
/// whatever the server answers until the connection closes.
const STALLED_POST: &str = r#"
import socket, ssl, sys
tls = ssl.create_default_context(cafile=sys.argv[2])
conn = tls.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))), server_hostname="127.0.0.1")
conn.sendall(b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: 127.0.0.1\r\n"
             b"Authorization: Bearer " + sys.argv[3].encode() + b"\r\n"
             b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n")
print("sent", flush=True)
while True:
    data = conn.recv(65536)
    if not data:
        break
    sys.stdout.write(data.decode(errors="replace"))
    sys.stdout.flush()
"#;

/// The admin kubeconfig's token (the stalled client writes as admin).
fn admin_token(s: &TestServer) -> String {
    let path = s.data_dir().join("admin.token");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
        .trim()
        .to_string()
}

/// A client stalled in the middle of a request, killed on drop.
struct Stalled(Child);

impl Drop for Stalled {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a stalled POST against `s`; returns once its headers are sent.
fn stall(s: &TestServer) -> (Stalled, BufReader<std::process::ChildStdout>) {
    let script = s.write_file("stall.py", STALLED_POST);
    let ca = s.data_dir().join("certs").join("ca.crt");
    let mut child = Command::new(apiserver_tests::python_binary())
        .arg(&script)
        .arg(s.port().to_string())
        .arg(&ca)
        .arg(admin_token(s))
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting python3");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "sent", "the stalled client could not connect");
    (Stalled(child), out)
}

#[test]
fn a_request_over_the_timeout_is_a_504_status() {
    let s = TestServer::start_with_flags(&["--request-timeout=1s"]);
    let start = Instant::now();
    let (_client, mut out) = stall(&s);
    let mut answer = String::new();
    while !answer.contains("\"kind\":\"Status\"") {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        answer.push_str(&line);
    }
    assert!(answer.starts_with("HTTP/1.1 504"), "{answer}");
    assert!(
        answer.contains(r#""reason":"Timeout""#)
            && answer.contains("request did not complete within requested timeout"),
        "{answer}"
    );
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "not before the timeout"
    );
}

/// Creates one ConfigMap with a client that does not retry (client-go and kube-rs retry
/// a 429 after its Retry-After); prints the status, the Retry-After header and the body.
const CREATE_ONCE: &str = r#"
import http.client, ssl, sys
conn = http.client.HTTPSConnection("127.0.0.1", int(sys.argv[1]), context=ssl.create_default_context(cafile=sys.argv[2]))
conn.request("POST", "/api/v1/namespaces/default/configmaps",
             body='{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"once-"}}',
             headers={"Content-Type": "application/json", "Authorization": "Bearer " + sys.argv[3]})
r = conn.getresponse()
print(r.status)
print(r.getheader("Retry-After"))
print(r.read().decode())
"#;

/// One create without retries: status, Retry-After and body.
fn create_once(s: &TestServer) -> (u16, String, serde_json::Value) {
    let script = s.write_file("create_once.py", CREATE_ONCE);
    let ca = s.data_dir().join("certs").join("ca.crt");
    let out = Command::new(apiserver_tests::python_binary())
        .arg(&script)
        .arg(s.port().to_string())
        .arg(&ca)
        .arg(admin_token(s))
        .output()
        .expect("running python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    let status = lines.next().unwrap_or_default().parse().unwrap_or(0);
    let retry_after = lines.next().unwrap_or_default().to_string();
    let body = serde_json::from_str(lines.next().unwrap_or_default()).unwrap_or_default();
    (status, retry_after, body)
}

#[test]
fn writes_over_the_in_flight_limit_get_429_and_reads_go_on() {
    let s = TestServer::start_with_flags(&["--max-mutating-requests-inflight=1"]);
    assert_eq!(create_once(&s).0, 201, "one write at a time is allowed");

    // A stalled write holds the one slot once the server has read its headers; a write
    // of ours that gets there first takes it instead (and the stalled one is refused):
    // then start over.
    let deadline = Instant::now() + Duration::from_secs(20);
    let (stalled, refused) = loop {
        let stalled = stall(&s);
        let (status, retry_after, body) = create_once(&s);
        if status == 429 {
            break (stalled, (retry_after, body));
        }
        assert_eq!(status, 201, "{body}");
        assert!(Instant::now() < deadline, "no 429 while a write was held");
    };
    let (retry_after, body) = refused;
    assert_eq!(retry_after, "1");
    assert_eq!(body["reason"], "TooManyRequests", "{body}");
    assert_eq!(
        body["message"],
        "Too many requests, please try again later."
    );
    assert_eq!(body["details"]["retryAfterSeconds"], 1);

    // Reads have slots of their own; watches take none.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let c = rt.block_on(s.client());
    let get = |path: &str| rt.block_on(raw_request(&c, "GET", path, None, ""));
    let read = get("/api/v1/namespaces/default/configmaps");
    assert_eq!(read.status, 200, "{}", read.text);
    let watched =
        get("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0&timeoutSeconds=1");
    assert_eq!(watched.status, 200, "{}", watched.text);

    // kube-rs retries a 429 after its Retry-After: once the stalled client goes, its write
    // goes through.
    drop(stalled);
    let created = rt.block_on(raw_request(
        &c,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some("application/json"),
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"after"}}"#,
    ));
    assert_eq!(created.status, 201, "{}", created.text);
}

/// Connects with TLS at most `max_version` (and, if given, only `ciphers`, OpenSSL
/// names); prints `ok` with the version spoken, or `refused` with why.
const TLS_PROBE: &str = r#"
import socket, ssl, sys
port, ca, max_version, ciphers = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
tls = ssl.create_default_context(cafile=ca)
tls.maximum_version = getattr(ssl.TLSVersion, max_version)
if ciphers:
    tls.set_ciphers(ciphers)
try:
    conn = tls.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")
    print("ok", conn.version())
except ssl.SSLError as e:
    print("refused", e)
"#;

fn tls_probe(s: &TestServer, max_version: &str, ciphers: &str) -> String {
    tls_probe_trusting(
        s,
        &s.data_dir().join("certs").join("ca.crt"),
        max_version,
        ciphers,
    )
}

/// [`tls_probe`], trusting only the CA in `ca`.
fn tls_probe_trusting(
    s: &TestServer,
    ca: &std::path::Path,
    max_version: &str,
    ciphers: &str,
) -> String {
    let script = s.write_file("tls_probe.py", TLS_PROBE);
    let out = Command::new(apiserver_tests::python_binary())
        .arg(&script)
        .arg(s.port().to_string())
        .arg(ca)
        .args([max_version, ciphers])
        .output()
        .expect("running python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn tls_flags_choose_versions_and_suites() {
    let s = TestServer::start_with_flags(&["--tls-min-version=VersionTLS13"]);
    assert_eq!(tls_probe(&s, "MAXIMUM_SUPPORTED", ""), "ok TLSv1.3");
    assert!(
        tls_probe(&s, "TLSv1_2", "").starts_with("refused"),
        "TLS 1.2 is below the minimum"
    );

    // The generated serving key is ECDSA: of its TLS 1.2 suites, only the one named is
    // offered.
    let s = TestServer::start_with_flags(&[
        "--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    ]);
    assert_eq!(
        tls_probe(&s, "TLSv1_2", "ECDHE-ECDSA-AES128-GCM-SHA256"),
        "ok TLSv1.2"
    );
    assert!(tls_probe(&s, "TLSv1_2", "ECDHE-ECDSA-AES256-GCM-SHA384").starts_with("refused"));
    assert_eq!(
        tls_probe(&s, "MAXIMUM_SUPPORTED", ""),
        "ok TLSv1.3",
        "TLS 1.3 suites stay"
    );

    // Flags it cannot honour stop the server at start-up, with a clear message.
    for (flag, message) in [
        (
            "--tls-min-version=VersionTLS10",
            "is not supported: this server speaks TLS 1.2 and 1.3",
        ),
        (
            "--tls-cipher-suites=TLS_RSA_WITH_RC4_128_SHA",
            "unknown or unsupported suite",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(apiserver_tests::server_binary())
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--secure-port", "6443", flag])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(message),
            "{flag}: {err}"
        );
    }
}

#[test]
fn a_rotated_serving_certificate_is_served_without_a_restart() {
    // Two certificates for 127.0.0.1 from two CAs: those two servers generate.
    let (a, c) = (TestServer::start(), TestServer::start());
    let certs = |t: &TestServer| t.data_dir().join("certs");
    let (ca_a, ca_c) = (certs(&a).join("ca.crt"), certs(&c).join("ca.crt"));
    let read = |t: &TestServer, f: &str| std::fs::read_to_string(certs(t).join(f)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&cert, read(&a, "apiserver.crt")).unwrap();
    std::fs::write(&key, read(&a, "apiserver.key")).unwrap();
    let s = TestServer::start_with_flags(&[
        "--tls-cert-file",
        cert.to_str().unwrap(),
        "--tls-private-key-file",
        key.to_str().unwrap(),
    ]);
    assert!(tls_probe_trusting(&s, &ca_a, "MAXIMUM_SUPPORTED", "").starts_with("ok"));
    assert!(tls_probe_trusting(&s, &ca_c, "MAXIMUM_SUPPORTED", "").starts_with("refused"));

    // Rotated on disk: new connections get the new certificate.
    std::fs::write(&key, read(&c, "apiserver.key")).unwrap();
    std::fs::write(&cert, read(&c, "apiserver.crt")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !tls_probe_trusting(&s, &ca_c, "MAXIMUM_SUPPORTED", "").starts_with("ok") {
        assert!(
            Instant::now() < deadline,
            "the new certificate was not served within 10 s"
        );
    }
    assert!(tls_probe_trusting(&s, &ca_a, "MAXIMUM_SUPPORTED", "").starts_with("refused"));
}

/// Opens an HTTP/2 connection (preface and SETTINGS), then reads frames without ever
/// answering a PING; prints `ping <s>` for each PING and `closed <s>` when the server
/// closes the connection.
const SILENT_H2_CLIENT: &str = r#"
import socket, ssl, sys, time
tls = ssl.create_default_context(cafile=sys.argv[2])
tls.set_alpn_protocols(["h2"])
conn = tls.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))), server_hostname="127.0.0.1")
assert conn.selected_alpn_protocol() == "h2", conn.selected_alpn_protocol()
conn.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
start = time.monotonic()
buf = b""
while True:
    data = conn.recv(65536)
    if not data:
        break
    buf += data
    while len(buf) >= 9:
        length = int.from_bytes(buf[0:3], "big")
        if len(buf) < 9 + length:
            break
        kind, flags = buf[3], buf[4]
        if kind == 6 and not flags & 1:
            print("ping", round(time.monotonic() - start, 1), flush=True)
        buf = buf[9 + length:]
print("closed", round(time.monotonic() - start, 1), flush=True)
"#;

/// A peer that no longer answers (a host gone, a half-open connection) is found: the
/// server pings an idle HTTP/2 connection and closes it when no answer comes.
#[test]
fn an_http2_connection_that_stops_answering_pings_is_closed() {
    let s = TestServer::start();
    let script = s.write_file("silent_h2.py", SILENT_H2_CLIENT);
    let started = Instant::now();
    let out = Command::new(apiserver_tests::python_binary())
        .arg(&script)
        .arg(s.port().to_string())
        .arg(s.data_dir().join("certs").join("ca.crt"))
        .output()
        .expect("running python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("ping "), "{stdout}");
    assert!(lines.last().unwrap().starts_with("closed "), "{stdout}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "closed only after {:?}",
        started.elapsed()
    );
}

/// Whether the server's socket of an established connection to `port` has its TCP
/// keep-alive timer running (`/proc/net/tcp`: state 01, timer 2).
fn server_connections_with_keepalive(port: u16) -> (usize, usize) {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("reading /proc/net/tcp");
    let local = format!(":{port:04X}");
    let mut established = 0;
    let mut probed = 0;
    for row in table.lines().skip(1) {
        let fields: Vec<&str> = row.split_whitespace().collect();
        if fields[1].ends_with(&local) && fields[3] == "01" {
            established += 1;
            if fields[5].starts_with("02:") {
                probed += 1;
            }
        }
    }
    (established, probed)
}

/// Every accepted connection has TCP keep-alive on, so a client host that disappears
/// without closing is found by the kernel's probes rather than held until a watch's
/// timeout.
#[test]
fn accepted_connections_have_tcp_keepalive() {
    let s = TestServer::start();
    let mut watch = s
        .kubectl_command(&["get", "configmaps", "--watch"])
        .spawn()
        .expect("spawning kubectl");
    let deadline = Instant::now() + Duration::from_secs(20);
    let (established, probed) = loop {
        let counts = server_connections_with_keepalive(s.port());
        // While data is in flight the retransmission timer shows instead: wait for an
        // idle moment.
        if (counts.0 > 0 && counts.0 == counts.1) || Instant::now() > deadline {
            break counts;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = watch.kill();
    let _ = watch.wait();
    assert!(established > 0, "kubectl's connection never showed up");
    assert_eq!(probed, established, "connections without keep-alive");
}
