//! `routes.rs`: the actix-web route table of every definition, mounted by the server's
//! built-in resources link of the delegation chain.

use proc_macro2::TokenStream;
use quote::quote;

use crate::model::{ResourceDef, Scope};

pub fn emit(defs: &[ResourceDef]) -> TokenStream {
    let services = defs.iter().flat_map(resource_routes);
    quote! {
        //! Route table: every path of every definition, bound to the generic handlers.
        use actix_web::web;
        use crate::endpoints::{handlers, ResourceRoute};

        /// Mounts every generated route on `cfg`.
        pub fn configure(cfg: &mut web::ServiceConfig) {
            #(#services)*
        }
    }
}

/// Which handlers answer one path.
struct PathRoutes {
    path: String,
    subresource: Option<&'static str>,
    methods: Vec<(&'static str, &'static str)>,
}

fn resource_routes(d: &ResourceDef) -> Vec<TokenStream> {
    let prefix = d.url_prefix();
    let plural = &d.plural;
    let collection = [
        ("get", "list"),
        ("post", "create"),
        ("delete", "delete_collection"),
    ];
    let item = [
        ("get", "get"),
        ("put", "update"),
        ("patch", "patch"),
        ("delete", "delete"),
    ];
    let mut paths = Vec::new();
    let base = match d.scope {
        Scope::Namespaced => {
            paths.push(PathRoutes {
                path: format!("{prefix}/{plural}"),
                subresource: None,
                methods: vec![("get", "list")],
            });
            format!("{prefix}/namespaces/{{namespace}}/{plural}")
        }
        Scope::Cluster => format!("{prefix}/{plural}"),
    };
    paths.push(PathRoutes {
        path: base.clone(),
        subresource: None,
        methods: collection.to_vec(),
    });
    paths.push(PathRoutes {
        path: format!("{base}/{{name}}"),
        subresource: None,
        methods: item.to_vec(),
    });
    if d.subresources.status {
        paths.push(PathRoutes {
            path: format!("{base}/{{name}}/status"),
            subresource: Some("status"),
            methods: vec![("get", "get"), ("put", "update"), ("patch", "patch")],
        });
    }
    if d.subresources.scale.is_some() {
        paths.push(PathRoutes {
            path: format!("{base}/{{name}}/scale"),
            subresource: Some("scale"),
            methods: vec![("get", "get"), ("put", "update"), ("patch", "patch")],
        });
    }
    // The deprecated `/watch/` paths kube-apiserver still serves.
    let watch_base = match d.scope {
        Scope::Namespaced => {
            paths.push(PathRoutes {
                path: format!("{prefix}/watch/{plural}"),
                subresource: None,
                methods: vec![("get", "watch")],
            });
            format!("{prefix}/watch/namespaces/{{namespace}}/{plural}")
        }
        Scope::Cluster => format!("{prefix}/watch/{plural}"),
    };
    paths.push(PathRoutes {
        path: watch_base.clone(),
        subresource: None,
        methods: vec![("get", "watch")],
    });
    paths.push(PathRoutes {
        path: format!("{watch_base}/{{name}}"),
        subresource: None,
        methods: vec![("get", "watch")],
    });

    let (group, version) = (&d.group, &d.version);
    paths
        .into_iter()
        .map(|p| {
            let path = &p.path;
            let route_data = match p.subresource {
                Some(s) => quote!(ResourceRoute::subresource(#group, #version, #plural, #s)),
                None => quote!(ResourceRoute::new(#group, #version, #plural)),
            };
            let routes = p.methods.iter().map(|(method, handler)| {
                let m = syn::Ident::new(method, proc_macro2::Span::call_site());
                let h = syn::Ident::new(handler, proc_macro2::Span::call_site());
                quote!(.route(web::#m().to(handlers::#h)))
            });
            quote! {
                cfg.service(
                    web::resource(#path)
                        .app_data(#route_data)
                        #(#routes)*
                        .default_service(web::to(handlers::method_not_allowed)),
                );
            }
        })
        .collect()
}
