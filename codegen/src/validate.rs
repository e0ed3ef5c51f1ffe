//! Checks on the lowered model: names, schemas, cross-definition clashes. Reports every
//! problem, never stops at the first.

use std::collections::{BTreeMap, BTreeSet};

use crate::diagnostics::{Code, Diagnostic, Diagnostics, Location};
use crate::model::{
    PrinterColumn, ResourceDef, ScaleSubresource, Schema, CREATE_HOOKS, PART_HOOKS, STRATEGIES,
};
use crate::names::{is_api_version, is_dns_label, is_dns_subdomain, is_kind};

const TYPES: &[&str] = &["object", "array", "string", "integer", "number", "boolean"];
const COLUMN_TYPES: &[&str] = &["integer", "number", "string", "boolean", "date"];

/// Where a loader saw each top-level key of a definition: (file, key) → the position of
/// its value, so errors about a key point at it rather than at the definition.
pub type KeyLocations = BTreeMap<(String, String), Location>;

/// Validates every definition and the set as a whole.
pub fn validate(defs: &[ResourceDef], diags: &mut Diagnostics) {
    validate_located(defs, &KeyLocations::new(), diags)
}

/// [`validate`], pointing errors about a key at the position `keys` gives for it.
pub fn validate_located(defs: &[ResourceDef], keys: &KeyLocations, diags: &mut Diagnostics) {
    let mut by_plural: BTreeMap<(String, String, String), &Location> = BTreeMap::new();
    let mut by_kind: BTreeMap<(String, String, String), &Location> = BTreeMap::new();
    let mut short_names: BTreeMap<String, &ResourceDef> = BTreeMap::new();

    for d in defs {
        let at = &d.location;
        let key_at = |key: &str| {
            keys.get(&(at.file.clone(), key.to_string()))
                .unwrap_or(at)
                .clone()
        };
        let err = |key: &str, code: Code, msg: String, help: &str| {
            Diagnostic::new(code, key_at(key), msg).with_help(help.to_string())
        };
        if !d.group.is_empty() && !is_dns_subdomain(&d.group) {
            diags.push(err(
                "group",
                Code::InvalidName,
                format!("group `{}` is not a DNS subdomain", d.group),
                "use lower-case dot-separated words, e.g. `example.dev`",
            ));
        }
        if !is_api_version(&d.version) {
            diags.push(err(
                "version",
                Code::InvalidName,
                format!("version `{}` is not a Kubernetes API version", d.version),
                "use `v1`, `v1beta1` or `v1alpha1` style",
            ));
        }
        if !is_kind(&d.kind) {
            diags.push(err(
                "kind",
                Code::InvalidName,
                format!("kind `{}` must be UpperCamelCase ASCII", d.kind),
                "e.g. `kind: Widget`",
            ));
        }
        if !is_kind(&d.list_kind) {
            diags.push(err(
                "listKind",
                Code::InvalidName,
                format!("listKind `{}` must be UpperCamelCase ASCII", d.list_kind),
                "e.g. `listKind: WidgetList`",
            ));
        }
        for (what, value) in [("plural", &d.plural), ("singular", &d.singular)] {
            if !is_dns_label(value) {
                diags.push(err(
                    what,
                    Code::InvalidName,
                    format!("{what} `{value}` must be a lower-case DNS label"),
                    "e.g. `widgets`",
                ));
            }
        }
        for s in &d.short_names {
            if !is_dns_label(s) {
                diags.push(err(
                    "shortNames",
                    Code::InvalidName,
                    format!("short name `{s}` must be a lower-case DNS label"),
                    "e.g. `wd`",
                ));
            } else if let Some(prev) = short_names
                .insert(s.clone(), d)
                .filter(|prev| !crate::versions::same_family(prev, d))
                .map(|prev| &prev.location)
            {
                diags.push(err(
                    "shortNames",
                    Code::NameTaken,
                    format!("short name `{s}` is already used by the definition at {prev}"),
                    "pick another short name",
                ));
            }
        }
        let gv = (d.group.clone(), d.version.clone());
        if let Some(prev) = by_plural.insert((gv.0.clone(), gv.1.clone(), d.plural.clone()), at) {
            diags.push(err(
                "kind",
                Code::NameTaken,
                format!(
                    "resource `{}` in `{}` is already defined at {prev}",
                    d.plural,
                    d.api_version()
                ),
                "each group-version serves a plural once",
            ));
        }
        if let Some(prev) = by_kind.insert((gv.0, gv.1, d.kind.clone()), at) {
            diags.push(err(
                "kind",
                Code::NameTaken,
                format!(
                    "kind `{}` in `{}` is already defined at {prev}",
                    d.kind,
                    d.api_version()
                ),
                "each group-version has a kind once",
            ));
        }

        if d.schema.has_protobuf() && !d.builtin {
            diags.push(err("kind", Code::Protobuf,
                format!("kind `{}` has protobuf field numbers but is not built-in", d.kind),
                "add `builtin: true` (only Kubernetes' own kinds speak protobuf) or remove the `x-protobuf-field` numbers",
            ));
        }
        if d.create_only {
            check_hook_name(
                d.strategy.as_deref(),
                "a create-only kind",
                &key_at("strategy"),
                diags,
            );
            if d.subresources != Default::default() {
                diags.push(err(
                    "subresources",
                    Code::CreateOnly,
                    format!("create-only kind `{}` declares subresources", d.kind),
                    "a kind that is not stored has no objects to address; remove `subresources`",
                ));
            }
            if !d.selectable_fields.is_empty() {
                diags.push(err(
                    "selectableFields",
                    Code::CreateOnly,
                    format!("create-only kind `{}` declares selectableFields", d.kind),
                    "a kind that is not stored cannot be listed; remove `selectableFields`",
                ));
            }
        } else if let Some(s) = d.strategy.as_deref().filter(|s| !STRATEGIES.contains(s)) {
            let help = match crate::diagnostics::suggest(s, STRATEGIES) {
                Some(close) => format!("write `strategy: {close}`"),
                None if CREATE_HOOKS.contains(&s) => format!(
                    "`{s}` answers a kind that is not stored: add `createOnly: true`, or use one of {}",
                    STRATEGIES.join(", ")
                ),
                None => format!(
                    "use one of {}, or leave `strategy` out",
                    STRATEGIES.join(", ")
                ),
            };
            diags.push(err(
                "strategy",
                Code::UnknownValue,
                format!("unknown strategy `{s}`"),
                &help,
            ));
        }
        if let Some(p) = &d.open_api_prefix {
            check_open_api_prefix(p, &key_at("openAPIPrefix"), diags);
        }
        let mut sub_names: BTreeSet<&str> = BTreeSet::new();
        for sub in &d.subresources.create_only {
            let sat = sub.schema.location.clone().unwrap_or_else(|| at.clone());
            let serr = |code: Code, msg: String, help: &str| {
                Diagnostic::new(code, sat.clone(), msg).with_help(help.to_string())
            };
            if !is_dns_label(&sub.name) || ["status", "scale"].contains(&sub.name.as_str()) {
                diags.push(serr(Code::InvalidName,
                    format!("create-only subresource name `{}` must be a lower-case DNS label other than status and scale", sub.name),
                    "e.g. `name: token`",
                ));
            } else if !sub_names.insert(&sub.name) {
                diags.push(serr(
                    Code::Duplicate,
                    format!("subresource `{}` is declared twice", sub.name),
                    "keep one",
                ));
            }
            if !sub.group.is_empty() && !is_dns_subdomain(&sub.group) {
                diags.push(serr(
                    Code::InvalidName,
                    format!("group `{}` is not a DNS subdomain", sub.group),
                    "e.g. `authentication.k8s.io`, or `\"\"` for the core group",
                ));
            }
            if !is_api_version(&sub.version) {
                diags.push(serr(
                    Code::InvalidName,
                    format!("version `{}` is not a Kubernetes API version", sub.version),
                    "e.g. `v1`",
                ));
            }
            if !is_kind(&sub.kind) {
                diags.push(serr(
                    Code::InvalidName,
                    format!("kind `{}` must be UpperCamelCase ASCII", sub.kind),
                    "e.g. `kind: TokenRequest`",
                ));
            }
            check_hook_name(
                Some(&sub.strategy),
                "a create-only subresource",
                &sat,
                diags,
            );
            if let Some(p) = &sub.open_api_prefix {
                check_open_api_prefix(p, &sat, diags);
            }
            if sub.schema.has_protobuf() && !d.builtin {
                diags.push(serr(
                    Code::Protobuf,
                    format!(
                        "subresource `{}` has protobuf field numbers but `{}` is not built-in",
                        sub.name, d.kind
                    ),
                    "add `builtin: true` or remove the `x-protobuf-field` numbers",
                ));
            }
            validate_parts(&sub.schema, &[], None, &sat, diags);
        }
        let subresources_at = key_at("subresources");
        for part in &d.subresources.parts {
            let perr = |code: Code, msg: String, help: &str| {
                Diagnostic::new(code, subresources_at.clone(), msg).with_help(help.to_string())
            };
            if !is_dns_label(&part.name) || ["status", "scale"].contains(&part.name.as_str()) {
                diags.push(perr(
                    Code::InvalidName,
                    format!("subresource name `{}` must be a lower-case DNS label other than status and scale", part.name),
                    "e.g. `name: finalize`",
                ));
            } else if !sub_names.insert(&part.name) {
                diags.push(perr(
                    Code::Duplicate,
                    format!("subresource `{}` is declared twice", part.name),
                    "keep one",
                ));
            }
            if !PART_HOOKS.contains(&part.strategy.as_str()) {
                let help = match crate::diagnostics::suggest(&part.strategy, PART_HOOKS) {
                    Some(close) => format!("write `strategy: {close}`"),
                    None => format!("use one of {}", PART_HOOKS.join(", ")),
                };
                diags.push(perr(
                    Code::UnknownValue,
                    format!("the server has no part hook named `{}`", part.strategy),
                    &help,
                ));
            }
            for v in &part.verbs {
                if !["get", "update", "patch"].contains(&v.as_str()) {
                    diags.push(perr(
                        Code::UnknownValue,
                        format!("subresource `{}` cannot serve `{v}`", part.name),
                        "a part subresource serves some of get, update and patch",
                    ));
                }
            }
        }
        check_selectable_fields(d, diags);
        validate_parts(
            &d.schema,
            &d.printer_columns,
            d.subresources.scale.as_ref(),
            at,
            diags,
        );
    }
    crate::versions::validate(defs, keys, diags);
}

