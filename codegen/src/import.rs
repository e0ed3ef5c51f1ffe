//! `codegen import-openapi <upstream-dir>`: definitions of upstream's built-in kinds,
//! written in our YAML form from kube-apiserver's OpenAPI v3 documents (structure) and
//! `generated.proto` files (protobuf field numbers).
//!
//! Which kinds are imported, and what OpenAPI does not say (short names, categories, our
//! hook names, our own one-line description, printer columns), comes from the selection
//! file (`api-defs/upstream.yaml`). Upstream's descriptions are never copied.
//!
//! No I/O here: the caller hands in the selection text and a reader of files under the
//! upstream directory (paths such as `openapi/v3/api__v1_openapi.json`). Output is
//! deterministic: properties in upstream's order, keys in a fixed order.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use marked_yaml::{LoaderOptions, Node};
use serde_json::{Map, Value};

use crate::diagnostics::{Code, Diagnostic, Diagnostics, Location};
use crate::emit::GeneratedFile;
use crate::model::{Schema, CREATE_HOOKS, PART_HOOKS, STRATEGIES};
use crate::names::infer_plural;

/// The first line of every imported definition; the import test finds committed imports by it.
pub const HEADER: &str = "# Imported by `cargo run -p codegen -- import-openapi`";

/// The selection file's name, directly under `api-defs/` (not a definition: codegen
/// skips it).
pub const SELECTION_FILE: &str = "upstream.yaml";

/// Reads a file under the upstream directory (a path relative to it).
pub type Reader<'a> = &'a dyn Fn(&str) -> Result<String, String>;

const SELECTION_KEYS: &[&str] = &["source", "groupDirs", "kinds"];
const KIND_KEYS: &[&str] = &[
    "group",
    "version",
    "kind",
    "description",
    "shortNames",
    "categories",
    "strategy",
    "subresources",
    "additionalPrinterColumns",
    "selectableFields",
    "protobuf",
    "omitSubresources",
    "storage",
    "conversion",
    "requiredOnCreate",
];

/// Keys of upstream schemas that are documentation or that our model has no use for.
const DROPPED_KEYS: &[&str] = &[
    "description",
    "x-kubernetes-group-version-kind",
    "x-kubernetes-unions",
    "example",
    "externalDocs",
    "title",
];

/// Keys copied as they are (after `$ref`s are resolved).
const COPIED_KEYS: &[&str] = &[
    "type",
    "format",
    "enum",
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
    "minProperties",
    "maxProperties",
    "nullable",
    "required",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-patch-strategy",
    "x-kubernetes-patch-merge-key",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-validations",
];

/// Every definition the selection names, or every problem found (all at once).
pub fn import(
    selection_file: &str,
    selection: &str,
    upstream_label: &str,
    read: Reader<'_>,
) -> Result<Vec<GeneratedFile>, Diagnostics> {
    let mut diags = Diagnostics::default();
    let mut cx = Importer {
        label: upstream_label.trim_end_matches('/').to_string(),
        read,
        docs: HashMap::new(),
        protos: HashMap::new(),
        numbered: true,
    };
    let Some(sel) = parse_selection(selection_file, selection, &mut diags) else {
        return Err(diags.sorted());
    };
    let mut out = Vec::new();
    for entry in &sel.kinds {
        match cx.kind(&sel, entry) {
            Ok(file) => out.push(file),
            Err(d) => diags.push(d),
        }
    }
    if diags.is_empty() {
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    } else {
        Err(diags.sorted())
    }
}

// ---------------------------------------------------------------------------------------
// The selection file.

struct Selection {
    file: String,
    source: String,
    group_dirs: BTreeMap<String, String>,
    kinds: Vec<Entry>,
}

/// One `kinds:` entry.
struct Entry {
    at: Location,
    group: String,
    version: String,
    kind: String,
    description: String,
    short_names: Vec<String>,
    categories: Vec<String>,
    strategy: Option<String>,
    /// Subresource name → its hook (create-only ones) or its settings (`scale`).
    subresources: Map<String, Value>,
    printer_columns: Option<Value>,
    selectable_fields: Vec<String>,
    /// Upstream subresources this server does not serve (those that reach a kubelet or
    /// a node: `exec`, `log`, `proxy`, ...): left out of the definition.
    omit_subresources: Vec<String>,
    /// `storage: true`: the storage version of a kind imported in several versions.
    storage: bool,
    /// The `conversion:` rules of a version that is not the storage version, as written.
    conversion: Option<Value>,
    /// Top-level fields upstream's OpenAPI says are required but its validation
    /// requires of new objects only (the kind's strategy checks them at creation):
    /// left out of the schema's `required`, so an update of an object written
    /// without them (through another group) is not refused.
    required_on_create: Vec<String>,
    /// `protobuf: false`: import without field numbers (JSON and YAML only), for kinds
    /// whose messages embed another message, which the protobuf codec cannot map yet.
    protobuf: bool,
}

fn loc(file: &str, node: &Node) -> Location {
    let (line, column) = node
        .span()
        .start()
        .map(|m| (m.line(), m.column()))
        .unwrap_or((1, 1));
    Location {
        file: file.to_string(),
        line,
        column,
    }
}

fn check_keys(
    file: &str,
    map: &marked_yaml::types::MarkedMappingNode,
    known: &[&str],
    what: &str,
    diags: &mut Diagnostics,
) {
    for key in map.keys() {
        if !known.contains(&key.as_str()) {
            let (line, column) = key
                .span()
                .start()
                .map(|m| (m.line(), m.column()))
                .unwrap_or((1, 1));
            let at = Location {
                file: file.to_string(),
                line,
                column,
            };
            let help = match crate::diagnostics::suggest(key.as_str(), known) {
                Some(s) => format!("did you mean `{s}`?"),
                None => format!("expected one of: {}", known.join(", ")),
            };
            diags.push(
                Diagnostic::new(
                    Code::UnknownKey,
                    at,
                    format!("unknown key `{}` in {what}", key.as_str()),
                )
                .with_help(help),
            );
        }
    }
}

