//! Compiled-in kinds served in several versions: the definitions of one group and kind
//! (a family) share one storage version, and objects are converted between it and the
//! version a request speaks by each version's declarative rules
//! (`codegen::conversion`) and its named hook (`conversion_hooks`).

use std::collections::BTreeMap;
use std::sync::Arc;

use codegen::model::{Conversion, ResourceDef};
use serde_json::Value;

use super::conversion_hooks::{self, Hook};
use crate::api::ApiError;
use crate::catalog::SchemaJson;

/// The versions of one compiled-in kind and how each converts to the storage version.
#[derive(Debug)]
pub struct Family {
    group: String,
    kind: String,
    storage_version: String,
    storage_api_version: String,
    /// The annotation that keeps storage-version fields a version cannot hold.
    annotation: String,
    /// Every served version but the storage version: its rules and hook.
    versions: BTreeMap<String, (Conversion, Option<Hook>)>,
    /// Every version's schema (JSON), by `apiVersion`: what a managedFields entry
    /// recorded in another version is read with.
    schemas: BTreeMap<String, Arc<SchemaJson>>,
}

impl Family {
    /// The family of `members` (the definitions of one group and kind, one of them
    /// `storage: true`, as codegen checked); an error names a hook the server lacks.
    pub fn new(
        members: &[&ResourceDef],
        schemas: BTreeMap<String, Arc<SchemaJson>>,
    ) -> Result<Family, String> {
        let hub = members
            .iter()
            .find(|d| d.storage)
            .ok_or_else(|| format!("kind {} has no storage version", members[0].kind))?;
        let mut versions = BTreeMap::new();
        for d in members.iter().filter(|d| !d.storage) {
            let rules = d.conversion.clone().unwrap_or_default();
            let hook = rules
                .hook
                .as_deref()
                .map(conversion_hooks::named)
                .transpose()?;
            versions.insert(d.version.clone(), (rules, hook));
        }
        Ok(Family {
            group: hub.group.clone(),
            kind: hub.kind.clone(),
            storage_version: hub.version.clone(),
            storage_api_version: hub.api_version(),
            annotation: Conversion::annotation(&hub.group, &hub.version),
            versions,
            schemas,
        })
    }

    /// The version objects are stored in.
    pub fn storage_version(&self) -> &str {
        &self.storage_version
    }

    fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.group)
        }
    }

    /// The served versions other than the storage version, and whether a hook converts
    /// each (then only what the hook keeps survives a trip from the storage version).
    pub fn other_versions(&self) -> impl Iterator<Item = (&str, bool)> {
        self.versions
            .iter()
            .map(|(v, (_, hook))| (v.as_str(), hook.is_some()))
    }

    /// The version an `apiVersion` of this family names, and its schema.
    pub fn version_of(&self, api_version: &str) -> Option<(&str, &Value)> {
        let (key, schema) = self.schemas.get_key_value(api_version)?;
        let version = key.rsplit_once('/').map_or(key.as_str(), |(_, v)| v);
        Some((version, schema.get()))
    }

    /// `apiVersion` of stored objects.
    pub fn storage_api_version(&self) -> &str {
        &self.storage_api_version
    }

    /// `obj` (in any version of the family, as its `apiVersion` says) in `version`,
    /// through the storage version. A version the family does not serve is a 400 (a
    /// client wrote it); a hook's refusal is its own error.
    pub fn convert(&self, obj: Value, version: &str) -> Result<Value, ApiError> {
        let from = match obj["apiVersion"].as_str() {
            Some(v) => match v.strip_prefix(&format!("{}/", self.group)) {
                Some(version) if !self.group.is_empty() => version.to_string(),
                _ => v.to_string(),
            },
            None => self.storage_version.clone(),
        };
        self.convert_from(obj, &from, version)
    }

    /// `obj`, in version `from`, in `version` (see [`Family::convert`]).
    pub fn convert_from(
        &self,
        mut obj: Value,
        from: &str,
        version: &str,
    ) -> Result<Value, ApiError> {
        if from == version {
            return Ok(obj);
        }
        if from != self.storage_version {
            let (rules, hook) = self.versions.get(from).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "{} {} is not served in version {from:?}",
                    self.group, self.kind
                ))
            })?;
            codegen::conversion::to_storage(rules, &self.annotation, &mut obj);
            if let Some(hook) = hook {
                hook.to_storage(&mut obj)?;
            }
        }
        if version != self.storage_version {
            let (rules, hook) = self.versions.get(version).ok_or_else(|| {
                ApiError::internal(format!("{} is not a version of {}", version, self.kind))
            })?;
            if let Some(hook) = hook {
                hook.from_storage(&mut obj)?;
            }
            codegen::conversion::from_storage(rules, &self.annotation, &mut obj);
        }
        if let Some(m) = obj.as_object_mut() {
            m.insert(
                "apiVersion".into(),
                Value::String(self.api_version(version)),
            );
        }
        Ok(obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use serde_json::{json, Map};

    /// An object with every field of `schema` set (enum members, bounds, one list item
    /// and one map entry), as a client could write it.
    fn sample(schema: &Value, depth: usize) -> Value {
        if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
            return first.clone();
        }
        if schema["x-kubernetes-int-or-string"] == json!(true) {
            return json!("10Gi");
        }
        if depth > 6 {
            return Value::Null;
        }
        match schema["type"].as_str() {
            Some("object") => {
                if let Some(props) = schema["properties"].as_object() {
                    let m: Map<String, Value> = props
                        .iter()
                        .map(|(k, s)| (k.clone(), sample(s, depth + 1)))
                        .filter(|(_, v)| !v.is_null())
                        .collect();
                    Value::Object(m)
                } else if schema["additionalProperties"].is_object() {
                    json!({ "key": sample(&schema["additionalProperties"], depth + 1) })
                } else {
                    json!({})
                }
            }
            Some("array") => json!([sample(&schema["items"], depth + 1)]),
            Some("integer") => schema["minimum"]
                .as_i64()
                .map_or(json!(3), |m| json!(m.max(1))),
            Some("number") => json!(1.5),
            Some("boolean") => json!(true),
            Some("string") => match schema["format"].as_str() {
                Some("date-time") => json!("2026-01-02T03:04:05Z"),
                _ => json!("x"),
            },
            _ => json!("x"),
        }
    }

    /// Every compiled-in family, every version: an object with every field goes to the
    /// storage version and back unchanged, and so does the empty object.
    #[test]
    fn every_version_round_trips_through_the_storage_version() {
        let catalog = Catalog::from_definitions(crate::generated::CATALOG).unwrap();
        let mut checked = 0;
        for entry in catalog.all() {
            let Some(family) = &entry.versions else {
                continue;
            };
            let version = entry.def.version.as_str();
            let meta = json!({ "name": "a", "namespace": "n", "labels": { "l": "1" } });
            let full = {
                let mut o = sample(entry.schema(), 0);
                o["apiVersion"] = json!(entry.api_version());
                o["kind"] = json!(entry.def.kind);
                o["metadata"] = meta.clone();
                o
            };
            let empty = json!({ "apiVersion": entry.api_version(), "kind": entry.def.kind, "metadata": meta });
            // The storage version's objects through every declaratively converted
            // version and back: preserved fields ride in the annotation.
            if version == family.storage_version() {
                for (other, hooked) in family.other_versions() {
                    if hooked {
                        continue;
                    }
                    let down = family.convert(full.clone(), other).unwrap();
                    let up = family.convert(down, version).unwrap();
                    assert_eq!(up, full, "{} {version} via {other}", entry.def.kind);
                }
            }
            for obj in [full, empty] {
                let stored = family
                    .convert(obj.clone(), family.storage_version())
                    .unwrap();
                assert_eq!(stored["apiVersion"], json!(family.storage_api_version()));
                let back = family.convert(stored, version).unwrap();
                assert_eq!(back, obj, "{} {version}", entry.def.kind);
            }
            checked += 1;
        }
        assert!(checked >= 2, "a family has two versions at least");
    }
}
