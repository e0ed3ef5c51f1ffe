//! Kinds defined in several versions: the definitions of one group and kind form a
//! family with one storage version (`storage: true`), the others converting to it by the
//! declarative rules of their `conversion:` (or a named hook). Checked here: one storage
//! version, one identity, and rules that fit both schemas and leave no field behind.

use std::collections::{BTreeMap, BTreeSet};

use crate::diagnostics::{Code, Diagnostic, Diagnostics, Location};
use crate::model::{Conversion, ResourceDef, Schema, CONVERSION_HOOKS};
use crate::validate::KeyLocations;

/// The group whose family `d` belongs to: the group of its `conversion.storedAs`
/// when it names one (a version stored in another group), else its own.
pub fn family_group(d: &ResourceDef) -> &str {
    d.conversion
        .as_ref()
        .and_then(Conversion::stored_as_group)
        .unwrap_or(&d.group)
}

/// The definitions of each family, by (storage group, kind), defined more than once,
/// in definition order.
pub fn families(defs: &[ResourceDef]) -> BTreeMap<(String, String), Vec<&ResourceDef>> {
    let mut out: BTreeMap<(String, String), Vec<&ResourceDef>> = BTreeMap::new();
    for d in defs.iter().filter(|d| !d.create_only) {
        out.entry((family_group(d).to_string(), d.kind.clone()))
            .or_default()
            .push(d);
    }
    out.retain(|_, members| members.len() > 1);
    out
}

/// Whether `a` and `b` are versions of one kind in one group (so may share short names).
pub fn same_family(a: &ResourceDef, b: &ResourceDef) -> bool {
    a.group == b.group && a.kind == b.kind && a.plural == b.plural && !a.create_only
}