fn parse_selection(file: &str, text: &str, diags: &mut Diagnostics) -> Option<Selection> {
    let options = LoaderOptions::default()
        .error_on_duplicate_keys(true)
        .prevent_coercion(true);
    let root = match marked_yaml::parse_yaml_with_options(0, text, options) {
        Ok(n) => n,
        Err(e) => {
            let at = Location {
                file: file.to_string(),
                line: 1,
                column: 1,
            };
            diags.push(Diagnostic::new(
                Code::Syntax,
                at,
                format!("invalid YAML: {e}"),
            ));
            return None;
        }
    };
    let top = loc(file, &root);
    let Some(map) = root.as_mapping() else {
        diags.push(Diagnostic::new(
            Code::WrongType,
            top,
            "the selection must be a mapping",
        ));
        return None;
    };
    check_keys(file, map, SELECTION_KEYS, "the selection", diags);
    let string = |n: &Node, what: &str, diags: &mut Diagnostics| match n.as_scalar() {
        Some(s) => Some(s.as_str().to_string()),
        None => {
            diags.push(Diagnostic::new(
                Code::WrongType,
                loc(file, n),
                format!("`{what}` must be a string"),
            ));
            None
        }
    };
    let strings = |n: &Node, what: &str, diags: &mut Diagnostics| -> Vec<String> {
        match n.as_sequence() {
            Some(seq) => seq.iter().filter_map(|i| string(i, what, diags)).collect(),
            None => {
                diags.push(Diagnostic::new(
                    Code::WrongType,
                    loc(file, n),
                    format!("`{what}` must be a list of strings"),
                ));
                vec![]
            }
        }
    };
    let source = map
        .get_node("source")
        .and_then(|n| string(n, "source", diags))
        .unwrap_or_default();
    let mut group_dirs = BTreeMap::new();
    match map.get_node("groupDirs").map(|n| (n, n.as_mapping())) {
        Some((_, Some(m))) => {
            for (k, v) in m.iter() {
                if let Some(dir) = string(v, "groupDirs", diags) {
                    group_dirs.insert(k.as_str().to_string(), dir);
                }
            }
        }
        Some((n, None)) => diags.push(Diagnostic::new(
            Code::WrongType,
            loc(file, n),
            "`groupDirs` must map each group to its directory under api-defs/",
        )),
        None => diags.push(
            Diagnostic::new(Code::MissingKey, top.clone(), "missing `groupDirs`")
                .with_help("e.g. `groupDirs: {\"\": core, rbac.authorization.k8s.io: rbac}`"),
        ),
    }
    let mut kinds = Vec::new();
    let Some(list) = map.get_node("kinds").and_then(Node::as_sequence) else {
        diags.push(
            Diagnostic::new(Code::MissingKey, top, "missing `kinds`, the list of kinds to import")
                .with_help("e.g. `kinds: [{group: rbac.authorization.k8s.io, version: v1, kind: Role, description: ...}]`"),
        );
        return None;
    };
    for item in list.iter() {
        let at = loc(file, item);
        let Some(m) = item.as_mapping() else {
            diags.push(Diagnostic::new(
                Code::WrongType,
                at,
                "a kind entry must be a mapping",
            ));
            continue;
        };
        check_keys(file, m, KIND_KEYS, "a kind entry", diags);
        let get =
            |k: &str, diags: &mut Diagnostics| m.get_node(k).and_then(|n| string(n, k, diags));
        let (Some(group), Some(version), Some(kind)) = (
            get("group", diags),
            get("version", diags),
            get("kind", diags),
        ) else {
            diags.push(
                Diagnostic::new(
                    Code::MissingKey,
                    at,
                    "a kind entry needs `group`, `version` and `kind`",
                )
                .with_help("`group: \"\"` for the core group"),
            );
            continue;
        };
        let Some(description) = get("description", diags) else {
            diags.push(
                Diagnostic::new(Code::MissingKey, at, format!("`{kind}` needs `description`, one line in our own words"))
                    .with_help("upstream's descriptions are not imported; write what `kubectl explain` should say"),
            );
            continue;
        };
        let list_of = |k: &str, diags: &mut Diagnostics| {
            m.get_node(k)
                .map(|n| strings(n, k, diags))
                .unwrap_or_default()
        };
        let subresources = match m.get_node("subresources") {
            None => Map::new(),
            Some(n) => match crate::load::yaml::to_json(n) {
                Value::Object(o) => o,
                _ => {
                    diags.push(Diagnostic::new(
                        Code::WrongType,
                        loc(file, n),
                        "`subresources` must map each upstream subresource to its hook or settings",
                    ));
                    Map::new()
                }
            },
        };
        kinds.push(Entry {
            at,
            group,
            version,
            kind,
            description,
            short_names: list_of("shortNames", diags),
            categories: list_of("categories", diags),
            strategy: get("strategy", diags),
            subresources,
            printer_columns: m
                .get_node("additionalPrinterColumns")
                .map(crate::load::yaml::to_json),
            selectable_fields: list_of("selectableFields", diags),
            omit_subresources: list_of("omitSubresources", diags),
            storage: m
                .get_node("storage")
                .and_then(|n| n.as_scalar())
                .is_some_and(|s| s.as_str() == "true"),
            conversion: m.get_node("conversion").map(crate::load::yaml::to_json),
            required_on_create: list_of("requiredOnCreate", diags),
            protobuf: match m
                .get_node("protobuf")
                .map(|n| (n, n.as_scalar().map(|s| s.as_str())))
            {
                None | Some((_, Some("true"))) => true,
                Some((_, Some("false"))) => false,
                Some((n, _)) => {
                    diags.push(Diagnostic::new(
                        Code::WrongType,
                        loc(file, n),
                        "`protobuf` must be true or false",
                    ));
                    true
                }
            },
        });
    }
    Some(Selection {
        file: file.to_string(),
        source,
        group_dirs,
        kinds,
    })
}

// ---------------------------------------------------------------------------------------
// Upstream's files.

/// One OpenAPI v3 document: its text (for positions) and parsed form.
struct Doc {
    file: String,
    text: String,
    json: Value,
}

impl Doc {
    fn schemas(&self) -> Option<&Map<String, Value>> {
        self.json["components"]["schemas"].as_object()
    }

    /// Where the component `name` starts, for diagnostics.
    fn locate(&self, name: &str) -> Location {
        let needle = format!("\"{name}\": {{");
        let (line, column) = match self.text.find(&needle) {
            Some(offset) => {
                let before = &self.text[..offset];
                let line = before.matches('\n').count() + 1;
                let column = offset - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                (line, column)
            }
            None => (1, 1),
        };
        Location {
            file: self.file.clone(),
            line,
            column,
        }
    }
}

