//! A definition's declarative conversion applied to objects (JSON), both ways: what the
//! server runs on every read and write of a version that is not the storage version.
//! Pure; the paths were checked against both schemas by `versions`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::model::{Conversion, FieldMapping};

/// The fields below an object at `path` (`.spec.color`): (parent object, last segment).
fn parent_mut<'a>(
    obj: &'a mut Value,
    path: &str,
    create: bool,
) -> Option<(&'a mut Map<String, Value>, String)> {
    let segs: Vec<&str> = path.strip_prefix('.')?.split('.').collect();
    let (last, parents) = segs.split_last()?;
    let mut at = obj;
    for seg in parents {
        let m = at.as_object_mut()?;
        if create && !m.get(*seg).is_some_and(Value::is_object) {
            m.insert((*seg).to_string(), Value::Object(Map::new()));
        }
        at = m.get_mut(*seg)?;
    }
    Some((at.as_object_mut()?, (*last).to_string()))
}

/// The value at `path`, removed; parents it leaves empty are removed too (they exist
/// only to hold it).
fn take(obj: &mut Value, path: &str) -> Option<Value> {
    let (m, last) = parent_mut(obj, path, false)?;
    let v = m.remove(&last)?;
    if m.is_empty() {
        if let Some((parent, _)) = path.rsplit_once('.').filter(|(p, _)| !p.is_empty()) {
            if parent.matches('.').count() > 1 {
                take(obj, parent);
            }
        }
    }
    Some(v)
}

/// Sets `path` to `v`, creating the objects above it.
fn put(obj: &mut Value, path: &str, v: Value) {
    if let Some((m, last)) = parent_mut(obj, path, true) {
        m.insert(last, v);
    }
}

fn get<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut at = obj;
    for seg in path.strip_prefix('.')?.split('.') {
        at = at.get(seg)?;
    }
    Some(at)
}

/// Moves every mapped field at once (so two rules may swap fields): `forward` from
/// `from` to `to`, else back.
fn remap(obj: &mut Value, c: &Conversion, forward: bool) {
    let rules: Vec<&FieldMapping> = c.renames.iter().chain(&c.moves).collect();
    let ends = |m: &&FieldMapping| -> (String, String) {
        if forward {
            (m.from.clone(), m.to.clone())
        } else {
            (m.to.clone(), m.from.clone())
        }
    };
    let taken: Vec<(String, Value)> = rules
        .iter()
        .filter_map(|m| {
            let (from, to) = ends(m);
            take(obj, &from).map(|v| (to, v))
        })
        .collect();
    for (to, v) in taken {
        put(obj, &to, v);
    }
}

/// `obj`, in the version `c` belongs to, as the storage version holds it: mapped fields
/// moved, preserved fields restored from `annotation` (then removed), defaults given to
/// fields still absent whose parent object exists. `apiVersion` is the caller's.
pub fn to_storage(c: &Conversion, annotation: &str, obj: &mut Value) {
    remap(obj, c, true);
    if !c.preserve.is_empty() {
        let kept = obj
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(annotation))
            .and_then(Value::as_str)
            .and_then(|s| serde_json::from_str::<Map<String, Value>>(s).ok());
        // A value that is not a JSON object was not written by a conversion: it stays an
        // ordinary annotation.
        if let Some(mut kept) = kept {
            for p in &c.preserve {
                if let Some(v) = kept.remove(&p.path) {
                    put(obj, &p.path, v);
                }
            }
            if let Some(a) = obj
                .pointer_mut("/metadata/annotations")
                .and_then(Value::as_object_mut)
            {
                a.remove(annotation);
                if a.is_empty() {
                    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                        m.remove("annotations");
                    }
                }
            }
        }
    }
    // As schema defaults, only where the field's parent object exists.
    for d in &c.defaults {
        let parent = d.path.rsplit_once('.').map_or("", |(p, _)| p);
        let parent_exists = parent.is_empty() || get(obj, parent).is_some_and(Value::is_object);
        if parent_exists && get(obj, &d.path).is_none() {
            put(obj, &d.path, d.value.clone());
        }
    }
}

