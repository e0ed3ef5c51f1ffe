//! Graceful shutdown as kube-apiserver does it, seen from clients: SIGTERM under a
//! stream of creates loses no acknowledged write and leaves no request unanswered,
//! `/readyz` fails during the shutdown delay while `/livez` passes, an open watch ends
//! cleanly, the process exits 0; a second signal exits at once with 1.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use apiserver_tests::{raw_request, TestServer};
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, WatchParams};

const DEADLINE: Duration = Duration::from_secs(30);
/// Long enough to probe health during it, even on a loaded machine.
const SHUTDOWN_DELAY: &str = "--shutdown-delay-duration=3s";
/// Clients creating objects at once.
const WRITERS: usize = 8;

/// What one create came to.
#[derive(Debug)]
enum Outcome {
    /// 201: the object must survive.
    Created(String),
    /// An answer that is not 201 (the shutdown refusal, 503 or 429).
    Refused(u16),
    /// The server no longer listens: the request was never sent.
    NotConnected,
    /// Anything else: a request the server took and did not answer (reset, cut off).
    Lost(String),
}

/// Creates `name` on a connection of its own (`Connection: close`), so no request
/// races the server closing an idle kept-alive connection: one that was never sent
/// fails to connect, anything else was in flight.
async fn create(client: &kube::Client, name: &str) -> Outcome {
    let body = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"k":"v"}}}}"#
    );
    let request = http::Request::builder()
        .method("POST")
        .uri("/api/v1/namespaces/default/configmaps")
        .header("content-type", "application/json")
        .header("connection", "close")
        .body(kube::client::Body::from(body.into_bytes()))
        .unwrap();
    match client.send(request).await {
        Ok(resp) => {
            let status = resp.status().as_u16();
            match resp.into_body().collect_bytes().await {
                Ok(_) if status == 201 => Outcome::Created(name.to_string()),
                Ok(_) => Outcome::Refused(status),
                Err(e) => Outcome::Lost(format!("{status}, body cut off: {e}")),
            }
        }
        Err(e) => {
            let chain = error_chain(&e);
            if chain.contains("client error (Connect)") {
                Outcome::NotConnected
            } else {
                Outcome::Lost(chain)
            }
        }
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_under_concurrent_creates_answers_every_request_and_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = TestServer::start_in_with_flags(dir.path(), &[SHUTDOWN_DELAY]);
    let client = s.client().await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut watch = configmaps
        .watch(&WatchParams::default().timeout(290), "0")
        .await
        .unwrap()
        .boxed();

    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (client, outcomes) = (client.clone(), outcomes.clone());
            tokio::spawn(async move {
                for i in 0.. {
                    let outcome = create(&client, &format!("cm-{w}-{i}")).await;
                    let done = matches!(outcome, Outcome::NotConnected | Outcome::Lost(_));
                    outcomes.lock().unwrap().push(outcome);
                    if done {
                        return;
                    }
                }
            })
        })
        .collect();
    // Writes are flowing before the signal.
    let deadline = Instant::now() + DEADLINE;
    while outcomes.lock().unwrap().len() < 2 * WRITERS {
        assert!(Instant::now() < deadline, "no creates answered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    s.signal("TERM");
    // During the delay: not ready (the shutdown check), still live, still serving.
    let ready = loop {
        let r = raw_request(&client, "GET", "/readyz?verbose", None, Vec::new()).await;
        if r.status != 200 {
            break r;
        }
        assert!(Instant::now() < deadline, "/readyz kept passing: {r:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(ready.status, 500, "{ready:?}");
    assert!(
        ready.text.contains("[-]shutdown failed: reason withheld\n")
            && ready.text.contains("[+]etcd ok\n"),
        "{}",
        ready.text
    );
    let shutdown = raw_request(&client, "GET", "/readyz/shutdown", None, Vec::new()).await;
    assert_eq!(
        (shutdown.status, shutdown.text.as_str()),
        (500, "internal server error: process is shutting down\n")
    );
    let live = raw_request(&client, "GET", "/livez", None, Vec::new()).await;
    assert_eq!((live.status, live.text.as_str()), (200, "ok"));

    // After the delay the watch ends cleanly: the stream finishes without an error.
    let watch_end = tokio::time::timeout(DEADLINE, async {
        let mut events = 0;
        while let Some(event) = watch.next().await {
            if let Err(e) = event {
                return Err(format!("after {events} events: {}", error_chain(&e)));
            }
            events += 1;
        }
        Ok(events)
    })
    .await
    .expect("the watch did not end after the shutdown delay");
    assert!(
        watch_end.is_ok(),
        "the watch ended with an error: {watch_end:?}"
    );

    for writer in writers {
        tokio::time::timeout(DEADLINE, writer)
            .await
            .expect("a writer kept going after the server stopped listening")
            .unwrap();
    }
    let status = s
        .wait_for_exit(DEADLINE)
        .expect("the server did not exit after draining");
    assert_eq!(status.code(), Some(0), "{}", s.stderr_tail());

    let outcomes = std::mem::take(&mut *outcomes.lock().unwrap());
    let lost: Vec<&String> = outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::Lost(why) => Some(why),
            _ => None,
        })
        .collect();
    assert!(
        lost.is_empty(),
        "requests in flight went unanswered: {lost:?}"
    );
    let refused: Vec<u16> = outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::Refused(code) => Some(*code),
            _ => None,
        })
        .collect();
    assert!(
        refused.iter().all(|code| *code == 503),
        "refusals other than the shutdown's 503: {refused:?}"
    );
    let created: BTreeSet<String> = outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::Created(name) => Some(name.clone()),
            _ => None,
        })
        .collect();

    // Every acknowledged create is there after a restart on the same data directory.
    s.restart();
    let configmaps: Api<ConfigMap> = Api::namespaced(s.client().await, "default");
    let stored: BTreeSet<String> = configmaps
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|cm| cm.metadata.name)
        .collect();
    let missing: Vec<&String> = created.difference(&stored).collect();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged creates are gone: {missing:?}",
        missing.len(),
        created.len()
    );
}

#[tokio::test]
async fn a_second_signal_during_the_shutdown_delay_exits_at_once_with_1() {
    let mut s = TestServer::start_with_flags(&["--shutdown-delay-duration=60s"]);
    let client = s.client().await;
    s.signal("TERM");
    let deadline = Instant::now() + DEADLINE;
    while raw_request(&client, "GET", "/readyz", None, Vec::new())
        .await
        .status
        == 200
    {
        assert!(
            Instant::now() < deadline,
            "/readyz kept passing after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    s.signal("INT");
    let status = s
        .wait_for_exit(Duration::from_secs(5))
        .expect("the second signal did not end the process at once");
    assert_eq!(status.code(), Some(1), "{}", s.stderr_tail());
}