/// One field of a protobuf message.
#[derive(Clone, Debug, PartialEq)]
struct ProtoField {
    num: u32,
    /// The field's type as written (`string`, `VolumeSource`,
    /// `k8s.io.apimachinery.pkg.apis.meta.v1.Time`, `map<string, string>`).
    type_: String,
}

/// One protobuf message: its package and its fields by name.
#[derive(Clone, Debug, Default)]
struct Message {
    package: String,
    fields: BTreeMap<String, ProtoField>,
}

impl Message {
    /// The number of the field carrying the JSON property `prop`: go-to-protobuf names
    /// fields after the Go field (`UID` → `uID`), JSON after its tag (`uid`), so the
    /// exact name, else the one field matching in any case.
    fn number_of(&self, prop: &str) -> Option<u32> {
        if let Some(f) = self.fields.get(prop) {
            return Some(f.num);
        }
        let mut same = self
            .fields
            .iter()
            .filter(|(f, _)| f.eq_ignore_ascii_case(prop));
        match (same.next(), same.next()) {
            (Some((_, f)), None) => Some(f.num),
            _ => None,
        }
    }

    /// The Go-embedded messages among the fields: those of a message type that carry no
    /// JSON property of the object (`json`), whose fields Go's JSON flattens into it
    /// (`optional VolumeSource volumeSource = 2`, `optional ProbeHandler handler = 1`).
    /// Each as (number, package, message name).
    fn embedded(&self, json: &[String]) -> Vec<(u32, String, String)> {
        const SCALARS: &[&str] = &[
            "string", "bytes", "bool", "int32", "int64", "uint32", "uint64", "sint32", "sint64",
            "fixed32", "fixed64", "sfixed32", "sfixed64", "double", "float",
        ];
        self.fields
            .iter()
            .filter(|(name, f)| {
                !SCALARS.contains(&f.type_.as_str())
                    && !f.type_.starts_with("map<")
                    && !json.iter().any(|j| j.eq_ignore_ascii_case(name))
            })
            .map(|(_, f)| {
                let (package, message) = match f.type_.rsplit_once('.') {
                    Some((p, m)) => (p.trim_start_matches('.').to_string(), m.to_string()),
                    None => (self.package.clone(), f.type_.clone()),
                };
                (f.num, package, message)
            })
            .collect()
    }
}

struct Importer<'a> {
    label: String,
    read: Reader<'a>,
    docs: HashMap<String, Doc>,
    /// Proto package (`k8s.io.api.rbac.v1`) → its messages.
    protos: HashMap<String, Result<HashMap<String, Message>, Diagnostic>>,
    /// Whether the kind being imported gets protobuf field numbers.
    numbered: bool,
}

fn top_location(file: &str) -> Location {
    Location {
        file: file.to_string(),
        line: 1,
        column: 1,
    }
}

/// `generated.proto` messages and their numbered fields (go-to-protobuf's output:
/// top-level messages, one field per line).
fn parse_proto(file: &str, text: &str) -> Result<HashMap<String, Message>, Diagnostic> {
    let field = regex::Regex::new(
        r"^\s*(?:optional|repeated)?\s*(map<[^>]+>|[.\w]+)\s+(\w+)\s*=\s*(\d+)\s*(?:\[[^\]]*\])?\s*;",
    )
    .map_err(|e| Diagnostic::new(Code::Upstream, top_location(file), e.to_string()))?;
    let mut messages = HashMap::new();
    let mut current: Option<(String, Message)> = None;
    let mut package = String::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split("//").next().unwrap_or_default().trim();
        let at = || Location {
            file: file.to_string(),
            line: i + 1,
            column: 1,
        };
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("package ") {
            package = rest.trim_end_matches(';').trim().to_string();
        } else if let Some(rest) = line.strip_prefix("message ") {
            if current.is_some() {
                return Err(Diagnostic::new(
                    Code::Upstream,
                    at(),
                    "nested messages are not supported",
                ));
            }
            let name = rest.trim_end_matches('{').trim().to_string();
            let message = Message {
                package: package.clone(),
                fields: BTreeMap::new(),
            };
            current = Some((name, message));
        } else if line == "}" {
            if let Some((name, fields)) = current.take() {
                messages.insert(name, fields);
            }
        } else if let Some((_, message)) = current.as_mut() {
            if line.starts_with("option ") || line.starts_with("reserved ") {
                continue;
            }
            let Some(c) = field.captures(line) else {
                return Err(Diagnostic::new(
                    Code::Upstream,
                    at(),
                    format!("cannot read this field: `{line}`"),
                ));
            };
            let num = c[3]
                .parse()
                .map_err(|_| Diagnostic::new(Code::Upstream, at(), "field number out of range"))?;
            let type_ = c[1].to_string();
            message
                .fields
                .insert(c[2].to_string(), ProtoField { num, type_ });
        }
    }
    if current.is_some() {
        return Err(Diagnostic::new(
            Code::Upstream,
            top_location(file),
            "a message is not closed",
        ));
    }
    Ok(messages)
}

/// The OpenAPI v3 document of a group-version, as kube-apiserver names its files.
fn doc_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("openapi/v3/api__{version}_openapi.json")
    } else {
        format!("openapi/v3/apis__{group}__{version}_openapi.json")
    }
}

/// `io.k8s.api.rbac.v1.PolicyRule` → (`k8s.io.api.rbac.v1`, `PolicyRule`).
fn proto_name(component: &str) -> Option<(String, String)> {
    let rest = component.strip_prefix("io.k8s.")?;
    let (package, message) = rest.rsplit_once('.')?;
    Some((
        format!("k8s.io.{}", package.replace('-', "_")),
        message.to_string(),
    ))
}

/// What a component schema is.
enum Component {
    /// An object: a protobuf message of its own.
    Object,
    /// A value with a scalar form (Time, IntOrString, Quantity, ...): its schema as ours.
    Scalar(Map<String, Value>),
}

