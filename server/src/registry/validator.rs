//! Schema validation compiled once per schema: the OpenAPI schema (as JSON) turned into
//! typed nodes — type tag, enum, required fields, bounds, compiled patterns, formats as
//! functions, properties by name — so checking an object looks nothing up by keyword and
//! builds a field path only for a cause it reports.
//!
//! The causes (field, reason, message, order) are exactly those of the interpreting
//! walker kept in `schema_interpreter` (the differential test below holds them equal),
//! worded as kube-apiserver words them.

use serde_json::{Map, Value};

use super::schema::{is_embedded_resource, join, list_map_keys, type_name};
use crate::api::StatusCause;

/// A schema compiled for validation: [`Validator::validate`] checks an object's own
/// fields (not `apiVersion`, `kind`, `metadata`) against it.
#[derive(Debug)]
pub struct Validator {
    root: Node,
    /// The root node looks at the object as a whole (an enum, a composition, a property
    /// count, int-or-string): it is checked on a copy without the object fields, as the
    /// schema says; otherwise the object's members are walked in place.
    whole_root: bool,
}

impl Validator {
    /// Compiles `schema` (any JSON: what is not a schema keyword is ignored, as the
    /// walker ignores it).
    pub fn compile(schema: &Value) -> Self {
        let root = Node::compile(schema);
        let whole_root = root.int_or_string
            || root.enumeration.is_some()
            || root.min_properties.is_some()
            || root.max_properties.is_some()
            || root.compositions.is_some();
        Validator { root, whole_root }
    }

    /// The causes `obj`'s own fields give, in the order kube-apiserver reports them.
    pub fn validate(&self, obj: &Value) -> Vec<StatusCause> {
        let mut causes = Vec::new();
        let empty = Map::new();
        let map = obj.as_object().unwrap_or(&empty);
        if self.whole_root {
            let mut top = map.clone();
            for k in OBJECT_FIELDS {
                top.remove(k);
            }
            self.root
                .check(&Value::Object(top), &Path::Root, &mut causes);
            return causes;
        }
        // The members in the order the copy without the object fields would have:
        // `Map::remove` keeps insertion order by moving the last entry into the gap.
        let mut members: Vec<(&String, &Value)> = map.iter().collect();
        for k in OBJECT_FIELDS {
            if let Some(i) = members.iter().position(|(m, _)| m.as_str() == k) {
                members.swap_remove(i);
            }
        }
        // The root is an object: only its type can fail before its members.
        if !self
            .root
            .check_type(&Value::Object(Map::new()), &Path::Root, &mut causes)
        {
            return causes;
        }
        let has = |k: &str| !OBJECT_FIELDS.contains(&k) && map.contains_key(k);
        let get = |k: &str| {
            if OBJECT_FIELDS.contains(&k) {
                None
            } else {
                map.get(k)
            }
        };
        self.root
            .check_members(members.into_iter(), has, get, &Path::Root, &mut causes);
        causes
    }
}

/// The fields every object has, checked apart from its schema.
const OBJECT_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// A field path, built as the walk descends and rendered only for a cause.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    /// `spec.containers[0].name`; empty at the root.
    fn render(&self) -> String {
        match self {
            Path::Root => String::new(),
            Path::Key(parent, key) => join(&parent.render(), key),
            Path::Index(parent, i) => format!("{}[{i}]", parent.render()),
        }
    }
}

/// `body` for the root, else the path.
fn display(path: &str) -> &str {
    if path.is_empty() {
        "body"
    } else {
        path
    }
}

/// The type a schema declares (`type:`), as a tag; `Never` for one no non-null value has.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Type {
    Boolean,
    Integer,
    Number,
    String,
    Array,
    Object,
    Never,
}

impl Type {
    fn of(name: &str) -> Type {
        match name {
            "boolean" => Type::Boolean,
            "integer" => Type::Integer,
            "number" => Type::Number,
            "string" => Type::String,
            "array" => Type::Array,
            "object" => Type::Object,
            _ => Type::Never,
        }
    }

