//! CRD conversion by webhook: a real HTTPS endpoint (a small Python server answering
//! ConversionReview v1) converts objects between a CRD's versions on every read, list,
//! watch and write; a webhook that is down is a clear 500, never a wrong object.

use apiserver_tests::objects::install_crd;
use apiserver_tests::webhooks::{ca_bundle, WebhookServer};
use apiserver_tests::{raw_request, TestServer};

/// Converts Gauge objects: v1 `spec.count` is v2 `spec.amount`.
const WEBHOOK: &str = r#"
import json, ssl, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

class Convert(BaseHTTPRequestHandler):
    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        want = review["request"]["desiredAPIVersion"]
        converted = []
        for obj in review["request"]["objects"]:
            spec = obj.get("spec", {})
            if want.endswith("/v2") and "count" in spec:
                spec["amount"] = spec.pop("count")
            if want.endswith("/v1") and "amount" in spec:
                spec["count"] = spec.pop("amount")
            obj["apiVersion"] = want
            converted.append(obj)
        body = json.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": review["request"]["uid"], "convertedObjects": converted,
                         "result": {"status": "Success"}}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

server = HTTPServer(("127.0.0.1", 0), Convert)
tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
tls.load_cert_chain(sys.argv[1], sys.argv[2])
server.socket = tls.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

fn gauges_crd(url: &str, ca_bundle: &str) -> String {
    format!(
        "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gauges.conversion.example.com
spec:
  group: conversion.example.com
  scope: Namespaced
  names: {{plural: gauges, singular: gauge, kind: Gauge}}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig: {{url: '{url}', caBundle: {ca_bundle}}}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {{type: object, properties: {{count: {{type: integer}}}}}}
    - name: v2
      served: true
      storage: false
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {{type: object, properties: {{amount: {{type: integer}}}}}}
"
    )
}

#[test]
fn a_conversion_webhook_converts_objects_between_versions() {
    let s = TestServer::start();
    let webhook = WebhookServer::start(&s, "webhook.py", WEBHOOK, &[]);
    let url = webhook.url("/convert");
    let crd = s.write_file("gauges.yaml", &gauges_crd(&url, &ca_bundle(&s)));
    install_crd(&s, &crd, "gauges.conversion.example.com");

    let rt = tokio::runtime::Runtime::new().unwrap();
    let c = rt.block_on(s.client());
    let request = |method: &str, path: &str, body: &str| {
        rt.block_on(raw_request(
            &c,
            method,
            path,
            Some("application/json"),
            body.to_string(),
        ))
    };
    let v1 = "/apis/conversion.example.com/v1/namespaces/default/gauges";
    let v2 = "/apis/conversion.example.com/v2/namespaces/default/gauges";

    // Written in v2, stored in v1, read in either.
    let created = request(
        "POST",
        v2,
        r#"{"apiVersion":"conversion.example.com/v2","kind":"Gauge","metadata":{"name":"g"},"spec":{"amount":3}}"#,
    );
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.json["spec"], serde_json::json!({"amount": 3}));
    let in_v1 = request("GET", &format!("{v1}/g"), "");
    assert_eq!(
        in_v1.json["apiVersion"], "conversion.example.com/v1",
        "{}",
        in_v1.text
    );
    assert_eq!(in_v1.json["spec"], serde_json::json!({"count": 3}));
    let in_v2 = request("GET", &format!("{v2}/g"), "");
    assert_eq!(
        in_v2.json["spec"],
        serde_json::json!({"amount": 3}),
        "{}",
        in_v2.text
    );
    let listed = request("GET", v2, "");
    assert_eq!(
        listed.json["items"][0]["spec"],
        serde_json::json!({"amount": 3}),
        "{}",
        listed.text
    );
    // kubectl reads and patches through the webhook too.
    let kubectl = s.kubectl_ok(&[
        "get",
        "gauges.v2.conversion.example.com",
        "g",
        "-o",
        "jsonpath={.spec.amount}",
    ]);
    assert_eq!(kubectl, "3");
    s.kubectl_ok(&[
        "patch",
        "gauges.v2.conversion.example.com",
        "g",
        "--type=merge",
        "-p",
        r#"{"spec":{"amount":4}}"#,
    ]);
    let in_v1 = request("GET", &format!("{v1}/g"), "");
    assert_eq!(
        in_v1.json["spec"],
        serde_json::json!({"count": 4}),
        "{}",
        in_v1.text
    );
    // A watch in v2 sees the object converted.
    let watched = request(
        "GET",
        &format!("{v2}?watch=1&resourceVersion=0&timeoutSeconds=1"),
        "",
    );
    let first: serde_json::Value =
        serde_json::from_str(watched.text.lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "ADDED");
    assert_eq!(
        first["object"]["spec"],
        serde_json::json!({"amount": 4}),
        "{}",
        watched.text
    );

    // With the webhook down, reads in another version fail clearly; the stored version
    // still reads.
    drop(webhook);
    let failed = request("GET", &format!("{v2}/g"), "");
    assert_eq!(failed.status, 500, "{}", failed.text);
    let message = failed.json["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(
            "Internal error occurred: conversion webhook for conversion.example.com/v1, Kind=Gauge failed: Post"
        ),
        "{message}"
    );
    assert_eq!(request("GET", &format!("{v1}/g"), "").status, 200);

    // A webhook this server cannot call is refused up front.
    let bad = s.write_file(
        "bad.yaml",
        &gauges_crd("http://127.0.0.1:1/convert", &ca_bundle(&s))
            .replace("gauges", "dials")
            .replace("Gauge", "Dial")
            .replace("gauge,", "dial,"),
    );
    let err = s.kubectl_err(&["apply", "-f", bad.to_str().unwrap()]);
    assert!(
        err.contains("spec.conversion.webhook.clientConfig.url")
            && err.contains("'https' is the only allowed URL scheme"),
        "{err}"
    );
}

