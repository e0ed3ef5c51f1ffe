//! The audit filter (upstream's WithAudit): after authentication, so the user is known,
//! and before impersonation, authorization and everything else, so their refusals are
//! recorded too. One event per stage: RequestReceived, ResponseStarted (watches, when
//! the stream starts), ResponseComplete, or Panic. Failed authentication is audited by
//! [`failed_authentication`], which the authentication filter calls (upstream's
//! WithFailedAuthenticationAudit).

use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage, HttpRequest};
use bytes::Bytes;
use futures_util::FutureExt;

use crate::admission::RequestAdmission;
use crate::api::ApiError;
use crate::audit::event::{
    Event, EventUser, Level, MicroTime, ObjectReference, ResponseStatus, Stage,
};
use crate::audit::policy::{Attributes, RequestAuditConfig};
use crate::audit::{decode_body, omit_managed_fields, Audit, RequestAudit};
use crate::auth::UserInfo;
use crate::endpoints::request_info::RequestInfo;

/// The header carrying a request's audit ID, both ways.
const AUDIT_ID: &str = "audit-id";

/// Audits the request as the policy says; with no policy it is not in the chain.
pub async fn audit(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some(audit) = req.app_data::<web::Data<Audit>>().cloned() else {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    };
    let received = MicroTime::now();
    let audit_id = audit_id(&req);
    // No clone of the HttpRequest is kept across the call: routing below needs it
    // unshared. What later stages learn comes back through the RequestAudit.
    let requester = crate::auth::user(req.request());
    let info = request_info(&req);
    let config = audit.evaluate(&attributes(requester.as_deref(), &info));
    if config.level == Level::None {
        let resp = next.call(req).await;
        return with_audit_id(resp.map(ServiceResponse::map_into_boxed_body), &audit_id);
    }
    let mut ev = event(
        &req,
        &info,
        requester.as_deref(),
        &config,
        audit_id.clone(),
        received,
    );
    let body = if wants_request_body(&config, &info) {
        capture_body(&mut req).await.map(Some)
    } else {
        Ok(None)
    };
    let ctx = Rc::new(RequestAudit::new(config));
    req.extensions_mut().insert(ctx.clone());
    if audit
        .process(&mut ev, Stage::RequestReceived, &ctx.config)
        .await
        .is_err()
    {
        let e = ApiError::internal("failed to store audit event");
        let (http, _) = req.into_parts();
        return with_audit_id(Ok(ServiceResponse::from_err(e, http)), &audit_id);
    }
    let (body, outcome) = match body {
        Err(e) => (None, Ok(Err(e))),
        Ok(body) => (body, AssertUnwindSafe(next.call(req)).catch_unwind().await),
    };
    // The handler's decoded object when it made one (any encoding); else the body as
    // JSON or YAML (patches, delete options).
    let request_object = |ev: &mut Event| {
        ev.request_object = ctx.take_request().or_else(|| {
            let mut obj = body.as_ref().and_then(|(ct, b)| decode_body(ct, b))?;
            if ctx.config.omit_managed_fields {
                omit_managed_fields(&mut obj);
            }
            Some(obj)
        });
    };
    let resp = match outcome {
        Err(panic) => {
            request_object(&mut ev);
            complete(&mut ev, None, &ctx);
            ev.response_status = Some(ResponseStatus {
                status: Some("Failure"),
                message: format!("APIServer panic'd: {}", panic_message(&*panic)),
                ..ResponseStatus::code(500)
            });
            let _ = audit.process(&mut ev, Stage::Panic, &ctx.config).await;
            std::panic::resume_unwind(panic)
        }
        Ok(resp) => resp.map(ServiceResponse::map_into_boxed_body),
    };
    request_object(&mut ev);
    complete(&mut ev, resp.as_ref().ok().map(|r| r.request()), &ctx);
    let error = match &resp {
        Ok(r) => r
            .response()
            .error()
            .and_then(|e| e.as_error::<ApiError>().cloned()),
        Err(e) => e.as_error::<ApiError>().cloned(),
    };
    let code = match &resp {
        Ok(r) => r.status().as_u16(),
        Err(e) => e.as_response_error().status_code().as_u16(),
    };
    ev.response_status = Some(match &error {
        Some(e) => ResponseStatus::failure(e),
        None => ResponseStatus::code(code),
    });
    if ctx.config.level >= Level::RequestResponse {
        ev.response_object = match &error {
            Some(e) => Some(e.to_status()),
            None => ctx.take_response(),
        };
    }
    if info.verb != "watch" {
        let _ = audit
            .process(&mut ev, Stage::ResponseComplete, &ctx.config)
            .await;
        return with_audit_id(resp, &audit_id);
    }
    // A watch: started now, complete when its stream ends (or the client goes).
    let _ = audit
        .process(&mut ev, Stage::ResponseStarted, &ctx.config)
        .await;
    let completion = Completion {
        audit: audit.clone(),
        event: ev,
        config: ctx.config.clone(),
    };
    let resp = resp.map(|r| {
        r.map_body(|_, inner| {
            BoxBody::new(CompletedOnDrop {
                inner,
                _completion: completion,
            })
        })
    });
    with_audit_id(resp, &audit_id)
}