/// `strategy` of a kind or subresource that is not stored: one of [`CREATE_HOOKS`].
fn check_hook_name(name: Option<&str>, what: &str, at: &Location, diags: &mut Diagnostics) {
    let help = match name.and_then(|n| crate::diagnostics::suggest(n, CREATE_HOOKS)) {
        Some(close) => format!("write `strategy: {close}`"),
        None => format!("use one of {}", CREATE_HOOKS.join(", ")),
    };
    match name {
        None => diags.push(
            Diagnostic::new(
                Code::CreateOnly,
                at.clone(),
                format!("{what} needs `strategy`, the hook that answers its creates"),
            )
            .with_help(help),
        ),
        Some(n) if !CREATE_HOOKS.contains(&n) => diags.push(
            Diagnostic::new(
                Code::UnknownValue,
                at.clone(),
                format!("the server has no create hook named `{n}`"),
            )
            .with_help(help),
        ),
        Some(_) => {}
    }
}

/// An OpenAPI component name prefix: dot-separated words (`io.k8s.api.rbac.v1`).
fn check_open_api_prefix(p: &str, at: &Location, diags: &mut Diagnostics) {
    let word_ok = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    if !p.split('.').all(word_ok) {
        diags.push(
            Diagnostic::new(
                Code::InvalidName,
                at.clone(),
                format!("openAPIPrefix `{p}` must be dot-separated words"),
            )
            .with_help("e.g. `openAPIPrefix: io.k8s.api.rbac.v1`"),
        );
    }
}

