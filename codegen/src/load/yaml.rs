//! YAML definitions (`api-defs/**/*.yaml`), read with positions so every error points at
//! its line and column.

use marked_yaml::types::{MarkedMappingNode, MarkedScalarNode};
use marked_yaml::{LoaderOptions, Node};

use crate::diagnostics::{suggest, Code, Diagnostic, Diagnostics, Location};
use crate::model::{
    Conversion, CreateOnlySubresource, FieldDefault, FieldMapping, FieldPath, Origin,
    PartSubresource, PrinterColumn, ResourceDef, ScaleSubresource, Schema, Scope, Subresources,
};
use crate::names::infer_plural;
use crate::validate::KeyLocations;

const TOP_KEYS: &[&str] = &[
    "group",
    "version",
    "kind",
    "listKind",
    "plural",
    "singular",
    "scope",
    "shortNames",
    "categories",
    "schema",
    "subresources",
    "additionalPrinterColumns",
    "selectableFields",
    "builtin",
    "strategy",
    "createOnly",
    "openAPIPrefix",
    "verbs",
    "storage",
    "conversion",
];
const CONVERSION_KEYS: &[&str] = &[
    "renames", "moves", "defaults", "preserve", "hook", "storedAs",
];
const SCHEMA_KEYS: &[&str] = &[
    "type",
    "format",
    "description",
    "properties",
    "required",
    "items",
    "additionalProperties",
    "enum",
    "default",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "pattern",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "x-kubernetes-validations",
    "x-kubernetes-embedded-resource",
    "title",
    "example",
    "externalDocs",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-patch-strategy",
    "x-kubernetes-patch-merge-key",
    "x-protobuf-field",
    "x-protobuf-embedded",
    "x-protobuf-raw-json",
    "x-openapi-component",
];
const SUBRESOURCE_KEYS: &[&str] = &["status", "scale", "createOnly", "parts"];
const PART_SUBRESOURCE_KEYS: &[&str] = &["name", "strategy", "verbs"];
const CREATE_ONLY_SUBRESOURCE_KEYS: &[&str] = &[
    "name",
    "group",
    "version",
    "kind",
    "strategy",
    "openAPIPrefix",
    "schema",
];
const SCALE_KEYS: &[&str] = &[
    "specReplicasPath",
    "statusReplicasPath",
    "labelSelectorPath",
];
const COLUMN_KEYS: &[&str] = &[
    "name",
    "type",
    "format",
    "description",
    "priority",
    "jsonPath",
];

/// Loads one YAML definition file. Returns `None` (with diagnostics) when it is unusable.
pub fn load(file: &str, text: &str, diags: &mut Diagnostics) -> Option<ResourceDef> {
    load_located(file, text, diags, &mut KeyLocations::new())
}

