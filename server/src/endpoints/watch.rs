//! Watch: newline-delimited JSON events (`{"type":..,"object":..}`) streamed and flushed one
//! by one, from a resourceVersion, with selectors, bookmarks, watch-list initial events
//! and a server-side timeout.

use std::sync::Arc;
use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse};
use bytes::Bytes;
use serde_json::{json, Value};

use super::negotiation::Representation;
use super::table::{table, IncludeObject};
use super::ApiState;
use crate::api::options::{ListOptions, ReadAt};
use crate::api::ApiError;
use crate::catalog::ApiResource;
use crate::registry::store::WatchStart;
use crate::registry::watcher::{WatchEvent, Watcher};

/// Longest a watch stays open (kube-apiserver's default request timeout range).
pub const MAX_WATCH_SECONDS: u64 = 1800;
/// How often a watch that allows bookmarks gets one.
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);
/// How long before its deadline a watch that allows bookmarks gets a last one.
const BOOKMARK_BEFORE_DEADLINE: Duration = Duration::from_secs(2);

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

/// Starts a watch and returns the streaming response. The response body polls the
/// store's [`Watcher`] itself: an open watch costs no task of its own.
pub async fn serve(
    req: &HttpRequest,
    res: Arc<ApiResource>,
    state: &ApiState,
    w: WatchRequest,
) -> Result<HttpResponse, ApiError> {
    let rv = match w.resource_version.as_deref() {
        None | Some("") => None,
        Some(s) => Some(
            s.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {s:?}")))?,
        ),
    };
    // A start point the store has not reached is refused as reads refuse it (504 with
    // a ResourceVersionTooLarge cause, which clients retry), never waited for.
    if let Some(rv) = rv.filter(|rv| *rv > 0) {
        let current = state.store.current_revision().await?;
        if rv > current {
            return Err(ApiError::too_large_resource_version(rv, current));
        }
    }
    // Unset or "0" (or watch-list) start with the current state as ADDED events.
    let start = match rv {
        Some(rv) if rv > 0 && !w.send_initial_events => WatchStart::After(rv),
        None => WatchStart::State(ReadAt::Latest),
        Some(0) => WatchStart::State(ReadAt::Any),
        Some(rv) => WatchStart::State(ReadAt::NotOlderThan(rv)),
    };
    let watcher = match state
        .store
        .watch(
            res.clone(),
            w.namespace.as_deref(),
            start,
            w.list.labels.clone(),
            w.list.fields.clone(),
        )
        .await
    {
        Ok(watcher) => watcher,
        // As kube-apiserver: a start point too old is an ERROR event (410) in the stream.
        Err(e) if e.is_expired() => Watcher::failed(res.clone(), e),
        Err(e) => return Err(e),
    };
    // As kube-apiserver: an unset or zero timeoutSeconds means the server's own timeout.
    let timeout = Duration::from_secs(
        w.timeout_seconds
            .filter(|t| *t > 0)
            .unwrap_or(MAX_WATCH_SECONDS)
            .min(MAX_WATCH_SECONDS),
    );
    let deadline = tokio::time::Instant::now() + timeout;
    let content_type = if w.repr == Representation::Protobuf && res.protobuf {
        "application/vnd.kubernetes.protobuf;stream=watch"
    } else {
        "application/json"
    };
    let meter = crate::metrics::metrics().watch(
        &res.def.group,
        &res.def.version,
        &res.def.plural,
        &res.def.kind,
    );
    // A client that stops reading stops this response from being polled: the watch
    // cache terminates the watch once it falls a buffer behind, and the connection is
    // ended here, from outside the response.
    let terminated = meter.terminated();
    let closer = req
        .conn_data::<crate::server::connection::ConnectionCloser>()
        .cloned();
    watcher.on_terminated(move || {
        terminated.inc();
        if let Some(closer) = &closer {
            closer.close();
        }
    });
    let stream = WatchStream {
        streaming: req
            .conn_data::<crate::server::write_batch::Streaming>()
            .cloned(),
        meter,
        initial_end_bookmark: w.send_initial_events && w.allow_bookmarks,
        bookmarks: w.allow_bookmarks.then(|| BookmarkTimer::new(deadline)),
        deadline: Box::pin(tokio::time::sleep_until(deadline)),
        shutdown: Box::pin(state.lifecycle.stopped_accepting()),
        encoder: Encoder {
            res,
            repr: w.repr,
            include: w.include,
            first: true,
        },
        watcher,
        ended: false,
    };
    let body = futures_util::stream::unfold(stream, |mut s| async move {
        // A panic while streaming is past the handler's `recover_panics`: caught here,
        // logged, and told to the client as an in-stream ERROR (500) that ends the watch.
        let frame = match crate::panics::catch("watch stream", s.next_frame()).await {
            Some(frame) => frame?,
            None if s.ended => return None,
            None => {
                s.ended = true;
                s.encoder.error(&ApiError::internal(
                    "the server panicked while streaming the watch",
                ))
            }
        };
        Some((Ok::<_, actix_web::Error>(frame), s))
    });
    Ok(HttpResponse::Ok()
        .content_type(content_type)
        .insert_header(("Cache-Control", "no-cache, private"))
        .streaming(body))
}