    /// Whether a non-null value is of this type (an integer is a number too).
    fn admits(self, v: &Value) -> bool {
        match (self, v) {
            (Type::Boolean, Value::Bool(_)) => true,
            (Type::Number, Value::Number(_)) => true,
            (Type::Integer, Value::Number(n)) => n.is_i64() || n.is_u64(),
            (Type::String, Value::String(_)) => true,
            (Type::Array, Value::Array(_)) => true,
            (Type::Object, Value::Object(_)) => true,
            _ => false,
        }
    }
}

/// `enum:` values and the list a refusal shows.
#[derive(Debug)]
struct Enumeration {
    values: Vec<Value>,
    shown: String,
}

/// `pattern:` compiled (a pattern that does not compile checks nothing).
#[derive(Debug)]
struct Pattern {
    source: Box<str>,
    regex: regex::Regex,
}

/// A string `format:` kube-apiserver checks, resolved to its check.
#[derive(Debug)]
struct Format {
    name: Box<str>,
    valid: fn(&str) -> bool,
}

/// `allOf`, `anyOf`, `oneOf`, `not`.
#[derive(Debug, Default)]
struct Compositions {
    all_of: Option<Vec<Node>>,
    any_of: Option<Vec<Node>>,
    one_of: Option<Vec<Node>>,
    not: Option<Box<Node>>,
}

/// `x-kubernetes-list-type`, with a map list's keys.
#[derive(Debug)]
enum ListType {
    Set,
    Map(Vec<Box<str>>),
}

/// One schema, compiled.
#[derive(Debug, Default)]
struct Node {
    nullable: bool,
    /// `type:` as written (a null's refusal names it; `object` when absent).
    type_name: Option<Box<str>>,
    ty: Option<Type>,
    int_or_string: bool,
    enumeration: Option<Enumeration>,
    minimum: Option<f64>,
    exclusive_minimum: bool,
    maximum: Option<f64>,
    exclusive_maximum: bool,
    multiple_of: Option<f64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    pattern: Option<Pattern>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    format: Option<Format>,
    compositions: Option<Box<Compositions>>,
    required: Vec<Box<str>>,
    embedded: bool,
    /// Declared properties, sorted by name; `None` when the schema declares none.
    properties: Option<Vec<(Box<str>, Node)>>,
    additional: Option<Box<Node>>,
    items: Option<Box<Node>>,
    list_type: Option<ListType>,
}

