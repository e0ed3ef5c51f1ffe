//! Rust definitions (`api-defs/**/*.rs`): structs with `#[derive(Resource)]` and
//! `#[resource(...)]`, lowered to the same model as YAML. Field types map to the schema
//! the way schemars would describe them.

use std::collections::HashMap;

use syn::spanned::Spanned;
use syn::{Attribute, Fields, GenericArgument, Item, PathArguments, Type};

use crate::attrs::{parse_resource_attrs, ResourceAttrs};
use crate::diagnostics::{Code, Diagnostic, Diagnostics, Location};
use crate::model::{Origin, ResourceDef, Schema, Scope, Subresources};
use crate::names::{camel_case, infer_plural};

/// Fields the API machinery owns; a Rust definition may carry them but they are not schema.
const IMPLIED_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

/// Loads every `#[derive(Resource)]` struct of one Rust file.
pub fn load(file: &str, text: &str, diags: &mut Diagnostics) -> Vec<ResourceDef> {
    let ast = match syn::parse_file(text) {
        Ok(f) => f,
        Err(e) => {
            diags.push(spanned(
                Code::Syntax,
                file,
                e.span(),
                format!("invalid Rust: {e}"),
            ));
            return vec![];
        }
    };
    let items: HashMap<String, &Item> = ast
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Struct(s) => Some((s.ident.to_string(), i)),
            Item::Enum(e) => Some((e.ident.to_string(), i)),
            _ => None,
        })
        .collect();
    let lower = Lower {
        file,
        items: &items,
    };

    let mut out = Vec::new();
    for item in &ast.items {
        let Item::Struct(st) = item else { continue };
        if !derives_resource(&st.attrs) {
            continue;
        }
        // Lower the schema first so its problems are reported even when attributes are bad.
        let mut schema = lower.struct_schema(st, &st.attrs, diags, 0);
        schema.description = doc(&st.attrs);
        schema
            .properties
            .retain(|(k, _)| !IMPLIED_FIELDS.contains(&k.as_str()));
        schema
            .required
            .retain(|k| !IMPLIED_FIELDS.contains(&k.as_str()));
        let attrs = match parse_resource_attrs(&st.attrs, st.ident.span()) {
            Ok(a) => a,
            Err(errors) => {
                for e in errors {
                    let mut d = spanned(e.code, file, e.span, e.message);
                    d.help = e.help;
                    diags.push(d);
                }
                continue;
            }
        };
        out.push(resource_def(
            attrs,
            schema,
            loc(file, st.ident.span()),
            st.ident.to_string(),
        ));
    }
    out
}

/// The definition `#[resource(...)]` declares on struct `type_name`, with every default
/// filled in (shared with `#[derive(Resource)]`, which checks the same identity).
pub fn resource_def(
    attrs: ResourceAttrs,
    schema: Schema,
    location: Location,
    type_name: String,
) -> ResourceDef {
    let kind = attrs.kind.unwrap_or_default();
    ResourceDef {
        location,
        origin: Origin::Rust { type_name },
        group: attrs.group.unwrap_or_default(),
        version: attrs.version.unwrap_or_default(),
        plural: attrs.plural.unwrap_or_else(|| infer_plural(&kind)),
        singular: attrs.singular.unwrap_or_else(|| kind.to_lowercase()),
        list_kind: format!("{kind}List"),
        kind,
        scope: attrs.scope.unwrap_or(Scope::Namespaced),
        short_names: attrs.short_names,
        categories: attrs.categories,
        schema,
        subresources: Subresources {
            status: attrs.status,
            scale: attrs.scale,
            create_only: vec![],
            parts: vec![],
        },
        printer_columns: attrs.printer_columns,
        selectable_fields: attrs.selectable_fields,
        // Rust definitions declare custom kinds.
        builtin: false,
        strategy: None,
        create_only: false,
        open_api_prefix: None,
        verbs: vec![],
        storage: attrs.storage,
        conversion: attrs.conversion,
    }
}

/// A diagnostic whose caret covers `span` (when it is on one line).
fn spanned(
    code: Code,
    file: &str,
    span: proc_macro2::Span,
    message: impl Into<String>,
) -> Diagnostic {
    let (start, end) = (span.start(), span.end());
    let width = if end.line == start.line {
        end.column.saturating_sub(start.column)
    } else {
        0
    };
    Diagnostic::new(code, loc(file, span), message).with_width(width)
}

fn loc(file: &str, span: proc_macro2::Span) -> Location {
    let start = span.start();
    Location {
        file: file.to_string(),
        line: start.line.max(1),
        column: start.column + 1,
    }
}