/// The state of one watch response.
struct WatchStream {
    watcher: Watcher,
    /// Counts the events sent; the watcher is registered while the stream lives.
    meter: crate::metrics::WatchMeter,
    encoder: Encoder,
    /// Send the `k8s.io/initial-events-end` bookmark once the initial events are out.
    initial_end_bookmark: bool,
    bookmarks: Option<BookmarkTimer>,
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
    /// Resolves when graceful shutdown stops accepting requests: the watch ends then,
    /// cleanly, as at its timeout (clients re-watch, elsewhere).
    shutdown: std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>,
    /// An ERROR event was sent: the stream ends.
    ended: bool,
    /// Told of each change handed over (HTTP/2: the connection's writes wait briefly
    /// for its other watches' events, `server/write_batch.rs`).
    streaming: Option<crate::server::write_batch::Streaming>,
}

impl WatchStream {
    /// The next frame to write; `None` ends the response (cleanly, as on timeout).
    async fn next_frame(&mut self) -> Option<Bytes> {
        let frame = self.produce().await;
        if frame.is_some() {
            self.meter.event();
        }
        frame
    }

    async fn produce(&mut self) -> Option<Bytes> {
        if self.ended {
            return None;
        }
        if self.initial_end_bookmark {
            if let Some(event) = self.watcher.next_initial().await {
                return Some(self.event_frame(event));
            }
            self.initial_end_bookmark = false;
            let rv = self.watcher.start_revision();
            let mark = bookmark(&self.encoder.res, rv, true);
            return Some(self.encoder.frame("BOOKMARK", &mark));
        }
        let bookmarks = async {
            match &mut self.bookmarks {
                Some(timer) => timer.tick().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = &mut self.deadline => None,
            _ = &mut self.shutdown => None,
            _ = bookmarks => {
                let rv = self.watcher.bookmark_revision();
                let mark = bookmark(&self.encoder.res, rv, false);
                Some(self.encoder.frame("BOOKMARK", &mark))
            }
            event = self.watcher.next() => {
                if let Some(s) = &self.streaming {
                    s.mark();
                }
                Some(self.event_frame(event?))
            }
        }
    }

    /// One event's frame; an error is an ERROR event that ends the watch.
    fn event_frame(&mut self, event: Result<WatchEvent, ApiError>) -> Bytes {
        match event {
            Ok(e) => self
                .encoder
                .line(&e)
                .unwrap_or_else(|err| self.encoder.error(&err)),
            Err(e) => {
                self.ended = true;
                self.encoder.error(&e)
            }
        }
    }
}

/// When a watch that allows bookmarks gets the next one, timed as kube-apiserver's watch
/// cache times them: every minute, and once shortly before the watch's deadline, so a
/// client re-watches after the timeout from a recent resourceVersion.
struct BookmarkTimer {
    deadline: tokio::time::Instant,
    next: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl BookmarkTimer {
    fn new(deadline: tokio::time::Instant) -> Self {
        let mut timer = BookmarkTimer {
            deadline,
            next: None,
        };
        timer.schedule();
        timer
    }

    /// The next bookmark: a minute from now, or just before the deadline if that comes
    /// first; none once even that has passed.
    fn schedule(&mut self) {
        let now = tokio::time::Instant::now();
        let before_deadline = self
            .deadline
            .checked_sub(BOOKMARK_BEFORE_DEADLINE)
            .unwrap_or(now);
        let at = (now + BOOKMARK_INTERVAL).min(before_deadline);
        self.next = (at > now).then(|| Box::pin(tokio::time::sleep_until(at)));
    }

    /// Resolves when the next bookmark is due.
    async fn tick(&mut self) {
        match &mut self.next {
            Some(sleep) => sleep.await,
            None => std::future::pending().await,
        }
        self.schedule();
    }
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
    /// The wire form of one event. Plain JSON of an event every watcher shares is
    /// encoded once (see [`WatchEvent::json_line`]).
    fn line(&mut self, e: &WatchEvent) -> Result<Bytes, ApiError> {
        if let (Representation::Json, WatchEvent::Shared(_)) = (self.repr, e) {
            return e.json_line(&self.res);
        }
        let ev = e.object_event(&self.res)?;
        Ok(self.frame(ev.type_, &ev.object))
    }

    /// Protobuf frames when asked and the kind has field numbers.
    fn protobuf(&self) -> bool {
        self.repr == Representation::Protobuf && self.res.protobuf
    }

    /// One event: a JSON line, or a length-prefixed protobuf frame.
    fn frame(&mut self, type_: &str, obj: &Value) -> Bytes {
        if self.protobuf() {
            match crate::protobuf::encode_watch_frame(type_, obj, self.res.schema()) {
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
            vec![obj.clone()],
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