impl Importer<'_> {
    fn doc(&mut self, path: &str) -> Result<&Doc, Diagnostic> {
        if !self.docs.contains_key(path) {
            let file = format!("{}/{path}", self.label);
            let text = (self.read)(path).map_err(|e| {
                Diagnostic::new(
                    Code::Upstream,
                    top_location(&file),
                    format!("cannot read: {e}"),
                )
                .with_help("pass the directory that holds upstream's openapi/ and proto/")
            })?;
            let json: Value = serde_json::from_str(&text).map_err(|e| {
                let at = Location {
                    file: file.clone(),
                    line: e.line(),
                    column: e.column(),
                };
                Diagnostic::new(Code::Syntax, at, format!("invalid JSON: {e}"))
            })?;
            self.docs.insert(path.to_string(), Doc { file, text, json });
        }
        Ok(&self.docs[path])
    }

    fn message(&mut self, component: &str, at: &Location) -> Result<Message, Diagnostic> {
        let Some((package, name)) = proto_name(component) else {
            return Err(Diagnostic::new(
                Code::Upstream,
                at.clone(),
                format!("`{component}` has no protobuf package (not an io.k8s name)"),
            ));
        };
        self.message_in(&package, &name, at)
    }

    /// The message `name` of the proto package `package` (`k8s.io.api.core.v1`).
    fn message_in(
        &mut self,
        package: &str,
        name: &str,
        at: &Location,
    ) -> Result<Message, Diagnostic> {
        let package = package.to_string();
        if !self.protos.contains_key(&package) {
            let rel = format!(
                "proto/k8s.io/{}/generated.proto",
                package
                    .trim_start_matches("k8s.io.")
                    .replace('.', "/")
                    .replace("apiextensions_apiserver", "apiextensions-apiserver")
                    .replace("kube_aggregator", "kube-aggregator")
            );
            let file = format!("{}/{rel}", self.label);
            let parsed = (self.read)(&rel)
                .map_err(|e| {
                    Diagnostic::new(
                        Code::Upstream,
                        top_location(&file),
                        format!("cannot read: {e}"),
                    )
                })
                .and_then(|text| parse_proto(&file, &text));
            self.protos.insert(package.clone(), parsed);
        }
        match &self.protos[&package] {
            Err(d) => Err(d.clone()),
            Ok(messages) => messages.get(name).cloned().ok_or_else(|| {
                Diagnostic::new(
                    Code::Upstream,
                    at.clone(),
                    format!("no protobuf message `{name}` in package {package}"),
                )
            }),
        }
    }

    fn kind(&mut self, sel: &Selection, e: &Entry) -> Result<GeneratedFile, Diagnostic> {
        self.numbered = e.protobuf;
        let doc_file = doc_path(&e.group, &e.version);
        let doc = self.doc(&doc_file)?;
        let doc_label = doc.file.clone();
        let gvk = serde_json::json!({ "group": e.group, "version": e.version, "kind": e.kind });
        // The kind's component: the schema whose GVK it is.
        let component = doc
            .schemas()
            .and_then(|s| {
                s.iter().find(|(_, v)| {
                    v["x-kubernetes-group-version-kind"]
                        .as_array()
                        .is_some_and(|l| l.contains(&gvk))
                })
            })
            .map(|(name, _)| name.clone())
            .ok_or_else(|| {
                Diagnostic::new(
                    Code::Upstream,
                    e.at.clone(),
                    format!("upstream has no kind {} in {}", e.kind, doc_label),
                )
                .with_help("check group, version and kind against upstream's OpenAPI")
            })?;
        let shape = self.rest_shape(&doc_file, e)?;
        let dir = sel.group_dirs.get(&e.group).ok_or_else(|| {
            Diagnostic::new(
                Code::MissingKey,
                e.at.clone(),
                format!("no directory for group {:?} in `groupDirs`", e.group),
            )
            .with_help("add it, e.g. `rbac.authorization.k8s.io: rbac`")
        })?;
        if shape.create_only {
            match e.strategy.as_deref() {
                Some(s) if CREATE_HOOKS.contains(&s) => {}
                _ => {
                    return Err(Diagnostic::new(
                        Code::CreateOnly,
                        e.at.clone(),
                        format!(
                            "{} is create-only upstream: it needs `strategy`, its create hook",
                            e.kind
                        ),
                    )
                    .with_help(format!("one of {}", CREATE_HOOKS.join(", "))))
                }
            }
        } else if let Some(s) = e.strategy.as_deref().filter(|s| !STRATEGIES.contains(s)) {
            return Err(Diagnostic::new(
                Code::UnknownValue,
                e.at.clone(),
                format!("unknown strategy `{s}`"),
            )
            .with_help(format!("one of {}, or leave it out", STRATEGIES.join(", "))));
        }

        let mut schema = self.kind_schema(&doc_file, &component, Some(&e.description))?;
        if let Some(m) = schema.as_mapping_mut() {
            let required = m.get_mut("required").and_then(|r| r.as_sequence_mut());
            if let Some(list) = required {
                list.retain(|f| !e.required_on_create.iter().any(|o| f.as_str() == Some(o)));
                if list.is_empty() {
                    m.remove("required");
                }
            }
        }
        let mut subresources = serde_yaml::Mapping::new();
        let mut create_only = Vec::new();
        let mut parts = Vec::new();
        for (name, sub) in &shape.subresources {
            match sub {
                UpstreamSub::Part { verbs } => {
                    let Some(hook) = e.subresources.get(name).and_then(Value::as_str) else {
                        return Err(Diagnostic::new(
                            Code::MissingKey,
                            e.at.clone(),
                            format!(
                                "{}/{name} writes part of a {} upstream; name its hook",
                                shape.plural, e.kind
                            ),
                        )
                        .with_help(format!("`subresources: {{{name}: <one of {}>}}`, or list it in `omitSubresources`", PART_HOOKS.join(", "))));
                    };
                    if !PART_HOOKS.contains(&hook) {
                        return Err(Diagnostic::new(
                            Code::UnknownValue,
                            e.at.clone(),
                            format!("no part hook named `{hook}`"),
                        )
                        .with_help(format!("one of {}", PART_HOOKS.join(", "))));
                    }
                    let mut m = serde_yaml::Mapping::new();
                    m.insert("name".into(), name.clone().into());
                    m.insert("strategy".into(), hook.into());
                    if verbs.len() < 3 {
                        m.insert("verbs".into(), verbs.clone().into());
                    }
                    parts.push(serde_yaml::Value::Mapping(m));
                }
                UpstreamSub::Status => {
                    subresources.insert("status".into(), serde_yaml::Mapping::new().into());
                }
                UpstreamSub::Scale => {
                    let Some(settings) = e.subresources.get("scale") else {
                        return Err(Diagnostic::new(Code::MissingKey, e.at.clone(), format!("{} has a scale subresource upstream; give its replica paths", e.kind))
                            .with_help("`subresources: {scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}}`"));
                    };
                    subresources.insert("scale".into(), yaml(settings));
                }
                UpstreamSub::Kind {
                    gvk: body,
                    component: body_component,
                } => {
                    let Some(hook) = e.subresources.get(name).and_then(Value::as_str) else {
                        return Err(Diagnostic::new(
                            Code::CreateOnly,
                            e.at.clone(),
                            format!(
                                "{}/{name} takes a {} upstream; name its create hook",
                                shape.plural, body.2
                            ),
                        )
                        .with_help(format!("`subresources: {{{name}: {}}}`", body.2)));
                    };
                    if !CREATE_HOOKS.contains(&hook) {
                        return Err(Diagnostic::new(
                            Code::UnknownValue,
                            e.at.clone(),
                            format!("no create hook named `{hook}`"),
                        )
                        .with_help(format!("one of {}", CREATE_HOOKS.join(", "))));
                    }
                    let body_schema = self.kind_schema(&doc_file, body_component, None)?;
                    let mut m = serde_yaml::Mapping::new();
                    m.insert("name".into(), name.clone().into());
                    m.insert("group".into(), body.0.clone().into());
                    m.insert("version".into(), body.1.clone().into());
                    m.insert("kind".into(), body.2.clone().into());
                    m.insert("strategy".into(), hook.into());
                    m.insert("openAPIPrefix".into(), prefix_of(body_component).into());
                    m.insert("schema".into(), body_schema);
                    create_only.push(serde_yaml::Value::Mapping(m));
                }
            }
        }
        for name in e.subresources.keys() {
            if !shape.subresources.contains_key(name) {
                return Err(Diagnostic::new(
                    Code::Upstream,
                    e.at.clone(),
                    format!("upstream {} has no subresource `{name}`", shape.plural),
                ));
            }
        }
        if !create_only.is_empty() {
            subresources.insert("createOnly".into(), create_only.into());
        }
        if !parts.is_empty() {
            subresources.insert("parts".into(), parts.into());
        }

        let mut m = serde_yaml::Mapping::new();
        m.insert("group".into(), e.group.clone().into());
        m.insert("version".into(), e.version.clone().into());
        m.insert("kind".into(), e.kind.clone().into());
        if shape.plural != infer_plural(&e.kind) {
            m.insert("plural".into(), shape.plural.clone().into());
        }
        m.insert(
            "scope".into(),
            if shape.namespaced {
                "Namespaced"
            } else {
                "Cluster"
            }
            .into(),
        );
        m.insert("builtin".into(), true.into());
        if let Some(s) = &e.strategy {
            m.insert("strategy".into(), s.clone().into());
        }
        if e.storage {
            m.insert("storage".into(), true.into());
        }
        if let Some(c) = &e.conversion {
            m.insert("conversion".into(), yaml(c));
        }
        if shape.create_only {
            m.insert("createOnly".into(), true.into());
        }
        if !shape.verbs.is_empty() {
            m.insert("verbs".into(), shape.verbs.clone().into());
        }
        m.insert("openAPIPrefix".into(), prefix_of(&component).into());
        if !e.short_names.is_empty() {
            m.insert("shortNames".into(), e.short_names.clone().into());
        }
        if !e.categories.is_empty() {
            m.insert("categories".into(), e.categories.clone().into());
        }
        if !subresources.is_empty() {
            m.insert("subresources".into(), subresources.into());
        }
        if let Some(cols) = &e.printer_columns {
            m.insert("additionalPrinterColumns".into(), yaml(cols));
        }
        if !e.selectable_fields.is_empty() {
            let list: Vec<serde_yaml::Value> = e
                .selectable_fields
                .iter()
                .map(|p| {
                    let mut f = serde_yaml::Mapping::new();
                    f.insert("jsonPath".into(), p.clone().into());
                    f.into()
                })
                .collect();
            m.insert("selectableFields".into(), list.into());
        }
        m.insert("schema".into(), schema);
        let body = serde_yaml::to_string(&m).map_err(|err| {
            Diagnostic::new(
                Code::Upstream,
                e.at.clone(),
                format!("cannot write the definition: {err}"),
            )
        })?;
        let source = if sel.source.is_empty() {
            String::new()
        } else {
            format!(" from {}", sel.source)
        };
        Ok(GeneratedFile {
            path: format!(
                "api-defs/{dir}/{}/{}.yaml",
                e.version,
                e.kind.to_lowercase()
            ),
            contents: format!(
                "{HEADER}{source} (OpenAPI v3 and generated.proto);\n# change {} and re-run it rather than editing this file.\n{body}",
                sel.file
            ),
        })
    }

    /// The kind's REST shape, from the document's paths and their operations' GVKs.
    fn rest_shape(&mut self, doc_file: &str, e: &Entry) -> Result<RestShape, Diagnostic> {
        let doc = self.doc(doc_file)?;
        let prefix = if e.group.is_empty() {
            format!("/api/{}/", e.version)
        } else {
            format!("/apis/{}/{}/", e.group, e.version)
        };
        let gvk_of = |op: &Value| {
            let g = &op["x-kubernetes-group-version-kind"];
            (
                g["group"].as_str().unwrap_or_default().to_string(),
                g["version"].as_str().unwrap_or_default().to_string(),
                g["kind"].as_str().unwrap_or_default().to_string(),
            )
        };
        let own = (e.group.clone(), e.version.clone(), e.kind.clone());
        let mut plural: Option<String> = None;
        let mut namespaced = false;
        let mut verbs: BTreeSet<String> = BTreeSet::new();
        let paths = doc.json["paths"].as_object().cloned().unwrap_or_default();
        // First the kind's own paths (plural, scope, verbs).
        for (path, item) in &paths {
            let Some(rest) = path.strip_prefix(&prefix) else {
                continue;
            };
            let segs: Vec<&str> = rest.split('/').collect();
            let (watch, segs) = match segs.split_first() {
                Some((&"watch", tail)) => (true, tail.to_vec()),
                _ => (false, segs),
            };
            let (in_ns, segs) = match segs.as_slice() {
                ["namespaces", "{namespace}", tail @ ..] if !tail.is_empty() => {
                    (true, tail.to_vec())
                }
                _ => (false, segs),
            };
            let Some(item) = item.as_object() else {
                continue;
            };
            for (method, op) in item {
                if method == "parameters" || gvk_of(op) != own {
                    continue;
                }
                let action = op["x-kubernetes-action"].as_str().unwrap_or_default();
                if segs.len() <= 2 {
                    plural.get_or_insert_with(|| segs[0].to_string());
                    namespaced |= in_ns;
                    verbs.insert(
                        match (action, watch) {
                            ("watch" | "watchlist", _) => "watch",
                            ("post", _) => "create",
                            ("put", _) => "update",
                            ("deletecollection", _) => "deletecollection",
                            (a, _) => a,
                        }
                        .to_string(),
                    );
                }
            }
        }
        let plural = plural.ok_or_else(|| {
            Diagnostic::new(
                Code::Upstream,
                e.at.clone(),
                format!("upstream serves no path for {} in {}", e.kind, doc.file),
            )
        })?;
        // Then its subresources: `<plural>/{name}/<sub>`, whatever kind they answer.
        let mut shape = RestShape {
            plural: plural.clone(),
            namespaced,
            create_only: false,
            verbs: Vec::new(),
            subresources: BTreeMap::new(),
        };
        for (path, item) in &paths {
            let Some(rest) = path.strip_prefix(&prefix) else {
                continue;
            };
            let rest = rest.strip_prefix("namespaces/{namespace}/").unwrap_or(rest);
            let segs: Vec<&str> = rest.split('/').collect();
            let [p, "{name}", sub] = segs.as_slice() else {
                continue;
            };
            if *p != plural || e.omit_subresources.iter().any(|o| o == sub) {
                continue;
            }
            let Some(item) = item.as_object() else {
                continue;
            };
            let mut methods = Vec::new();
            let mut body = None;
            for (method, op) in item {
                if method == "parameters" {
                    continue;
                }
                methods.push(method.clone());
                let g = gvk_of(op);
                let component = op["requestBody"]["content"]["*/*"]["schema"]["$ref"]
                    .as_str()
                    .or_else(|| {
                        op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
                            .as_str()
                    })
                    .map(|r| r.trim_start_matches("#/components/schemas/").to_string());
                body = Some((g, component));
            }
            let sub_kind = match body {
                Some((g, _)) if g == own && *sub == "status" => UpstreamSub::Status,
                Some((g, _)) if g.2 == "Scale" && *sub == "scale" => UpstreamSub::Scale,
                Some((g, Some(component))) if methods == ["post"] && !g.2.is_empty() => {
                    UpstreamSub::Kind { gvk: g, component }
                }
                // The object itself, read and written: a part of it (`finalize`).
                Some((g, _))
                    if g == own
                        && methods
                            .iter()
                            .all(|m| ["get", "put", "patch"].contains(&m.as_str())) =>
                {
                    let mut verbs: Vec<String> = methods
                        .iter()
                        .map(|m| if m == "put" { "update" } else { m.as_str() }.to_string())
                        .collect();
                    verbs.sort();
                    UpstreamSub::Part { verbs }
                }
                _ => {
                    return Err(Diagnostic::new(
                        Code::Upstream,
                        e.at.clone(),
                        format!(
                        "upstream's {plural}/{sub} ({}) is not a kind of subresource we serve yet",
                        methods.join(", ")
                    ),
                    ))
                }
            };
            shape.subresources.insert(sub.to_string(), sub_kind);
        }
        for o in &e.omit_subresources {
            let served = paths.keys().any(|path| {
                path.strip_prefix(&prefix).is_some_and(|rest| {
                    let rest = rest.strip_prefix("namespaces/{namespace}/").unwrap_or(rest);
                    rest == format!("{plural}/{{name}}/{o}")
                })
            });
            if !served {
                return Err(Diagnostic::new(
                    Code::Upstream,
                    e.at.clone(),
                    format!("upstream {plural} has no subresource `{o}` to omit"),
                ));
            }
        }
        let verbs: Vec<&str> = verbs.iter().map(String::as_str).collect();
        if verbs == ["create"] {
            shape.create_only = true;
            if !shape.subresources.is_empty() {
                return Err(Diagnostic::new(
                    Code::Upstream,
                    e.at.clone(),
                    format!("{} is create-only upstream but has subresources", e.kind),
                ));
            }
        } else if verbs != crate::endpoints::Verb::ALL.map(crate::endpoints::Verb::as_str) {
            shape.verbs = verbs.iter().map(|v| v.to_string()).collect();
        }
        Ok(shape)
    }

    /// A kind's schema as ours: own fields only (`apiVersion`, `kind`, `metadata`
    /// implied), `$ref`s resolved, field numbers from its protobuf message.
    fn kind_schema(
        &mut self,
        doc_file: &str,
        component: &str,
        description: Option<&str>,
    ) -> Result<serde_yaml::Value, Diagnostic> {
        let mut stack = Vec::new();
        let mut json = self.object(doc_file, component, true, &mut stack)?;
        if let (Some(d), Some(o)) = (description, json.as_object_mut()) {
            // Our own words, first, as the loader lists it.
            let mut with = Map::new();
            with.insert("type".into(), Value::String("object".into()));
            with.insert("description".into(), Value::String(d.to_string()));
            for (k, v) in std::mem::take(o) {
                with.entry(k).or_insert(v);
            }
            *o = with;
        }
        // Through the model: checks that the result is in our schema language, and
        // writes keys in the model's order (type, format, properties, required, ...).
        let at = self.doc(doc_file)?.locate(component);
        let schema = Schema::from_json(&json).map_err(|e| {
            Diagnostic::new(
                Code::Upstream,
                at.clone(),
                format!("the imported schema is not one we accept: {e}"),
            )
        })?;
        Ok(yaml(&schema.to_json(true)))
    }

    /// The component `name` as an object schema whose properties carry field numbers.
    fn object(
        &mut self,
        doc_file: &str,
        name: &str,
        top: bool,
        stack: &mut Vec<String>,
    ) -> Result<Value, Diagnostic> {
        let doc = self.doc(doc_file)?;
        let at = doc.locate(name);
        if stack.iter().any(|s| s == name) {
            return Err(Diagnostic::new(
                Code::Upstream,
                at,
                format!(
                    "`{name}` contains itself ({}); recursive schemas cannot be inlined",
                    stack.join(" → ")
                ),
            ));
        }
        let Some(c) = doc.schemas().and_then(|s| s.get(name)).cloned() else {
            return Err(Diagnostic::new(
                Code::Upstream,
                top_location(&doc.file),
                format!("no component schema `{name}`"),
            ));
        };
        let Some(c) = c.as_object() else {
            return Err(Diagnostic::new(
                Code::Upstream,
                at,
                format!("`{name}` is not a schema object"),
            ));
        };
        let message = if self.numbered {
            self.message(name, &at)?
        } else {
            Message::default()
        };
        if self.numbered && top && message.number_of("metadata") != Some(1) {
            return Err(Diagnostic::new(
                Code::Upstream,
                at,
                format!("the protobuf message of `{name}` does not have metadata as field 1"),
            ));
        }
        stack.push(name.to_string());
        let mut out = Map::new();
        for (k, v) in c {
            match k.as_str() {
                "properties" => {
                    let mut props = Map::new();
                    let json_props: Vec<String> = v
                        .as_object()
                        .into_iter()
                        .flatten()
                        .map(|(k, _)| k.clone())
                        .collect();
                    for (prop, p) in v.as_object().into_iter().flatten() {
                        if top && ["apiVersion", "kind", "metadata"].contains(&prop.as_str()) {
                            continue;
                        }
                        let here = format!("{name}.{prop}");
                        let (via, num) = match message.number_of(prop) {
                            Some(n) => (Vec::new(), Some(n)),
                            None if !self.numbered => (Vec::new(), None),
                            // TypeMeta of an object nested whole (a StatefulSet's claim
                            // templates) travels in no protobuf field.
                            None if ["apiVersion", "kind"].contains(&prop.as_str()) => {
                                (Vec::new(), None)
                            }
                            None => match self.embedded_field(&message, prop, &json_props, &at, 0) {
                                Some((via, n)) => (via, Some(n)),
                                None => {
                                    return Err(Diagnostic::new(Code::Upstream,
                                        at.clone(),
                                        format!("`{here}` has no field in the protobuf message"),
                                    )
                                    .with_help("`protobuf: false` on the kind imports it for JSON and YAML only"))
                                }
                            },
                        };
                        let mut s = self.property(doc_file, p, &here, &at, stack)?;
                        if let (Some(o), Some(num)) = (s.as_object_mut(), num) {
                            o.insert("x-protobuf-field".into(), Value::from(num));
                            if !via.is_empty() {
                                o.insert("x-protobuf-embedded".into(), Value::from(via));
                            }
                        }
                        props.insert(prop.clone(), s);
                    }
                    out.insert("properties".into(), Value::Object(props));
                }
                "required" if top => {
                    let kept: Vec<Value> = v
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|r| {
                            !["apiVersion", "kind", "metadata"]
                                .contains(&r.as_str().unwrap_or_default())
                        })
                        .cloned()
                        .collect();
                    if !kept.is_empty() {
                        out.insert(k.clone(), Value::Array(kept));
                    }
                }
                k if DROPPED_KEYS.contains(&k) => {}
                k if COPIED_KEYS.contains(&k) => {
                    out.insert(k.to_string(), v.clone());
                }
                other => {
                    stack.pop();
                    return Err(Diagnostic::new(
                        Code::Upstream,
                        at,
                        format!("`{name}` uses `{other}`, which the importer does not know"),
                    ));
                }
            }
        }
        out.entry("type")
            .or_insert_with(|| Value::String("object".into()));
        stack.pop();
        Ok(Value::Object(out))
    }

    /// Where the JSON property `prop`, not a field of `message` itself, is carried: in a
    /// Go-embedded message, whose fields Go's JSON flattens into the parent (a Volume's
    /// VolumeSource). The embedded fields' numbers, outermost first, and its own number.
    fn embedded_field(
        &mut self,
        message: &Message,
        prop: &str,
        json: &[String],
        at: &Location,
        depth: usize,
    ) -> Option<(Vec<u32>, u32)> {
        // Upstream embeds at most two deep (NamedRuleWithOperations → RuleWithOperations
        // → Rule); the bound only stops a malformed proto file from looping.
        if depth > 4 {
            return None;
        }
        for (num, package, name) in message.embedded(json) {
            let Ok(inner) = self.message_in(&package, &name, at) else {
                continue;
            };
            if let Some(n) = inner.number_of(prop) {
                return Some((vec![num], n));
            }
            if let Some((mut via, n)) = self.embedded_field(&inner, prop, json, at, depth + 1) {
                via.insert(0, num);
                return Some((via, n));
            }
        }
        None
    }

    /// One property (or items / additionalProperties) schema, `$ref`s resolved.
    fn property(
        &mut self,
        doc_file: &str,
        p: &Value,
        here: &str,
        at: &Location,
        stack: &mut Vec<String>,
    ) -> Result<Value, Diagnostic> {
        let Some(p) = p.as_object() else {
            return Err(Diagnostic::new(
                Code::Upstream,
                at.clone(),
                format!("`{here}` is not a schema object"),
            ));
        };
        let mut out = match ref_of(p) {
            Some(target) => match self.component(doc_file, &target)? {
                Component::Scalar(s) => s,
                Component::Object => match self.object(doc_file, &target, false, stack)? {
                    Value::Object(mut o) => {
                        o.insert("x-openapi-component".into(), Value::String(target.clone()));
                        o
                    }
                    _ => Map::new(),
                },
            },
            None => Map::new(),
        };
        for (k, v) in p {
            match k.as_str() {
                "$ref" | "allOf" if ref_of(p).is_some() => {}
                "default" => {
                    // `default: {}` marks Go's non-pointer structs; as a default it would
                    // invent objects (an empty roleRef) that upstream's validation refuses.
                    if v.as_object().is_some_and(Map::is_empty) {
                        continue;
                    }
                    out.insert(k.clone(), v.clone());
                }
                "items" => {
                    let s = self.property(doc_file, v, &format!("{here}[]"), at, stack)?;
                    out.insert(k.clone(), s);
                }
                "additionalProperties" => {
                    let s = self.property(doc_file, v, &format!("{here}.*"), at, stack)?;
                    out.insert(k.clone(), s);
                }
                "properties" => {
                    return Err(Diagnostic::new(
                        Code::Upstream,
                        at.clone(),
                        format!(
                        "`{here}` declares properties inline; built-in schemas name a component"
                    ),
                    ))
                }
                k if DROPPED_KEYS.contains(&k) => {}
                k if COPIED_KEYS.contains(&k) => {
                    out.insert(k.to_string(), v.clone());
                }
                other => {
                    return Err(Diagnostic::new(
                        Code::Upstream,
                        at.clone(),
                        format!("`{here}` uses `{other}`, which the importer does not know"),
                    ))
                }
            }
        }
        Ok(Value::Object(out))
    }

    /// What the component `name` is: an object (a message), or a value with a scalar
    /// JSON form.
    fn component(&mut self, doc_file: &str, name: &str) -> Result<Component, Diagnostic> {
        let doc = self.doc(doc_file)?;
        let at = doc.locate(name);
        let Some(c) = doc
            .schemas()
            .and_then(|s| s.get(name))
            .and_then(Value::as_object)
        else {
            return Err(Diagnostic::new(
                Code::Upstream,
                top_location(&doc.file),
                format!("no component schema `{name}`"),
            ));
        };
        // Arbitrary JSON carried as JSON bytes in protobuf (managedFields' fieldsV1, a
        // ControllerRevision's data).
        if [
            "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
            "io.k8s.apimachinery.pkg.runtime.RawExtension",
        ]
        .contains(&name)
        {
            let mut s = Map::new();
            s.insert("type".into(), Value::String("object".into()));
            s.insert(
                "x-kubernetes-preserve-unknown-fields".into(),
                Value::Bool(true),
            );
            if self.numbered {
                s.insert("x-protobuf-raw-json".into(), Value::Bool(true));
            }
            return Ok(Component::Scalar(s));
        }
        if c.contains_key("properties") || c.get("type") == Some(&Value::String("object".into())) {
            return Ok(Component::Object);
        }
        let mut s = Map::new();
        match c.get("format").and_then(Value::as_str) {
            Some("int-or-string") => {
                s.insert("x-kubernetes-int-or-string".into(), Value::Bool(true));
            }
            _ if name == "io.k8s.apimachinery.pkg.api.resource.Quantity" => {
                s.insert("type".into(), Value::String("string".into()));
                s.insert("format".into(), Value::String("quantity".into()));
            }
            format => {
                let Some(t) = c.get("type") else {
                    return Err(Diagnostic::new(
                        Code::Upstream,
                        at,
                        format!("`{name}` has no type the importer understands"),
                    ));
                };
                s.insert("type".into(), t.clone());
                if let Some(f) = format {
                    s.insert("format".into(), Value::String(f.into()));
                }
            }
        }
        Ok(Component::Scalar(s))
    }
}

