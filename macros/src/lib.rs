//! `#[derive(Resource)]`: declare a Kubernetes-style resource on a Rust struct.
//!
//! The derive reads one or more `#[resource(...)]` attributes and gives the struct an
//! inherent impl with the resource's identity as associated constants (`GROUP`,
//! `VERSION`, `KIND`, `API_VERSION`, `PLURAL`, `SINGULAR`, `NAMESPACED`, `SHORT_NAMES`,
//! `CATEGORIES`, `HAS_STATUS`) and an `api_resource_path` function that builds the
//! collection URL path.
//!
//! A struct with a `metadata` field (k8s-openapi's `ObjectMeta`) also gets k8s-openapi's
//! `Resource`, `ListableResource` and `Metadata` impls, through which kube-core makes it a
//! `kube::Resource` (`kube::Api<T>` works); with `api_version` and `kind` fields too and
//! every other field but `spec` an `Option`, a `new(name, spec)` constructor. The impls
//! name `::k8s_openapi`, which the crate declaring such a field depends on already.
//!
//! The attribute grammar lives in `codegen::attrs`, shared with codegen's loader for
//! Rust definitions in `api-defs/`, so the macro and the generator always accept the same
//! attributes and report the same errors.
//!
//! # Attribute grammar
//!
//! ```text
//! #[resource(
//!     group = "example.dev",          // required; "" for the core group (/api/v1)
//!     version = "v1",                 // required
//!     kind = "Gadget",                // required
//!     namespaced | cluster,           // optional flag; namespaced when neither is given
//!     plural = "gadgets",             // optional; inferred from kind ("Gadget" → "gadgets")
//!     singular = "gadget",            // optional; lower-cased kind
//!     shortnames = ["gd"],            // optional list of strings
//!     categories = ["all"],           // optional list of strings
//!     status,                         // optional flag: the status subresource is served
//!     scale(spec_replicas_path = ".spec.replicas",
//!           status_replicas_path = ".status.replicas",
//!           label_selector_path = ".status.selector"),   // optional; last one wins
//!     printcolumn(name = "Size", type = "integer", json_path = ".spec.size",
//!                 description = "...", priority = 1, format = "int32"),  // repeatable
//! )]
//! ```
//!
//! Keys may be split over several `#[resource(...)]` attributes. Every mistake is
//! reported at once, each at its own span: unknown keys (with a "did you mean"
//! suggestion), values of the wrong type, flags given a value, conflicting scopes and
//! missing required keys. Each carries codegen's diagnostic code (`[E0002]`) and a
//! `help:` line; `cargo run -p codegen -- --explain E0002` says more.
//!
//! Only the attribute syntax is checked here. Naming rules (DNS-subdomain groups,
//! UpperCamelCase kinds, printer column types, ...) are checked by `cargo run -p codegen`
//! when the definition lives in `api-defs/`.
//!
//! # Example
//!
//! ```
//! use apiserver_macros::Resource;
//!
//! /// An example namespaced resource.
//! #[derive(Resource)]
//! #[resource(group = "example.dev", version = "v1", kind = "Widget", namespaced,
//!            shortnames = ["wd"], status,
//!            printcolumn(name = "Size", type = "integer", json_path = ".spec.size"))]
//! pub struct Widget {
//!     pub spec: WidgetSpec,
//!     pub status: Option<WidgetStatus>,
//! }
//! # pub struct WidgetSpec { pub size: i32 }
//! # pub struct WidgetStatus { pub ready: bool }
//!
//! assert_eq!(Widget::API_VERSION, "example.dev/v1");
//! assert_eq!(Widget::PLURAL, "widgets");
//! assert_eq!(Widget::SINGULAR, "widget");
//! assert_eq!(Widget::SHORT_NAMES, &["wd"]);
//! assert!(Widget::NAMESPACED && Widget::HAS_STATUS);
//! assert_eq!(
//!     Widget::api_resource_path(Some("default")),
//!     "/apis/example.dev/v1/namespaces/default/widgets"
//! );
//! assert_eq!(Widget::api_resource_path(None), "/apis/example.dev/v1/widgets");
//! ```