/// Checks every family and every `storage`/`conversion` outside one.
pub fn validate(defs: &[ResourceDef], keys: &KeyLocations, diags: &mut Diagnostics) {
    let key_at = |d: &ResourceDef, key: &str| {
        keys.get(&(d.location.file.clone(), key.to_string()))
            .unwrap_or(&d.location)
            .clone()
    };
    let families = families(defs);
    for d in defs {
        if let Some(c) = &d.conversion {
            check_hook(c, &key_at(d, "conversion"), diags);
        }
        let in_family = families.contains_key(&(family_group(d).to_string(), d.kind.clone()));
        if !in_family && d.conversion.is_some() {
            diags.push(
                Diagnostic::new(
                    Code::StorageVersion,
                    key_at(d, "conversion"),
                    format!(
                        "`{}` {} converts, but no other version of the kind is defined",
                        d.api_version(),
                        d.kind
                    ),
                )
                .with_help("define the storage version (with `storage: true`) in a file of its own, or remove `conversion`"),
            );
        }
    }
    for ((_, kind), members) in &families {
        let storage: Vec<&&ResourceDef> = members.iter().filter(|d| d.storage).collect();
        let versions: Vec<&str> = members.iter().map(|d| d.version.as_str()).collect();
        let hub = match storage.as_slice() {
            [hub] => hub,
            [] => {
                for d in members {
                    diags.push(
                        Diagnostic::new(
                            Code::StorageVersion,
                            d.location.clone(),
                            format!(
                                "kind `{kind}` is defined in versions {} but none is the storage version",
                                versions.join(", ")
                            ),
                        )
                        .with_help("add `storage: true` to the version objects are stored in"),
                    );
                }
                continue;
            }
            several => {
                for d in several {
                    diags.push(
                        Diagnostic::new(
                            Code::StorageVersion,
                            key_at(d, "storage"),
                            format!(
                                "kind `{kind}` has several storage versions: {}",
                                several
                                    .iter()
                                    .map(|d| d.version.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        )
                        .with_help(
                            "objects are stored in one version: keep `storage: true` on one",
                        ),
                    );
                }
                continue;
            }
        };
        for d in members.iter().filter(|d| !d.storage) {
            check_stored_as(d, hub, &key_at(d, "conversion"), diags);
            check_identity(d, hub, &key_at, diags);
            check_conversion(d, hub, &key_at(d, "conversion"), diags);
        }
        if hub.conversion.is_some() {
            diags.push(
                Diagnostic::new(
                    Code::ConversionRule,
                    key_at(hub, "conversion"),
                    format!(
                        "`{}` is the storage version of `{kind}`: the other versions convert to it",
                        hub.api_version()
                    ),
                )
                .with_help("move the rules to the versions that are not stored"),
            );
        }
    }
}

/// A version of another group names the storage version's `apiVersion` in `storedAs`,
/// and one of the storage version's group names none or its own.
fn check_stored_as(d: &ResourceDef, hub: &ResourceDef, at: &Location, diags: &mut Diagnostics) {
    let stored_as = d.conversion.as_ref().and_then(|c| c.stored_as.as_deref());
    let fine = match stored_as {
        Some(api_version) => api_version == hub.api_version(),
        None => d.group == hub.group,
    };
    if fine {
        return;
    }
    diags.push(
        Diagnostic::new(
            Code::StorageVersion,
            at.clone(),
            format!(
                "`{}` {} is stored as `{}`, but `storedAs` says {}",
                d.api_version(),
                d.kind,
                hub.api_version(),
                stored_as.map_or("nothing".to_string(), |s| format!("`{s}`"))
            ),
        )
        .with_help(format!(
            "name the storage version's apiVersion: `storedAs: {}`",
            hub.api_version()
        )),
    );
}

/// The hook must be one the server has.
fn check_hook(c: &Conversion, at: &Location, diags: &mut Diagnostics) {
    let Some(hook) = &c.hook else { return };
    if CONVERSION_HOOKS.contains(&hook.as_str()) {
        return;
    }
    let help = match crate::diagnostics::suggest(hook, CONVERSION_HOOKS) {
        Some(close) => format!("did you mean `{close}`?"),
        None => format!(
            "write the hook in server/src/registry/conversion_hooks.rs and add its name to codegen's `CONVERSION_HOOKS` (known: {})",
            CONVERSION_HOOKS.join(", ")
        ),
    };
    diags.push(
        Diagnostic::new(
            Code::ConversionHook,
            c.hook_location.clone().unwrap_or_else(|| at.clone()),
            format!("no conversion hook named `{hook}`"),
        )
        .with_help(help),
    );
}

/// The identity every version of a kind shares with its storage version.
fn check_identity(
    d: &ResourceDef,
    hub: &ResourceDef,
    key_at: &dyn Fn(&ResourceDef, &str) -> Location,
    diags: &mut Diagnostics,
) {
    let checks: [(&str, String, String); 7] = [
        ("plural", d.plural.clone(), hub.plural.clone()),
        ("singular", d.singular.clone(), hub.singular.clone()),
        ("listKind", d.list_kind.clone(), hub.list_kind.clone()),
        (
            "scope",
            format!("{:?}", d.scope),
            format!("{:?}", hub.scope),
        ),
        (
            "shortNames",
            format!("{:?}", d.short_names),
            format!("{:?}", hub.short_names),
        ),
        (
            "categories",
            format!("{:?}", d.categories),
            format!("{:?}", hub.categories),
        ),
        ("builtin", d.builtin.to_string(), hub.builtin.to_string()),
    ];
    // Short names and categories name a group's resources: a version in another group
    // (sharing storage) has its own.
    let other_group = d.group != hub.group;
    for (key, here, there) in checks {
        if other_group && matches!(key, "shortNames" | "categories") {
            continue;
        }
        if here != there {
            diags.push(
                Diagnostic::new(
                    Code::VersionIdentity,
                    key_at(d, key),
                    format!(
                        "`{key}` of `{}` {} is {here}, but {there} in the storage version `{}`",
                        d.api_version(),
                        d.kind,
                        hub.version
                    ),
                )
                .with_help(format!(
                    "every version of a kind is one resource: give `{key}` the same value"
                )),
            );
        }
    }
}

/// A JSON path of an object's field (`.spec.color`) as its segments.
fn segments(path: &str) -> Option<Vec<&str>> {
    let rest = path.strip_prefix('.')?;
    let parts: Vec<&str> = rest.split('.').collect();
    parts
        .iter()
        .all(|p| !p.is_empty() && !p.contains(['[', ']', '*', ' ']))
        .then_some(parts)
}

/// The schema of the field at `path`, if `schema` declares one there.
fn field<'a>(schema: &'a Schema, path: &str) -> Option<&'a Schema> {
    let mut at = schema;
    for seg in segments(path)? {
        at = at
            .properties
            .iter()
            .find(|(k, _)| k == seg)
            .map(|(_, s)| s)?;
    }
    Some(at)
}