/// The component a property refers to: `$ref`, or v3's `allOf: [{$ref}]` wrapper.
fn ref_of(p: &Map<String, Value>) -> Option<String> {
    let r = p
        .get("$ref")
        .or_else(|| match p.get("allOf")?.as_array()?.as_slice() {
            [one] => one.get("$ref"),
            _ => None,
        })?;
    Some(
        r.as_str()?
            .trim_start_matches("#/components/schemas/")
            .to_string(),
    )
}

/// `io.k8s.api.rbac.v1.Role` → `io.k8s.api.rbac.v1`.
fn prefix_of(component: &str) -> String {
    component
        .rsplit_once('.')
        .map_or(component, |(p, _)| p)
        .to_string()
}

fn yaml(v: &Value) -> serde_yaml::Value {
    serde_yaml::to_value(v).unwrap_or(serde_yaml::Value::Null)
}

/// A subresource as upstream serves it.
enum UpstreamSub {
    Status,
    Scale,
    /// POST only, with a kind of its own: `(group, version, kind)` and its component.
    Kind {
        gvk: (String, String, String),
        component: String,
    },
    /// The object itself read and written, of which a hook lets one part change; the
    /// verbs served (`get`, `patch`, `update`).
    Part {
        verbs: Vec<String>,
    },
}

