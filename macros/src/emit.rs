//! The inherent impl `#[derive(Resource)]` expands to, from checked attributes.

use codegen::attrs::ResourceAttrs;
use codegen::model::Scope;
use codegen::names::infer_plural;
use proc_macro2::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Fields, FieldsNamed, Type};

/// The resource identity with every default filled in, as codegen's loader fills them.
struct Identity {
    group: String,
    version: String,
    kind: String,
    plural: String,
    singular: String,
    namespaced: bool,
    short_names: Vec<String>,
    categories: Vec<String>,
    status: bool,
}

impl Identity {
    fn new(attrs: ResourceAttrs) -> Self {
        // parse_resource_attrs only succeeds when group, version and kind are present.
        let kind = attrs.kind.unwrap_or_default();
        Identity {
            group: attrs.group.unwrap_or_default(),
            version: attrs.version.unwrap_or_default(),
            plural: attrs.plural.unwrap_or_else(|| infer_plural(&kind)),
            singular: attrs.singular.unwrap_or_else(|| kind.to_lowercase()),
            kind,
            namespaced: attrs.scope.unwrap_or(Scope::Namespaced) == Scope::Namespaced,
            short_names: attrs.short_names,
            categories: attrs.categories,
            status: attrs.status,
        }
    }

    /// `group/version`, or `version` for the core group.
    fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `/api/<version>` for the core group, `/apis/<group>/<version>` otherwise.
    fn url_prefix(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }
}

/// `impl<..> Name<..> { pub const GROUP ..; ...; pub fn api_resource_path(..) }`.
pub(crate) fn resource_impl(input: &DeriveInput, attrs: ResourceAttrs) -> TokenStream {
    let id = Identity::new(attrs);
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();

    let Identity {
        group,
        version,
        kind,
        plural,
        singular,
        namespaced,
        short_names,
        categories,
        status,
    } = &id;
    let api_version = id.api_version();
    let prefix = id.url_prefix();
    let client = client_impls(input, &id);
    let cluster_path = format!("{prefix}/{plural}");

    let group_doc = if group.is_empty() {
        "API group: the core group (`\"\"`), served under `/api`.".to_string()
    } else {
        format!("API group: `{group}`.")
    };
    let version_doc = format!("API version within the group: `{version}`.");
    let kind_doc = format!("Kind, as written in an object's `kind` field: `{kind}`.");
    let api_version_doc =
        format!("`apiVersion` as written in objects: `{api_version}` (group/version, or version alone for the core group).");
    let plural_doc = format!("Lower-case plural used in URLs: `{plural}`.");
    let singular_doc = format!("Lower-case singular name: `{singular}`.");
    let namespaced_doc = if *namespaced {
        "Whether objects live in a namespace: `true` (namespaced)."
    } else {
        "Whether objects live in a namespace: `false` (cluster-scoped)."
    };
    let short_names_doc = format!(
        "Short names accepted by `kubectl`: {}.",
        doc_list(short_names)
    );
    let categories_doc = format!(
        "Categories the resource belongs to (e.g. `all`): {}.",
        doc_list(categories)
    );
    let status_doc = format!("Whether the `status` subresource is served: `{status}`.");

    let (path_doc, path_body) = if *namespaced {
        (
            format!(
                "The collection URL path: `{prefix}/namespaces/<namespace>/{plural}` for `Some(namespace)`, \
                 `{cluster_path}` (all namespaces) for `None` or `Some(\"\")`."
            ),
            quote! {
                match namespace {
                    ::core::option::Option::Some(ns) if !ns.is_empty() => {
                        ::std::format!("{}/namespaces/{}/{}", #prefix, ns, #plural)
                    }
                    _ => ::std::string::String::from(#cluster_path),
                }
            },
        )
    } else {
        (
            format!("The collection URL path: `{cluster_path}`. The resource is cluster-scoped, so `namespace` is ignored."),
            quote! {
                let _ = namespace;
                ::std::string::String::from(#cluster_path)
            },
        )
    };

    quote! {
        #[automatically_derived]
        impl #impl_generics #name #ty_generics #where_clause {
            #[doc = #group_doc]
            pub const GROUP: &'static str = #group;
            #[doc = #version_doc]
            pub const VERSION: &'static str = #version;
            #[doc = #kind_doc]
            pub const KIND: &'static str = #kind;
            #[doc = #api_version_doc]
            pub const API_VERSION: &'static str = #api_version;
            #[doc = #plural_doc]
            pub const PLURAL: &'static str = #plural;
            #[doc = #singular_doc]
            pub const SINGULAR: &'static str = #singular;
            #[doc = #namespaced_doc]
            pub const NAMESPACED: bool = #namespaced;
            #[doc = #short_names_doc]
            pub const SHORT_NAMES: &'static [&'static str] = &[#(#short_names),*];
            #[doc = #categories_doc]
            pub const CATEGORIES: &'static [&'static str] = &[#(#categories),*];
            #[doc = #status_doc]
            pub const HAS_STATUS: bool = #status;

            #[doc = #path_doc]
            pub fn api_resource_path(namespace: ::core::option::Option<&str>) -> ::std::string::String {
                #path_body
            }
        }

        #client
    }
}

/// With a `metadata` field (k8s-openapi's `ObjectMeta`), k8s-openapi's `Resource`,
/// `ListableResource` and `Metadata` traits, through which kube-core's blanket impl makes
/// the struct a `kube::Resource`; and `new(name, spec)` when the struct also has
/// `api_version` and `kind` and every field but `spec` is an `Option`. The paths are the
/// user crate's `k8s_openapi` (the field's type already names it). A field under a false
/// `#[cfg]` is gone before the derive runs, so the impls follow it.
fn client_impls(input: &DeriveInput, id: &Identity) -> TokenStream {
    let Data::Struct(data) = &input.data else {
        return quote!();
    };
    let Fields::Named(fields) = &data.fields else {
        return quote!();
    };
    let has = |name: &str| {
        fields
            .named
            .iter()
            .any(|f| f.ident.as_ref().is_some_and(|i| i == name))
    };
    if !has("metadata") {
        return quote!();
    }
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let api_version = id.api_version();
    let Identity {
        group,
        version,
        kind,
        plural,
        namespaced,
        ..
    } = id;
    let list_kind = format!("{kind}List");
    let scope = if *namespaced {
        quote!(::k8s_openapi::NamespaceResourceScope)
    } else {
        quote!(::k8s_openapi::ClusterResourceScope)
    };
    let object_meta = quote!(::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta);
    let constructor = constructor(input, fields, &object_meta);
    quote! {
        #[automatically_derived]
        impl #impl_generics ::k8s_openapi::Resource for #name #ty_generics #where_clause {
            const API_VERSION: &'static str = #api_version;
            const GROUP: &'static str = #group;
            const KIND: &'static str = #kind;
            const VERSION: &'static str = #version;
            const URL_PATH_SEGMENT: &'static str = #plural;
            type Scope = #scope;
        }
        #[automatically_derived]
        impl #impl_generics ::k8s_openapi::ListableResource for #name #ty_generics #where_clause {
            const LIST_KIND: &'static str = #list_kind;
        }
        #[automatically_derived]
        impl #impl_generics ::k8s_openapi::Metadata for #name #ty_generics #where_clause {
            type Ty = #object_meta;
            fn metadata(&self) -> &Self::Ty {
                &self.metadata
            }
            fn metadata_mut(&mut self) -> &mut Self::Ty {
                &mut self.metadata
            }
        }
        #constructor
    }
}

