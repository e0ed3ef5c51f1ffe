//! The `#[resource(...)]` attribute grammar, shared by `#[derive(Resource)]` (macros) and
//! codegen's Rust loader so the two cannot drift apart.
//!
//! ```text
//! #[resource(group = "example.dev", version = "v1", kind = "Gadget",
//!            namespaced | cluster, plural = "gadgets", singular = "gadget",
//!            shortnames = ["gd"], categories = ["all"], status,
//!            scale(spec_replicas_path = ".spec.replicas", status_replicas_path = ".status.replicas",
//!                  label_selector_path = ".status.selector"),
//!            printcolumn(name = "Size", type = "integer", json_path = ".spec.size"),
//!            storage,   // or, on a version that is not the storage version:
//!            conversion(rename(from = ".spec.colour", to = ".spec.color"),
//!                       move(from = ".spec.size", to = ".spec.shape.size"),
//!                       default(path = ".spec.mode", value = "fast"),
//!                       preserve = [".spec.tags"], hook = "HookName"))]
//! ```

use proc_macro2::{Span, TokenStream};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, Lit, Token};

use crate::diagnostics::{suggest, Code};
use crate::model::{
    Conversion, FieldDefault, FieldMapping, FieldPath, PrinterColumn, ScaleSubresource, Scope,
};

/// Every key `#[resource(...)]` accepts.
pub const RESOURCE_KEYS: &[&str] = &[
    "group",
    "version",
    "kind",
    "plural",
    "singular",
    "namespaced",
    "cluster",
    "shortnames",
    "categories",
    "status",
    "scale",
    "printcolumn",
    "selectable_fields",
    "storage",
    "conversion",
];
const CONVERSION_KEYS: &[&str] = &["rename", "move", "default", "preserve", "hook", "stored_as"];
const MAPPING_KEYS: &[&str] = &["from", "to"];
const DEFAULT_KEYS: &[&str] = &["path", "value"];
const SCALE_KEYS: &[&str] = &[
    "spec_replicas_path",
    "status_replicas_path",
    "label_selector_path",
];
const PRINTCOLUMN_KEYS: &[&str] = &[
    "name",
    "type",
    "json_path",
    "description",
    "priority",
    "format",
];

/// One `key`, `key = value` or `key(...)` item. Keys may be keywords (`type`).
struct Meta {
    key: syn::Ident,
    value: MetaValue,
}

enum MetaValue {
    Flag,
    Value(Box<Expr>),
    List(TokenStream),
}

impl Parse for Meta {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let key = syn::Ident::parse_any(input)?;
        let value = if input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            MetaValue::Value(Box::new(input.parse()?))
        } else if input.peek(syn::token::Paren) {
            let content;
            syn::parenthesized!(content in input);
            MetaValue::List(content.parse()?)
        } else {
            MetaValue::Flag
        };
        Ok(Meta { key, value })
    }
}

impl Meta {
    fn name(&self) -> String {
        self.key.unraw().to_string()
    }

    fn span(&self) -> Span {
        self.key.span()
    }
}

fn parse_list(tokens: TokenStream) -> syn::Result<Punctuated<Meta, Token![,]>> {
    syn::parse::Parser::parse2(Punctuated::<Meta, Token![,]>::parse_terminated, tokens)
}

/// One mistake in `#[resource(...)]`: its code, where it is, what is wrong and the fix.
#[derive(Clone, Debug)]
pub struct AttrError {
    pub code: Code,
    pub span: Span,
    pub message: String,
    pub help: Option<String>,
}

impl AttrError {
    fn new(code: Code, span: Span, message: impl Into<String>) -> Self {
        AttrError {
            code,
            span,
            message: message.into(),
            help: None,
        }
    }

    fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// A syntax error `syn` found in the attribute.
    fn syntax(e: syn::Error) -> Self {
        AttrError::new(Code::Syntax, e.span(), e.to_string())
    }

    /// The error as the derive reports it: rustc draws the span and caret; the code,
    /// the help and the way to `--explain` follow the message, as rustc's own lines.
    pub fn to_compile_error(&self) -> syn::Error {
        let mut text = format!("{} [{}]", self.message, self.code);
        if let Some(help) = &self.help {
            text.push_str(&format!("\nhelp: {help}"));
        }
        text.push_str(&format!(
            "\nnote: `cargo run -p codegen -- --explain {}` explains this error",
            self.code
        ));
        syn::Error::new(self.span, text)
    }
}

/// What `#[resource(...)]` said, before defaults are filled in.
#[derive(Clone, Debug, Default)]
pub struct ResourceAttrs {
    pub group: Option<String>,
    pub version: Option<String>,
    pub kind: Option<String>,
    pub plural: Option<String>,
    pub singular: Option<String>,
    pub scope: Option<Scope>,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub status: bool,
    pub scale: Option<ScaleSubresource>,
    pub printer_columns: Vec<PrinterColumn>,
    pub selectable_fields: Vec<String>,
    pub storage: bool,
    pub conversion: Option<Conversion>,
}