/// `obj`, as the storage version holds it, in the version `c` belongs to: preserved
/// fields moved into `annotation` (a JSON object of path → value; a value equal to the
/// field's default is left out, as writing back restores it), defaulted fields dropped,
/// mapped fields moved back.
pub fn from_storage(c: &Conversion, annotation: &str, obj: &mut Value) {
    let mut kept: BTreeMap<String, Value> = BTreeMap::new();
    for p in &c.preserve {
        if let Some(v) = take(obj, &p.path) {
            let default = c.defaults.iter().find(|d| d.path == p.path);
            if default.is_none_or(|d| d.value != v) {
                kept.insert(p.path.clone(), v);
            }
        }
    }
    for d in &c.defaults {
        take(obj, &d.path);
    }
    remap(obj, c, false);
    if !kept.is_empty() {
        let text = serde_json::to_string(&kept).expect("JSON values always serialize");
        if let Some(meta) = obj.as_object_mut().map(|o| {
            o.entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()))
        }) {
            if let Some(m) = meta.as_object_mut() {
                let a = m
                    .entry("annotations")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(a) = a.as_object_mut() {
                    a.insert(annotation.to_string(), Value::String(text));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FieldDefault, FieldPath};
    use serde_json::json;

    fn rules() -> Conversion {
        let map = |from: &str, to: &str| FieldMapping {
            from: from.into(),
            to: to.into(),
            location: None,
        };
        Conversion {
            renames: vec![map(".spec.colour", ".spec.color")],
            moves: vec![map(".spec.size", ".spec.shape.size")],
            defaults: vec![FieldDefault {
                path: ".spec.mode".into(),
                value: json!("fast"),
                location: None,
            }],
            preserve: vec![
                FieldPath {
                    path: ".spec.mode".into(),
                    location: None,
                },
                FieldPath {
                    path: ".spec.tags".into(),
                    location: None,
                },
            ],
            hook: None,
            hook_location: None,
            stored_as: None,
        }
    }

    #[test]
    fn an_object_goes_to_the_storage_version_and_back_unchanged() {
        let c = rules();
        let v1 = json!({"metadata": {"name": "a"}, "spec": {"colour": "red", "size": 3, "n": 1}});
        let mut hub = v1.clone();
        to_storage(&c, "g/v2-fields", &mut hub);
        assert_eq!(
            hub,
            json!({"metadata": {"name": "a"}, "spec": {"color": "red", "shape": {"size": 3}, "n": 1, "mode": "fast"}})
        );
        let mut back = hub.clone();
        from_storage(&c, "g/v2-fields", &mut back);
        assert_eq!(back, v1);
    }

    #[test]
    fn fields_a_version_cannot_hold_ride_in_an_annotation() {
        let c = rules();
        let hub = json!({"metadata": {"name": "a"}, "spec": {"color": "red", "mode": "slow", "tags": ["x"]}});
        let mut v1 = hub.clone();
        from_storage(&c, "g/v2-fields", &mut v1);
        assert_eq!(
            v1,
            json!({"metadata": {"name": "a", "annotations": {"g/v2-fields": r#"{".spec.mode":"slow",".spec.tags":["x"]}"#}}, "spec": {"colour": "red"}})
        );
        let mut back = v1;
        to_storage(&c, "g/v2-fields", &mut back);
        assert_eq!(back, hub);
        // An annotation that is not a conversion's stays what it is.
        let mut odd = json!({"metadata": {"annotations": {"g/v2-fields": "x"}}, "spec": {}});
        to_storage(&c, "g/v2-fields", &mut odd);
        assert_eq!(odd["metadata"]["annotations"]["g/v2-fields"], "x");
    }
}