/// [`load`], also recording where each top-level key's value is (for the validator).
pub fn load_located(
    file: &str,
    text: &str,
    diags: &mut Diagnostics,
    keys: &mut KeyLocations,
) -> Option<ResourceDef> {
    // Quoted scalars stay strings (`"True"` in an enum is not a boolean).
    let options = LoaderOptions::default()
        .error_on_duplicate_keys(true)
        .prevent_coercion(true);
    let root = match marked_yaml::parse_yaml_with_options(0, text, options) {
        Ok(n) => n,
        Err(e) => {
            diags.push(load_error(file, &e));
            return None;
        }
    };
    let cx = Cx { file };
    let map = root.as_mapping()?;
    let file_start = Location {
        file: file.to_string(),
        line: 1,
        column: 1,
    };
    cx.check_keys(map, TOP_KEYS, "a definition", diags);
    for (key, value) in map.iter() {
        keys.insert(
            (file.to_string(), key.as_str().to_string()),
            cx.loc(value.span()),
        );
    }

    let required_str = |key: &str, example: &str, diags: &mut Diagnostics| -> Option<String> {
        match map.get_node(key) {
            Some(n) => cx.string(n, key, diags),
            None => {
                diags.push(
                    Diagnostic::new(
                        Code::MissingKey,
                        file_start.clone(),
                        format!("missing `{key}`"),
                    )
                    .with_help(format!("add `{example}`")),
                );
                None
            }
        }
    };
    let group = required_str(
        "group",
        "group: example.dev   # \"\" for the core group",
        diags,
    );
    let version = required_str("version", "version: v1", diags);
    let kind = required_str("kind", "kind: Widget", diags);
    let optional_str = |key: &str, diags: &mut Diagnostics| {
        map.get_node(key).and_then(|n| cx.string(n, key, diags))
    };
    let plural = optional_str("plural", diags);
    let singular = optional_str("singular", diags);
    let list_kind = optional_str("listKind", diags);
    let strategy = optional_str("strategy", diags);
    let open_api_prefix = optional_str("openAPIPrefix", diags);
    let create_only = map
        .get_node("createOnly")
        .and_then(|n| cx.boolean(n, "createOnly", diags))
        .unwrap_or(false);
    let builtin = match map.get_node("builtin") {
        None => false,
        Some(n) => match n.as_scalar().and_then(|b| b.as_bool()) {
            Some(b) => b,
            None => {
                diags.push(
                    Diagnostic::new(
                        Code::WrongType,
                        cx.loc(n.span()),
                        "`builtin` must be true or false",
                    )
                    .with_help("write `builtin: true` for a Kubernetes built-in kind"),
                );
                false
            }
        },
    };
    let scope = match map.get_node("scope") {
        None => {
            diags.push(
                Diagnostic::new(Code::MissingKey, file_start.clone(), "missing `scope`")
                    .with_help("add `scope: Namespaced` or `scope: Cluster`"),
            );
            None
        }
        Some(n) => match cx.string(n, "scope", diags).as_deref() {
            Some("Namespaced") => Some(Scope::Namespaced),
            Some("Cluster") => Some(Scope::Cluster),
            Some(other) => {
                let mut d = Diagnostic::new(
                    Code::UnknownValue,
                    cx.loc(n.span()),
                    format!("unknown scope `{other}`"),
                );
                d = d.with_help(match suggest(other, &["Namespaced", "Cluster"]) {
                    Some(s) => format!("write `scope: {s}`"),
                    None => "write `scope: Namespaced` or `scope: Cluster`".into(),
                });
                diags.push(d);
                None
            }
            None => None,
        },
    };
    let short_names = map
        .get_node("shortNames")
        .map(|n| cx.string_list(n, "shortNames", diags))
        .unwrap_or_default();
    let categories = map
        .get_node("categories")
        .map(|n| cx.string_list(n, "categories", diags))
        .unwrap_or_default();
    let schema = match map.get_node("schema") {
        Some(n) => cx.schema(n, None, diags),
        None => {
            diags.push(
                Diagnostic::new(Code::MissingKey, file_start.clone(), "missing `schema`")
                    .with_help("add `schema:` with `type: object` and the kind's `properties` (apiVersion, kind and metadata are implied)"),
            );
            Schema::default()
        }
    };
    let subresources = map
        .get_node("subresources")
        .map(|n| cx.subresources(n, diags))
        .unwrap_or_default();
    let selectable_fields = map
        .get_node("selectableFields")
        .map(|n| cx.selectable_fields(n, diags))
        .unwrap_or_default();
    let verbs = map
        .get_node("verbs")
        .map(|n| cx.verbs(n, diags))
        .unwrap_or_default();
    let printer_columns = map
        .get_node("additionalPrinterColumns")
        .map(|n| cx.printer_columns(n, diags))
        .unwrap_or_default();
    let storage = map
        .get_node("storage")
        .and_then(|n| cx.boolean(n, "storage", diags))
        .unwrap_or(false);
    let conversion = map.get_node("conversion").map(|n| cx.conversion(n, diags));

    // Where the definition "is": its kind, else the top of the file.
    let location = map
        .get_node("kind")
        .map(|n| cx.loc(n.span()))
        .unwrap_or(file_start);
    let (Some(group), Some(version), Some(kind), Some(scope)) = (group, version, kind, scope)
    else {
        // Too broken to lower; still report every schema problem in this same run.
        crate::validate::validate_parts(
            &schema,
            &printer_columns,
            subresources.scale.as_ref(),
            &location,
            diags,
        );
        return None;
    };
    let plural = plural.unwrap_or_else(|| infer_plural(&kind));
    Some(ResourceDef {
        location,
        origin: Origin::Yaml,
        group,
        version,
        singular: singular.unwrap_or_else(|| kind.to_lowercase()),
        list_kind: list_kind.unwrap_or_else(|| format!("{kind}List")),
        kind,
        plural,
        scope,
        short_names,
        categories,
        schema,
        subresources,
        printer_columns,
        selectable_fields,
        builtin,
        strategy,
        create_only,
        open_api_prefix,
        verbs,
        storage,
        conversion,
    })
}

