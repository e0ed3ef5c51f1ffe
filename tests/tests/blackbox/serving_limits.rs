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

/// Sends a request one byte per second: with `body`, the headers at once and then the
/// body's bytes; otherwise the headers themselves. Prints `sent <n> <s>` after each
/// byte, then whatever the server answers and `closed <s>` when the connection ends (a
/// write the server refuses ends it too).
const TRICKLING_CLIENT: &str = r#"
import socket, ssl, sys, time
tls = ssl.create_default_context(cafile=sys.argv[2])
conn = tls.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))), server_hostname="127.0.0.1")
body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"slow"}}'
head = (b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Authorization: Bearer " + sys.argv[3].encode() + b"\r\n"
        b"Content-Type: application/json\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n")
if sys.argv[4] == "body":
    conn.sendall(head)
    slow = body
else:
    slow = head + body
# One thread sends and reads: an SSL socket is not safe to write from one thread while
# another reads it. Reads wait at most 0.1 s, so each byte goes out on time.
conn.settimeout(0.1)
start = time.monotonic()
sent, due = 0, start
while True:
    if sent < len(slow) and time.monotonic() >= due:
        try:
            conn.sendall(slow[sent:sent + 1])
            sent += 1
            print("sent", sent, round(time.monotonic() - start, 1), flush=True)
        except socket.timeout:
            pass
        except OSError:
            sent = len(slow)
        due += 1
    try:
        data = conn.recv(65536)
    except socket.timeout:
        continue
    except OSError:
        data = b""
    if not data:
        break
    sys.stdout.write(data.decode(errors="replace"))
    sys.stdout.flush()
print("\nclosed", round(time.monotonic() - start, 1), flush=True)
"#;

