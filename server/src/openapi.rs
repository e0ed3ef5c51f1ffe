//! OpenAPI, served from the documents codegen checked in (`generated::OPENAPI_V3`,
//! `generated::OPENAPI_V2`):
//!
//! - `/openapi/v3`: the index, one `serverRelativeURL` per group-version, each carrying the
//!   document's hash (`?hash=`).
//! - `/openapi/v3/<api/v1|apis/<group>/<version>>`: one OpenAPI 3.0 document. Requested with
//!   the current hash it is immutable (`Cache-Control: public, immutable` and a one-year
//!   `Expires`); with a stale hash the client is redirected (301) to the current one, as
//!   kube-apiserver does.
//! - `/openapi/v2`: one Swagger 2.0 document of every group-version.
//!
//! Every document has an `ETag` (upper-case hex SHA-512 of the body) and answers
//! `If-None-Match` with `304 Not Modified`. Only JSON is produced: a request whose `Accept`
//! admits no JSON (the protobuf encodings) gets `406`.

use std::sync::OnceLock;

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;
use sha2::{Digest, Sha512};

use crate::api::ApiError;

/// One served document.
pub struct Document {
    /// `api/v1` or `apis/<group>/<version>` (v3), `v2` for the Swagger document.
    pub path: &'static str,
    /// The JSON text, as codegen wrote it.
    pub body: &'static str,
    /// Upper-case hex SHA-512 of the body, used in `?hash=` URLs and as the ETag.
    pub hash: String,
}

impl Document {
    fn new(path: &'static str, body: &'static str) -> Self {
        Document {
            path,
            body,
            hash: hex::encode_upper(Sha512::digest(body.as_bytes())),
        }
    }

    /// The quoted ETag of the document.
    pub fn etag(&self) -> String {
        format!("\"{}\"", self.hash)
    }

    /// The URL the v3 index publishes for this document.
    pub fn server_relative_url(&self) -> String {
        format!("/openapi/v3/{}?hash={}", self.path, self.hash)
    }
}

/// Every OpenAPI v3 document the server serves.
pub struct OpenApiV3 {
    /// One document per group-version, in the generated order.
    pub documents: Vec<Document>,
}

impl OpenApiV3 {
    /// Hashes the generated documents once, at start-up.
    pub fn new(docs: &'static [(&'static str, &'static str)]) -> Self {
        let documents = docs
            .iter()
            .map(|(path, body)| Document::new(path, body))
            .collect();
        OpenApiV3 { documents }
    }
}

/// The Swagger 2.0 document (`/openapi/v2`), hashed on first use.
pub fn v2_document() -> &'static Document {
    static V2: OnceLock<Document> = OnceLock::new();
    V2.get_or_init(|| Document::new("v2", crate::generated::OPENAPI_V2))
}

/// Mounts `/openapi/v2`, `/openapi/v3` and `/openapi/v3/{path}`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/openapi/v2", web::get().to(swagger))
        .route("/openapi/v3", web::get().to(index))
        .route("/openapi/v3/", web::get().to(index))
        .route("/openapi/v3/{path:.*}", web::get().to(document));
}

/// Whether `If-None-Match` names `etag` (a quoted entity tag), or is `*`. Weak tags
/// (`W/"..."`) match too: the comparison for `GET` is the weak one.
pub fn if_none_match(req: &HttpRequest, etag: &str) -> bool {
    req.headers()
        .get_all(header::IF_NONE_MATCH)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t) == etag)
}

/// Whether the `Accept` header admits a JSON answer (no header does).
pub fn accepts_json(req: &HttpRequest) -> bool {
    let Some(accept) = req.headers().get(header::ACCEPT) else {
        return true;
    };
    let Ok(accept) = accept.to_str() else {
        return false;
    };
    if accept.trim().is_empty() {
        return true;
    }
    accept.split(',').any(|range| {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        let refused = parts.any(|p| {
            p.split_once('=').is_some_and(|(k, v)| {
                k.trim().eq_ignore_ascii_case("q")
                    && v.trim().parse::<f32>().map_or(true, |q| q <= 0.0)
            })
        });
        !refused && matches!(media.as_str(), "application/json" | "application/*" | "*/*")
    })
}

fn not_acceptable(req: &HttpRequest) -> ApiError {
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    ApiError::not_acceptable(accept)
}

