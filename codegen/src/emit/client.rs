//! The typed-client side of a generated kind (with the server crate's `client` feature):
//! the object fields every Kubernetes object carries and k8s-openapi's `Resource`,
//! `ListableResource` and `Metadata` traits, through which kube-core's blanket impl makes
//! the type a `kube::Resource`, so `kube::Api<Widget>` works with no glue.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::model::{ResourceDef, Scope};

/// `apiVersion`, `kind` and `metadata`, first in the kind's struct.
pub fn object_fields() -> TokenStream {
    quote! {
        /// `<group>/<version>` of the object (`new` fills it in).
        #[cfg(feature = "client")]
        #[serde(rename = "apiVersion", default)]
        #[schemars(skip)]
        pub api_version: String,
        /// The object's kind (`new` fills it in).
        #[cfg(feature = "client")]
        #[serde(default)]
        #[schemars(skip)]
        pub kind: String,
        /// Standard object metadata.
        #[cfg(feature = "client")]
        #[serde(default)]
        #[schemars(skip)]
        pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    }
}

/// The trait impls of `d`'s struct, and `new(name, spec)` when `spec` is the one field
/// an object must have.
pub fn impls(d: &ResourceDef) -> TokenStream {
    let ident = format_ident!("{}", d.kind);
    let (api_version, group, kind, version, plural, list_kind) = (
        d.api_version(),
        &d.group,
        &d.kind,
        &d.version,
        &d.plural,
        &d.list_kind,
    );
    let scope = match d.scope {
        Scope::Namespaced => quote!(k8s_openapi::NamespaceResourceScope),
        Scope::Cluster => quote!(k8s_openapi::ClusterResourceScope),
    };
    let constructor = constructor(d);
    quote! {
        #[cfg(feature = "client")]
        impl k8s_openapi::Resource for #ident {
            const API_VERSION: &'static str = #api_version;
            const GROUP: &'static str = #group;
            const KIND: &'static str = #kind;
            const VERSION: &'static str = #version;
            const URL_PATH_SEGMENT: &'static str = #plural;
            type Scope = #scope;
        }
        #[cfg(feature = "client")]
        impl k8s_openapi::ListableResource for #ident {
            const LIST_KIND: &'static str = #list_kind;
        }
        #[cfg(feature = "client")]
        impl k8s_openapi::Metadata for #ident {
            type Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
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

fn constructor(d: &ResourceDef) -> TokenStream {
    let props = &d.schema.properties;
    // `spec` is then the struct `<Kind>Spec` and every other field an `Option`.
    let spec_is_a_struct = props.iter().any(|(k, s)| {
        k == "spec" && s.type_.as_deref() == Some("object") && !s.properties.is_empty()
    });
    if !spec_is_a_struct || d.schema.required.iter().any(|r| r != "spec") {
        return quote!();
    }
    let ident = format_ident!("{}", d.kind);
    let spec_type = format_ident!("{}Spec", d.kind);
    let spec_required = d.schema.required.iter().any(|r| r == "spec");
    let spec_field = if spec_required {
        quote!(spec)
    } else {
        quote!(spec: Some(spec))
    };
    let others = props
        .iter()
        .filter(|(k, _)| k != "spec")
        .map(|(k, _)| super::types::field_ident(k));
    let doc = format!(
        "A new `{}` named `name` with `spec`; the server fills in the rest of the metadata.",
        d.kind
    );
    quote! {
        #[cfg(feature = "client")]
        impl #ident {
            #[doc = #doc]
            pub fn new(name: &str, spec: #spec_type) -> Self {
                #ident {
                    api_version: <Self as k8s_openapi::Resource>::API_VERSION.to_string(),
                    kind: <Self as k8s_openapi::Resource>::KIND.to_string(),
                    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                        name: Some(name.to_string()),
                        ..Default::default()
                    },
                    #spec_field,
                    #(#others: None,)*
                }
            }
        }
    }
}