/// `new(name, spec)`: `api_version` and `kind` filled in, `metadata` named, every
/// other field `None`. Emitted only when that is every field there is.
fn constructor(
    input: &DeriveInput,
    fields: &FieldsNamed,
    object_meta: &TokenStream,
) -> TokenStream {
    let name = &input.ident;
    if !input.generics.params.is_empty() {
        return quote!();
    }
    let mut spec_type = None;
    let mut others = Vec::new();
    let mut object_fields = 0;
    for f in &fields.named {
        let Some(ident) = &f.ident else {
            return quote!();
        };
        match ident.to_string().as_str() {
            "api_version" | "kind" | "metadata" => object_fields += 1,
            "spec" => spec_type = Some(&f.ty),
            _ if is_option(&f.ty) => others.push(ident),
            _ => return quote!(),
        }
    }
    let (Some(spec_type), 3) = (spec_type, object_fields) else {
        return quote!();
    };
    let doc = format!(
        "A new `{name}` named `name` with `spec`; the server fills in the rest of the metadata."
    );
    quote! {
        #[automatically_derived]
        impl #name {
            #[doc = #doc]
            pub fn new(name: &str, spec: #spec_type) -> Self {
                #name {
                    api_version: <Self as ::k8s_openapi::Resource>::API_VERSION.to_string(),
                    kind: <Self as ::k8s_openapi::Resource>::KIND.to_string(),
                    metadata: #object_meta {
                        name: ::core::option::Option::Some(name.to_string()),
                        ..::core::default::Default::default()
                    },
                    spec,
                    #(#others: ::core::option::Option::None,)*
                }
            }
        }
    }
}

/// Whether `ty` is written `Option<..>` (any path ending in it).
fn is_option(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none()
        && p.path.segments.last().is_some_and(|s| s.ident == "Option"))
}

/// `` `a`, `b` `` or `none`, for doc comments.
fn doc_list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items
            .iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