/// Parses every `#[resource(...)]` in `attrs`. `item_span` is where "missing key" errors
/// point. All errors are collected; none stops the parse.
pub fn parse_resource_attrs(
    attrs: &[syn::Attribute],
    item_span: Span,
) -> Result<ResourceAttrs, Vec<AttrError>> {
    let mut out = ResourceAttrs::default();
    let mut errors = Vec::new();
    let mut seen_any = false;
    let mut written: Vec<String> = Vec::new();
    let mut unparsed = false;

    for attr in attrs.iter().filter(|a| a.path().is_ident("resource")) {
        seen_any = true;
        let metas = match attr.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) {
            Ok(m) => m,
            Err(e) => {
                errors.push(AttrError::syntax(e));
                unparsed = true;
                continue;
            }
        };
        for meta in metas {
            let key = meta.name();
            written.push(key.clone());
            match key.as_str() {
                "group" => set_str(&mut out.group, &meta, &mut errors),
                "version" => set_str(&mut out.version, &meta, &mut errors),
                "kind" => set_str(&mut out.kind, &meta, &mut errors),
                "plural" => set_str(&mut out.plural, &meta, &mut errors),
                "singular" => set_str(&mut out.singular, &meta, &mut errors),
                "namespaced" | "cluster" => {
                    if !flag(&meta, &mut errors) {
                        continue;
                    }
                    let scope = if key == "namespaced" {
                        Scope::Namespaced
                    } else {
                        Scope::Cluster
                    };
                    match out.scope {
                        Some(prev) if prev != scope => errors.push(
                            AttrError::new(
                                Code::Duplicate,
                                meta.span(),
                                "conflicting scope: a resource is either `namespaced` or `cluster`, not both",
                            )
                            .help("keep one"),
                        ),
                        _ => out.scope = Some(scope),
                    }
                }
                "shortnames" => out.short_names.extend(str_list(&meta, &mut errors)),
                "categories" => out.categories.extend(str_list(&meta, &mut errors)),
                "selectable_fields" => out.selectable_fields.extend(str_list(&meta, &mut errors)),
                "status" => out.status |= flag(&meta, &mut errors),
                "storage" => out.storage |= flag(&meta, &mut errors),
                "conversion" => {
                    if let Some(c) = parse_conversion(&meta, &mut errors) {
                        out.conversion = Some(c);
                    }
                }
                "scale" => {
                    if let Some(s) = parse_scale(&meta, &mut errors) {
                        out.scale = Some(s);
                    }
                }
                "printcolumn" => {
                    if let Some(c) = parse_printcolumn(&meta, &mut errors) {
                        out.printer_columns.push(c);
                    }
                }
                _ => errors.push(unknown_key(
                    &key,
                    meta.span(),
                    RESOURCE_KEYS,
                    "#[resource(...)]",
                )),
            }
        }
    }

    if !seen_any {
        errors.push(
            AttrError::new(Code::MissingKey, item_span, "missing #[resource(...)] attribute")
                .help("add #[resource(group = \"example.dev\", version = \"v1\", kind = \"MyKind\", namespaced)]"),
        );
    } else if !unparsed {
        for (name, value, example) in [
            (
                "group",
                &out.group,
                "group = \"example.dev\" (\"\" for the core group)",
            ),
            ("version", &out.version, "version = \"v1\""),
            ("kind", &out.kind, "kind = \"MyKind\""),
        ] {
            if value.is_none() && !written.iter().any(|w| w == name) {
                errors.push(
                    AttrError::new(
                        Code::MissingKey,
                        item_span,
                        format!("#[resource(...)] is missing `{name}`"),
                    )
                    .help(format!("add `{example}`")),
                );
            }
        }
    }

    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

fn unknown_key(key: &str, span: Span, known: &[&str], place: &str) -> AttrError {
    let help = match suggest(key, known) {
        Some(s) => format!("did you mean `{s}`?"),
        None => format!("expected one of: {}", known.join(", ")),
    };
    AttrError::new(
        Code::UnknownKey,
        span,
        format!("unknown key `{key}` in {place}"),
    )
    .help(help)
}

fn lit_str(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s.value()),
        _ => None,
    }
}

fn flag(meta: &Meta, errors: &mut Vec<AttrError>) -> bool {
    let ok = matches!(meta.value, MetaValue::Flag);
    if !ok {
        let key = meta.name();
        errors.push(
            AttrError::new(
                Code::WrongType,
                meta.span(),
                format!("`{key}` is a flag and takes no value"),
            )
            .help(format!("write `{key}`")),
        );
    }
    ok
}