struct RestShape {
    plural: String,
    namespaced: bool,
    create_only: bool,
    /// The verbs served, when not all of them (and not create alone).
    verbs: Vec<String>,
    subresources: BTreeMap<String, UpstreamSub>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proto_fields_are_read_and_bad_lines_named() {
        let text = "syntax = \"proto2\";\npackage k8s.io.api.x.v1;\n// A message.\nmessage A {\n  // a comment = 3;\n  optional string name = 1;\n  repeated B items = 2;\n  map<string, ExtraValue> extra = 5;\n}\n";
        let m = parse_proto("x.proto", text).expect("parses");
        assert_eq!(m["A"].number_of("name"), Some(1));
        assert_eq!(m["A"].number_of("items"), Some(2));
        assert_eq!(m["A"].fields["items"].type_, "B");
        assert_eq!(m["A"].number_of("extra"), Some(5));
        assert_eq!(m["A"].package, "k8s.io.api.x.v1");
        let err = parse_proto("x.proto", "message A {\n  what is this\n}\n").unwrap_err();
        assert_eq!(
            (err.location.line, err.message.contains("cannot read")),
            (2, true)
        );
    }

    #[test]
    fn selection_errors_point_at_their_entry() {
        let text = "groupDirs: {\"\": core}\nkinds:\n  - group: \"\"\n    version: v1\n    kind: Thing\n    colour: red\n";
        let err = import("sel.yaml", text, "up", &|p| Err(format!("{p}: missing"))).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("sel.yaml:6:5"), "{text}");
        assert!(text.contains("unknown key `colour`"), "{text}");
        assert!(text.contains("needs `description`"), "{text}");
    }

    #[test]
    fn missing_upstream_files_are_named() {
        let text = "groupDirs: {\"\": core}\nkinds:\n  - {group: \"\", version: v1, kind: Thing, description: A thing.}\n";
        let err = import("sel.yaml", text, "up", &|p| {
            Err(format!("{p}: no such file"))
        })
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("up/openapi/v3/api__v1_openapi.json:1:1"),
            "{err}"
        );
    }
}
