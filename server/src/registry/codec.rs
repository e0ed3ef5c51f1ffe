//! The stored-object codec: how objects are laid out in storage (kind, apiVersion and
//! metadata first, no resourceVersion: it is the storage revision, in a CRD's storage
//! version) and turned back into API objects of the requested version, decoded or as
//! bytes with the resourceVersion spliced in.

use bytes::Bytes;
use serde_json::Value;

use crate::api::meta::metadata_mut;
use crate::api::ApiError;
use crate::catalog::ApiResource;
use crate::storage::KeyValue;

/// A stored object, decoded, with its resourceVersion (the key's modification revision).
pub fn decode(res: &ApiResource, kv: &KeyValue) -> Result<Value, ApiError> {
    let mut obj: Value = serde_json::from_slice(&kv.value).map_err(|e| {
        ApiError::internal(format!(
            "stored {} at {} is not valid JSON: {e}",
            res.def.kind, kv.key
        ))
    })?;
    metadata_mut(&mut obj).insert(
        "resourceVersion".into(),
        Value::String(kv.mod_revision.to_string()),
    );
    if res.rewrites_api_version() {
        // Conversion `None`: the same fields, in the requested version.
        if let Some(m) = obj.as_object_mut() {
            m.insert("apiVersion".into(), Value::String(res.api_version().into()));
        }
    }
    if let Some(family) = &res.versions {
        // A compiled-in kind's versions convert here, in step (no webhook to wait for).
        return family.convert(obj, res.api_version());
    }
    Ok(obj)
}

/// Whether `kv` holds an object of `res` stored in another version than the current
/// storage version (written before the storage version changed). A write re-encodes it
/// even when the object is unchanged, as upstream's storage writes whenever the encoded
/// bytes differ from the stored ones: that is how a migration rewrites it.
pub fn in_older_version(res: &ApiResource, kv: &KeyValue) -> bool {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(rename = "apiVersion", borrow)]
        api_version: Option<std::borrow::Cow<'a, str>>,
    }
    if !res.converts() {
        return false;
    }
    serde_json::from_slice::<Head>(&kv.value)
        .ok()
        .and_then(|h| h.api_version)
        .is_some_and(|v| v != res.storage_api_version())
}

