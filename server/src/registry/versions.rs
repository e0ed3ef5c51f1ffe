//! Compiled-in kinds served in several versions: the definitions of one group and kind
//! (a family) share one storage version, and objects are converted between it and the
//! version a request speaks by each version's declarative rules
//! (`codegen::conversion`) and its named hook (`conversion_hooks`).

use std::collections::BTreeMap;
use std::sync::Arc;

use codegen::model::{Conversion, ResourceDef};
use serde_json::Value;

use super::conversion_hooks::{self, Hook};
use crate::api::{ApiError, StatusCause};
use crate::catalog::SchemaJson;

/// The versions of one compiled-in kind and how each converts to the storage version.
/// Versions are named by `apiVersion`: a family may span groups (events.k8s.io/v1 Event
/// is stored as core/v1 Event).
#[derive(Debug)]
pub struct Family {
    kind: String,
    storage_api_version: String,
    /// The storage version's group and resource: where every version's objects live.
    storage_group: String,
    storage_plural: String,
    /// The annotation that keeps storage-version fields a version cannot hold.
    annotation: String,
    /// Every served version but the storage version, by `apiVersion`: its rules and hook.
    versions: BTreeMap<String, (Conversion, Option<Hook>)>,
    /// Every version's schema (JSON), by `apiVersion`: what a managedFields entry
    /// recorded in another version is read with.
    schemas: BTreeMap<String, Arc<SchemaJson>>,
}

impl Family {
    /// The family of `members` (the definitions of one kind stored together, one of
    /// them `storage: true`, as codegen checked); an error names a hook the server lacks.
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
            versions.insert(d.api_version(), (rules, hook));
        }
        Ok(Family {
            kind: hub.kind.clone(),
            storage_api_version: hub.api_version(),
            storage_group: hub.group.clone(),
            storage_plural: hub.plural.clone(),
            annotation: Conversion::annotation(&hub.group, &hub.version),
            versions,
            schemas,
        })
    }

    /// The served versions other than the storage version (by `apiVersion`), and
    /// whether a hook converts each (then only what the hook keeps survives a trip from
    /// the storage version).
    pub fn other_versions(&self) -> impl Iterator<Item = (&str, bool)> {
        self.versions
            .iter()
            .map(|(v, (_, hook))| (v.as_str(), hook.is_some()))
    }

    /// The schema of a version of this family, by `apiVersion`.
    pub fn schema_of(&self, api_version: &str) -> Option<&Value> {
        self.schemas.get(api_version).map(|s| s.get())
    }

    /// `apiVersion` of stored objects.
    pub fn storage_api_version(&self) -> &str {
        &self.storage_api_version
    }

    /// The group and resource (plural) every version's objects are stored under.
    pub fn storage_resource(&self) -> (&str, &str) {
        (&self.storage_group, &self.storage_plural)
    }

    /// What is wrong with the preserving annotation of `obj`, written in `api_version`: a
    /// value that is not a JSON object, a path the version does not preserve, or a value
    /// the storage version's schema refuses at its path. Each is a cause at the
    /// annotation (the client wrote it; restoring it as it is would store what the
    /// storage version never validated). Reads of stored objects stay lenient.
    pub fn preserved_causes(&self, obj: &Value, api_version: &str) -> Vec<StatusCause> {
        let Some((rules, _)) = self.versions.get(api_version) else {
            return Vec::new();
        };
        if rules.preserve.is_empty() {
            return Vec::new();
        }
        let Some(text) = obj
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(&self.annotation))
            .and_then(Value::as_str)
        else {
            return Vec::new();
        };
        let field = format!("metadata.annotations[{}]", self.annotation);
        let preserved: Vec<&str> = rules.preserve.iter().map(|p| p.path.as_str()).collect();
        let Ok(kept) = serde_json::from_str::<serde_json::Map<String, Value>>(text) else {
            let detail = format!(
                "must be a JSON object of the {} fields this version cannot hold, by path ({})",
                self.storage_api_version,
                preserved.join(", ")
            );
            return vec![StatusCause::invalid(&field, text, &detail)];
        };
        let mut causes: Vec<StatusCause> = kept
            .keys()
            .filter(|k| !preserved.contains(&k.as_str()))
            .map(|k| {
                let detail = format!(
                    "{k} is not a field this version preserves ({})",
                    preserved.join(", ")
                );
                StatusCause::invalid(&field, text, &detail)
            })
            .collect();
        if !causes.is_empty() {
            return causes;
        }
        // The restored values, checked where the storage version holds them.
        let Some(schema) = self.schemas.get(&self.storage_api_version) else {
            return causes;
        };
        let Ok(stored) = self.convert_from(obj.clone(), api_version, &self.storage_api_version)
        else {
            return causes;
        };
        for c in schema.validator().validate(&stored) {
            let at = format!(".{}", c.field);
            let restored = kept.keys().any(|k| {
                at == *k || at.starts_with(&format!("{k}.")) || at.starts_with(&format!("{k}["))
            });
            if restored {
                causes.push(StatusCause::invalid(
                    &field,
                    text,
                    &format!("{at}: {}", c.message),
                ));
            }
        }
        causes
    }

    /// `obj` (in any version of the family, as its `apiVersion` says) in the version
    /// `api_version`, through the storage version. A version the family does not serve
    /// is a 400 (a client wrote it); a hook's refusal is its own error.
    pub fn convert(&self, obj: Value, api_version: &str) -> Result<Value, ApiError> {
        let from = obj["apiVersion"]
            .as_str()
            .unwrap_or(&self.storage_api_version)
            .to_string();
        self.convert_from(obj, &from, api_version)
    }

    /// `obj`, in version `from`, in version `to` (both `apiVersion`s; see
    /// [`Family::convert`]).
    pub fn convert_from(&self, mut obj: Value, from: &str, to: &str) -> Result<Value, ApiError> {
        if from == to {
            return Ok(obj);
        }
        if from != self.storage_api_version {
            let (rules, hook) = self.versions.get(from).ok_or_else(|| {
                ApiError::bad_request(format!("{} is not served in version {from:?}", self.kind))
            })?;
            codegen::conversion::to_storage(rules, &self.annotation, &mut obj);
            if let Some(hook) = hook {
                hook.to_storage(&mut obj)?;
            }
        }
        if to != self.storage_api_version {
            let (rules, hook) = self.versions.get(to).ok_or_else(|| {
                ApiError::internal(format!("{to} is not a version of {}", self.kind))
            })?;
            if let Some(hook) = hook {
                hook.from_storage(&mut obj)?;
            }
            codegen::conversion::from_storage(rules, &self.annotation, &mut obj);
        }
        if let Some(m) = obj.as_object_mut() {
            m.insert("apiVersion".into(), Value::String(to.to_string()));
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
            let version = entry.api_version();
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
            if version == family.storage_api_version() {
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
                    .convert(obj.clone(), family.storage_api_version())
                    .unwrap();
                assert_eq!(stored["apiVersion"], json!(family.storage_api_version()));
                let back = family.convert(stored, version).unwrap();
                assert_eq!(back, obj, "{} {version}", entry.def.kind);
            }
            checked += 1;
        }
        assert!(checked >= 4, "HPA and Event have two versions at least");
    }
}