/// Audits a request whose credentials were refused (401): one ResponseStarted event,
/// no user, the methods tried in the message (as upstream).
pub async fn failed_authentication(
    audit: &Audit,
    req: ServiceRequest,
    err: ApiError,
) -> ServiceResponse<BoxBody> {
    let received = MicroTime::now();
    let audit_id = audit_id(&req);
    let info = request_info(&req);
    let config = audit.evaluate(&attributes(None, &info));
    if config.level > Level::None {
        let mut ev = event(&req, &info, None, &config, audit_id.clone(), received);
        ev.response_status = Some(ResponseStatus {
            message: attempted_methods(&req),
            ..ResponseStatus::code(401)
        });
        let _ = audit
            .process(&mut ev, Stage::ResponseStarted, &config)
            .await;
    }
    let (http, _) = req.into_parts();
    let mut resp = ServiceResponse::from_err(err, http);
    set_audit_id(resp.headers_mut(), &audit_id);
    resp
}

/// The incoming `Audit-ID`, else a new UUID.
fn audit_id(req: &ServiceRequest) -> String {
    req.headers()
        .get(AUDIT_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
}

fn request_info(req: &ServiceRequest) -> Rc<RequestInfo> {
    req.extensions()
        .get::<Rc<RequestInfo>>()
        .cloned()
        .unwrap_or_else(|| {
            Rc::new(RequestInfo::parse(
                req.method().as_str(),
                req.path(),
                req.query_string(),
            ))
        })
}

fn attributes<'a>(user: Option<&'a UserInfo>, info: &'a RequestInfo) -> Attributes<'a> {
    Attributes {
        user: user.map(|u| (u.name.as_str(), u.groups.as_slice())),
        verb: &info.verb,
        resource_request: info.is_resource_request,
        namespace: info.namespace.as_deref().unwrap_or_default(),
        api_group: &info.api_group,
        resource: &info.resource,
        subresource: info.subresource.as_deref().unwrap_or_default(),
        name: info.name.as_deref().unwrap_or_default(),
        path: &info.path,
    }
}

/// The event's request part, as RequestReceived writes it.
fn event(
    req: &ServiceRequest,
    info: &RequestInfo,
    user: Option<&UserInfo>,
    config: &RequestAuditConfig,
    audit_id: String,
    received: MicroTime,
) -> Event {
    let mut ev = Event::new(config.level, audit_id, received);
    ev.request_uri = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.path().to_string(), |p| p.as_str().to_string());
    ev.verb = info.verb.clone();
    ev.user = user.map(EventUser::from).unwrap_or_default();
    ev.source_ips = source_ips(req);
    ev.user_agent = header(req.request(), header::USER_AGENT).unwrap_or_default();
    if info.is_resource_request {
        ev.object_ref = Some(ObjectReference {
            resource: info.resource.clone(),
            namespace: info.namespace.clone().unwrap_or_default(),
            name: info.name.clone().unwrap_or_default(),
            api_group: info.api_group.clone(),
            api_version: info.api_version.clone(),
            subresource: info.subresource.clone().unwrap_or_default(),
            ..ObjectReference::default()
        });
    }
    ev
}

/// What the stages below recorded: the impersonated user, the annotations of
/// authorization and admission (from the answered request, `http`), the answered
/// object's metadata.
fn complete(ev: &mut Event, http: Option<&HttpRequest>, ctx: &RequestAudit) {
    ev.impersonated_user = ctx.impersonated().as_ref().map(EventUser::from);
    ev.annotations = ctx.annotations();
    let admission = http.and_then(|h| {
        h.extensions()
            .get::<std::sync::Arc<RequestAdmission>>()
            .cloned()
    });
    if let Some(admission) = admission {
        ev.annotations.extend(admission.outcome().annotations());
    }
    if let (Some(seen), Some(r)) = (ctx.object(), ev.object_ref.as_mut()) {
        for (field, value) in [
            (&mut r.name, seen.name),
            (&mut r.namespace, seen.namespace),
            (&mut r.uid, seen.uid),
            (&mut r.resource_version, seen.resource_version),
        ] {
            if field.is_empty() {
                *field = value;
            }
        }
    }
}