fn value<'a>(meta: &'a Meta, errors: &mut Vec<AttrError>, example: &str) -> Option<&'a Expr> {
    match &meta.value {
        MetaValue::Value(e) => Some(e.as_ref()),
        _ => {
            errors.push(
                AttrError::new(
                    Code::WrongType,
                    meta.span(),
                    format!("`{}` takes a value", meta.name()),
                )
                .help(format!("write `{example}`")),
            );
            None
        }
    }
}

fn set_str(slot: &mut Option<String>, meta: &Meta, errors: &mut Vec<AttrError>) {
    let key = meta.name();
    let example = format!("{key} = \"...\"");
    let Some(expr) = value(meta, errors, &example) else {
        return;
    };
    match lit_str(expr) {
        Some(_) if slot.is_some() => {
            errors.push(
                AttrError::new(
                    Code::Duplicate,
                    meta.span(),
                    format!("`{key}` is given twice"),
                )
                .help("keep one"),
            );
        }
        Some(v) => *slot = Some(v),
        None => errors.push(
            AttrError::new(
                Code::WrongType,
                syn::spanned::Spanned::span(expr),
                format!("`{key}` takes a string literal"),
            )
            .help(format!("write `{example}`")),
        ),
    }
}

fn str_list(meta: &Meta, errors: &mut Vec<AttrError>) -> Vec<String> {
    let key = meta.name();
    let example = format!("{key} = [\"a\", \"b\"]");
    let Some(expr) = value(meta, errors, &example) else {
        return vec![];
    };
    let Expr::Array(arr) = expr else {
        errors.push(
            AttrError::new(
                Code::WrongType,
                syn::spanned::Spanned::span(expr),
                format!("`{key}` takes a list"),
            )
            .help(format!("write `{example}`")),
        );
        return vec![];
    };
    arr.elems
        .iter()
        .filter_map(|e| {
            let v = lit_str(e);
            if v.is_none() {
                errors.push(
                    AttrError::new(
                        Code::WrongType,
                        syn::spanned::Spanned::span(e),
                        format!("`{key}` items are string literals"),
                    )
                    .help(format!("write `{example}`")),
                );
            }
            v
        })
        .collect()
}

/// Parses `name(k = v, ...)`, reporting unknown keys.
fn nested(
    meta: &Meta,
    known: &[&str],
    place: &str,
    errors: &mut Vec<AttrError>,
) -> Option<Vec<(String, Span, Expr)>> {
    let MetaValue::List(tokens) = &meta.value else {
        errors.push(
            AttrError::new(
                Code::WrongType,
                meta.span(),
                format!("`{}` takes a list of settings", meta.name()),
            )
            .help(format!("write `{place}`")),
        );
        return None;
    };
    let inner = match parse_list(tokens.clone()) {
        Ok(m) => m,
        Err(e) => {
            errors.push(AttrError::syntax(e));
            return None;
        }
    };
    let mut out = Vec::new();
    for m in inner {
        let key = m.name();
        if !known.contains(&key.as_str()) {
            errors.push(unknown_key(&key, m.span(), known, place));
            continue;
        }
        if let Some(e) = value(&m, errors, &format!("{key} = ...")) {
            out.push((key, m.span(), e.clone()));
        }
    }
    Some(out)
}

fn parse_scale(meta: &Meta, errors: &mut Vec<AttrError>) -> Option<ScaleSubresource> {
    let fields = nested(meta, SCALE_KEYS, "scale(...)", errors)?;
    let get = |k: &str| {
        fields
            .iter()
            .find(|(n, _, _)| n == k)
            .and_then(|(_, _, e)| lit_str(e))
    };
    let (Some(spec), Some(status)) = (get("spec_replicas_path"), get("status_replicas_path"))
    else {
        errors.push(
            AttrError::new(
                Code::MissingKey,
                meta.span(),
                "scale(...) needs `spec_replicas_path` and `status_replicas_path`",
            )
            .help("write `scale(spec_replicas_path = \".spec.replicas\", status_replicas_path = \".status.replicas\")`"),
        );
        return None;
    };
    Some(ScaleSubresource {
        spec_replicas_path: spec,
        status_replicas_path: status,
        label_selector_path: get("label_selector_path"),
    })
}