fn load_error(file: &str, e: &marked_yaml::LoadError) -> Diagnostic {
    use marked_yaml::LoadError::*;
    let (code, marker, msg, help) = match e {
        TopLevelMustBeMapping(m) => (
            Code::WrongType,
            Some(*m),
            "a definition file must be a YAML mapping".to_string(),
            Some("start with `group:`, `version:`, `kind:` ..."),
        ),
        MappingKeyMustBeScalar(m) => (
            Code::Syntax,
            Some(*m),
            "mapping keys must be plain strings".into(),
            None,
        ),
        UnexpectedAnchor(m) => (
            Code::Syntax,
            Some(*m),
            "YAML anchors are not supported in definitions".into(),
            Some("write the value out in full"),
        ),
        UnexpectedTag(m) => (
            Code::Syntax,
            Some(*m),
            "YAML tags are not supported in definitions".into(),
            Some("remove the `!tag`"),
        ),
        ScanError(m, s) => (
            Code::Syntax,
            Some(*m),
            format!("invalid YAML: {}", s.info()),
            None,
        ),
        DuplicateKey(inner) => (
            Code::Duplicate,
            inner.key.span().start().copied(),
            format!("duplicate key `{}`", inner.key.as_str()),
            Some("keep one of the two"),
        ),
        _ => (Code::Syntax, None, e.to_string(), None),
    };
    let location = Location {
        file: file.to_string(),
        line: marker.map(|m| m.line()).unwrap_or(1),
        column: marker.map(|m| m.column()).unwrap_or(1),
    };
    let d = Diagnostic::new(code, location, msg);
    match help {
        Some(h) => d.with_help(h),
        None => d,
    }
}

struct Cx<'a> {
    file: &'a str,
}