/// Accepts every ConversionReview and never answers it.
const HANGING_WEBHOOK: &str = r#"
import ssl, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer
from socketserver import ThreadingMixIn

class Hang(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(3600)

    def log_message(self, *args):
        pass

class Server(ThreadingMixIn, HTTPServer):
    daemon_threads = True

server = Server(("127.0.0.1", 0), Hang)
tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
tls.load_cert_chain(sys.argv[1], sys.argv[2])
server.socket = tls.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

/// kube-apiserver gives a conversion webhook 30 s (not configurable); this test waits
/// that long once, in parallel with the other test of this file.
#[test]
fn a_hanging_conversion_webhook_answers_500_at_the_timeout_while_the_server_keeps_serving() {
    let s = TestServer::start();
    let webhook = WebhookServer::start(&s, "hang.py", HANGING_WEBHOOK, &[]);
    let crd = s.write_file(
        "gauges.yaml",
        &gauges_crd(&webhook.url("/convert"), &ca_bundle(&s)),
    );
    install_crd(&s, &crd, "gauges.conversion.example.com");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let c = rt.block_on(s.client());
    let v1 = "/apis/conversion.example.com/v1/namespaces/default/gauges";
    let v2 = "/apis/conversion.example.com/v2/namespaces/default/gauges";
    // The storage version needs no conversion.
    let created = rt.block_on(raw_request(
        &c,
        "POST",
        v1,
        Some("application/json"),
        r#"{"apiVersion":"conversion.example.com/v1","kind":"Gauge","metadata":{"name":"g"},"spec":{"count":3}}"#,
    ));
    assert_eq!(created.status, 201, "{}", created.text);

    let started = std::time::Instant::now();
    let hanging = rt.spawn({
        let c = c.clone();
        async move { raw_request(&c, "GET", &format!("{v2}/g"), None, String::new()).await }
    });
    // While the webhook hangs, everything that needs no conversion is served.
    for path in [
        "/readyz",
        &format!("{v1}/g"),
        "/api/v1/namespaces/default/configmaps",
    ] {
        let r = rt.block_on(raw_request(&c, "GET", path, None, String::new()));
        assert_eq!(r.status, 200, "{path}: {}", r.text);
    }
    assert!(!hanging.is_finished(), "the read waits for the webhook");

    let failed = rt.block_on(hanging).unwrap();
    let waited = started.elapsed();
    assert_eq!(failed.status, 500, "{}", failed.text);
    let message = failed.json["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(
            "Internal error occurred: conversion webhook for conversion.example.com/v1, Kind=Gauge failed: Post"
        ) && message.contains("context deadline exceeded"),
        "{message}"
    );
    // Bounded by the webhook timeout, not by the webhook.
    assert!(waited < std::time::Duration::from_secs(45), "{waited:?}");
    assert_eq!(
        rt.block_on(raw_request(
            &c,
            "GET",
            &format!("{v1}/g"),
            None,
            String::new()
        ))
        .status,
        200
    );
}