/// Checks that need no identity: the schema, printer columns and scale paths. Loaders
/// also call it for definitions too broken to lower, so one run reports everything.
pub fn validate_parts(
    schema: &Schema,
    columns: &[PrinterColumn],
    scale: Option<&ScaleSubresource>,
    at: &Location,
    diags: &mut Diagnostics,
) {
    let err = |code: Code, msg: String, help: &str| {
        Diagnostic::new(code, at.clone(), msg).with_help(help.to_string())
    };
    if schema.type_.as_deref() != Some("object") {
        let loc = schema.location.clone().unwrap_or_else(|| at.clone());
        diags.push(
            Diagnostic::new(
                Code::SchemaType,
                loc,
                "the top-level schema must be `type: object`",
            )
            .with_help("write `type: object` with the kind's `properties`"),
        );
    }
    for (name, prop) in &schema.properties {
        if ["apiVersion", "kind", "metadata"].contains(&name.as_str()) {
            let loc = prop.location.clone().unwrap_or_else(|| at.clone());
            diags.push(
                Diagnostic::new(
                    Code::ImpliedField,
                    loc,
                    format!("`{name}` is implied and must not be declared"),
                )
                .with_help("remove it; every kind gets apiVersion, kind and metadata"),
            );
        }
    }
    check_schema(schema, at, "", diags);
    check_protobuf_fields(schema, at, true, diags);
    for c in columns {
        if !COLUMN_TYPES.contains(&c.type_.as_str()) {
            diags.push(err(
                Code::UnknownValue,
                format!("printer column `{}` has unknown type `{}`", c.name, c.type_),
                "use integer, number, string, boolean or date",
            ));
        }
        if !c.json_path.starts_with('.') {
            diags.push(err(
                Code::FieldPath,
                format!(
                    "printer column `{}` jsonPath `{}` must start with `.`",
                    c.name, c.json_path
                ),
                "e.g. `.spec.size`",
            ));
        }
    }
    if let Some(scale) = scale {
        if !scale.spec_replicas_path.starts_with(".spec.") {
            diags.push(err(
                Code::FieldPath,
                format!(
                    "specReplicasPath `{}` must be under `.spec`",
                    scale.spec_replicas_path
                ),
                "e.g. `.spec.replicas`",
            ));
        }
        if !scale.status_replicas_path.starts_with(".status.") {
            diags.push(err(
                Code::FieldPath,
                format!(
                    "statusReplicasPath `{}` must be under `.status`",
                    scale.status_replicas_path
                ),
                "e.g. `.status.replicas`",
            ));
        }
    }
}

