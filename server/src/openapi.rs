//! OpenAPI v3: `/openapi/v3` (index with per-document hashes) and one document per
//! group-version, served from the documents codegen checked in.

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;
use sha2::{Digest, Sha512};

use crate::api::ApiError;

/// One served document.
pub struct Document {
    /// `api/v1` or `apis/<group>/<version>`.
    pub path: &'static str,
    pub body: &'static str,
    /// Upper-case hex SHA-512 of the body, used in `?hash=` URLs and as the ETag.
    pub hash: String,
}

/// Every OpenAPI v3 document the server serves.
pub struct OpenApiV3 {
    pub documents: Vec<Document>,
}

impl OpenApiV3 {
    /// Hashes the generated documents once, at start-up.
    pub fn new(docs: &'static [(&'static str, &'static str)]) -> Self {
        let documents = docs
            .iter()
            .map(|(path, body)| Document {
                path,
                body,
                hash: hex::encode_upper(Sha512::digest(body.as_bytes())),
            })
            .collect();
        OpenApiV3 { documents }
    }
}

/// Mounts `/openapi/v3` and `/openapi/v3/{path}`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/openapi/v3", web::get().to(index))
        .route("/openapi/v3/{path:.*}", web::get().to(document));
}

async fn index(spec: web::Data<OpenApiV3>) -> HttpResponse {
    let paths: serde_json::Map<String, serde_json::Value> = spec
        .documents
        .iter()
        .map(|d| {
            (
                d.path.to_string(),
                json!({ "serverRelativeURL": format!("/openapi/v3/{}?hash={}", d.path, d.hash) }),
            )
        })
        .collect();
    HttpResponse::Ok()
        .content_type("application/json")
        .body(json!({ "paths": paths }).to_string())
}

async fn document(
    req: HttpRequest,
    path: web::Path<String>,
    spec: web::Data<OpenApiV3>,
) -> Result<HttpResponse, ApiError> {
    let path = path.into_inner();
    let doc = spec
        .documents
        .iter()
        .find(|d| d.path == path)
        .ok_or_else(|| ApiError::path_not_found(req.path()))?;
    let etag = format!("\"{}\"", doc.hash);
    if req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        == Some(etag.as_str())
    {
        return Ok(HttpResponse::NotModified()
            .insert_header((header::ETAG, etag))
            .finish());
    }
    let hashed = req
        .query_string()
        .split('&')
        .any(|kv| kv == format!("hash={}", doc.hash));
    let cache = if hashed {
        "public, immutable, max-age=31536000"
    } else {
        "no-cache, private"
    };
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .insert_header((header::ETAG, etag))
        .insert_header((header::CACHE_CONTROL, cache))
        .body(doc.body))
}