/// What a value of `s` looks like, for comparing two versions' fields: types, list items
/// and map values, and the fields of objects, without documentation or validations.
fn shape(s: &Schema) -> serde_json::Value {
    let props: serde_json::Map<String, serde_json::Value> = s
        .properties
        .iter()
        .map(|(k, v)| (k.clone(), shape(v)))
        .collect();
    serde_json::json!({
        "type": s.type_,
        "intOrString": s.int_or_string,
        "unknown": s.preserve_unknown_fields,
        "items": s.items.as_deref().map(shape),
        "values": s.additional_properties.as_deref().map(shape),
        "properties": props,
    })
}

/// Whether a field's value is walked field by field (an object with declared fields).
fn has_fields(s: &Schema) -> bool {
    !s.properties.is_empty() && s.additional_properties.is_none() && !s.preserve_unknown_fields
}

/// The storage version's path of a path of this version: the longest rename or move
/// of it or of an ancestor applies.
fn mapped(c: &Conversion, path: &str) -> String {
    let rules = c.renames.iter().chain(&c.moves);
    let best = rules
        .filter(|m| path == m.from || path.starts_with(&format!("{}.", m.from)))
        .max_by_key(|m| m.from.len());
    match best {
        Some(m) => format!("{}{}", m.to, &path[m.from.len()..]),
        None => path.to_string(),
    }
}

/// Whether `path` is `base` or below it.
fn under(path: &str, base: &str) -> bool {
    path == base || path.starts_with(&format!("{base}."))
}

/// The declarative rules of `d` against its storage version `hub`: each names fields
/// that exist where they must; every field of either version has a counterpart (or, in
/// the storage version, is preserved or defaulted) unless a hook converts the rest.
fn check_conversion(d: &ResourceDef, hub: &ResourceDef, at: &Location, diags: &mut Diagnostics) {
    let empty = Conversion::default();
    let c = d.conversion.as_ref().unwrap_or(&empty);
    let (v, h) = (d.version.as_str(), hub.version.as_str());
    let mut bad = |loc: &Option<Location>, msg: String, help: &str| {
        diags.push(
            Diagnostic::new(
                Code::ConversionRule,
                loc.clone().unwrap_or_else(|| at.clone()),
                msg,
            )
            .with_help(help.to_string()),
        );
    };
    let mut ruled_paths = BTreeSet::new();
    for (what, rules) in [("renames", &c.renames), ("moves", &c.moves)] {
        for m in rules {
            for p in [&m.from, &m.to] {
                if segments(p).is_none() {
                    bad(
                        &m.location,
                        format!("`{p}` is not a field path"),
                        "write paths as `.spec.color`",
                    );
                }
            }
            if !ruled_paths.insert(m.from.clone()) {
                bad(
                    &m.location,
                    format!("`{}` is mapped twice", m.from),
                    "keep one rule per field",
                );
            }
            let here = field(&d.schema, &m.from);
            let there = field(&hub.schema, &m.to);
            if here.is_none() {
                bad(&m.location, format!("`{}` is not a field of {v}", m.from), &format!("the left side names a field of {v}, the right one the field of {h} it becomes"));
            }
            if there.is_none() {
                bad(&m.location, format!("`{}` is not a field of the storage version {h}", m.to), &format!("the left side names a field of {v}, the right one the field of {h} it becomes"));
            }
            let parent = |p: &str| p.rsplit_once('.').map(|(a, _)| a.to_string());
            if what == "renames" && parent(&m.from) != parent(&m.to) {
                bad(
                    &m.location,
                    format!(
                        "`{}` → `{}` changes the field's parent, which a rename does not",
                        m.from, m.to
                    ),
                    "write it under `moves`",
                );
            }
        }
    }
    for def in &c.defaults {
        match field(&hub.schema, &def.path) {
            None => bad(
                &def.location,
                format!("`{}` is not a field of the storage version {h}", def.path),
                "`defaults` names fields of the storage version this version lacks",
            ),
            Some(s) if !fits(s, &def.value) => bad(
                &def.location,
                format!(
                    "the default of `{}` is not a {}",
                    def.path,
                    s.type_.as_deref().unwrap_or("value of its type")
                ),
                "give a value of the field's type",
            ),
            Some(_) => {}
        }
    }
    for p in &c.preserve {
        if field(&hub.schema, &p.path).is_none() {
            bad(
                &p.location,
                format!("`{}` is not a field of the storage version {h}", p.path),
                "`preserve` names fields of the storage version this version cannot hold",
            );
        }
    }

    // Every field of this version reaches a field of the same shape in the hub.
    let mut reached: Vec<String> = Vec::new();
    let mut stack: Vec<(String, &Schema)> = d
        .schema
        .properties
        .iter()
        .map(|(k, s)| (format!(".{k}"), s))
        .collect();
    while let Some((path, s)) = stack.pop() {
        let target = mapped(c, &path);
        let Some(t) = field(&hub.schema, &target) else {
            if c.hook.is_none() {
                bad(&s.location, format!("field `{path}` of {v} has no counterpart in the storage version {h}"), &format!("map it with `renames: {{{path}: .new.path}}` or `moves`, or name a `hook` that converts it"));
            }
            continue;
        };
        if has_fields(s) && has_fields(t) {
            reached.push(format!("{target}/"));
            stack.extend(s.properties.iter().map(|(k, f)| (format!("{path}.{k}"), f)));
        } else if shape(s) != shape(t) {
            if c.hook.is_none() {
                bad(
                    &s.location,
                    format!("field `{path}` of {v} and `{target}` of {h} hold different types"),
                    "a field maps to one of the same type; name a `hook` that converts it",
                );
            }
        } else {
            reached.push(target);
        }
    }
    for def in &c.defaults {
        if reached.iter().any(|r| under(&def.path, r)) {
            bad(
                &def.location,
                format!(
                    "`{}` is a field {v} has: a default is for a field it lacks",
                    def.path
                ),
                "remove the default",
            );
        }
    }
    for p in &c.preserve {
        if reached.iter().any(|r| under(&p.path, r)) {
            bad(
                &p.location,
                format!(
                    "`{}` is a field {v} holds: only fields it cannot hold are preserved",
                    p.path
                ),
                "remove it from `preserve`",
            );
        }
    }
    if c.hook.is_some() {
        return;
    }
    // Every field of the hub is reached, preserved or defaulted.
    let kept = |path: &str| {
        reached.iter().any(|r| under(path, r))
            || c.preserve.iter().any(|p| under(path, &p.path))
            || c.defaults.iter().any(|p| under(path, &p.path))
    };
    let mut stack: Vec<(String, &Schema)> = hub
        .schema
        .properties
        .iter()
        .map(|(k, s)| (format!(".{k}"), s))
        .collect();
    while let Some((path, s)) = stack.pop() {
        if kept(&path) {
            continue;
        }
        let below = format!("{path}.");
        let walked = reached.contains(&format!("{path}/"))
            || reached.iter().any(|r| r.starts_with(&below))
            || c.preserve.iter().any(|p| p.path.starts_with(&below))
            || c.defaults.iter().any(|p| p.path.starts_with(&below));
        if walked {
            stack.extend(s.properties.iter().map(|(k, f)| (format!("{path}.{k}"), f)));
            continue;
        }
        bad(&s.location, format!("field `{path}` of the storage version {h} has no place in {v}"), "add it to `preserve` (kept in an annotation) or `defaults`, or map a field of this version to it");
    }
}