impl Node {
    fn compile(schema: &Value) -> Node {
        let flag = |k: &str| schema.get(k).and_then(Value::as_bool) == Some(true);
        let bound = |k: &str| schema.get(k).and_then(Value::as_f64);
        let count = |k: &str| schema.get(k).and_then(Value::as_u64);
        let list = |k: &str| {
            schema
                .get(k)
                .and_then(Value::as_array)
                .map(|all| all.iter().map(Node::compile).collect::<Vec<_>>())
        };
        let type_name = schema.get("type").and_then(Value::as_str);
        let compositions = Compositions {
            all_of: list("allOf"),
            any_of: list("anyOf"),
            one_of: list("oneOf"),
            not: schema.get("not").map(|n| Box::new(Node::compile(n))),
        };
        let has_compositions = compositions.all_of.is_some()
            || compositions.any_of.is_some()
            || compositions.one_of.is_some()
            || compositions.not.is_some();
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                let mut compiled: Vec<(Box<str>, Node)> = props
                    .iter()
                    .map(|(k, s)| (k.as_str().into(), Node::compile(s)))
                    .collect();
                compiled.sort_by(|a, b| a.0.cmp(&b.0));
                compiled
            });
        Node {
            nullable: flag("nullable"),
            type_name: type_name.map(Into::into),
            ty: type_name.map(Type::of),
            int_or_string: flag("x-kubernetes-int-or-string"),
            enumeration: schema
                .get("enum")
                .and_then(Value::as_array)
                .map(|values| Enumeration {
                    shown: values
                        .iter()
                        .map(Value::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                    values: values.clone(),
                }),
            minimum: bound("minimum"),
            exclusive_minimum: flag("exclusiveMinimum"),
            maximum: bound("maximum"),
            exclusive_maximum: flag("exclusiveMaximum"),
            multiple_of: bound("multipleOf").filter(|m| *m > 0.0),
            min_length: count("minLength"),
            max_length: count("maxLength"),
            pattern: schema.get("pattern").and_then(Value::as_str).and_then(|p| {
                regex::Regex::new(p).ok().map(|regex| Pattern {
                    source: p.into(),
                    regex,
                })
            }),
            min_items: count("minItems"),
            max_items: count("maxItems"),
            min_properties: count("minProperties"),
            max_properties: count("maxProperties"),
            format: schema
                .get("format")
                .and_then(Value::as_str)
                .and_then(|name| {
                    format_check(name).map(|valid| Format {
                        name: name.into(),
                        valid,
                    })
                }),
            compositions: has_compositions.then(|| Box::new(compositions)),
            required: schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(Into::into)
                .collect(),
            embedded: is_embedded_resource(schema),
            properties,
            additional: schema
                .get("additionalProperties")
                .filter(|a| a.is_object())
                .map(|a| Box::new(Node::compile(a))),
            items: schema.get("items").map(|i| Box::new(Node::compile(i))),
            list_type: match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
                Some("set") => Some(ListType::Set),
                Some("map") => Some(ListType::Map(
                    list_map_keys(schema).into_iter().map(Into::into).collect(),
                )),
                _ => None,
            },
        }
    }

    /// The schema of member `key`: its property, else `additionalProperties`.
    fn member(&self, key: &str) -> Option<&Node> {
        self.properties
            .as_ref()
            .and_then(|props| {
                props
                    .binary_search_by(|(k, _)| k.as_ref().cmp(key))
                    .ok()
                    .map(|i| &props[i].1)
            })
            .or(self.additional.as_deref())
    }

    fn check(&self, v: &Value, path: &Path, causes: &mut Vec<StatusCause>) {
        if v.is_null() {
            if !self.nullable {
                let at = path.render();
                if !at.is_empty() {
                    let ty = self.type_name.as_deref().unwrap_or("object");
                    causes.push(StatusCause::invalid(
                        &at,
                        "null",
                        &format!("{at} in body must be of type {ty}: \"null\""),
                    ));
                }
            }
            return;
        }
        if !self.check_type(v, path, causes) {
            return;
        }
        if let Some(e) = &self.enumeration {
            if !e.values.contains(v) {
                causes.push(StatusCause {
                    reason: "FieldValueNotSupported".into(),
                    message: format!("Unsupported value: {v}: supported values: {}", e.shown),
                    field: path.render(),
                });
            }
        }
        self.check_bounds(v, path, causes);
        if let (Some(format), Value::String(s)) = (&self.format, v) {
            if !(format.valid)(s) {
                let at = path.render();
                causes.push(StatusCause::invalid(
                    &at,
                    s,
                    &format!(
                        "{} in body must be of type {}: {s:?}",
                        display(&at),
                        format.name
                    ),
                ));
            }
        }
        if let Some(c) = &self.compositions {
            self.check_compositions(c, v, path, causes);
        }
        match v {
            Value::Object(map) => self.check_members(
                map.iter(),
                |k| map.contains_key(k),
                |k| map.get(k),
                path,
                causes,
            ),
            Value::Array(items) => {
                if let Some(node) = &self.items {
                    for (i, child) in items.iter().enumerate() {
                        node.check(child, &Path::Index(path, i), causes);
                    }
                }
                self.check_list_uniqueness(items, path, causes);
            }
            _ => {}
        }
    }

    /// int-or-string, else `type:`; false (and a cause) when the value is of another
    /// type, whose other checks are then skipped.
    fn check_type(&self, v: &Value, path: &Path, causes: &mut Vec<StatusCause>) -> bool {
        if self.int_or_string {
            if !matches!(type_name(v), "integer" | "string") {
                let at = path.render();
                causes.push(StatusCause::invalid(
                    &at,
                    &v.to_string(),
                    &format!(
                        "{at} in body must be of type integer or string: \"{}\"",
                        type_name(v)
                    ),
                ));
                return false;
            }
        } else if let Some(ty) = self.ty {
            if !ty.admits(v) {
                let at = path.render();
                let shown = match v {
                    Value::String(s) => s.clone(),
                    other => type_name(other).to_string(),
                };
                let expected = self.type_name.as_deref().unwrap_or_default();
                causes.push(StatusCause::invalid(
                    &at,
                    &shown,
                    &format!(
                        "{} in body must be of type {expected}: \"{}\"",
                        display(&at),
                        type_name(v)
                    ),
                ));
                return false;
            }
        }
        true
    }

    /// Required fields, an embedded object's `apiVersion` and `kind`, then each member
    /// against its schema, in the object's order.
    fn check_members<'v>(
        &self,
        members: impl Iterator<Item = (&'v String, &'v Value)>,
        has: impl Fn(&str) -> bool,
        get: impl Fn(&str) -> Option<&'v Value>,
        path: &Path,
        causes: &mut Vec<StatusCause>,
    ) {
        for r in &self.required {
            if !has(r) {
                causes.push(StatusCause::required(&join(&path.render(), r), ""));
            }
        }
        if self.embedded {
            for k in ["apiVersion", "kind"] {
                if get(k).and_then(Value::as_str).is_none_or(str::is_empty) {
                    causes.push(StatusCause::required(
                        &join(&path.render(), k),
                        "must not be empty",
                    ));
                }
            }
        }
        if self.properties.is_none() && self.additional.is_none() {
            return;
        }
        for (k, child) in members {
            if let Some(node) = self.member(k) {
                node.check(child, &Path::Key(path, k), causes);
            }
        }
    }

    /// Numeric bounds, string length and pattern, item and property counts.
    fn check_bounds(&self, v: &Value, path: &Path, causes: &mut Vec<StatusCause>) {
        let invalid = |detail: String| {
            let at = path.render();
            StatusCause::invalid_value(&at, v, &format!("{} in body {detail}", display(&at)))
        };
        match v {
            Value::Number(n) => {
                let Some(n) = n.as_f64() else { return };
                match self.minimum {
                    Some(min) if self.exclusive_minimum && n <= min => {
                        causes.push(invalid(format!("should be greater than {min}")))
                    }
                    Some(min) if n < min => {
                        causes.push(invalid(format!("should be greater than or equal to {min}")))
                    }
                    _ => {}
                }
                match self.maximum {
                    Some(max) if self.exclusive_maximum && n >= max => {
                        causes.push(invalid(format!("should be less than {max}")))
                    }
                    Some(max) if n > max => {
                        causes.push(invalid(format!("should be less than or equal to {max}")))
                    }
                    _ => {}
                }
                if let Some(m) = self.multiple_of {
                    let q = n / m;
                    if (q - q.round()).abs() > 1e-9 {
                        causes.push(invalid(format!("should be a multiple of {m}")));
                    }
                }
            }
            Value::String(s) => {
                if self.min_length.is_none() && self.max_length.is_none() && self.pattern.is_none()
                {
                    return;
                }
                let chars = s.chars().count() as u64;
                if let Some(min) = self.min_length.filter(|min| chars < *min) {
                    causes.push(invalid(format!("should be at least {min} chars long")));
                }
                if let Some(p) = &self.pattern {
                    if !p.regex.is_match(s) {
                        causes.push(invalid(format!("should match '{}'", p.source)));
                    }
                }
                if let Some(max) = self.max_length.filter(|max| chars > *max) {
                    causes.push(StatusCause::too_long(
                        &path.render(),
                        &format!("may not be more than {max} bytes"),
                    ));
                }
            }
            Value::Array(items) => {
                if let Some(min) = self.min_items.filter(|min| (items.len() as u64) < *min) {
                    causes.push(invalid(format!("should have at least {min} items")));
                }
                if let Some(max) = self.max_items.filter(|max| items.len() as u64 > *max) {
                    causes.push(StatusCause::too_many(&path.render(), items.len(), max));
                }
            }
            Value::Object(map) => {
                if let Some(min) = self.min_properties.filter(|min| (map.len() as u64) < *min) {
                    causes.push(invalid(format!("should have at least {min} properties")));
                }
                if let Some(max) = self.max_properties.filter(|max| map.len() as u64 > *max) {
                    causes.push(StatusCause::too_many(&path.render(), map.len(), max));
                }
            }
            _ => {}
        }
    }

    /// `allOf`, `anyOf`, `oneOf` and `not`: each holds (or fails) as a whole.
    fn check_compositions(
        &self,
        c: &Compositions,
        v: &Value,
        path: &Path,
        causes: &mut Vec<StatusCause>,
    ) {
        let failures = |node: &Node| {
            let mut found = Vec::new();
            node.check(v, path, &mut found);
            found
        };
        let invalid = |detail: &str| {
            let at = path.render();
            StatusCause::invalid_value(&at, v, &format!("{} {detail}", display(&at)))
        };
        if let Some(all) = &c.all_of {
            let found: Vec<StatusCause> = all.iter().flat_map(failures).collect();
            if !found.is_empty() {
                causes.extend(found);
                causes.push(invalid("must validate all the schemas (allOf)"));
            }
        }
        if let Some(any) = &c.any_of {
            if !any.iter().any(|s| failures(s).is_empty()) {
                causes.push(invalid("in body must validate at least one schema (anyOf)"));
            }
        }
        if let Some(one) = &c.one_of {
            if one.iter().filter(|s| failures(s).is_empty()).count() != 1 {
                causes.push(invalid(
                    "in body must validate one and only one schema (oneOf)",
                ));
            }
        }
        if let Some(not) = &c.not {
            if failures(not).is_empty() {
                causes.push(invalid("in body must not validate the schema (not)"));
            }
        }
    }

    /// `set` lists hold distinct values and `map` lists distinct keys.
    fn check_list_uniqueness(&self, items: &[Value], path: &Path, causes: &mut Vec<StatusCause>) {
        match &self.list_type {
            Some(ListType::Set) => {
                for (i, v) in items.iter().enumerate() {
                    if items[..i].contains(v) {
                        causes.push(StatusCause::duplicate(
                            &Path::Index(path, i).render(),
                            &v.to_string(),
                        ));
                    }
                }
            }
            Some(ListType::Map(keys)) => {
                let key = |v: &'_ Value, k: &str| v.get(k).unwrap_or(&Value::Null).clone();
                let same = |a: &Value, b: &Value| {
                    keys.iter().all(|k| {
                        a.get(k.as_ref()).unwrap_or(&Value::Null)
                            == b.get(k.as_ref()).unwrap_or(&Value::Null)
                    })
                };
                for (i, v) in items.iter().enumerate() {
                    if items[..i].iter().any(|o| same(o, v)) {
                        let shown: Vec<String> = keys
                            .iter()
                            .map(|n| format!("{n:?}:{}", key(v, n)))
                            .collect();
                        causes.push(StatusCause::duplicate(
                            &Path::Index(path, i).render(),
                            &format!("map[string]interface {{}}{{{}}}", shown.join(", ")),
                        ));
                    }
                }
            }
            None => {}
        }
    }
}