/// Runs [`TRICKLING_CLIENT`] (`what`: `body` or `headers`) to its end; its output.
fn trickle(s: &TestServer, what: &str) -> String {
    let script = s.write_file("trickle.py", TRICKLING_CLIENT);
    let out = Command::new(apiserver_tests::python_binary())
        .arg(&script)
        .arg(s.port().to_string())
        .arg(s.data_dir().join("certs").join("ca.crt"))
        .arg(admin_token(s))
        .arg(what)
        .output()
        .expect("running python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The seconds on the client's `closed <s>` line.
fn closed_after(out: &str) -> f64 {
    out.lines()
        .find_map(|l| l.strip_prefix("closed "))
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("the connection did not end:\n{out}"))
}

/// A client that sends its body one byte per second (a slow-loris) is answered 504 at
/// `--request-timeout` and its connection closed, long before its 65 bytes are in; one
/// that trickles its headers is closed by the HTTP layer's header timeout (5 s) with 408.
#[test]
fn a_request_sent_one_byte_per_second_is_cut_off() {
    let s = TestServer::start_with_flags(&["--request-timeout=2s"]);
    let out = trickle(&s, "body");
    assert!(out.contains("HTTP/1.1 504"), "{out}");
    assert!(out.contains(r#""reason":"Timeout""#), "{out}");
    let closed = closed_after(&out);
    assert!(
        (2.0..10.0).contains(&closed),
        "closed after {closed} s:\n{out}"
    );

    let out = trickle(&s, "headers");
    assert!(out.contains("HTTP/1.1 408"), "{out}");
    let closed = closed_after(&out);
    assert!(
        (4.0..10.0).contains(&closed),
        "closed after {closed} s:\n{out}"
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
/// server pings an HTTP/2 connection every 15 s and closes it when no answer comes within
/// 15 s more.
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
        started.elapsed() < Duration::from_secs(45),
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

/// Opens a watch of the default namespace's ConfigMaps from resourceVersion `argv[4]` on
/// a socket with a small receive buffer, reads the response head, then stops reading and
/// prints `watching`. At a line on stdin it reads again: `ended` when the connection
/// ends within 10 s, else `open`.
const NON_READING_WATCHER: &str = r#"
import socket, ssl, sys
sock = socket.socket()
sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
sock.connect(("127.0.0.1", int(sys.argv[1])))
conn = ssl.create_default_context(cafile=sys.argv[2]).wrap_socket(sock, server_hostname="127.0.0.1")
conn.sendall(b"GET /api/v1/namespaces/default/configmaps?watch=1&resourceVersion=" + sys.argv[4].encode()
             + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + sys.argv[3].encode() + b"\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    head += conn.recv(1)
assert head.startswith(b"HTTP/1.1 200"), head
print("watching", flush=True)
sys.stdin.readline()
conn.settimeout(10)
try:
    while conn.recv(65536):
        pass
    print("ended", flush=True)
except socket.timeout:
    print("open", flush=True)
except OSError as e:
    print("ended", e, flush=True)
"#;

/// A watcher whose client stops reading is terminated once it falls a buffer behind
/// (`apiserver_terminated_watchers_total`) and its connection ends, while a watcher that
/// reads gets every event.
#[tokio::test(flavor = "multi_thread")]
async fn a_watcher_that_stops_reading_is_closed_and_others_get_every_event() {
    use apiserver_tests::metrics::scrape;
    use futures_util::{StreamExt, TryStreamExt};
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, PostParams, WatchEvent, WatchParams};
    use std::io::Write;

    // Events of ~16 KiB: the client's small window and the server's socket buffer (which
    // the kernel grows up to 4 MiB) fill after ~260 of them, then the namespace feed's
    // buffer of 256 more.
    const WRITES: usize = 700;
    let s = TestServer::start();
    let c = s.client().await;
    let configmaps: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let rv = configmaps
        .list_metadata(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();

    let script = s.write_file("non_reading_watcher.py", NON_READING_WATCHER);
    let mut stalled = Command::new(apiserver_tests::python_binary())
        .arg(&script)
        .arg(s.port().to_string())
        .arg(s.data_dir().join("certs").join("ca.crt"))
        .arg(admin_token(&s))
        .arg(&rv)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting python3");
    let mut stalled_out = BufReader::new(stalled.stdout.take().unwrap());
    let mut line = String::new();
    stalled_out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "watching");
    let stalled = Stalled(stalled);

    let reader = {
        let stream = configmaps
            .watch(&WatchParams::default(), &rv)
            .await
            .expect("a reading watch");
        tokio::spawn(async move {
            let mut names = std::collections::BTreeSet::new();
            let mut stream = std::pin::pin!(stream);
            while names.len() < WRITES {
                match stream.try_next().await.expect("the reading watch") {
                    Some(WatchEvent::Added(cm)) => {
                        names.insert(cm.metadata.name.unwrap());
                    }
                    Some(other) => panic!("unexpected event {other:?}"),
                    None => break,
                }
            }
            names
        })
    };

    let data = "x".repeat(16_000);
    futures_util::stream::iter(0..WRITES)
        .map(|i| {
            let configmaps = configmaps.clone();
            let cm = serde_json::from_value::<ConfigMap>(serde_json::json!({
                "metadata": {"name": format!("cm-{i:04}")},
                "data": {"k": data},
            }))
            .unwrap();
            async move { configmaps.create(&PostParams::default(), &cm).await }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await
        .expect("creating the ConfigMaps");

    let terminated = || async {
        scrape(&c).await.value(
            "apiserver_terminated_watchers_total",
            &[("group", ""), ("resource", "configmaps")],
        )
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while terminated().await < 1.0 {
        assert!(
            Instant::now() < deadline,
            "the non-reading watcher was not terminated"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut stalled = stalled;
    writeln!(stalled.0.stdin.as_mut().unwrap()).unwrap();
    let mut line = String::new();
    stalled_out.read_line(&mut line).unwrap();
    assert!(line.starts_with("ended"), "the connection stayed: {line}");

    let names = tokio::time::timeout(Duration::from_secs(30), reader)
        .await
        .expect("the reading watch got every event within 30 s")
        .unwrap();
    assert_eq!(names.len(), WRITES, "the reading watch missed events");
    assert_eq!(terminated().await, 1.0, "only the non-reading watcher");
}

/// One HTTP/2 connection carrying five watches of the default namespace's ConfigMaps from
/// resourceVersion `argv[4]` (frames written by hand: HPACK literals, no library):
/// `timeout` asks for `timeoutSeconds=1`; `cancel` is reset by the client (RST_STREAM
/// CANCEL) as soon as its response head arrives; `slow` never gets a WINDOW_UPDATE, so
/// it stops being sent to after 64 KiB; the others (`reader1`, `reader2`) have windows
/// of 1 GiB.
/// PINGs and SETTINGS are answered. Prints `watching` once every response head (200)
/// arrived; `stalling` at `argv[5]` seconds after connecting, then reads nothing for
/// `argv[6]` seconds (a client starved of CPU, or behind on a busy connection), then
/// prints `reading`. Ends when both readers saw an ADDED of `argv[7]`, when the
/// connection ends, or after 120 s, printing what each stream saw.
const H2_WATCHES_CLIENT: &str = r#"
import json, socket, ssl, sys, time
port, cafile, token, rv = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
stall_at, stall_for, marker = float(sys.argv[5]), float(sys.argv[6]), sys.argv[7]
tls = ssl.create_default_context(cafile=cafile)
tls.set_alpn_protocols(["h2"])
conn = tls.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")
assert conn.selected_alpn_protocol() == "h2", conn.selected_alpn_protocol()
start = time.monotonic()

def frame(kind, flags, sid, payload=b""):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + sid.to_bytes(4, "big") + payload

def hpack_int(n):
    if n < 127:
        return bytes([n])
    out, n = [127], n - 127
    while n >= 128:
        out.append(n % 128 + 128)
        n //= 128
    return bytes(out + [n])

def literal(name, value):
    return b"\x00" + hpack_int(len(name)) + name.encode() + hpack_int(len(value)) + value.encode()

base = "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=" + rv
streams = {1: "timeout", 3: "cancel", 5: "slow", 7: "reader1", 9: "reader2"}
state = {sid: {"name": n, "head": None, "buf": b"", "added": set(), "end": None} for sid, n in streams.items()}
out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0) + frame(8, 0, 0, (1 << 30).to_bytes(4, "big"))
for sid, name in streams.items():
    path = base + ("&timeoutSeconds=1" if name == "timeout" else "")
    block = b"".join(literal(k, v) for k, v in [(":method", "GET"), (":scheme", "https"),
        (":authority", "127.0.0.1:%d" % port), (":path", path),
        ("authorization", "Bearer " + token), ("accept", "application/json")])
    out += frame(1, 0x5, sid, block)
    if name != "slow":
        out += frame(8, 0, sid, (1 << 30).to_bytes(4, "big"))
conn.sendall(out)

buf, closed, watching, stalled = b"", None, False, False
readers = [s for s in state.values() if s["name"].startswith("reader")]
conn.settimeout(0.2)
while not all(marker in r["added"] for r in readers):
    now = time.monotonic() - start
    if now > 120:
        closed = "gave up after 120 s"
        break
    if watching and not stalled and now >= stall_at:
        print("stalling", flush=True)
        time.sleep(stall_for)
        stalled = True
        print("reading", flush=True)
    try:
        data = conn.recv(65536)
    except socket.timeout:
        continue
    except OSError as e:
        closed = "connection error at %.1f s: %s" % (time.monotonic() - start, e)
        break
    if not data:
        closed = "connection closed at %.1f s" % (time.monotonic() - start)
        break
    buf += data
    while len(buf) >= 9 and len(buf) >= 9 + int.from_bytes(buf[0:3], "big"):
        length = int.from_bytes(buf[0:3], "big")
        kind, flags, sid = buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
        payload, buf = buf[9:9 + length], buf[9 + length:]
        s = state.get(sid)
        if kind == 4 and not flags & 1:
            conn.sendall(frame(4, 1, 0))
        elif kind == 6 and not flags & 1:
            conn.sendall(frame(6, 1, 0, payload))
        elif kind == 7:
            closed = "GOAWAY %s at %.1f s" % (payload[4:8].hex(), time.monotonic() - start)
        elif kind == 3 and s:
            s["end"] = s["end"] or "reset by the server"
        elif kind == 1 and s:
            if s["head"] is None:
                s["head"] = "200" if payload[:1] == b"\x88" else "not 200"
                if s["name"] == "cancel":
                    conn.sendall(frame(3, 0, sid, (8).to_bytes(4, "big")))
                    s["end"] = "cancelled"
                if all(x["head"] for x in state.values()) and not watching:
                    watching = all(x["head"] == "200" for x in state.values())
                    print("watching" if watching else "refused", flush=True)
            if flags & 1:
                s["end"] = s["end"] or "ended"
        elif kind == 0 and s:
            s["buf"] += payload
            *lines, s["buf"] = s["buf"].split(b"\n")
            for line in lines:
                event = json.loads(line)
                if event["type"] == "ADDED":
                    s["added"].add(event["object"]["metadata"]["name"])
            if flags & 1:
                s["end"] = s["end"] or "ended"
for s in state.values():
    print(s["name"], len(s["added"]), marker in s["added"], s["end"], flush=True)
print("connection", closed or "open", flush=True)
"#;

/// Watches sharing one HTTP/2 connection end one by one, never together: one ending at
/// its timeout, one the client cancels and one the server terminates for not reading
/// leave the others streaming, and so does a client that reads nothing for 12 s (the
/// connection's keep-alive PING goes unanswered that long, as it does for a client
/// starved of CPU or one whose PING waits behind seconds of queued events). The soak run
/// lost a whole connection of 100 watchers so: the server closed connections whose PING
/// was not answered within 5 s.
#[tokio::test(flavor = "multi_thread")]
async fn watches_on_one_http2_connection_end_alone() {
    use apiserver_tests::metrics::scrape;
    use futures_util::{StreamExt, TryStreamExt};
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, PostParams};

    // Enough ~450-byte events to put the non-reading watch (64 KiB window) more than the
    // namespace feed's 256-event buffer behind, and few enough that the readers' own
    // send buffers (400 KiB a stream) never fill while the client stalls.
    const WRITES: usize = 600;
    const MARKER: &str = "marker";
    let s = TestServer::start();
    let c = s.client().await;
    let configmaps: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let rv = configmaps
        .list_metadata(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();

    let script = s.write_file("h2_watches.py", H2_WATCHES_CLIENT);
    let mut child = Command::new(apiserver_tests::python_binary())
        .arg(&script)
        .arg(s.port().to_string())
        .arg(s.data_dir().join("certs").join("ca.crt"))
        .arg(admin_token(&s))
        .arg(&rv)
        .args(["8", "12", MARKER])
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting python3");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let client = Stalled(child);
    let mut next_line = move || {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        line.trim().to_string()
    };
    let line = next_line();
    assert_eq!(line, "watching", "the watches did not start");

    let create = |name: String| {
        let configmaps = configmaps.clone();
        async move {
            let cm: ConfigMap = serde_json::from_value(serde_json::json!({
                "metadata": {"name": name},
                "data": {"k": "x".repeat(200)},
            }))
            .unwrap();
            configmaps.create(&PostParams::default(), &cm).await
        }
    };
    futures_util::stream::iter(0..WRITES)
        .map(|i| create(format!("cm-{i:04}")))
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await
        .expect("creating the ConfigMaps");
    // The marker is written once the client reads again: the readers can only see it
    // if their connection outlived the stall.
    assert_eq!(next_line(), "stalling");
    assert_eq!(next_line(), "reading");
    create(MARKER.into()).await.expect("creating the marker");

    let mut lines = Vec::new();
    loop {
        let line = next_line();
        if line.is_empty() {
            break;
        }
        lines.push(line);
    }
    drop(client);
    let report = format!("{}\nserver log:\n{}", lines.join("\n"), s.stderr_tail());
    let events = (WRITES + 1).to_string();
    for reader in ["reader1", "reader2"] {
        let want = format!("{reader} {events} True None");
        assert!(
            lines.contains(&want),
            "{reader} did not get every event:\n{report}"
        );
    }
    assert!(lines.contains(&"connection open".to_string()), "{report}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("timeout ") && l.ends_with(" ended")),
        "the watch with timeoutSeconds=1 did not end cleanly:\n{report}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("cancel ") && l.ends_with(" cancelled")),
        "{report}"
    );
    let terminated = scrape(&c).await.value(
        "apiserver_terminated_watchers_total",
        &[("group", ""), ("resource", "configmaps")],
    );
    assert_eq!(
        terminated, 1.0,
        "the slow watch, and only it, was terminated:\n{report}"
    );
}

/// How many idle connections [`idle_connections_hold_bounded_memory`] opens.
const IDLE_CONNECTIONS: usize = 10_000;
/// The most the server's resident memory may grow per idle HTTP/2 connection (measured:
/// see BENCHMARKS.md, "Idle connections").
const MAX_BYTES_PER_IDLE_CONNECTION: u64 = 64 * 1024;

/// Raises this process's soft open-files limit to what `needed` descriptors take, or
/// fails saying why (a hard limit below it cannot be raised without privileges).
fn raise_open_files_limit(needed: u64) {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    let hard = limit.maximum.unwrap_or(u64::MAX);
    assert!(
        hard >= needed,
        "this test needs {needed} open files, and the hard limit (ulimit -Hn) is {hard}: \
         raise it (e.g. in /etc/security/limits.conf or the container's settings)"
    );
    if limit.current.is_some_and(|soft| soft < needed) {
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            },
        )
        .expect("raising the soft open-files limit");
    }
}

/// A TLS client configuration that trusts `ca` and offers HTTP/2 only.
fn h2_client_config(ca: &std::path::Path) -> std::sync::Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    let pem = std::fs::read(ca).expect("reading the server's CA");
    for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
        roots.add(cert.expect("a PEM certificate")).unwrap();
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    std::sync::Arc::new(config)
}

/// Opens a TLS connection speaking HTTP/2 (preface and SETTINGS) and waits for the
/// server's first frame, so the server holds a whole HTTP/2 connection for it.
async fn idle_h2_connection(
    port: u16,
    tls: tokio_rustls::TlsConnector,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connecting");
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let mut conn = tls.connect(name, tcp).await.expect("the TLS handshake");
    conn.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .unwrap();
    let mut frame_header = [0u8; 9];
    conn.read_exact(&mut frame_header)
        .await
        .expect("the server's SETTINGS");
    conn
}

/// 10,000 idle HTTP/2 connections (a client opening many and sending nothing) cost the
/// server a bounded amount of memory each, and it goes on answering requests.
#[tokio::test(flavor = "multi_thread")]
async fn idle_connections_hold_bounded_memory() {
    use futures_util::StreamExt;
    raise_open_files_limit(IDLE_CONNECTIONS as u64 + 1000);
    let s = TestServer::start();
    let c = s.client().await;
    let before = s.memory_kib();
    let tls = tokio_rustls::TlsConnector::from(h2_client_config(
        &s.data_dir().join("certs").join("ca.crt"),
    ));
    let started = Instant::now();
    let connections: Vec<_> = futures_util::stream::iter(0..IDLE_CONNECTIONS)
        .map(|_| idle_h2_connection(s.port(), tls.clone()))
        .buffer_unordered(64)
        .collect()
        .await;
    let opened_in = started.elapsed();
    let after = s.memory_kib();
    let per_connection = after.rss.saturating_sub(before.rss) * 1024 / IDLE_CONNECTIONS as u64;
    eprintln!(
        "{IDLE_CONNECTIONS} idle connections opened in {opened_in:?}: RSS {} KiB -> {} KiB, \
         {per_connection} bytes each",
        before.rss, after.rss
    );
    assert!(
        per_connection < MAX_BYTES_PER_IDLE_CONNECTION,
        "{per_connection} bytes of RSS per idle connection"
    );
    let resp = raw_request(&c, "GET", "/api/v1/namespaces", None, "").await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    drop(connections);
}
