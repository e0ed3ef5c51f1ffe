//! Content negotiation: decode request bodies (JSON, YAML, Kubernetes protobuf) and
//! encode responses (JSON, YAML, Table), as kube-apiserver does.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::Value;

use crate::api::ApiError;
use crate::catalog::ApiResource;
use crate::protobuf;

/// Largest request body accepted (kube-apiserver's limit is 3 MiB for objects).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Largest object, as compact JSON, that a patch may produce: what one request body may
/// carry. A patch body is bounded by [`MAX_BODY_BYTES`]; without this the object it
/// produces would not be, and could grow with every patch.
pub const MAX_OBJECT_BYTES: usize = MAX_BODY_BYTES;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// 413 when `obj` is larger than [`MAX_OBJECT_BYTES`] as JSON (measured without
/// serializing past the limit); 422 when it nests deeper than a JSON body may
/// ([`json_patch::MAX_DEPTH`](crate::registry::json_patch::MAX_DEPTH)), which no patch
/// should manage but what is stored must be readable.
pub fn check_object_size(obj: &Value) -> Result<(), ApiError> {
    use crate::registry::json_patch::{depth_of, json_size, MAX_DEPTH};
    if json_size(obj, MAX_OBJECT_BYTES).is_none() {
        return Err(ApiError::new(
            413,
            crate::api::status::StatusReason::RequestEntityTooLarge,
            format!(
                "Request entity too large: the object would be larger than the server limit of {MAX_OBJECT_BYTES} bytes"
            ),
        ));
    }
    let depth = depth_of(obj);
    if depth > MAX_DEPTH {
        return Err(ApiError::invalid_request(format!(
            "the object would be nested {depth} levels deep, more than the limit of {MAX_DEPTH}"
        )));
    }
    Ok(())
}

/// The media type of the request body, without parameters.
pub fn content_type(req: &HttpRequest) -> String {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// Decodes an object body for `res` from JSON, YAML or protobuf, as its
/// `Content-Type` says.
pub fn decode_body(req: &HttpRequest, body: &[u8], res: &ApiResource) -> Result<Value, ApiError> {
    decode_body_as(&content_type(req), body, res)
}

/// Decodes an object body for `res` sent as `content_type` (a media type without
/// parameters, as [`content_type`] gives it).
pub fn decode_body_as(
    content_type: &str,
    body: &[u8],
    res: &ApiResource,
) -> Result<Value, ApiError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(ApiError::too_large(MAX_BODY_BYTES));
    }
    let unrecognized = |why: String| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): {why}",
            res.def.kind
        ))
    };
    let value: Value = match content_type {
        "" | "application/json" | "*/*" => serde_json::from_slice(body).map_err(|e| {
            unrecognized(format!(
                "couldn't get version/kind; json parse error: {e} ({})",
                snippet(body)
            ))
        })?,
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            crate::api::yaml::from_slice(body).map_err(|e| {
                unrecognized(format!("couldn't get version/kind; yaml parse error: {e}"))
            })?
        }
        PROTOBUF if res.protobuf => {
            let value = protobuf::decode_object(body, res.schema())
                .map_err(|e| unrecognized(format!("couldn't decode protobuf: {e}")))?;
            // Nested messages stop at protobuf::MAX_DEPTH, but maps and lists add levels
            // of JSON: keep to what a JSON body may nest, so the object reads back.
            let depth = crate::registry::json_patch::depth_of(&value);
            if depth > crate::registry::json_patch::MAX_DEPTH {
                return Err(unrecognized(format!(
                    "couldn't decode protobuf: the object nests {depth} levels deep, more than {}",
                    crate::registry::json_patch::MAX_DEPTH
                )));
            }
            value
        }
        other => return Err(ApiError::unsupported_media_type(other)),
    };
    if !value.is_object() {
        return Err(unrecognized(
            "couldn't get version/kind; the body is not a JSON object".into(),
        ));
    }
    check_type_meta(&value, res)?;
    let bad_bytes = || match res.builtin() {
        true => crate::api::byte_fields::first_illegal_base64(&value, res.schema()).or_else(|| {
            crate::api::quantity::first_unparsable(&value, res.schema()).map(str::to_string)
        }),
        false => None,
    };
    if let Some(why) = check_meta_types(&value).err().or_else(bad_bytes) {
        return Err(ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {why}",
            res.def.kind, res.def.version, res.def.kind
        )));
    }
    Ok(with_type_meta(value, res))
}