async fn index(req: HttpRequest, spec: web::Data<OpenApiV3>) -> Result<HttpResponse, ApiError> {
    if !accepts_json(&req) {
        return Err(not_acceptable(&req));
    }
    let paths: serde_json::Map<String, serde_json::Value> = spec
        .documents
        .iter()
        .map(|d| {
            (
                d.path.to_string(),
                json!({ "serverRelativeURL": d.server_relative_url() }),
            )
        })
        .collect();
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .insert_header((header::CACHE_CONTROL, "no-cache, private"))
        .body(json!({ "paths": paths }).to_string()))
}

async fn document(
    req: HttpRequest,
    path: web::Path<String>,
    spec: web::Data<OpenApiV3>,
) -> Result<HttpResponse, ApiError> {
    let path = path.into_inner();
    let path = path.trim_end_matches('/');
    let doc = spec
        .documents
        .iter()
        .find(|d| d.path == path)
        .ok_or_else(|| ApiError::path_not_found(req.path()))?;
    if !accepts_json(&req) {
        return Err(not_acceptable(&req));
    }
    let asked_hash = web::Query::<Vec<(String, String)>>::from_query(req.query_string())
        .ok()
        .and_then(|q| q.0.into_iter().find(|(k, _)| k == "hash").map(|(_, v)| v));
    match asked_hash {
        // A stale (or mistyped) hash: point the client at the current document.
        Some(h) if !h.eq_ignore_ascii_case(&doc.hash) => Ok(HttpResponse::MovedPermanently()
            .insert_header((header::LOCATION, doc.server_relative_url()))
            .finish()),
        Some(_) => Ok(serve(&req, doc, true)),
        None => Ok(serve(&req, doc, false)),
    }
}

async fn swagger(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    if accepts_v2_protobuf(&req) {
        return Ok(serve_v2_protobuf(&req));
    }
    if !accepts_json(&req) {
        return Err(not_acceptable(&req));
    }
    Ok(serve(&req, v2_document(), false))
}

/// The media type kubectl asks for when it validates on the client.
const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

fn accepts_v2_protobuf(req: &HttpRequest) -> bool {
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    // Only when it comes first: a client listing JSON first gets JSON.
    accept.split(',').next().is_some_and(|m| {
        let m = m.split(';').next().unwrap_or("").trim();
        m == V2_PROTOBUF || m == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    })
}

fn serve_v2_protobuf(req: &HttpRequest) -> HttpResponse {
    static PB: OnceLock<(Vec<u8>, String)> = OnceLock::new();
    let (body, etag) = PB.get_or_init(|| {
        let doc: serde_json::Value = serde_json::from_str(v2_document().body).unwrap_or_default();
        let body = crate::openapi_v2_pb::encode(&doc);
        let etag = format!("\"{}\"", hex::encode_upper(Sha512::digest(&body)));
        (body, etag)
    });
    if if_none_match(req, etag) {
        return HttpResponse::NotModified()
            .insert_header((header::ETAG, etag.clone()))
            .finish();
    }
    // Go's media-type parser rejects the '@' of the requested type; kube-apiserver answers
    // with the dotted spelling.
    HttpResponse::Ok()
        .content_type("application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
        .insert_header((header::ETAG, etag.clone()))
        .insert_header((header::VARY, "Accept"))
        .body(body.clone())
}

/// Answers with the document (or `304`), its ETag and caching headers: immutable for a
/// hashed URL, revalidate-every-time otherwise.
fn serve(req: &HttpRequest, doc: &Document, hashed: bool) -> HttpResponse {
    let etag = doc.etag();
    let mut builder = if if_none_match(req, &etag) {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    builder
        .insert_header((header::ETAG, etag))
        .insert_header((header::VARY, "Accept"));
    if hashed {
        let expires = chrono::Utc::now() + chrono::Duration::days(365);
        builder
            .insert_header((header::CACHE_CONTROL, "public, immutable"))
            .insert_header((
                header::EXPIRES,
                expires.format("%a, %d %b %Y %H:%M:%S GMT").to_string(),
            ));
    } else {
        builder.insert_header((header::CACHE_CONTROL, "no-cache, private"));
    }
    if if_none_match(req, &doc.etag()) {
        return builder.finish();
    }
    builder.content_type("application/json").body(doc.body)
}