/// Selectable fields must name a scalar field the schema declares (as CRDs require).
fn check_selectable_fields(d: &ResourceDef, diags: &mut Diagnostics) {
    for path in &d.selectable_fields {
        let err = |code: Code, msg: String| Diagnostic::new(code, d.location.clone(), msg);
        let Some(rest) = path.strip_prefix('.') else {
            diags.push(
                err(
                    Code::FieldPath,
                    format!("selectable field `{path}` must start with `.`"),
                )
                .with_help("e.g. `.spec.color`"),
            );
            continue;
        };
        let mut s = &d.schema;
        let mut found = true;
        for part in rest.split('.') {
            match s.properties.iter().find(|(k, _)| k == part) {
                Some((_, child)) => s = child,
                None => {
                    found = false;
                    break;
                }
            }
        }
        if !found {
            diags.push(
                err(
                    Code::UndeclaredField,
                    format!("selectable field `{path}` is not a field of the schema"),
                )
                .with_help("name a declared property, e.g. `.spec.color`"),
            );
        } else if !matches!(s.type_.as_deref(), Some("string" | "integer" | "boolean")) {
            diags.push(err(
                Code::FieldPath,
                format!("selectable field `{path}` must be a string, integer or boolean"),
            ));
        }
    }
}

fn check_schema(s: &Schema, fallback: &Location, path: &str, diags: &mut Diagnostics) {
    let at = s.location.clone().unwrap_or_else(|| fallback.clone());
    let here = if path.is_empty() {
        "the schema".to_string()
    } else {
        format!("`{path}`")
    };
    match s.type_.as_deref() {
        Some(t) if !TYPES.contains(&t) => {
            let mut d = Diagnostic::new(
                Code::SchemaType,
                at.clone(),
                format!("{here} has unknown type `{t}`"),
            );
            d = d.with_help(match crate::diagnostics::suggest(t, TYPES) {
                Some(s) => format!("did you mean `{s}`?"),
                None => format!("use one of: {}", TYPES.join(", ")),
            });
            diags.push(d);
        }
        None if !s.int_or_string && !s.preserve_unknown_fields => diags.push(
            Diagnostic::new(
                Code::SchemaType,
                at.clone(),
                format!("{here} has no `type`"),
            )
            .with_help("add `type:` (object, array, string, integer, number or boolean)"),
        ),
        _ => {}
    }
    let is = |t: &str| s.type_.as_deref() == Some(t);
    if is("array") && s.items.is_none() {
        diags.push(
            Diagnostic::new(
                Code::SchemaType,
                at.clone(),
                format!("{here} is an array without `items`"),
            )
            .with_help("add `items:` with the element schema"),
        );
    }
    if !is("array") && s.items.is_some() {
        diags.push(Diagnostic::new(
            Code::SchemaType,
            at.clone(),
            format!("{here} has `items` but is not `type: array`"),
        ));
    }
    if !is("object") && (!s.properties.is_empty() || s.additional_properties.is_some()) {
        diags.push(
            Diagnostic::new(
                Code::SchemaType,
                at.clone(),
                format!("{here} has properties but is not `type: object`"),
            )
            .with_help("add `type: object`"),
        );
    }
    if !s.properties.is_empty()
        && s.additional_properties
            .as_ref()
            .is_some_and(|a| !a.preserve_unknown_fields || a.type_.is_some())
    {
        diags.push(
            Diagnostic::new(
                Code::NonStructural,
                at.clone(),
                format!("{here} has both `properties` and `additionalProperties`"),
            )
            .with_help("structural schemas use one or the other"),
        );
    }
    let names: BTreeSet<&str> = s.properties.iter().map(|(k, _)| k.as_str()).collect();
    for r in &s.required {
        if !names.contains(r.as_str()) {
            diags.push(Diagnostic::new(
                Code::UndeclaredField,
                at.clone(),
                format!("{here} requires `{r}`, which is not among its properties"),
            ));
        }
    }
    if let Some(lt) = &s.list_type {
        if !["atomic", "set", "map"].contains(&lt.as_str()) {
            diags.push(
                Diagnostic::new(
                    Code::UnknownValue,
                    at.clone(),
                    format!("{here}: unknown x-kubernetes-list-type `{lt}`"),
                )
                .with_help("use atomic, set or map"),
            );
        }
        if lt == "map" && s.list_map_keys.is_empty() {
            diags.push(Diagnostic::new(
                Code::NonStructural,
                at.clone(),
                format!("{here}: list-type map needs x-kubernetes-list-map-keys"),
            ));
        }
    }
    if let Some(ps) = &s.patch_strategy {
        const PATCH_STRATEGIES: &[&str] = &["merge", "retainKeys", "merge,retainKeys", "replace"];
        if !PATCH_STRATEGIES.contains(&ps.as_str()) {
            diags.push(
                Diagnostic::new(
                    Code::UnknownValue,
                    at.clone(),
                    format!("{here}: unknown x-kubernetes-patch-strategy `{ps}`"),
                )
                .with_help("use merge, retainKeys, merge,retainKeys or replace"),
            );
        }
    }
    if let Some(mt) = &s.map_type {
        if !["atomic", "granular"].contains(&mt.as_str()) {
            diags.push(
                Diagnostic::new(
                    Code::UnknownValue,
                    at.clone(),
                    format!("{here}: unknown x-kubernetes-map-type `{mt}`"),
                )
                .with_help("use atomic or granular"),
            );
        }
    }
    if let Some(p) = &s.pattern {
        if p.is_empty() {
            diags.push(Diagnostic::new(
                Code::InvalidPattern,
                at.clone(),
                format!("{here} has an empty pattern"),
            ));
        }
    }
    if let Some(p) = s.pattern.as_deref().filter(|p| !p.is_empty()) {
        if let Err(e) = regex::Regex::new(p) {
            diags.push(
                Diagnostic::new(
                    Code::InvalidPattern,
                    at.clone(),
                    format!("{here} has a pattern that does not compile"),
                )
                .with_note(e.to_string()),
            );
        }
    }
    if s.unique_items {
        diags.push(
            Diagnostic::new(
                Code::NonStructural,
                at.clone(),
                format!("{here} sets `uniqueItems: true`, which checks every pair of items"),
            )
            .with_help("use `x-kubernetes-list-type: set` for lists of distinct values"),
        );
    }
    if s.embedded_resource && !is("object") {
        diags.push(Diagnostic::new(
            Code::SchemaType,
            at.clone(),
            format!("{here} is an embedded resource but not `type: object`"),
        ));
    }
    for (keyword, sub) in value_validations(s) {
        check_value_validation(sub, s, &at, &format!("{here} {keyword}"), diags);
    }
    for (name, prop) in &s.properties {
        let child = if path.is_empty() {
            name.clone()
        } else {
            format!("{path}.{name}")
        };
        check_schema(prop, &at, &child, diags);
    }
    if let Some(i) = &s.items {
        check_schema(i, &at, &format!("{path}[]"), diags);
    }
    if let Some(a) = &s.additional_properties {
        if !a.preserve_unknown_fields || a.type_.is_some() {
            check_schema(a, &at, &format!("{path}.*"), diags);
        }
    }
}