/// The object with `kind`, `apiVersion` and `metadata` first and set to this resource's
/// (a client may leave them out: the URL names the type).
pub fn with_type_meta(value: Value, res: &ApiResource) -> Value {
    let Value::Object(mut rest) = value else {
        return value;
    };
    let mut out = serde_json::Map::new();
    out.insert("kind".into(), Value::String(res.def.kind.to_string()));
    out.insert(
        "apiVersion".into(),
        Value::String(res.api_version().to_string()),
    );
    rest.remove("kind");
    rest.remove("apiVersion");
    out.insert(
        "metadata".into(),
        rest.remove("metadata")
            .unwrap_or_else(|| Value::Object(Default::default())),
    );
    out.extend(rest);
    Value::Object(out)
}

/// ObjectMeta's fields have fixed JSON types; anything else is a decoding error (400).
fn check_meta_types(obj: &Value) -> Result<(), String> {
    let meta = match obj.get("metadata") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(m)) => m,
        Some(_) => return Err("metadata must be an object".into()),
    };
    crate::api::meta::check_meta_types(meta)
}

/// apiVersion and kind, when given, must name this resource.
pub fn check_type_meta(obj: &Value, res: &ApiResource) -> Result<(), ApiError> {
    for f in ["kind", "apiVersion"] {
        if obj.get(f).is_some_and(|v| !v.is_string() && !v.is_null()) {
            return Err(ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: {f} must be a string",
                res.def.kind
            )));
        }
    }
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    let api_version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let expected = res.api_version();
    if (!kind.is_empty() && kind != res.def.kind)
        || (!api_version.is_empty() && api_version != expected)
    {
        let (shown_kind, shown_version) = (
            if kind.is_empty() {
                res.def.kind.as_str()
            } else {
                kind
            },
            if api_version.is_empty() {
                expected
            } else {
                api_version
            },
        );
        return Err(ApiError::bad_request(format!(
            "{shown_kind} in version \"{shown_version}\" cannot be handled as a {}: the request body must be a {} of apiVersion {expected}",
            res.def.kind, res.def.kind
        )));
    }
    Ok(())
}

fn snippet(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(&body[..body.len().min(64)]);
    s.into_owned()
}

/// How the client wants the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Representation {
    Json,
    Yaml,
    Table,
    /// Kubernetes protobuf, for kinds with field numbers (others fall back to JSON).
    Protobuf,
    /// Metadata only: `PartialObjectMetadata` / `PartialObjectMetadataList` (metadata
    /// informers and kube-rs metadata watchers ask for it).
    PartialMetadata,
}

/// An object reduced to its metadata, as a meta.k8s.io/v1 `PartialObjectMetadata`.
pub fn partial_metadata(obj: &Value) -> Value {
    serde_json::json!({ "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"] })
}

/// A List reduced to its items' metadata (`PartialObjectMetadataList`).
pub fn partial_metadata_list(list_meta: Value, items: &[Value]) -> Value {
    serde_json::json!({
        "kind": "PartialObjectMetadataList",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "items": items.iter().map(partial_metadata).collect::<Vec<_>>(),
    })
}

/// Picks the representation from `Accept`, in the client's order of preference.
pub fn representation(req: &HttpRequest) -> Result<Representation, ApiError> {
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if accept.trim().is_empty() {
        return Ok(Representation::Json);
    }
    for part in accept.split(',') {
        let mut params = part.split(';').map(str::trim);
        let media = params.next().unwrap_or_default().to_ascii_lowercase();
        let params: Vec<&str> = params.collect();
        let is_table = params.iter().any(|p| p.eq_ignore_ascii_case("as=Table"));
        let other_as = params.iter().any(|p| {
            p.to_ascii_lowercase().starts_with("as=") && !p.eq_ignore_ascii_case("as=Table")
        });
        match media.as_str() {
            "application/json" if is_table => {
                let v1 = params.contains(&"v=v1") && params.contains(&"g=meta.k8s.io");
                if v1 {
                    return Ok(Representation::Table);
                }
            }
            "application/json" if other_as => {
                let meta_v1 = params.contains(&"g=meta.k8s.io")
                    && (params.contains(&"v=v1") || params.contains(&"v=v1beta1"));
                let partial = params.iter().any(|p| {
                    p.eq_ignore_ascii_case("as=PartialObjectMetadata")
                        || p.eq_ignore_ascii_case("as=PartialObjectMetadataList")
                });
                if meta_v1 && partial {
                    return Ok(Representation::PartialMetadata);
                }
            }
            "application/json" | "*/*" | "application/*" if !other_as => {
                return Ok(Representation::Json)
            }
            "application/yaml" if !other_as => return Ok(Representation::Yaml),
            PROTOBUF if !other_as => return Ok(Representation::Protobuf),
            _ => {}
        }
    }
    Err(ApiError::not_acceptable(accept))
}

