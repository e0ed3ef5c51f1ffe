//! `types.rs` (typed structs for YAML definitions) and `mod.rs` (module tree, Rust
//! definitions mounted from `api-defs/` as they are, OpenAPI document table).

use std::collections::BTreeMap;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

use crate::model::{Origin, ResourceDef, Schema};
use crate::names::upper_camel;

pub fn emit_mod(defs: &[ResourceDef]) -> TokenStream {
    let rust_defs: Vec<(String, String)> = {
        let mut v: Vec<(String, String)> = defs
            .iter()
            .filter(|d| matches!(d.origin, Origin::Rust { .. }))
            .map(|d| {
                (
                    module_of_file(&d.location.file),
                    format!("../../../{}", d.location.file),
                )
            })
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let rust_mods = rust_defs.iter().map(|(m, path)| {
        let ident = safe_ident(m);
        let doc = format!(
            "Rust definitions from `{}`.",
            path.trim_start_matches("../../../")
        );
        quote! {
            #[doc = #doc]
            #[path = #path]
            pub mod #ident;
        }
    });
    let gvs: Vec<String> = {
        let mut v: Vec<String> = defs
            .iter()
            .map(|d| d.url_prefix().trim_start_matches('/').to_string())
            .collect();
        v.dedup();
        v
    };
    let docs = gvs.iter().map(|gv| {
        let file = format!("openapi/{}.json", gv.replace('/', "__"));
        quote!((#gv, include_str!(#file)))
    });
    quote! {
        //! Code generated from `api-defs/`. Never edit by hand: change the definitions and
        //! run `cargo run -p codegen`.
        pub mod types;
        #(#rust_mods)*

        /// Every definition (codegen's model, as JSON), which the server turns into catalog
        /// entries at start-up.
        pub static CATALOG: &str = include_str!("catalog.json");

        /// The OpenAPI v3 documents by group-version path (`api/v1`, `apis/<group>/<version>`),
        /// which the server's own documents must equal.
        #[cfg(test)]
        pub static OPENAPI_V3: &[(&str, &str)] = &[#(#docs),*];
    }
}

/// Module name for a Rust definition file: its stem, made an identifier.
fn module_of_file(file: &str) -> String {
    let stem = file
        .rsplit('/')
        .next()
        .unwrap_or(file)
        .trim_end_matches(".rs");
    stem.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

pub fn emit_types(defs: &[ResourceDef]) -> TokenStream {
    let mut by_module: BTreeMap<String, Vec<TokenStream>> = BTreeMap::new();
    // Kubernetes' built-in kinds have their Rust types in k8s-openapi, which clients use;
    // a second copy of the hundreds of structs under Pod would only slow every build.
    for d in defs
        .iter()
        .filter(|d| d.origin == Origin::Yaml && !d.builtin)
    {
        let module = if d.group.is_empty() {
            format!("core_{}", d.version)
        } else {
            format!("{}_{}", d.group.replace(['.', '-'], "_"), d.version)
        };
        let mut structs = Vec::new();
        let doc = d.schema.description.clone().unwrap_or_else(|| {
            format!(
                "{} ({}), from `{}`.",
                d.kind,
                d.api_version(),
                d.location.file
            )
        });
        struct_def(&d.kind, &doc, &d.schema, Some(d), &mut structs);
        by_module.entry(module).or_default().extend(structs);
    }
    let modules = by_module.into_iter().map(|(m, structs)| {
        let ident = format_ident!("{}", m);
        quote! {
            #[allow(missing_docs)]
            pub mod #ident {
                use serde::{Deserialize, Serialize};
                use schemars::JsonSchema;
                #(#structs)*
            }
        }
    });
    quote! {
        //! Typed Rust for the YAML definitions of custom kinds (serde + schemars); the
        //! built-in kinds' are k8s-openapi's. With the `client` feature each kind also
        //! carries `apiVersion`, `kind` and `metadata` and implements k8s-openapi's
        //! `Resource`, `ListableResource` and `Metadata`, so it is a `kube::Resource`
        //! (`kube::Api<Widget>`).
        #(#modules)*
    }
}

/// The struct `name` of `schema` (and the structs of its parts, first); `object` is the
/// definition when the struct is a kind's, which gets the object fields and traits.
fn struct_def(
    name: &str,
    doc: &str,
    schema: &Schema,
    object: Option<&ResourceDef>,
    out: &mut Vec<TokenStream>,
) {
    let ident = format_ident!("{}", name);
    let fields: Vec<TokenStream> = schema
        .properties
        .iter()
        .filter(|(k, _)| !["apiVersion", "kind", "metadata"].contains(&k.as_str()))
        .map(|(prop, s)| {
            let ty = rust_type(&format!("{name}{}", upper_camel(prop)), s, out);
            let field = field_ident(prop);
            let doc = s.description.clone().unwrap_or_default();
            let required = schema.required.contains(prop);
            let (ty, attrs) = if required {
                (ty, quote!())
            } else {
                (
                    quote!(Option<#ty>),
                    quote!(#[serde(default, skip_serializing_if = "Option::is_none")]),
                )
            };
            let doc_attr = if doc.is_empty() {
                quote!()
            } else {
                quote!(#[doc = #doc])
            };
            quote! {
                #doc_attr
                #[serde(rename = #prop)]
                #attrs
                pub #field: #ty
            }
        })
        .collect();
    let object_fields = object.map(|_| super::client::object_fields());
    out.push(quote! {
        #[doc = #doc]
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
        pub struct #ident {
            #object_fields
            #(#fields),*
        }
    });
    if let Some(d) = object {
        out.push(super::client::impls(d));
    }
}

fn rust_type(name: &str, s: &Schema, out: &mut Vec<TokenStream>) -> TokenStream {
    if s.int_or_string || (s.preserve_unknown_fields && s.properties.is_empty()) {
        return quote!(serde_json::Value);
    }
    match s.type_.as_deref() {
        Some("string") => quote!(String),
        Some("boolean") => quote!(bool),
        Some("integer") if s.format.as_deref() == Some("int32") => quote!(i32),
        Some("integer") => quote!(i64),
        Some("number") => quote!(f64),
        Some("array") => {
            let inner = s
                .items
                .as_deref()
                .map(|i| rust_type(&format!("{name}Item"), i, out))
                .unwrap_or(quote!(serde_json::Value));
            quote!(Vec<#inner>)
        }
        Some("object") if !s.properties.is_empty() => {
            let doc = s
                .description
                .clone()
                .unwrap_or_else(|| format!("The `{name}` part."));
            struct_def(name, &doc, s, None, out);
            let ident = format_ident!("{}", name);
            quote!(#ident)
        }
        Some("object") => match &s.additional_properties {
            Some(a) => {
                let inner = rust_type(&format!("{name}Value"), a, out);
                quote!(std::collections::BTreeMap<String, #inner>)
            }
            None => quote!(serde_json::Value),
        },
        _ => quote!(serde_json::Value),
    }
}

/// The Rust field name of property `prop` (`lastTransitionTime` → `last_transition_time`).
pub(super) fn field_ident(prop: &str) -> syn::Ident {
    let mut snake = String::new();
    for (i, c) in prop.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                snake.push('_');
            }
            snake.push(c.to_ascii_lowercase());
        } else if c.is_ascii_alphanumeric() {
            snake.push(c);
        } else {
            snake.push('_');
        }
    }
    if snake.starts_with(|c: char| c.is_ascii_digit()) {
        snake.insert(0, '_');
    }
    safe_ident(&snake)
}

/// An identifier for `name`, raw (`r#type`) when it is a keyword.
fn safe_ident(name: &str) -> syn::Ident {
    match name {
        "self" | "super" | "crate" | "Self" | "_" => format_ident!("{}_", name),
        _ if syn::parse_str::<syn::Ident>(name).is_err() => {
            syn::Ident::new_raw(name, Span::call_site())
        }
        _ => format_ident!("{}", name),
    }
}