/// The stored form: in the storage version, no resourceVersion (it is the storage
/// revision), and kind, apiVersion and metadata first so lists can be served from the
/// bytes.
pub fn encode(res: &ApiResource, obj: &Value) -> Bytes {
    let mut stored = serde_json::Map::new();
    if let Some(m) = obj.as_object() {
        for k in ["kind", "apiVersion", "metadata"] {
            if let Some(v) = m.get(k) {
                stored.insert(k.to_string(), v.clone());
            }
        }
        if res.rewrites_api_version() {
            let storage = Value::String(res.storage_api_version().into());
            stored.insert("apiVersion".into(), storage);
        }
        for (k, v) in m {
            if !stored.contains_key(k) {
                stored.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(meta) = stored.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
    }
    Bytes::from(serde_json::to_vec(&Value::Object(stored)).expect("JSON values always serialize"))
}

/// The stored JSON with `"resourceVersion":"<rev>"` spliced into its top-level metadata,
/// when the layout allows it safely: the first `{` after the opening brace must open
/// `"metadata"` (the store writes kind, apiVersion and metadata first). `None` otherwise.
fn splice_resource_version(stored: &[u8], rev: u64) -> Option<Bytes> {
    const KEY: &[u8] = b"\"metadata\":{";
    let first_brace = stored.iter().skip(1).position(|b| *b == b'{')? + 1;
    let start = (first_brace + 1).checked_sub(KEY.len())?;
    if &stored[start..=first_brace] != KEY || stored.first() != Some(&b'{') {
        return None;
    }
    let empty = stored.get(first_brace + 1) == Some(&b'}');
    let mut out = Vec::with_capacity(stored.len() + 32);
    out.extend_from_slice(&stored[..=first_brace]);
    out.extend_from_slice(format!("\"resourceVersion\":\"{rev}\"").as_bytes());
    if !empty {
        out.push(b',');
    }
    out.extend_from_slice(&stored[first_brace + 1..]);
    Some(Bytes::from(out))
}

/// The stored object as JSON bytes with its resourceVersion: spliced in when the layout
/// allows, else decoded and encoded again.
pub fn json_bytes(res: &ApiResource, kv: &KeyValue) -> Result<Bytes, ApiError> {
    let spliced = if res.converts() {
        None
    } else {
        splice_resource_version(&kv.value, kv.mod_revision)
    };
    match spliced {
        Some(b) => Ok(b),
        None => Ok(Bytes::from(
            serde_json::to_vec(&decode(res, kv)?).unwrap_or_default(),
        )),
    }
}

/// Objects read from storage in the version `res` serves: what a conversion webhook does
/// (conversion `None` happened in [`decode`]). One review for all that need it.
pub async fn served(res: &ApiResource, mut objs: Vec<Value>) -> Result<Vec<Value>, ApiError> {
    let Some(webhook) = res.conversion_webhook() else {
        return Ok(objs);
    };
    let want = res.api_version();
    let stale: Vec<usize> = (0..objs.len())
        .filter(|i| objs[*i]["apiVersion"] != want)
        .collect();
    if stale.is_empty() {
        return Ok(objs);
    }
    let asked = stale.iter().map(|i| objs[*i].clone()).collect();
    for (i, converted) in stale.into_iter().zip(webhook.convert(asked, want).await?) {
        objs[i] = converted;
    }
    Ok(objs)
}

/// One object read from storage, in the version `res` serves (see [`served`]).
pub async fn served_one(res: &ApiResource, obj: Value) -> Result<Value, ApiError> {
    Ok(served(res, vec![obj]).await?.pop().unwrap_or_default())
}

/// `obj` (any version of `to`'s kind) in the version `to` serves: admission sends
/// objects to webhooks and policies that asked for an equivalent version (matchPolicy
/// Equivalent) converted as reads are.
pub async fn convert_to(to: &ApiResource, obj: Value) -> Result<Value, ApiError> {
    if obj["apiVersion"] == to.api_version() {
        return Ok(obj);
    }
    if let Some(family) = &to.versions {
        return family.convert(obj, to.api_version());
    }
    match to.conversion_webhook() {
        Some(webhook) => Ok(webhook
            .convert(vec![obj], to.api_version())
            .await?
            .pop()
            .unwrap_or_default()),
        None => {
            let mut obj = obj;
            if let Some(m) = obj.as_object_mut() {
                m.insert("apiVersion".into(), Value::String(to.api_version().into()));
            }
            Ok(obj)
        }
    }
}

/// `obj` (in the version `res` serves) in the storage version, for a conversion webhook;
/// [`encode`] writes conversion `None`'s.
async fn to_storage(res: &ApiResource, obj: Value) -> Result<Value, ApiError> {
    match res.conversion_webhook() {
        Some(webhook) if obj["apiVersion"] != res.storage_api_version() => Ok(webhook
            .convert(vec![obj], res.storage_api_version())
            .await?
            .pop()
            .unwrap_or_default()),
        _ => Ok(obj),
    }
}

/// The stored form of `obj` (see [`encode`]), converted by the webhook first when the
/// kind has one.
pub async fn stored_bytes(res: &ApiResource, obj: &Value) -> Result<Bytes, ApiError> {
    if let Some(family) = &res.versions {
        let stored =
            family.convert_from(obj.clone(), res.api_version(), family.storage_api_version())?;
        return Ok(encode(res, &stored));
    }
    match res.conversion_webhook() {
        Some(_) => Ok(encode(res, &to_storage(res, obj.clone()).await?)),
        None => Ok(encode(res, obj)),
    }
}

/// `obj` with its resourceVersion set to `rev`.
pub fn with_rv(mut obj: Value, rev: u64) -> Value {
    metadata_mut(&mut obj).insert("resourceVersion".into(), Value::String(rev.to_string()));
    obj
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resource_version_is_spliced_into_stored_bytes() {
        let obj = json!({ "data": { "a": "{" }, "metadata": { "name": "x", "resourceVersion": "1" }, "apiVersion": "v1", "kind": "ConfigMap" });
        let stored = encode(&crate::catalog::test_resource(json!({})), &obj);
        let spliced =
            splice_resource_version(&stored, 42).expect("the store writes metadata first");
        let back: Value = serde_json::from_slice(&spliced).unwrap();
        assert_eq!(
            back["metadata"],
            json!({ "resourceVersion": "42", "name": "x" })
        );
        assert_eq!(back["data"]["a"], "{");
        // Empty metadata, and layouts that do not start with metadata, are handled.
        let empty = splice_resource_version(br#"{"kind":"X","metadata":{}}"#, 7).unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&empty).unwrap()["metadata"]["resourceVersion"],
            "7"
        );
        assert!(splice_resource_version(br#"{"spec":{"metadata":{}},"metadata":{}}"#, 7).is_none());
    }
}