/// Writes an object or a List of `res` in the asked representation: Kubernetes protobuf
/// when asked first and the kind has field numbers, else as [`respond`] does.
pub fn respond_object(
    req: &HttpRequest,
    status: u16,
    value: &Value,
    repr: Representation,
    res: &ApiResource,
) -> HttpResponse {
    crate::audit::record_response_object(req, value);
    if repr == Representation::Protobuf && res.protobuf {
        let kind = value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let encoded = if kind == res.def.kind {
            Some(protobuf::encode_object(value, res.schema()))
        } else if kind == res.def.list_kind {
            Some(protobuf::encode_list(value, res.schema()))
        } else {
            None
        };
        if let Some(Ok(body)) = encoded {
            let status = actix_web::http::StatusCode::from_u16(status)
                .unwrap_or(actix_web::http::StatusCode::OK);
            return HttpResponse::build(status)
                .content_type(PROTOBUF)
                .body(body);
        }
    }
    respond(req, status, value, repr)
}

/// Responses larger than this are gzip-compressed when the client accepts it (as
/// kube-apiserver does; small ones are not worth the CPU).
const GZIP_THRESHOLD: usize = 128 * 1024;

/// Writes `value` as JSON (pretty with `?pretty=true`) or YAML, gzip-compressed when
/// large and the client accepts gzip.
pub fn respond(
    req: &HttpRequest,
    status: u16,
    value: &Value,
    repr: Representation,
) -> HttpResponse {
    crate::audit::record_response_value(req, value);
    let pretty = wants_pretty(req);
    let (content_type, body) = match repr {
        Representation::Yaml => (
            "application/yaml",
            serde_yaml::to_string(value)
                .unwrap_or_default()
                .into_bytes(),
        ),
        _ => {
            let body = crate::scratch::encode(|buf| match pretty {
                true => serde_json::to_writer_pretty(buf, value),
                false => serde_json::to_writer(buf, value),
            });
            ("application/json", body.unwrap_or_default())
        }
    };
    respond_bytes(req, status, content_type, body)
}

/// Whether `?pretty=true` asks for indented JSON.
pub fn wants_pretty(req: &HttpRequest) -> bool {
    req.query_string()
        .split('&')
        .any(|kv| kv == "pretty=true" || kv == "pretty=1")
}

/// Answers with an encoded body, gzip-compressed when large and the client accepts gzip.
pub fn respond_bytes(
    req: &HttpRequest,
    status: u16,
    content_type: &str,
    body: Vec<u8>,
) -> HttpResponse {
    crate::audit::record_response_bytes(req, content_type, &body);
    let status =
        actix_web::http::StatusCode::from_u16(status).unwrap_or(actix_web::http::StatusCode::OK);
    let mut resp = HttpResponse::build(status);
    resp.content_type(content_type);
    if body.len() > GZIP_THRESHOLD && accepts_gzip(req) {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(
            Vec::with_capacity(body.len() / 4),
            flate2::Compression::fast(),
        );
        if enc.write_all(&body).is_ok() {
            if let Ok(gz) = enc.finish() {
                return resp
                    .insert_header((header::CONTENT_ENCODING, "gzip"))
                    .body(gz);
            }
        }
    }
    resp.body(body)
}

fn accepts_gzip(req: &HttpRequest) -> bool {
    req.headers()
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|e| e.trim().split(';').next() == Some("gzip"))
        })
}
