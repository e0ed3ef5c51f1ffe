//! `catalog.rs`: the one static table every part of the server reads (routes, discovery,
//! OpenAPI, storage keys).

use proc_macro2::TokenStream;
use quote::quote;

use crate::model::{ResourceDef, Scope};

pub fn emit(defs: &[ResourceDef]) -> TokenStream {
    let entries = defs.iter().map(entry);
    quote! {
        //! The resource catalog: one entry per definition.
        use crate::catalog::{PrinterColumnDefinition, ResourceDefinition, ScaleDefinition};

        /// Every resource the definitions declare, sorted by group, version and kind.
        pub static RESOURCES: &[ResourceDefinition] = &[#(#entries),*];
    }
}

fn opt(v: &Option<String>) -> TokenStream {
    match v {
        Some(s) => quote!(Some(#s)),
        None => quote!(None),
    }
}

fn entry(d: &ResourceDef) -> TokenStream {
    let (group, version, kind, list_kind, plural, singular) = (
        &d.group,
        &d.version,
        &d.kind,
        &d.list_kind,
        &d.plural,
        &d.singular,
    );
    let namespaced = d.scope == Scope::Namespaced;
    let short_names = &d.short_names;
    let categories = &d.categories;
    let status = d.subresources.status;
    let scale = match &d.subresources.scale {
        Some(s) => {
            let (spec, status) = (&s.spec_replicas_path, &s.status_replicas_path);
            let selector = opt(&s.label_selector_path);
            quote!(Some(ScaleDefinition { spec_replicas_path: #spec, status_replicas_path: #status, label_selector_path: #selector }))
        }
        None => quote!(None),
    };
    let columns = d.printer_columns.iter().map(|c| {
        let (name, type_, json_path, priority) = (&c.name, &c.type_, &c.json_path, c.priority);
        let format = opt(&c.format);
        let description = opt(&c.description);
        quote!(PrinterColumnDefinition { name: #name, type_: #type_, format: #format, description: #description, priority: #priority, json_path: #json_path })
    });
    let selectable = d
        .selectable_fields
        .iter()
        .map(|p| p.trim_start_matches('.').to_string());
    let schema =
        serde_json::to_string(&d.schema.to_json(true)).expect("JSON values always serialize");
    let source = d.location.file.as_str();
    quote! {
        ResourceDefinition {
            group: #group,
            version: #version,
            kind: #kind,
            list_kind: #list_kind,
            plural: #plural,
            singular: #singular,
            namespaced: #namespaced,
            short_names: &[#(#short_names),*],
            categories: &[#(#categories),*],
            status_subresource: #status,
            scale: #scale,
            printer_columns: &[#(#columns),*],
            selectable_fields: &[#(#selectable),*],
            schema: #schema,
            source: #source,
        }
    }
}