/// The `allOf`, `anyOf`, `oneOf` and `not` schemas of `s`, with their keyword.
fn value_validations(s: &Schema) -> Vec<(&'static str, &Schema)> {
    let mut out = Vec::new();
    for (keyword, list) in [
        ("allOf", &s.all_of),
        ("anyOf", &s.any_of),
        ("oneOf", &s.one_of),
    ] {
        out.extend(list.iter().map(|x| (keyword, x)));
    }
    out.extend(s.not.as_deref().map(|n| ("not", n)));
    out
}

/// A schema under `allOf`/`anyOf`/`oneOf`/`not` only adds checks: it may not change
/// the structure (types, defaults, extensions), and names only fields that `structural`
/// declares, so pruning and defaulting never depend on which branch matched.
fn check_value_validation(
    v: &Schema,
    structural: &Schema,
    at: &Location,
    here: &str,
    diags: &mut Diagnostics,
) {
    let at = v.location.clone().unwrap_or_else(|| at.clone());
    // The one structure allowed: an int-or-string's `anyOf: [{type: integer}, {type: string}]`.
    let int_or_string_type =
        structural.int_or_string && matches!(v.type_.as_deref(), Some("integer" | "string"));
    let forbidden = [
        ("type", v.type_.is_some() && !int_or_string_type),
        ("description", v.description.is_some()),
        ("title", v.title.is_some()),
        ("default", v.default.is_some()),
        ("nullable", v.nullable),
        ("additionalProperties", v.additional_properties.is_some()),
        (
            "x-kubernetes-preserve-unknown-fields",
            v.preserve_unknown_fields,
        ),
        ("x-kubernetes-int-or-string", v.int_or_string),
        ("x-kubernetes-embedded-resource", v.embedded_resource),
        ("x-kubernetes-list-type", v.list_type.is_some()),
        ("x-kubernetes-list-map-keys", !v.list_map_keys.is_empty()),
        ("x-kubernetes-map-type", v.map_type.is_some()),
        ("x-kubernetes-validations", !v.validations.is_empty()),
    ];
    for (keyword, set) in forbidden {
        if set {
            diags.push(
                Diagnostic::new(
                    Code::NonStructural,
                    at.clone(),
                    format!("{here} must not set `{keyword}`"),
                )
                .with_help(
                    "value validations only add checks; declare structure in the schema itself",
                ),
            );
        }
    }
    for (name, prop) in &v.properties {
        match structural.properties.iter().find(|(k, _)| k == name) {
            Some((_, declared)) => {
                check_value_validation(prop, declared, &at, &format!("{here}.{name}"), diags)
            }
            None => diags.push(Diagnostic::new(
                Code::UndeclaredField,
                at.clone(),
                format!("{here} names `{name}`, which the schema does not declare"),
            )),
        }
    }
    if let Some(items) = &v.items {
        match &structural.items {
            Some(declared) => {
                check_value_validation(items, declared, &at, &format!("{here}[]"), diags)
            }
            None => diags.push(Diagnostic::new(
                Code::UndeclaredField,
                at.clone(),
                format!("{here} has `items`, which the schema does not declare"),
            )),
        }
    }
    for (keyword, sub) in value_validations(v) {
        check_value_validation(sub, structural, &at, &format!("{here} {keyword}"), diags);
    }
}

/// Field numbers must be unique per message (a Go-embedded message is one of its own);
/// at the top level 1 is `metadata`.
fn check_protobuf_fields(s: &Schema, fallback: &Location, top: bool, diags: &mut Diagnostics) {
    let mut seen: BTreeMap<(&[u32], u32), &str> = BTreeMap::new();
    if top {
        seen.insert((&[], 1), "metadata");
    }
    for (name, prop) in &s.properties {
        if let Some(n) = prop.protobuf_field {
            if let Some(prev) = seen.insert((prop.protobuf_embedded.as_slice(), n), name) {
                let at = prop.location.clone().unwrap_or_else(|| fallback.clone());
                diags.push(
                    Diagnostic::new(
                        Code::Protobuf,
                        at,
                        format!("protobuf field {n} of `{name}` is already used by `{prev}`"),
                    )
                    .with_help("field numbers are unique within a message"),
                );
            }
        }
        check_protobuf_fields(prop, fallback, false, diags);
    }
    if let Some(i) = &s.items {
        check_protobuf_fields(i, fallback, false, diags);
    }
}