fn derives_resource(attrs: &[Attribute]) -> bool {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("derive"))
        .any(|a| {
            let mut found = false;
            let _ = a.parse_nested_meta(|m| {
                if m.path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "Resource")
                {
                    found = true;
                }
                Ok(())
            });
            found
        })
}

/// The text of `///` doc comments, joined like rustdoc's first paragraphs.
fn doc(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value().trim().to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let text = lines.join(" ").trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// `#[serde(...)]` settings that change the wire shape.
#[derive(Default)]
struct SerdeAttrs {
    rename: Option<String>,
    rename_all_camel: bool,
    default: bool,
    skip: bool,
    flatten: bool,
}

fn serde_attrs(attrs: &[Attribute]) -> SerdeAttrs {
    let mut out = SerdeAttrs::default();
    for a in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = a.parse_nested_meta(|m| {
            let key = m
                .path
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default();
            match key.as_str() {
                "rename" => out.rename = m.value()?.parse::<syn::LitStr>().ok().map(|s| s.value()),
                "rename_all" => {
                    out.rename_all_camel = m.value()?.parse::<syn::LitStr>()?.value() == "camelCase"
                }
                "default" => {
                    out.default = true;
                    if m.input.peek(syn::Token![=]) {
                        let _ = m.value()?.parse::<syn::LitStr>();
                    }
                }
                "skip" | "skip_deserializing" => out.skip = true,
                "flatten" => out.flatten = true,
                _ => {
                    if m.input.peek(syn::Token![=]) {
                        let _ = m.value()?.parse::<syn::Expr>();
                    }
                }
            }
            Ok(())
        });
    }
    out
}

struct Lower<'a> {
    file: &'a str,
    items: &'a HashMap<String, &'a Item>,
}