/// Whether `value` is of the schema's type (as far as a default needs).
fn fits(s: &Schema, value: &serde_json::Value) -> bool {
    use serde_json::Value;
    if s.int_or_string {
        return value.is_string() || value.is_i64() || value.is_u64();
    }
    match (s.type_.as_deref(), value) {
        (None, _) => true,
        (Some("string"), Value::String(_)) => true,
        (Some("integer"), v) => v.is_i64() || v.is_u64(),
        (Some("number"), Value::Number(_)) => true,
        (Some("boolean"), Value::Bool(_)) => true,
        (Some("object"), Value::Object(_)) => true,
        (Some("array"), Value::Array(_)) => true,
        (_, Value::Null) => s.nullable,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_and_moves_map_a_field_and_what_is_below_it() {
        let c = Conversion {
            renames: vec![crate::model::FieldMapping {
                from: ".spec.colour".into(),
                to: ".spec.color".into(),
                location: None,
            }],
            moves: vec![crate::model::FieldMapping {
                from: ".spec.shape".into(),
                to: ".spec.look.shape".into(),
                location: None,
            }],
            ..Conversion::default()
        };
        assert_eq!(mapped(&c, ".spec.colour"), ".spec.color");
        assert_eq!(mapped(&c, ".spec.colours"), ".spec.colours");
        assert_eq!(mapped(&c, ".spec.shape.sides"), ".spec.look.shape.sides");
        assert_eq!(segments(".spec.a"), Some(vec!["spec", "a"]));
        assert_eq!(segments("spec.a"), None);
        assert_eq!(segments(".spec..a"), None);
    }
}