use codegen::attrs::AttrError;
use codegen::Code;
use proc_macro::TokenStream;
use quote::ToTokens;
use syn::{Data, DeriveInput, Fields};

mod emit;

/// Derives the resource identity constants and `api_resource_path` from
/// `#[resource(...)]`. See the [crate docs](crate) for the attribute grammar.
#[proc_macro_derive(Resource, attributes(resource))]
pub fn derive_resource(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as DeriveInput);
    expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Parse → check → emit. Shape and attribute errors are all reported together.
fn expand(input: &DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let shape = check_shape(input);
    let attrs = codegen::attrs::parse_resource_attrs(&input.attrs, input.ident.span());
    let mut errors: Vec<syn::Error> = shape.err().into_iter().collect();
    match attrs {
        Ok(attrs) if errors.is_empty() => {
            let identity = identity_errors(input, &attrs);
            if identity.is_empty() {
                Ok(emit::resource_impl(input, attrs))
            } else {
                Err(combine(identity))
            }
        }
        Ok(_) => Err(combine(errors)),
        Err(attr_errors) => {
            errors.extend(attr_errors.iter().map(AttrError::to_compile_error));
            Err(combine(errors))
        }
    }
}

/// codegen's checks of the resource's identity (names, printer columns, scale paths),
/// the same `cargo run -p codegen` runs, reported at the struct's name. Checks that
/// need the fields' schema are left to codegen, which reads the field types.
fn identity_errors(input: &DeriveInput, attrs: &codegen::attrs::ResourceAttrs) -> Vec<syn::Error> {
    let location = codegen::Location {
        file: String::new(),
        line: 0,
        column: 0,
    };
    let schema = codegen::model::Schema {
        type_: Some("object".into()),
        ..Default::default()
    };
    let def =
        codegen::load::rust::resource_def(attrs.clone(), schema, location, input.ident.to_string());
    let mut diags = codegen::Diagnostics::default();
    codegen::validate::validate(&[def], &mut diags);
    diags
        .0
        .into_iter()
        .filter(|d| {
            matches!(
                d.code,
                Code::InvalidName | Code::UnknownValue | Code::FieldPath
            )
        })
        .map(|d| {
            AttrError {
                code: d.code,
                span: input.ident.span(),
                message: d.message,
                help: d.help,
            }
            .to_compile_error()
        })
        .collect()
}

/// Merges errors so that every one of them is emitted, each at its own span.
fn combine(errors: Vec<syn::Error>) -> syn::Error {
    errors
        .into_iter()
        .reduce(|mut all, e| {
            all.combine(e);
            all
        })
        .expect("combine is only called with at least one error")
}

/// A resource is an object with named top-level fields (`spec`, `status`, ...).
fn check_shape(input: &DeriveInput) -> Result<(), syn::Error> {
    let name = &input.ident;
    let suggestion = format!(
        "declare `pub struct {name} {{ pub spec: {name}Spec, pub status: Option<{name}Status> }}`"
    );
    // What the error points at, and what the user wrote instead of named fields.
    let (at, what, extra) = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(_) => return Ok(()),
            Fields::Unnamed(f) => (f.to_token_stream(), "a tuple struct", ""),
            Fields::Unit => (pair(&s.struct_token, name), "a unit struct", ""),
        },
        Data::Enum(e) => (
            pair(&e.enum_token, name),
            "an enum",
            " and use the enum as a field type inside the spec",
        ),
        Data::Union(u) => (pair(&u.union_token, name), "a union", ""),
    };
    let error = AttrError {
        code: Code::RustShape,
        span: syn::spanned::Spanned::span(&at),
        message: format!("#[derive(Resource)] needs a struct with named fields, not {what}"),
        help: Some(format!("{suggestion}{extra}")),
    };
    // `new_spanned` underlines every token of `at` (`enum Name`), not just the first.
    let compiled = error.to_compile_error();
    Err(syn::Error::new_spanned(at, compiled.to_string()))
}

/// `first last` as tokens, so an error underlines both (`enum Name`).
fn pair(first: &impl ToTokens, last: &impl ToTokens) -> proc_macro2::TokenStream {
    let mut tokens = first.to_token_stream();
    last.to_tokens(&mut tokens);
    tokens
}
