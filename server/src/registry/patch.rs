//! The non-apply patch types of PATCH (`application/json-patch+json`,
//! `application/merge-patch+json`, `application/strategic-merge-patch+json`): a body read
//! into a [`Patch`] once, then applied to the live object (sans IO, so the handler and
//! the fuzz targets run the same code).

use serde_json::Value;

use super::{json_patch, strategic_merge};
use crate::api::ApiError;
use crate::catalog::ApiResource;

/// `Content-Type` of a JSON patch (RFC 6902).
pub const JSON_PATCH: &str = "application/json-patch+json";
/// `Content-Type` of a JSON merge patch (RFC 7386).
pub const MERGE_PATCH: &str = "application/merge-patch+json";
/// `Content-Type` of a strategic merge patch.
pub const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";
/// `Content-Type` of server-side apply (not a [`Patch`]: see `registry::apply`).
pub const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// A parsed patch body.
#[derive(Debug)]
pub enum Patch {
    Json(Vec<::json_patch::PatchOperation>),
    Merge(Value),
    Strategic(Value),
}

impl Patch {
    /// Reads a patch body sent as `content_type` for `res`: 415 for a type `res` does
    /// not take (strategic merge needs Go types' patch strategies: kube-apiserver offers
    /// it for built-in kinds only, and so do we), 400 for a body that is not one.
    pub fn parse(content_type: &str, body: &[u8], res: &ApiResource) -> Result<Patch, ApiError> {
        let strategic_ok = res.builtin();
        match content_type {
            STRATEGIC_MERGE_PATCH if !strategic_ok => Err(ApiError::unsupported_patch_type(false)),
            JSON_PATCH => {
                let patch: ::json_patch::Patch = serde_json::from_slice(body).map_err(|e| {
                    ApiError::bad_request(format!(
                        "the body of the request is not a valid JSON patch: {e}"
                    ))
                })?;
                Ok(Patch::Json(patch.0))
            }
            MERGE_PATCH | STRATEGIC_MERGE_PATCH => {
                let v: Value = serde_json::from_slice(body).map_err(|e| {
                    ApiError::bad_request(format!("the body of the request is not valid JSON: {e}"))
                })?;
                if !v.is_object() {
                    return Err(ApiError::bad_request("a merge patch must be a JSON object"));
                }
                Ok(if content_type == STRATEGIC_MERGE_PATCH {
                    Patch::Strategic(v)
                } else {
                    Patch::Merge(v)
                })
            }
            _ => Err(ApiError::unsupported_patch_type(strategic_ok)),
        }
    }

    /// `obj` with the patch applied; 400 when the result is not an object.
    pub fn apply(&self, mut obj: Value, res: &ApiResource) -> Result<Value, ApiError> {
        match self {
            Patch::Json(p) => json_patch::apply(&mut obj, p)?,
            Patch::Merge(p) => ::json_patch::merge(&mut obj, p),
            Patch::Strategic(p) => {
                obj =
                    strategic_merge::apply(&obj, p, res.schema()).map_err(ApiError::bad_request)?
            }
        }
        if !obj.is_object() {
            return Err(ApiError::bad_request(
                "the patch turned the object into something that is not an object",
            ));
        }
        Ok(obj)
    }
}