fn wants_request_body(config: &RequestAuditConfig, info: &RequestInfo) -> bool {
    config.level >= Level::Request
        && matches!(
            info.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        )
}

/// Reads the body for the event and puts it back for the handler.
async fn capture_body(req: &mut ServiceRequest) -> Result<(String, Bytes), actix_web::Error> {
    // Read (and inflated) as the handler reads it; its failures leave as a Status.
    let payload = req.take_payload();
    let body = crate::endpoints::body::read(req.headers(), payload).await?;
    req.set_payload(actix_web::dev::Payload::from(body.clone()));
    // What goes back is plain: it must not be inflated again.
    req.headers_mut().remove(header::CONTENT_ENCODING);
    let content_type = header(req.request(), header::CONTENT_TYPE).unwrap_or_default();
    Ok((content_type, body))
}

/// Header names as constants: looked up by `&str`, a non-standard name is parsed and
/// copied on every request.
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
const X_REAL_IP: HeaderName = HeaderName::from_static("x-real-ip");

fn header(req: &HttpRequest, name: HeaderName) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// `X-Forwarded-For` entries, then `X-Real-Ip` unless already listed, then the peer
/// unless it is the last one listed (upstream's order).
fn source_ips(req: &ServiceRequest) -> Vec<String> {
    let parse = |s: &str| s.trim().parse::<std::net::IpAddr>().ok();
    let mut ips: Vec<std::net::IpAddr> = header(req.request(), X_FORWARDED_FOR)
        .map(|h| h.split(',').filter_map(parse).collect())
        .unwrap_or_default();
    if let Some(real) = header(req.request(), X_REAL_IP).as_deref().and_then(parse) {
        if !ips.contains(&real) {
            ips.push(real);
        }
    }
    if let Some(peer) = req.peer_addr().map(|a| a.ip()) {
        if ips.last() != Some(&peer) {
            ips.push(peer);
        }
    }
    ips.into_iter().map(|ip| ip.to_string()).collect()
}

/// Upstream's message for a refused credential: which methods were tried.
fn attempted_methods(req: &ServiceRequest) -> String {
    let mut methods = Vec::new();
    let auth = header(req.request(), header::AUTHORIZATION).unwrap_or_default();
    let scheme = auth.trim().split(' ').next().unwrap_or_default();
    if scheme.eq_ignore_ascii_case("basic") {
        methods.push("basic");
    }
    if scheme.eq_ignore_ascii_case("bearer") {
        methods.push("bearer");
    }
    if req
        .conn_data::<crate::filters::auth::PeerCertificates>()
        .is_some_and(|c| !c.0.is_empty())
    {
        methods.push("x509");
    }
    if methods.is_empty() {
        return "Authentication failed, no credentials provided".into();
    }
    format!("Authentication failed, attempted: {}", methods.join(", "))
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".into()
    }
}

fn set_audit_id(headers: &mut header::HeaderMap, audit_id: &str) {
    if let Ok(mut v) = HeaderValue::from_str(audit_id) {
        // Never indexed by HPACK: a value used once would only evict the connection's
        // reusable entries (content-type and the like) from its header table.
        v.set_sensitive(true);
        headers.insert(HeaderName::from_static(AUDIT_ID), v);
    }
}

/// Every audited request's answer carries its audit ID. An error from below stays an
/// error (there is no request to answer with here), rendered now with the header.
fn with_audit_id(
    resp: Result<ServiceResponse<BoxBody>, actix_web::Error>,
    audit_id: &str,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    match resp {
        Ok(mut r) => {
            set_audit_id(r.headers_mut(), audit_id);
            Ok(r)
        }
        Err(e) => {
            let mut rendered = e.error_response();
            set_audit_id(rendered.headers_mut(), audit_id);
            Err(actix_web::error::InternalError::from_response(e.to_string(), rendered).into())
        }
    }
}

