//! OpenAPI, built from the live catalog by codegen's emitter (the same function that
//! writes the checked-in `generated/openapi/` documents, so for the compiled-in catalog
//! the two are equal), rebuilt when the catalog changes and cached until it does:
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

use std::sync::{Arc, OnceLock, RwLock};

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use bytes::Bytes;
use serde_json::json;
use sha2::{Digest, Sha512};

use crate::aggregator::Aggregator;
use crate::api::ApiError;
use crate::catalog::Catalog;

/// One served document.
pub struct Document {
    /// `api/v1` or `apis/<group>/<version>` (v3), `v2` for the Swagger document.
    pub path: String,
    /// The JSON text.
    pub body: Bytes,
    /// Upper-case hex SHA-512 of the body, used in `?hash=` URLs and as the ETag.
    pub hash: String,
}

impl Document {
    fn new(path: &str, doc: &serde_json::Value) -> Self {
        let body = Bytes::from(codegen::emit::json_text(doc));
        Document {
            path: path.to_string(),
            hash: hex::encode_upper(Sha512::digest(&body)),
            body,
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

/// Every document of one catalog generation (and one of the aggregator's).
pub struct Documents {
    generation: (u64, u64),
    /// One OpenAPI v3 document per group-version, sorted by path.
    pub v3: Vec<Document>,
    /// The Swagger 2.0 document.
    pub v2: Document,
    /// The v2 document in gnostic's protobuf form and its ETag, made on first request.
    v2_protobuf: OnceLock<(Bytes, String)>,
}

impl Documents {
    fn build(catalog: &Catalog, aggregator: Option<&Aggregator>) -> Documents {
        // Read the generations first: a change racing this build makes the next request
        // build again rather than leaving stale documents cached.
        let generation = (
            catalog.generation(),
            aggregator.map_or(0, |a| a.generation()),
        );
        let defs: Vec<codegen::model::ResourceDef> =
            catalog.all().iter().map(|r| r.definition()).collect();
        let mut docs = codegen::openapi_documents(&defs);
        // Other servers' group-versions: their own documents, in place of any local one.
        for (service, remote) in aggregator.map(|a| a.remote_documents()).unwrap_or_default() {
            let path =
                crate::aggregator::availability::discovery_path(&service.group, &service.version);
            let path = path.trim_start_matches('/');
            if let Some(v3) = &remote.openapi_v3 {
                docs.v3.retain(|(p, _)| p != path);
                docs.v3.push((path.to_string(), (**v3).clone()));
            }
            if let Some(v2) = &remote.openapi_v2 {
                merge_v2(&mut docs.v2, v2, &format!("/{path}/"));
            }
        }
        docs.v3.sort_by(|a, b| a.0.cmp(&b.0));
        Documents {
            generation,
            v3: docs
                .v3
                .iter()
                .map(|(path, doc)| Document::new(path, doc))
                .collect(),
            v2: Document::new("v2", &docs.v2),
            v2_protobuf: OnceLock::new(),
        }
    }
}

/// Adds to `ours` the paths of `theirs` under `prefix` (the group-version an APIService
/// claims) and the definitions they use that `ours` lacks.
fn merge_v2(ours: &mut serde_json::Value, theirs: &serde_json::Value, prefix: &str) {
    if let Some(paths) = theirs["paths"].as_object() {
        for (path, item) in paths.iter().filter(|(p, _)| p.starts_with(prefix)) {
            ours["paths"][path] = item.clone();
        }
    }
    if let Some(definitions) = theirs["definitions"].as_object() {
        for (name, schema) in definitions {
            if ours["definitions"].get(name).is_none() {
                ours["definitions"][name] = schema.clone();
            }
        }
    }
}

/// The OpenAPI documents of the live catalog, and of the aggregated servers.
pub struct OpenApi {
    catalog: Arc<Catalog>,
    aggregator: Option<Arc<Aggregator>>,
    current: RwLock<Option<Arc<Documents>>>,
}

impl OpenApi {
    /// The documents of `catalog`, built when first asked for: with every built-in group
    /// they are megabytes of JSON that start-up need not wait for, nor an idle server hold.
    pub fn new(catalog: Arc<Catalog>) -> Self {
        OpenApi {
            catalog,
            aggregator: None,
            current: RwLock::new(None),
        }
    }

    /// Merges in the documents of the servers `aggregator`'s APIServices name.
    pub fn with_aggregator(mut self, aggregator: Arc<Aggregator>) -> Self {
        self.aggregator = Some(aggregator);
        self
    }

    /// The documents of the catalog as it is now (built if it changed since, or never was).
    pub fn documents(&self) -> Arc<Documents> {
        let cached = self
            .current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let now = (
            self.catalog.generation(),
            self.aggregator.as_ref().map_or(0, |a| a.generation()),
        );
        if let Some(docs) = cached.filter(|d| d.generation == now) {
            return docs;
        }
        let fresh = Arc::new(Documents::build(&self.catalog, self.aggregator.as_deref()));
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Some(fresh.clone());
        fresh
    }
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

async fn index(req: HttpRequest, spec: web::Data<OpenApi>) -> Result<HttpResponse, ApiError> {
    if !accepts_json(&req) {
        return Err(not_acceptable(&req));
    }
    let docs = spec.documents();
    let paths: serde_json::Map<String, serde_json::Value> = docs
        .v3
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
    spec: web::Data<OpenApi>,
) -> Result<HttpResponse, ApiError> {
    let path = path.into_inner();
    let path = path.trim_end_matches('/');
    let docs = spec.documents();
    let doc = docs
        .v3
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

async fn swagger(req: HttpRequest, spec: web::Data<OpenApi>) -> Result<HttpResponse, ApiError> {
    let docs = spec.documents();
    if accepts_v2_protobuf(&req) {
        return Ok(serve_v2_protobuf(&req, &docs));
    }
    if !accepts_json(&req) {
        return Err(not_acceptable(&req));
    }
    Ok(serve(&req, &docs.v2, false))
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

fn serve_v2_protobuf(req: &HttpRequest, docs: &Documents) -> HttpResponse {
    let (body, etag) = docs.v2_protobuf.get_or_init(|| {
        let doc: serde_json::Value = serde_json::from_slice(&docs.v2.body).unwrap_or_default();
        let body = Bytes::from(crate::openapi_v2_pb::encode(&doc));
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
    builder
        .content_type("application/json")
        .body(doc.body.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server's documents for the compiled-in catalog are the ones codegen checked in
    /// (which `cargo run -p codegen -- --check` keeps current).
    #[test]
    fn documents_built_from_the_catalog_equal_the_checked_in_ones() {
        let catalog = Arc::new(
            Catalog::from_definitions(crate::generated::CATALOG).expect("the catalog loads"),
        );
        let docs = OpenApi::new(catalog).documents();
        let parse = |body: &[u8]| -> serde_json::Value {
            serde_json::from_slice(body).expect("documents are JSON")
        };
        let built: Vec<(&str, serde_json::Value)> = docs
            .v3
            .iter()
            .map(|d| (d.path.as_str(), parse(&d.body)))
            .collect();
        let checked_in: Vec<(&str, serde_json::Value)> = crate::generated::OPENAPI_V3
            .iter()
            .map(|(path, body)| (*path, parse(body.as_bytes())))
            .collect();
        assert_eq!(built, checked_in);
        assert_eq!(
            parse(&docs.v2.body),
            parse(crate::generated::OPENAPI_V2.as_bytes())
        );
    }
}
