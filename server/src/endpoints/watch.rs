//! Watch: newline-delimited JSON events (`{"type":..,"object":..}`) streamed and flushed one
//! by one, from a resourceVersion, with selectors, bookmarks, watch-list initial events
//! and a server-side timeout.

use std::sync::Arc;
use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse};
use bytes::Bytes;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::negotiation::Representation;
use super::table::{table, IncludeObject};
use super::ApiState;
use crate::api::ApiError;
use crate::catalog::ApiResource;
use crate::registry::store::{ListOptions, WatchEvent};

/// Longest a watch stays open (kube-apiserver's default request timeout range).
pub const MAX_WATCH_SECONDS: u64 = 1800;
/// How often a watch that allows bookmarks gets one.
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);

/// What a watch request asks for.
pub struct WatchRequest {
    pub namespace: Option<String>,
    pub list: ListOptions,
    pub resource_version: Option<String>,
    pub timeout_seconds: Option<u64>,
    pub allow_bookmarks: bool,
    pub send_initial_events: bool,
    pub repr: Representation,
    pub include: IncludeObject,
}

fn line(type_: &str, object: &Value) -> Bytes {
    let mut v = serde_json::to_vec(&json!({ "type": type_, "object": object })).unwrap_or_default();
    v.push(b'\n');
    Bytes::from(v)
}

fn bookmark(res: &ApiResource, rv: u64, initial_end: bool) -> Value {
    let mut meta = json!({ "resourceVersion": rv.to_string() });
    if initial_end {
        meta["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
    }
    json!({ "kind": res.def.kind, "apiVersion": res.api_version(), "metadata": meta })
}

/// Starts a watch and returns the streaming response.
pub async fn serve(
    _req: &HttpRequest,
    res: Arc<ApiResource>,
    state: &ApiState,
    w: WatchRequest,
) -> Result<HttpResponse, ApiError> {
    let store = state.store.clone();
    let rv = match w.resource_version.as_deref() {
        None | Some("") | Some("0") => None,
        Some(s) => Some(
            s.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {s:?}")))?,
        ),
    };
    let ns = w.namespace.as_deref();
    // Start point: unset/"0" (or watch-list) replays current state as ADDED events.
    let (initial, after) = match rv {
        Some(rv) if !w.send_initial_events => (Vec::new(), rv),
        _ => {
            let opts = ListOptions {
                limit: 0,
                continue_token: None,
                revision: None,
                labels: w.list.labels.clone(),
                fields: w.list.fields.clone(),
            };
            let page = store.list(&res, ns, &opts).await?;
            let rev = page.resource_version.parse().unwrap_or(0);
            (page.items, rev)
        }
    };
    let events = store
        .watch(
            res.clone(),
            ns,
            after,
            w.list.labels.clone(),
            w.list.fields.clone(),
        )
        .await;
    let timeout = Duration::from_secs(
        w.timeout_seconds
            .unwrap_or(MAX_WATCH_SECONDS)
            .min(MAX_WATCH_SECONDS),
    );
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    let content_type = if w.repr == Representation::Protobuf && res.protobuf {
        "application/vnd.kubernetes.protobuf;stream=watch"
    } else {
        "application/json"
    };

    tokio::spawn(async move {
        let mut encoder = Encoder {
            res: res.clone(),
            repr: w.repr,
            include: w.include,
            first: true,
        };
        let mut last_rv = after;
        for obj in &initial {
            if tx.send(encoder.frame("ADDED", obj)).await.is_err() {
                return;
            }
        }
        let end_of_initial = w.send_initial_events && w.allow_bookmarks;
        if end_of_initial
            && tx
                .send(encoder.frame("BOOKMARK", &bookmark(&res, after, true)))
                .await
                .is_err()
        {
            return;
        }
        let mut events = match events {
            Ok(e) => e,
            Err(e) => {
                let _ = tx.send(encoder.error(&e)).await;
                return;
            }
        };
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval(BOOKMARK_INTERVAL);
        ticker.tick().await;
        loop {
            tokio::select! {
                _ = &mut deadline => return,
                _ = ticker.tick(), if w.allow_bookmarks => {
                    if tx.send(encoder.frame("BOOKMARK", &bookmark(&res, last_rv, false))).await.is_err() {
                        return;
                    }
                }
                _ = tx.closed() => return,
                event = events.recv() => match event {
                    None => return,
                    Some(Ok(e)) => {
                        let out = match encoder.line(&e) {
                            Ok((rv, out)) => {
                                last_rv = rv.unwrap_or(last_rv);
                                out
                            }
                            Err(err) => encoder.error(&err),
                        };
                        if tx.send(out).await.is_err() {
                            return;
                        }
                    }
                    Some(Err(e)) => {
                        let _ = tx.send(encoder.error(&e)).await;
                        return;
                    }
                },
            }
        }
    });

    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, actix_web::Error>(b), rx))
    });
    Ok(HttpResponse::Ok()
        .content_type(content_type)
        .insert_header(("Cache-Control", "no-cache, private"))
        .streaming(body))
}

/// Renders event objects as the client asked: the object, or a one-row Table (column
/// definitions only in the first event, as kube-apiserver sends them).
struct Encoder {
    res: Arc<ApiResource>,
    repr: Representation,
    include: IncludeObject,
    first: bool,
}

impl Encoder {
    /// The wire line of one event and its resourceVersion. Plain JSON of an event every
    /// watcher shares is encoded once (see [`WatchEvent::json_line`]).
    fn line(&mut self, e: &WatchEvent) -> Result<(Option<u64>, Bytes), ApiError> {
        if let (Representation::Json, WatchEvent::Shared(stored)) = (self.repr, e) {
            return Ok((Some(stored.revision), e.json_line(&self.res)?));
        }
        let ev = e.object_event(&self.res)?;
        let rv = ev.object["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|s| s.parse().ok());
        Ok((rv, self.frame(ev.type_, &ev.object)))
    }

    /// Protobuf frames when asked and the kind has field numbers.
    fn protobuf(&self) -> bool {
        self.repr == Representation::Protobuf && self.res.protobuf
    }

    /// One event: a JSON line, or a length-prefixed protobuf frame.
    fn frame(&mut self, type_: &str, obj: &Value) -> Bytes {
        if self.protobuf() {
            match crate::protobuf::encode_watch_frame(type_, obj, &self.res.schema) {
                Ok(f) => return Bytes::from(f),
                Err(e) => {
                    return self.error(&ApiError::internal(format!("encoding a watch event: {e}")))
                }
            }
        }
        line(type_, &self.object(obj))
    }

    /// An ERROR event carrying `e` as a Status.
    fn error(&self, e: &ApiError) -> Bytes {
        if self.protobuf() {
            return Bytes::from(crate::protobuf::watch_frame(
                "ERROR",
                &crate::protobuf::encode_status(&e.to_status()),
            ));
        }
        line("ERROR", &e.to_status())
    }

    fn object(&mut self, obj: &Value) -> Value {
        if self.repr == Representation::PartialMetadata {
            return super::negotiation::partial_metadata(obj);
        }
        if self.repr != Representation::Table {
            return obj.clone();
        }
        let rv = obj["metadata"]["resourceVersion"].clone();
        let mut t = table(
            &self.res,
            std::slice::from_ref(obj),
            json!({ "resourceVersion": rv }),
            self.include,
        );
        if !self.first {
            t["columnDefinitions"] = json!([]);
        }
        self.first = false;
        t
    }
}