impl Cx<'_> {
    fn loc(&self, span: &marked_yaml::Span) -> Location {
        let (line, column) = span
            .start()
            .map(|m| (m.line(), m.column()))
            .unwrap_or((1, 1));
        Location {
            file: self.file.to_string(),
            line,
            column,
        }
    }

    fn check_keys(
        &self,
        map: &MarkedMappingNode,
        known: &[&str],
        what: &str,
        diags: &mut Diagnostics,
    ) {
        for key in map.keys() {
            if !known.contains(&key.as_str()) {
                let mut d = Diagnostic::new(
                    Code::UnknownKey,
                    self.loc(key.span()),
                    format!("unknown key `{}` in {what}", key.as_str()),
                );
                d = d.with_help(match suggest(key.as_str(), known) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!("expected one of: {}", known.join(", ")),
                });
                diags.push(d);
            }
        }
    }

    fn scalar<'n>(
        &self,
        node: &'n Node,
        key: &str,
        expected: &str,
        diags: &mut Diagnostics,
    ) -> Option<&'n MarkedScalarNode> {
        match node.as_scalar() {
            Some(s) => Some(s),
            None => {
                diags.push(Diagnostic::new(
                    Code::WrongType,
                    self.loc(node.span()),
                    format!("`{key}` must be {expected}"),
                ));
                None
            }
        }
    }

    fn string(&self, node: &Node, key: &str, diags: &mut Diagnostics) -> Option<String> {
        self.scalar(node, key, "a string", diags)
            .map(|s| s.as_str().to_string())
    }

    fn boolean(&self, node: &Node, key: &str, diags: &mut Diagnostics) -> Option<bool> {
        let s = self.scalar(node, key, "true or false", diags)?;
        let b = s.as_bool();
        if b.is_none() {
            diags.push(Diagnostic::new(
                Code::WrongType,
                self.loc(node.span()),
                format!("`{key}` must be true or false, not `{}`", s.as_str()),
            ));
        }
        b
    }

    fn number(
        &self,
        node: &Node,
        key: &str,
        diags: &mut Diagnostics,
    ) -> Option<serde_json::Number> {
        let s = self.scalar(node, key, "a number", diags)?;
        let n = s
            .as_i64()
            .map(serde_json::Number::from)
            .or_else(|| s.as_f64().and_then(serde_json::Number::from_f64));
        if n.is_none() {
            diags.push(Diagnostic::new(
                Code::WrongType,
                self.loc(node.span()),
                format!("`{key}` must be a number, not `{}`", s.as_str()),
            ));
        }
        n
    }

    /// A boolean keyword; absent or unreadable counts as false (the error is reported).
    fn flag(&self, node: &Node, key: &str, diags: &mut Diagnostics) -> bool {
        self.boolean(node, key, diags).unwrap_or(false)
    }

    /// A non-negative integer (a length or a count).
    fn count(&self, node: &Node, key: &str, diags: &mut Diagnostics) -> Option<u64> {
        let s = self.scalar(node, key, "a non-negative integer", diags)?;
        let n = s.as_u64();
        if n.is_none() {
            diags.push(Diagnostic::new(
                Code::WrongType,
                self.loc(node.span()),
                format!(
                    "`{key}` must be a non-negative integer, not `{}`",
                    s.as_str()
                ),
            ));
        }
        n
    }

    /// A list of schemas (`allOf`, `anyOf`, `oneOf`).
    fn schemas(&self, node: &Node, key: &str, diags: &mut Diagnostics) -> Vec<Schema> {
        let Some(seq) = node.as_sequence() else {
            diags.push(Diagnostic::new(
                Code::WrongType,
                self.loc(node.span()),
                format!("`{key}` must be a list of schemas"),
            ));
            return vec![];
        };
        seq.iter().map(|n| self.schema(n, None, diags)).collect()
    }

    fn string_list(&self, node: &Node, key: &str, diags: &mut Diagnostics) -> Vec<String> {
        let Some(seq) = node.as_sequence() else {
            diags.push(
                Diagnostic::new(
                    Code::WrongType,
                    self.loc(node.span()),
                    format!("`{key}` must be a list of strings"),
                )
                .with_help(format!("write `{key}: [a, b]`")),
            );
            return vec![];
        };
        seq.iter()
            .filter_map(|n| self.string(n, key, diags))
            .collect()
    }

    fn mapping<'n>(
        &self,
        node: &'n Node,
        what: &str,
        diags: &mut Diagnostics,
    ) -> Option<&'n MarkedMappingNode> {
        match node.as_mapping() {
            Some(m) => Some(m),
            None => {
                diags.push(Diagnostic::new(
                    Code::WrongType,
                    self.loc(node.span()),
                    format!("{what} must be a mapping"),
                ));
                None
            }
        }
    }

    fn schema(&self, node: &Node, key_loc: Option<Location>, diags: &mut Diagnostics) -> Schema {
        let mut s = Schema {
            location: Some(key_loc.unwrap_or_else(|| self.loc(node.span()))),
            ..Schema::default()
        };
        let Some(map) = self.mapping(node, "a schema", diags) else {
            return s;
        };
        self.check_keys(map, SCHEMA_KEYS, "a schema", diags);
        for (k, v) in map.iter() {
            match k.as_str() {
                "type" => s.type_ = self.string(v, "type", diags),
                "format" => s.format = self.string(v, "format", diags),
                "description" => s.description = self.string(v, "description", diags),
                "pattern" => s.pattern = self.string(v, "pattern", diags),
                "properties" => {
                    if let Some(props) = self.mapping(v, "`properties`", diags) {
                        s.properties = props
                            .iter()
                            .map(|(pk, pv)| {
                                (
                                    pk.as_str().to_string(),
                                    self.schema(pv, Some(self.loc(pk.span())), diags),
                                )
                            })
                            .collect();
                    }
                }
                "required" => s.required = self.string_list(v, "required", diags),
                "items" => s.items = Some(Box::new(self.schema(v, None, diags))),
                "additionalProperties" => {
                    s.additional_properties = match v.as_scalar() {
                        Some(b) if b.as_bool() == Some(true) => Some(Box::new(Schema {
                            location: Some(self.loc(v.span())),
                            preserve_unknown_fields: true,
                            ..Schema::default()
                        })),
                        Some(b) if b.as_bool() == Some(false) => None,
                        _ => Some(Box::new(self.schema(v, None, diags))),
                    }
                }
                "enum" => match v.as_sequence() {
                    Some(seq) => s.enum_values = seq.iter().map(to_json).collect(),
                    None => diags.push(Diagnostic::new(Code::WrongType,
                        self.loc(v.span()),
                        "`enum` must be a list of values",
                    )),
                },
                "default" => s.default = Some(to_json(v)),
                "minimum" => s.minimum = self.number(v, "minimum", diags),
                "maximum" => s.maximum = self.number(v, "maximum", diags),
                "exclusiveMinimum" => s.exclusive_minimum = self.flag(v, k.as_str(), diags),
                "exclusiveMaximum" => s.exclusive_maximum = self.flag(v, k.as_str(), diags),
                "multipleOf" => s.multiple_of = self.number(v, "multipleOf", diags),
                "minLength" => s.min_length = self.count(v, k.as_str(), diags),
                "maxLength" => s.max_length = self.count(v, k.as_str(), diags),
                "minItems" => s.min_items = self.count(v, k.as_str(), diags),
                "maxItems" => s.max_items = self.count(v, k.as_str(), diags),
                "uniqueItems" => s.unique_items = self.flag(v, k.as_str(), diags),
                "minProperties" => s.min_properties = self.count(v, k.as_str(), diags),
                "maxProperties" => s.max_properties = self.count(v, k.as_str(), diags),
                "allOf" => s.all_of = self.schemas(v, k.as_str(), diags),
                "anyOf" => s.any_of = self.schemas(v, k.as_str(), diags),
                "oneOf" => s.one_of = self.schemas(v, k.as_str(), diags),
                "not" => s.not = Some(Box::new(self.schema(v, None, diags))),
                "x-kubernetes-validations" => {
                    match serde_json::from_value(to_json(v)) {
                        Ok(rules) => s.validations = rules,
                        Err(e) => diags.push(
                            Diagnostic::new(Code::WrongType, self.loc(v.span()), format!("`x-kubernetes-validations`: {e}"))
                                .with_help("write a list of `- rule: <CEL expression>` entries, each with an optional `message`"),
                        ),
                    }
                }
                "x-kubernetes-embedded-resource" => {
                    s.embedded_resource = self.flag(v, k.as_str(), diags)
                }
                "title" => s.title = self.string(v, "title", diags),
                "example" => s.example = Some(to_json(v)),
                "externalDocs" => s.external_docs = Some(to_json(v)),
                "nullable" => s.nullable = self.flag(v, "nullable", diags),
                "x-kubernetes-preserve-unknown-fields" => {
                    s.preserve_unknown_fields = self.flag(v, k.as_str(), diags)
                }
                "x-kubernetes-int-or-string" => {
                    s.int_or_string = self.flag(v, k.as_str(), diags)
                }
                "x-kubernetes-list-type" => s.list_type = self.string(v, k.as_str(), diags),
                "x-kubernetes-list-map-keys" => {
                    s.list_map_keys = self.string_list(v, k.as_str(), diags)
                }
                "x-kubernetes-map-type" => s.map_type = self.string(v, k.as_str(), diags),
                "x-kubernetes-patch-strategy" => {
                    s.patch_strategy = self.string(v, k.as_str(), diags)
                }
                "x-kubernetes-patch-merge-key" => {
                    s.patch_merge_key = self.string(v, k.as_str(), diags)
                }
                "x-protobuf-field" => {
                    let n = self
                        .scalar(v, k.as_str(), "a positive integer", diags)
                        .and_then(|x| x.as_u32());
                    match n {
                        Some(n) if n > 0 => s.protobuf_field = Some(n),
                        _ => diags.push(
                            Diagnostic::new(Code::Protobuf, self.loc(v.span()), "`x-protobuf-field` must be a positive integer")
                                .with_help("use the field number from upstream's generated.proto, e.g. `x-protobuf-field: 2`"),
                        ),
                    }
                }
                "x-protobuf-embedded" => {
                    let Some(list) = v.as_sequence() else {
                        diags.push(Diagnostic::new(Code::Protobuf,
                            self.loc(v.span()),
                            "`x-protobuf-embedded` must be a list of field numbers",
                        ));
                        continue;
                    };
                    s.protobuf_embedded = list
                        .iter()
                        .filter_map(|n| {
                            let x = self.scalar(n, k.as_str(), "a field number", diags)?;
                            let num = x.as_u32().filter(|&n| n > 0);
                            if num.is_none() {
                                diags.push(Diagnostic::new(Code::Protobuf,
                                    self.loc(n.span()),
                                    "`x-protobuf-embedded` lists positive field numbers",
                                ));
                            }
                            num
                        })
                        .collect();
                }
                "x-protobuf-raw-json" => s.protobuf_raw_json = self.flag(v, k.as_str(), diags),
                "x-openapi-component" => s.component = self.string(v, k.as_str(), diags),
                _ => {} // reported by check_keys
            }
        }
        s
    }

    /// `verbs:`, each one of [`crate::endpoints::Verb::ALL`], none twice.
    fn verbs(&self, node: &Node, diags: &mut Diagnostics) -> Vec<String> {
        let list = self.string_list(node, "verbs", diags);
        let names = crate::endpoints::Verb::ALL.map(crate::endpoints::Verb::as_str);
        let mut out: Vec<String> = Vec::new();
        let listed = list.len();
        for v in list {
            if !names.contains(&v.as_str()) {
                let help = match suggest(&v, &names) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!("one of {}", names.join(", ")),
                };
                diags.push(
                    Diagnostic::new(
                        Code::UnknownValue,
                        self.loc(node.span()),
                        format!("unknown verb `{v}`"),
                    )
                    .with_help(help),
                );
            } else if out.contains(&v) {
                diags.push(Diagnostic::new(
                    Code::Duplicate,
                    self.loc(node.span()),
                    format!("verb `{v}` is listed twice"),
                ));
            } else {
                out.push(v);
            }
        }
        if listed == 0 {
            diags.push(
                Diagnostic::new(
                    Code::WrongType,
                    self.loc(node.span()),
                    "`verbs` lists no verb",
                )
                .with_help("leave `verbs` out to serve every verb"),
            );
        }
        out.sort();
        out
    }

    fn subresources(&self, node: &Node, diags: &mut Diagnostics) -> Subresources {
        let mut out = Subresources::default();
        let Some(map) = self.mapping(node, "`subresources`", diags) else {
            return out;
        };
        self.check_keys(map, SUBRESOURCE_KEYS, "`subresources`", diags);
        out.status = map.get_node("status").is_some();
        if let Some(list) = map.get_node("createOnly") {
            out.create_only = self.create_only_subresources(list, diags);
        }
        if let Some(list) = map.get_node("parts") {
            out.parts = self.part_subresources(list, diags);
        }
        if let Some(scale) = map.get_node("scale") {
            let Some(sm) = self.mapping(scale, "`subresources.scale`", diags) else {
                return out;
            };
            self.check_keys(sm, SCALE_KEYS, "`subresources.scale`", diags);
            let get = |k: &str, diags: &mut Diagnostics| {
                sm.get_node(k).and_then(|n| self.string(n, k, diags))
            };
            let spec = get("specReplicasPath", diags);
            let status = get("statusReplicasPath", diags);
            let selector = get("labelSelectorPath", diags);
            match (spec, status) {
                (Some(spec), Some(status)) => {
                    out.scale = Some(ScaleSubresource {
                        spec_replicas_path: spec,
                        status_replicas_path: status,
                        label_selector_path: selector,
                    })
                }
                _ => diags.push(
                    Diagnostic::new(Code::MissingKey, self.loc(scale.span()), "`scale` needs `specReplicasPath` and `statusReplicasPath`")
                        .with_help("add `specReplicasPath: .spec.replicas` and `statusReplicasPath: .status.replicas`"),
                ),
            }
        }
        out
    }

    fn create_only_subresources(
        &self,
        node: &Node,
        diags: &mut Diagnostics,
    ) -> Vec<CreateOnlySubresource> {
        let Some(seq) = node.as_sequence() else {
            diags.push(
                Diagnostic::new(Code::WrongType, self.loc(node.span()), "`subresources.createOnly` must be a list")
                    .with_help("e.g. `createOnly: [{name: token, group: authentication.k8s.io, version: v1, kind: TokenRequest, strategy: TokenRequest, schema: {type: object}}]`"),
            );
            return vec![];
        };
        let mut out = Vec::new();
        for item in seq.iter() {
            let Some(m) = self.mapping(item, "a create-only subresource", diags) else {
                continue;
            };
            self.check_keys(
                m,
                CREATE_ONLY_SUBRESOURCE_KEYS,
                "a create-only subresource",
                diags,
            );
            let get = |k: &str, diags: &mut Diagnostics| {
                m.get_node(k).and_then(|n| self.string(n, k, diags))
            };
            let name = get("name", diags);
            let group = get("group", diags);
            let version = get("version", diags);
            let kind = get("kind", diags);
            let strategy = get("strategy", diags);
            let open_api_prefix = get("openAPIPrefix", diags);
            let schema = m.get_node("schema").map(|n| self.schema(n, None, diags));
            match (name, group, version, kind, strategy, schema) {
                (Some(name), Some(group), Some(version), Some(kind), Some(strategy), Some(schema)) => {
                    out.push(CreateOnlySubresource {
                        name,
                        group,
                        version,
                        kind,
                        strategy,
                        open_api_prefix,
                        schema,
                    })
                }
                _ => diags.push(
                    Diagnostic::new(Code::CreateOnly,
                        self.loc(item.span()),
                        "a create-only subresource needs `name`, `group`, `version`, `kind`, `strategy` and `schema`",
                    )
                    .with_help("`group: \"\"` for the core group; `strategy` names the server hook that answers"),
                ),
            }
        }
        out
    }

    fn part_subresources(&self, node: &Node, diags: &mut Diagnostics) -> Vec<PartSubresource> {
        let Some(seq) = node.as_sequence() else {
            diags.push(
                Diagnostic::new(Code::WrongType, self.loc(node.span()), "`subresources.parts` must be a list")
                    .with_help("e.g. `parts: [{name: finalize, strategy: NamespaceFinalize, verbs: [update]}]`"),
            );
            return vec![];
        };
        let mut out = Vec::new();
        for item in seq.iter() {
            let Some(m) = self.mapping(item, "a part subresource", diags) else {
                continue;
            };
            self.check_keys(m, PART_SUBRESOURCE_KEYS, "a part subresource", diags);
            let name = m
                .get_node("name")
                .and_then(|n| self.string(n, "name", diags));
            let strategy = m
                .get_node("strategy")
                .and_then(|n| self.string(n, "strategy", diags));
            let verbs = m
                .get_node("verbs")
                .map(|n| self.string_list(n, "verbs", diags))
                .unwrap_or_default();
            match (name, strategy) {
                (Some(name), Some(strategy)) => out.push(PartSubresource {
                    name,
                    strategy,
                    verbs,
                }),
                _ => diags.push(
                    Diagnostic::new(
                        Code::MissingKey,
                        self.loc(item.span()),
                        "a part subresource needs `name` and `strategy`",
                    )
                    .with_help("e.g. `{name: ephemeralcontainers, strategy: EphemeralContainers}`"),
                ),
            }
        }
        out
    }

    /// `conversion:`: `renames` and `moves` (`{.from: .to}`), `defaults` (`{.path:
    /// value}`), `preserve` (`[.path]`), `hook` and `storedAs` (an `apiVersion`).
    fn conversion(&self, node: &Node, diags: &mut Diagnostics) -> Conversion {
        let mut out = Conversion::default();
        let Some(map) = self.mapping(node, "`conversion`", diags) else {
            return out;
        };
        self.check_keys(map, CONVERSION_KEYS, "`conversion`", diags);
        let pairs = |key: &str, diags: &mut Diagnostics| -> Vec<(String, &Node, Location)> {
            let Some(n) = map.get_node(key) else {
                return vec![];
            };
            let Some(m) = self.mapping(n, &format!("`conversion.{key}`"), diags) else {
                return vec![];
            };
            m.iter()
                .map(|(k, v)| (k.as_str().to_string(), v, self.loc(k.span())))
                .collect()
        };
        for key in ["renames", "moves"] {
            let mut list = Vec::new();
            for (from, to, location) in pairs(key, diags) {
                if let Some(to) = self.string(to, key, diags) {
                    list.push(FieldMapping {
                        from,
                        to,
                        location: Some(location),
                    });
                }
            }
            match key {
                "renames" => out.renames = list,
                _ => out.moves = list,
            }
        }
        out.defaults = pairs("defaults", diags)
            .into_iter()
            .map(|(path, value, location)| FieldDefault {
                path,
                value: to_json(value),
                location: Some(location),
            })
            .collect();
        if let Some(n) = map.get_node("preserve") {
            match n.as_sequence() {
                Some(seq) => {
                    for item in seq.iter() {
                        if let Some(path) = self.string(item, "preserve", diags) {
                            out.preserve.push(FieldPath {
                                path,
                                location: Some(self.loc(item.span())),
                            });
                        }
                    }
                }
                None => diags.push(
                    Diagnostic::new(
                        Code::WrongType,
                        self.loc(n.span()),
                        "`conversion.preserve` must be a list of paths",
                    )
                    .with_help("e.g. `preserve: [.spec.mode]`"),
                ),
            }
        }
        if let Some(n) = map.get_node("hook") {
            out.hook = self.string(n, "hook", diags);
            out.hook_location = Some(self.loc(n.span()));
        }
        if let Some(n) = map.get_node("storedAs") {
            out.stored_as = self.string(n, "storedAs", diags);
        }
        out
    }

    fn selectable_fields(&self, node: &Node, diags: &mut Diagnostics) -> Vec<String> {
        let Some(seq) = node.as_sequence() else {
            diags.push(
                Diagnostic::new(
                    Code::WrongType,
                    self.loc(node.span()),
                    "`selectableFields` must be a list",
                )
                .with_help("e.g. `selectableFields: [{jsonPath: .spec.color}]`"),
            );
            return vec![];
        };
        let mut out = Vec::new();
        for item in seq.iter() {
            let Some(m) = self.mapping(item, "a selectable field", diags) else {
                continue;
            };
            self.check_keys(m, &["jsonPath"], "a selectable field", diags);
            match m
                .get_node("jsonPath")
                .and_then(|n| self.string(n, "jsonPath", diags))
            {
                Some(p) => out.push(p),
                None => diags.push(
                    Diagnostic::new(
                        Code::MissingKey,
                        self.loc(item.span()),
                        "a selectable field needs `jsonPath`",
                    )
                    .with_help("e.g. `- jsonPath: .spec.color`"),
                ),
            }
        }
        out
    }

    fn printer_columns(&self, node: &Node, diags: &mut Diagnostics) -> Vec<PrinterColumn> {
        let Some(seq) = node.as_sequence() else {
            diags.push(Diagnostic::new(
                Code::WrongType,
                self.loc(node.span()),
                "`additionalPrinterColumns` must be a list",
            ));
            return vec![];
        };
        let mut out = Vec::new();
        for item in seq.iter() {
            let Some(m) = self.mapping(item, "a printer column", diags) else {
                continue;
            };
            self.check_keys(m, COLUMN_KEYS, "a printer column", diags);
            let get = |k: &str, diags: &mut Diagnostics| {
                m.get_node(k).and_then(|n| self.string(n, k, diags))
            };
            let name = get("name", diags);
            let type_ = get("type", diags);
            let json_path = get("jsonPath", diags);
            let priority = m
                .get_node("priority")
                .and_then(|n| self.number(n, "priority", diags))
                .and_then(|n| n.as_i64())
                .unwrap_or(0) as i32;
            match (name, type_, json_path) {
                (Some(name), Some(type_), Some(json_path)) => out.push(PrinterColumn {
                    name,
                    type_,
                    format: get("format", diags),
                    description: get("description", diags),
                    priority,
                    json_path,
                }),
                _ => diags.push(
                    Diagnostic::new(
                        Code::MissingKey,
                        self.loc(item.span()),
                        "a printer column needs `name`, `type` and `jsonPath`",
                    )
                    .with_help("e.g. `- {name: Size, type: integer, jsonPath: .spec.size}`"),
                ),
            }
        }
        out
    }
}

/// A YAML value as JSON: plain scalars coerce (null, booleans, numbers), quoted stay strings.
pub(crate) fn to_json(node: &Node) -> serde_json::Value {
    use serde_json::Value;
    match node {
        Node::Scalar(s) => {
            if s.may_coerce() {
                match s.as_str() {
                    "null" | "~" => return Value::Null,
                    _ => {}
                }
                if let Some(b) = s.as_bool() {
                    return Value::Bool(b);
                }
                if let Some(i) = s.as_i64() {
                    return Value::from(i);
                }
                if let Some(f) = s.as_f64().and_then(serde_json::Number::from_f64) {
                    return Value::Number(f);
                }
            }
            Value::String(s.as_str().to_string())
        }
        Node::Sequence(seq) => Value::Array(seq.iter().map(to_json).collect()),
        Node::Mapping(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.as_str().to_string(), to_json(v)))
                .collect(),
        ),
    }
}