/// The string formats kube-apiserver checks in custom objects; other formats (and the
/// numeric ones, whose type is checked) are documentation.
fn format_check(name: &str) -> Option<fn(&str) -> bool> {
    Some(match name {
        "date-time" => |s| chrono::DateTime::parse_from_rfc3339(s).is_ok(),
        "date" => |s| chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok(),
        "uuid" => |s| uuid::Uuid::parse_str(s).is_ok() && s.len() == 36,
        "ipv4" => |s| s.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => |s| s.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => |s| {
            s.split_once('/').is_some_and(|(ip, bits)| {
                let max = match ip.parse::<std::net::IpAddr>() {
                    Ok(std::net::IpAddr::V4(_)) => 32,
                    Ok(std::net::IpAddr::V6(_)) => 128,
                    Err(_) => return false,
                };
                bits.parse::<u8>().is_ok_and(|b| b <= max)
            })
        },
        "byte" => |s| {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.decode(s).is_ok()
        },
        "hostname" => |s| codegen::names::is_dns_subdomain(s),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::schema::prune;
    use serde_json::json;

    fn validate(obj: &Value, schema: &Value) -> Vec<StatusCause> {
        Validator::compile(schema).validate(obj)
    }

    /// Causes as `field: message`, sorted.
    fn causes(obj: Value, schema: Value) -> Vec<String> {
        let mut found: Vec<String> = validate(&obj, &schema)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        found.sort();
        found
    }

    #[test]
    fn bounds_are_checked_and_worded_as_upstream() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "minLength": 2, "maxLength": 4},
            "n": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 10, "multipleOf": 0.5},
            "tags": {"type": "array", "maxItems": 1, "minItems": 1, "items": {"type": "string"}},
            "labels": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}},
            "at": {"type": "string", "format": "date-time"}
        }});
        assert_eq!(
            causes(
                json!({"name": "toolong", "n": 0, "tags": ["a", "b"], "labels": {"a": "1", "b": "2"}, "at": "noon"}),
                schema.clone()
            ),
            [
                "at: Invalid value: \"noon\": at in body must be of type date-time: \"noon\"",
                "labels: Too many: 2: must have at most 1 items",
                "n: Invalid value: 0: n in body should be greater than 0",
                "name: Too long: may not be more than 4 bytes",
                "tags: Too many: 2: must have at most 1 items",
            ]
        );
        assert_eq!(
            causes(json!({"name": "a", "n": 10.25, "tags": []}), schema.clone()),
            [
                "n: Invalid value: 10.25: n in body should be a multiple of 0.5",
                "n: Invalid value: 10.25: n in body should be less than or equal to 10",
                "name: Invalid value: \"a\": name in body should be at least 2 chars long",
                "tags: Invalid value: \"array\": tags in body should have at least 1 items",
            ]
        );
        assert!(causes(
            json!({"name": "ab", "n": 9.5, "tags": ["x"], "at": "2026-12-02T01:00:00Z"}),
            schema
        )
        .is_empty());
    }

    #[test]
    fn compositions_hold_as_a_whole() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": "^[0-9]+$"}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
            "not": {"properties": {"a": {"enum": ["forbidden"]}}}}}});
        assert!(causes(json!({"spec": {"a": "x", "port": 80}}), schema.clone()).is_empty());
        assert_eq!(
            causes(json!({"spec": {"a": "x", "b": "y"}}), schema.clone()),
            ["spec: Invalid value: \"object\": spec in body must validate one and only one schema (oneOf)"]
        );
        assert_eq!(
            causes(json!({"spec": {"a": "forbidden", "port": "http"}}), schema),
            [
                "spec.port: Invalid value: \"http\": spec.port in body should match '^[0-9]+$'",
                "spec: Invalid value: \"object\": spec in body must not validate the schema (not)",
            ]
        );
    }

    #[test]
    fn embedded_resources_keep_their_object_fields_and_need_a_kind() {
        let schema = json!({"type": "object", "properties": {"template": {"type": "object", "x-kubernetes-embedded-resource": true,
            "properties": {"spec": {"type": "object"}}}}});
        let mut obj = json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}, "bogus": 1}});
        assert_eq!(prune(&mut obj, &schema), ["template.bogus"]);
        assert_eq!(obj["template"]["kind"], "Pod");
        assert!(causes(obj, schema.clone()).is_empty());
        assert_eq!(
            causes(json!({"template": {"spec": {}}}), schema),
            [
                "template.apiVersion: Required value: must not be empty",
                "template.kind: Required value: must not be empty"
            ]
        );
    }
}