impl Lower<'_> {
    fn struct_schema(
        &self,
        st: &syn::ItemStruct,
        attrs: &[Attribute],
        diags: &mut Diagnostics,
        depth: usize,
    ) -> Schema {
        let container = serde_attrs(attrs);
        let mut s = Schema {
            location: Some(loc(self.file, st.ident.span())),
            type_: Some("object".into()),
            ..Schema::default()
        };
        let Fields::Named(fields) = &st.fields else {
            diags.push(
                spanned(Code::RustType, self.file, st.ident.span(), format!("`{}` must have named fields", st.ident))
                    .with_help("resources and their parts are structs with named fields, e.g. `struct Spec { size: i32 }`"),
            );
            return s;
        };
        for f in &fields.named {
            let fa = serde_attrs(&f.attrs);
            if fa.skip {
                continue;
            }
            if fa.flatten {
                diags.push(
                    spanned(
                        Code::RustType,
                        self.file,
                        f.span(),
                        "#[serde(flatten)] is not supported in definitions",
                    )
                    .with_help("declare the fields directly on the struct"),
                );
                continue;
            }
            let ident = f
                .ident
                .as_ref()
                .map(|i| i.to_string().trim_start_matches("r#").to_string())
                .unwrap_or_default();
            let name = fa.rename.clone().unwrap_or_else(|| {
                if container.rename_all_camel {
                    camel_case(&ident)
                } else {
                    ident.clone()
                }
            });
            // The object fields a client type carries (`metadata: ObjectMeta`, ...) are
            // the API machinery's, not schema: their types are not lowered.
            if depth == 0 && IMPLIED_FIELDS.contains(&name.as_str()) {
                continue;
            }
            let (inner, optional) = match option_inner(&f.ty) {
                Some(t) => (t, true),
                None => (&f.ty, false),
            };
            let mut fs = self.type_schema(inner, diags, depth + 1);
            fs.location = Some(loc(self.file, f.span()));
            if let Some(d) = doc(&f.attrs) {
                fs.description = Some(d);
            }
            if fa.default && !optional {
                // `#[serde(default)]` reads a missing field as the type's zero value;
                // publish it as the schema default, as schemars does.
                fs.default = zero_value(&fs);
            }
            if !optional && !fa.default && !container.default {
                s.required.push(name.clone());
            }
            s.properties.push((name, fs));
        }
        s
    }

    fn type_schema(&self, ty: &Type, diags: &mut Diagnostics, depth: usize) -> Schema {
        let simple = |t: &str, f: Option<&str>| Schema {
            type_: Some(t.into()),
            format: f.map(Into::into),
            ..Schema::default()
        };
        let Type::Path(tp) = ty else {
            return self.unsupported(ty, diags);
        };
        let Some(last) = tp.path.segments.last() else {
            return self.unsupported(ty, diags);
        };
        let name = last.ident.to_string();
        match name.as_str() {
            "String" => simple("string", None),
            "bool" => simple("boolean", None),
            "i8" | "i16" | "i32" | "u8" | "u16" | "u32" => simple("integer", Some("int32")),
            "i64" | "u64" | "isize" | "usize" => simple("integer", Some("int64")),
            "f32" => simple("number", Some("float")),
            "f64" => simple("number", Some("double")),
            "Value" => Schema {
                preserve_unknown_fields: true,
                ..Schema::default()
            },
            "Vec" => match generic_args(last).as_slice() {
                [t] => Schema {
                    type_: Some("array".into()),
                    items: Some(Box::new(self.type_schema(t, diags, depth + 1))),
                    ..Schema::default()
                },
                _ => self.unsupported(ty, diags),
            },
            "BTreeMap" | "HashMap" => match generic_args(last).as_slice() {
                [k, v] if is_string(k) => Schema {
                    type_: Some("object".into()),
                    additional_properties: Some(Box::new(self.type_schema(v, diags, depth + 1))),
                    ..Schema::default()
                },
                _ => self.unsupported(ty, diags),
            },
            other => {
                match self.items.get(other) {
                    Some(_) if depth > 32 => {
                        diags.push(spanned(Code::RustType, self.file, ty.span(), format!("`{other}` nests itself too deeply; recursive types are not supported")));
                        reported()
                    }
                    Some(Item::Struct(st)) => {
                        let mut s = self.struct_schema(st, &st.attrs, diags, depth);
                        s.description = doc(&st.attrs);
                        s
                    }
                    Some(Item::Enum(en)) => self.enum_schema(en, diags),
                    _ => self.unsupported(ty, diags),
                }
            }
        }
    }

    fn enum_schema(&self, en: &syn::ItemEnum, diags: &mut Diagnostics) -> Schema {
        let mut values = Vec::new();
        for v in &en.variants {
            if !matches!(v.fields, Fields::Unit) {
                diags.push(
                    spanned(
                        Code::RustType,
                        self.file,
                        v.span(),
                        format!("enum variant `{}` carries data", v.ident),
                    )
                    .with_help(
                        "only enums of unit variants (string enums) are supported in definitions",
                    ),
                );
                continue;
            }
            let name = serde_attrs(&v.attrs)
                .rename
                .unwrap_or_else(|| v.ident.to_string());
            values.push(serde_json::Value::String(name));
        }
        Schema {
            type_: Some("string".into()),
            enum_values: values,
            description: doc(&en.attrs),
            ..Schema::default()
        }
    }

    fn unsupported(&self, ty: &Type, diags: &mut Diagnostics) -> Schema {
        let text = quote::quote!(#ty).to_string().replace(' ', "");
        diags.push(
            spanned(Code::RustType, self.file, ty.span(), format!("unsupported field type `{text}`"))
                .with_help("use String, bool, i32, i64, f64, Vec<T>, BTreeMap<String, T>, Option<T>, serde_json::Value, or a struct or enum defined in this file"),
        );
        reported()
    }
}

/// The schema of a field whose type was already reported: any value, so the schema
/// checks do not report the same field again as lacking a type.
fn reported() -> Schema {
    Schema {
        preserve_unknown_fields: true,
        ..Schema::default()
    }
}

/// `Default::default()` of a lowered type, when it is a plain JSON value.
fn zero_value(s: &Schema) -> Option<serde_json::Value> {
    use serde_json::json;
    match s.type_.as_deref() {
        Some("integer") => Some(json!(0)),
        Some("number") => Some(json!(0.0)),
        Some("boolean") => Some(json!(false)),
        Some("string") if s.enum_values.is_empty() => Some(json!("")),
        Some("array") => Some(json!([])),
        Some("object") if s.properties.is_empty() => Some(json!({})),
        _ => None,
    }
}

fn generic_args(seg: &syn::PathSegment) -> Vec<&Type> {
    match &seg.arguments {
        PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => vec![],
    }
}

fn option_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(tp) = ty else { return None };
    let last = tp.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    match generic_args(last).as_slice() {
        [t] => Some(t),
        _ => None,
    }
}

fn is_string(ty: &Type) -> bool {
    matches!(ty, Type::Path(tp) if tp.path.segments.last().is_some_and(|s| s.ident == "String"))
}