fn parse_printcolumn(meta: &Meta, errors: &mut Vec<AttrError>) -> Option<PrinterColumn> {
    let fields = nested(meta, PRINTCOLUMN_KEYS, "printcolumn(...)", errors)?;
    let get = |k: &str| {
        fields
            .iter()
            .find(|(n, _, _)| n == k)
            .and_then(|(_, _, e)| lit_str(e))
    };
    let priority = match fields.iter().find(|(n, _, _)| n == "priority") {
        None => 0,
        Some((
            _,
            _,
            Expr::Lit(ExprLit {
                lit: Lit::Int(i), ..
            }),
        )) => i.base10_parse().unwrap_or(0),
        Some((_, span, _)) => {
            errors.push(
                AttrError::new(Code::WrongType, *span, "`priority` takes an integer")
                    .help("write `priority = 1`"),
            );
            0
        }
    };
    let (Some(name), Some(type_), Some(json_path)) = (get("name"), get("type"), get("json_path"))
    else {
        errors.push(
            AttrError::new(
                Code::MissingKey,
                meta.span(),
                "printcolumn(...) needs `name`, `type` and `json_path`",
            )
            .help("write `printcolumn(name = \"Size\", type = \"integer\", json_path = \".spec.size\")`"),
        );
        return None;
    };
    Some(PrinterColumn {
        name,
        type_,
        format: get("format"),
        description: get("description"),
        priority,
        json_path,
    })
}

/// `conversion(rename(from = .., to = ..), move(..), default(path = .., value = ..),
/// preserve = [..], hook = "..", stored_as = "v1")`.
fn parse_conversion(meta: &Meta, errors: &mut Vec<AttrError>) -> Option<Conversion> {
    let MetaValue::List(tokens) = &meta.value else {
        errors.push(
            AttrError::new(
                Code::WrongType,
                meta.span(),
                "`conversion` takes a list of rules",
            )
            .help("write `conversion(rename(from = \".spec.colour\", to = \".spec.color\"))`"),
        );
        return None;
    };
    let items = match parse_list(tokens.clone()) {
        Ok(m) => m,
        Err(e) => {
            errors.push(AttrError::syntax(e));
            return None;
        }
    };
    let mut out = Conversion::default();
    for item in items {
        let key = item.name();
        let field = |fields: &[(String, Span, Expr)], k: &str| {
            fields
                .iter()
                .find(|(n, _, _)| n == k)
                .map(|(_, _, e)| e.clone())
        };
        match key.as_str() {
            "rename" | "move" => {
                let place = format!("{key}(from = \"..\", to = \"..\")");
                let Some(fields) = nested(&item, MAPPING_KEYS, &place, errors) else {
                    continue;
                };
                let from = field(&fields, "from").as_ref().and_then(lit_str);
                let to = field(&fields, "to").as_ref().and_then(lit_str);
                let (Some(from), Some(to)) = (from, to) else {
                    errors.push(
                        AttrError::new(
                            Code::MissingKey,
                            item.span(),
                            format!("{key}(...) needs `from` and `to` string literals"),
                        )
                        .help(format!("write `{place}`")),
                    );
                    continue;
                };
                let mapping = FieldMapping {
                    from,
                    to,
                    location: None,
                };
                match key.as_str() {
                    "rename" => out.renames.push(mapping),
                    _ => out.moves.push(mapping),
                }
            }
            "default" => {
                let place = "default(path = \".spec.mode\", value = \"fast\")";
                let Some(fields) = nested(&item, DEFAULT_KEYS, place, errors) else {
                    continue;
                };
                let path = field(&fields, "path").as_ref().and_then(lit_str);
                let value = field(&fields, "value").as_ref().and_then(lit_json);
                let (Some(path), Some(value)) = (path, value) else {
                    errors.push(
                        AttrError::new(
                            Code::MissingKey,
                            item.span(),
                            "default(...) needs a `path` string and a literal `value`",
                        )
                        .help(format!("write `{place}`")),
                    );
                    continue;
                };
                out.defaults.push(FieldDefault {
                    path,
                    value,
                    location: None,
                });
            }
            "preserve" => out
                .preserve
                .extend(str_list(&item, errors).into_iter().map(|path| FieldPath {
                    path,
                    location: None,
                })),
            "hook" => set_str(&mut out.hook, &item, errors),
            "stored_as" => set_str(&mut out.stored_as, &item, errors),
            _ => errors.push(unknown_key(
                &key,
                item.span(),
                CONVERSION_KEYS,
                "conversion(...)",
            )),
        }
    }
    Some(out)
}

/// A literal as JSON: strings, integers, floats and booleans.
fn lit_json(expr: &Expr) -> Option<serde_json::Value> {
    let Expr::Lit(ExprLit { lit, .. }) = expr else {
        return None;
    };
    match lit {
        Lit::Str(s) => Some(s.value().into()),
        Lit::Int(i) => i.base10_parse::<i64>().ok().map(Into::into),
        Lit::Float(f) => f
            .base10_parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(serde_json::Value::Number),
        Lit::Bool(b) => Some(b.value.into()),
        _ => None,
    }
}