/// The ResponseComplete event of a watch, written when its body is dropped: the stream
/// ended, or the client went away.
struct Completion {
    audit: web::Data<Audit>,
    event: Event,
    config: RequestAuditConfig,
}

impl Drop for Completion {
    /// The line is made now; backends take it in a task (a drop cannot wait for a
    /// blocking webhook).
    fn drop(&mut self) {
        let line = self
            .audit
            .line(&mut self.event, Stage::ResponseComplete, &self.config);
        if let Ok(Some(line)) = line {
            let audit = self.audit.clone();
            crate::panics::spawn("audit of a watch's end", async move {
                let _ = audit.emit(line).await;
            });
        }
    }
}

/// A response body that writes its request's ResponseComplete event when dropped.
struct CompletedOnDrop {
    inner: BoxBody,
    _completion: Completion,
}

impl MessageBody for CompletedOnDrop {
    type Error = Box<dyn std::error::Error>;

    fn size(&self) -> BodySize {
        self.inner.size()
    }

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        Pin::new(&mut self.inner).poll_next(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::log::{Destination, LogBackend, Mode};
    use crate::audit::policy::Policy;
    use crate::audit::rotation::Rotation;
    use actix_web::middleware::from_fn;
    use actix_web::{test, App, HttpResponse};

    fn audit_into(dir: &std::path::Path) -> (web::Data<Audit>, std::path::PathBuf) {
        let policy_file = dir.join("policy.yaml");
        std::fs::write(
            &policy_file,
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
        )
        .unwrap();
        let log = dir.join("audit.log");
        let rotation = Rotation {
            max_size_mb: 1,
            max_backups: 0,
            max_age_days: 0,
        };
        let backend = LogBackend::open(Destination::File(log.clone(), rotation), Mode::Blocking);
        let audit = Audit::new(Policy::load(&policy_file).unwrap(), vec![backend.unwrap()]);
        (web::Data::new(audit), log)
    }

    fn events(log: &std::path::Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[actix_web::test]
    async fn a_panic_below_is_a_panic_event() {
        let dir = tempfile::tempdir().unwrap();
        let (audit, log) = audit_into(dir.path());
        let app = test::init_service(
            App::new()
                .app_data(audit)
                .route(
                    "/boom",
                    web::get().to(|| async {
                        if true {
                            panic!("on purpose");
                        }
                        HttpResponse::Ok().finish()
                    }),
                )
                .wrap(from_fn(super::audit))
                .wrap(from_fn(crate::filters::recover_panics)),
        )
        .await;
        let req = test::TestRequest::get()
            .uri("/boom")
            .insert_header(("Audit-ID", "a-1"))
            .to_request();
        let resp = test::try_call_service(&app, req).await;
        assert!(resp.is_err(), "recover_panics answers the panic");
        let events = events(&log);
        let stages: Vec<&str> = events
            .iter()
            .map(|e| e["stage"].as_str().unwrap())
            .collect();
        assert_eq!(stages, ["RequestReceived", "Panic"]);
        let panic = &events[1];
        assert_eq!(panic["auditID"], "a-1");
        assert_eq!(panic["verb"], "get");
        assert_eq!(panic["responseStatus"]["code"], 500);
        assert_eq!(
            panic["responseStatus"]["message"],
            "APIServer panic'd: on purpose"
        );
    }

    #[actix_web::test]
    async fn every_answer_carries_its_audit_id() {
        let dir = tempfile::tempdir().unwrap();
        let (audit, log) = audit_into(dir.path());
        let app = test::init_service(
            App::new()
                .app_data(audit)
                .route("/ok", web::get().to(HttpResponse::Ok))
                .wrap(from_fn(super::audit)),
        )
        .await;
        let req = test::TestRequest::get()
            .uri("/ok?x=1")
            .insert_header(("X-Forwarded-For", "10.0.0.1, bogus, 10.0.0.2"))
            .peer_addr("127.0.0.1:5000".parse().unwrap())
            .to_request();
        let resp = test::call_service(&app, req).await;
        let id = resp
            .headers()
            .get("audit-id")
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let events = events(&log);
        assert_eq!(events.len(), 2);
        assert!(events.iter().all(|e| e["auditID"] == id.as_str()));
        assert_eq!(events[1]["requestURI"], "/ok?x=1");
        assert_eq!(
            events[1]["sourceIPs"],
            serde_json::json!(["10.0.0.1", "10.0.0.2", "127.0.0.1"])
        );
        assert_eq!(events[1]["responseStatus"]["code"], 200);
    }
}
