//! What the store holds, byte for byte, on either backend (`APISERVER_TEST_STORAGE`):
//! read with etcd's own API (its JSON gateway) on etcd, and with the embedded store's
//! own code on the embedded store (the server stopped for the moment: the store is
//! locked while it runs). Encryption at rest and storage-version migration assert on it.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use apiserver_tests::{Backend, TestServer};
use base64::Engine;

/// The values stored under `prefix`, as the backend holds them (an embedded server is
/// stopped and started again around the read).
pub fn raw(s: &mut TestServer, prefix: &str) -> BTreeMap<String, Vec<u8>> {
    match s.backend() {
        Backend::Etcd => etcd_range(&s.etcd().endpoint(), prefix),
        Backend::Embedded => {
            s.stop();
            let values = embedded_range(&s.data_dir().join("store.redb"), prefix);
            s.restart();
            values
        }
    }
}

/// Replaces the value of the existing `key` with `value`, bypassing the server: what an
/// earlier server (another storage version) would have left there. An embedded server
/// is stopped and started again around the write.
pub fn overwrite(s: &mut TestServer, key: &str, value: &[u8]) {
    match s.backend() {
        Backend::Etcd => {
            etcd_call(
                &s.etcd().endpoint(),
                "/v3/kv/put",
                &serde_json::json!({ "key": b64(key.as_bytes()), "value": b64(value) }),
            );
        }
        Backend::Embedded => {
            s.stop();
            embedded_overwrite(&s.data_dir().join("store.redb"), key, value);
            s.restart();
        }
    }
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn embedded_overwrite(path: &Path, key: &str, value: &[u8]) {
    use apiserver::storage::Storage;
    current_thread().block_on(async {
        let store = apiserver::storage::embedded::EmbeddedStorage::open(path)
            .unwrap_or_else(|e| panic!("opening {}: {e}", path.display()));
        let kv = store.get(key).await.unwrap().expect("the key exists");
        store
            .update(key, kv.mod_revision, value.to_vec().into())
            .await
            .unwrap();
    })
}

/// Keys and values under `prefix` in a stopped server's embedded store, read with the
/// store's own code.
pub fn embedded_range(path: &Path, prefix: &str) -> BTreeMap<String, Vec<u8>> {
    use apiserver::storage::Storage;
    current_thread().block_on(async {
        let store = apiserver::storage::embedded::EmbeddedStorage::open(path)
            .unwrap_or_else(|e| panic!("opening {}: {e}", path.display()));
        let page = store.list(prefix, None, 0).await.unwrap();
        page.items
            .into_iter()
            .map(|kv| (kv.key, kv.value.to_vec()))
            .collect()
    })
}

/// Keys and values under `prefix` on etcd, read through etcd's JSON gateway
/// (`POST /v3/kv/range`).
pub fn etcd_range(endpoint: &str, prefix: &str) -> BTreeMap<String, Vec<u8>> {
    let std = base64::engine::general_purpose::STANDARD;
    let mut end = prefix.as_bytes().to_vec();
    *end.last_mut().unwrap() += 1;
    let body = serde_json::json!({ "key": b64(prefix.as_bytes()), "range_end": b64(&end) });
    let json = etcd_call(endpoint, "/v3/kv/range", &body);
    json["kvs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|kv| {
            let field = |f: &str| std.decode(kv[f].as_str().unwrap_or_default()).unwrap();
            (String::from_utf8(field("key")).unwrap(), field("value"))
        })
        .collect()
}

/// One call to etcd's JSON gateway over plain HTTP/1.0, so no etcd client is needed;
/// its answer, which must be a 200.
fn etcd_call(endpoint: &str, path: &str, body: &serde_json::Value) -> serde_json::Value {
    let body = body.to_string();
    let addr = endpoint
        .strip_prefix("http://")
        .unwrap_or_else(|| panic!("a plain-HTTP etcd endpoint, not {endpoint}"));
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, json) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{answer}"
    );
    serde_json::from_str(json).unwrap()
}
