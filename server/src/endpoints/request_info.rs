//! Request info: what a request addresses, parsed once from its method, path and query
//! (no I/O), as kube-apiserver's request-info filter does. Authorization, audit and
//! admission read it; the resource link of the chain resolves its catalog entry from it.
//!
//! Resource paths:
//!
//! ```text
//! /api/{version}/{resource}[/{name}[/{subresource}]]
//! /api/{version}/namespaces/{namespace}/{resource}[/{name}[/{subresource}]]
//! /apis/{group}/{version}/...                         (same shapes)
//! /api[s/{group}]/{version}/watch/...                 (deprecated watch paths)
//! ```
//!
//! Everything else (`/healthz`, `/api`, `/apis/{group}/{version}`, `/openapi/v3`) is a
//! non-resource request whose verb is the lower-case HTTP method.

use codegen::endpoints::{PathKind, Subresource, Verb};

/// What a request addresses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestInfo {
    /// Whether the path names a resource (otherwise only `path` and `verb` are set).
    pub is_resource_request: bool,
    /// The URL path as received.
    pub path: String,
    /// The API verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`) of a resource request; the lower-case HTTP method of any other.
    pub verb: String,
    /// `api` or `apis`.
    pub api_prefix: String,
    /// Empty for the core group.
    pub api_group: String,
    pub api_version: String,
    /// The namespace the path names (for `/api/v1/namespaces/{name}`, the namespace
    /// itself, as upstream records it).
    pub namespace: Option<String>,
    pub resource: String,
    pub subresource: Option<String>,
    pub name: Option<String>,
    /// The path went through `namespaces/{namespace}/` before the resource.
    pub in_namespace: bool,
    /// A deprecated `/watch/` path.
    pub legacy_watch: bool,
    /// Segments after the subresource (no path of the endpoints table has them).
    pub trailing: bool,
}

/// The API prefix of groupless (core) paths.
const CORE_PREFIX: &str = "api";
/// The API prefix of named groups.
const GROUP_PREFIX: &str = "apis";
/// Namespace subresources that are not resources of their own (`namespaces/x/status`).
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

/// Whether a query parameter value turns a boolean option on, as the handlers read it.
fn is_true(v: &str) -> bool {
    matches!(v, "true" | "1")
}

impl RequestInfo {
    /// Parses a request. Never fails: a path that is not a resource path is a
    /// non-resource request.
    pub fn parse(method: &str, path: &str, query: &str) -> RequestInfo {
        let method = method.to_ascii_lowercase();
        let mut info = RequestInfo {
            path: path.to_string(),
            verb: method.clone(),
            ..RequestInfo::default()
        };
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (prefix, rest) = match parts.as_slice() {
            [p, rest @ ..] if *p == CORE_PREFIX && rest.len() >= 2 => (*p, rest),
            // /apis/{group}/{version}/{resource}: at least three parts after the prefix.
            [p, rest @ ..] if *p == GROUP_PREFIX && rest.len() >= 3 => (*p, rest),
            _ => return info,
        };
        info.api_prefix = prefix.to_string();
        let mut rest = rest;
        if prefix == GROUP_PREFIX {
            info.api_group = rest[0].to_string();
            rest = &rest[1..];
        }
        info.api_version = rest[0].to_string();
        rest = &rest[1..];

        let verb = if rest.first() == Some(&"watch") {
            if rest.len() < 2 {
                // `/api/v1/watch` names no resource.
                return info;
            }
            info.legacy_watch = true;
            rest = &rest[1..];
            Some(Verb::Watch)
        } else {
            match method.as_str() {
                "post" => Some(Verb::Create),
                "get" | "head" => Some(Verb::Get),
                "put" => Some(Verb::Update),
                "patch" => Some(Verb::Patch),
                "delete" => Some(Verb::Delete),
                _ => None,
            }
        };
        info.is_resource_request = true;

        if rest.first() == Some(&"namespaces") && rest.len() > 1 {
            info.namespace = Some(rest[1].to_string());
            if rest.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&rest[2]) {
                info.in_namespace = true;
                rest = &rest[2..];
            }
        }
        let segment = |i: usize| rest.get(i).filter(|s| !s.is_empty()).map(|s| s.to_string());
        info.resource = rest.first().map(|s| s.to_string()).unwrap_or_default();
        info.name = segment(1);
        info.subresource = segment(2);
        info.trailing = rest.iter().skip(3).any(|s| !s.is_empty());

        let verb = match verb {
            // A collection GET is a list, or a watch with `?watch=true`.
            Some(Verb::Get) if info.name.is_none() => {
                if watch_requested(query) {
                    Some(Verb::Watch)
                } else {
                    Some(Verb::List)
                }
            }
            Some(Verb::Delete) if info.name.is_none() => Some(Verb::DeleteCollection),
            other => other,
        };
        info.verb = verb.map(|v| v.as_str().to_string()).unwrap_or_default();
        info
    }

    /// The API verb of a resource request.
    pub fn resource_verb(&self) -> Option<Verb> {
        Verb::parse(&self.verb).filter(|_| self.is_resource_request)
    }

    /// Which kind of path of the endpoints table this is, for a kind that is namespaced
    /// or not; `None` when no path of that shape exists (`/api/v1/configmaps/x`, a
    /// cluster-scoped kind under a namespace, an unknown subresource).
    /// `subresource` names the resource's subresources (the endpoints table's).
    pub fn path_kind(
        &self,
        namespaced: bool,
        subresource: impl Fn(&str) -> Option<Subresource>,
    ) -> Option<PathKind> {
        let empty_namespace = self.in_namespace && self.namespace.as_deref() == Some("");
        if (self.in_namespace && !namespaced) || empty_namespace {
            return None;
        }
        if self.resource.is_empty() || self.trailing {
            return None;
        }
        let all_namespaces = namespaced && !self.in_namespace;
        Some(match (&self.name, &self.subresource, self.legacy_watch) {
            (Some(_), _, _) if all_namespaces => return None,
            (Some(_), Some(sub), false) => PathKind::Subresource(subresource(sub)?),
            (Some(_), Some(_), true) => return None,
            (Some(_), None, false) => PathKind::Object,
            (Some(_), None, true) => PathKind::WatchObject,
            (None, _, false) if all_namespaces => PathKind::AllNamespaces,
            (None, _, true) if all_namespaces => PathKind::WatchAllNamespaces,
            (None, _, false) => PathKind::Collection,
            (None, _, true) => PathKind::WatchCollection,
        })
    }
}

/// Whether the query asks for a watch (`watch=true` or `watch=1`).
fn watch_requested(query: &str) -> bool {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
        .any(|(k, v)| k == "watch" && is_true(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(method, path, verb, prefix, group, version, namespace, resource, name, subresource)`.
    type Case<'a> = (
        &'a str,
        &'a str,
        &'a str,
        &'a str,
        &'a str,
        &'a str,
        &'a str,
        &'a str,
        &'a str,
        &'a str,
    );

    #[test]
    fn resource_paths() {
        let cases: &[Case] = &[
            // Core group, namespaced.
            (
                "GET",
                "/api/v1/namespaces/other/pods",
                "list",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods/foo",
                "get",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "foo",
                "",
            ),
            (
                "GET",
                "/api/v1/pods",
                "list",
                "api",
                "",
                "v1",
                "",
                "pods",
                "",
                "",
            ),
            (
                "POST",
                "/api/v1/namespaces/other/pods",
                "create",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "PUT",
                "/api/v1/namespaces/other/pods/foo",
                "update",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "foo",
                "",
            ),
            (
                "PATCH",
                "/api/v1/namespaces/other/pods/foo",
                "patch",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "foo",
                "",
            ),
            (
                "DELETE",
                "/api/v1/namespaces/other/pods/foo",
                "delete",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "foo",
                "",
            ),
            (
                "DELETE",
                "/api/v1/namespaces/other/pods",
                "deletecollection",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "HEAD",
                "/api/v1/namespaces/other/pods/foo",
                "get",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "foo",
                "",
            ),
            // Subresources.
            (
                "GET",
                "/api/v1/namespaces/other/pods/foo/status",
                "get",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "foo",
                "status",
            ),
            (
                "PUT",
                "/apis/example.dev/v1/namespaces/a/widgets/w/scale",
                "update",
                "apis",
                "example.dev",
                "v1",
                "a",
                "widgets",
                "w",
                "scale",
            ),
            // Namespaces themselves: the namespace is recorded as upstream does.
            (
                "GET",
                "/api/v1/namespaces",
                "list",
                "api",
                "",
                "v1",
                "",
                "namespaces",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/namespaces/other",
                "get",
                "api",
                "",
                "v1",
                "other",
                "namespaces",
                "other",
                "",
            ),
            (
                "PUT",
                "/api/v1/namespaces/other/status",
                "update",
                "api",
                "",
                "v1",
                "other",
                "namespaces",
                "other",
                "status",
            ),
            (
                "PUT",
                "/api/v1/namespaces/other/finalize",
                "update",
                "api",
                "",
                "v1",
                "other",
                "namespaces",
                "other",
                "finalize",
            ),
            // Deprecated watch paths.
            (
                "GET",
                "/api/v1/watch/pods",
                "watch",
                "api",
                "",
                "v1",
                "",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/watch/namespaces/other/pods",
                "watch",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/watch/namespaces/other/pods/foo",
                "watch",
                "api",
                "",
                "v1",
                "other",
                "pods",
                "foo",
                "",
            ),
            (
                "GET",
                "/apis/example.dev/v1/watch/gadgets/g",
                "watch",
                "apis",
                "example.dev",
                "v1",
                "",
                "gadgets",
                "g",
                "",
            ),
            // Named groups, cluster-scoped.
            (
                "GET",
                "/apis/example.dev/v1/gadgets",
                "list",
                "apis",
                "example.dev",
                "v1",
                "",
                "gadgets",
                "",
                "",
            ),
            (
                "DELETE",
                "/apis/example.dev/v1/gadgets",
                "deletecollection",
                "apis",
                "example.dev",
                "v1",
                "",
                "gadgets",
                "",
                "",
            ),
            (
                "GET",
                "/apis/example.dev/v1/gadgets/",
                "list",
                "apis",
                "example.dev",
                "v1",
                "",
                "gadgets",
                "",
                "",
            ),
            // An unknown method is a resource request without a verb.
            (
                "OPTIONS",
                "/api/v1/pods",
                "",
                "api",
                "",
                "v1",
                "",
                "pods",
                "",
                "",
            ),
        ];
        for &(method, path, verb, prefix, group, version, ns, resource, name, sub) in cases {
            let info = RequestInfo::parse(method, path, "");
            let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
            assert!(info.is_resource_request, "{method} {path}");
            assert_eq!(
                (
                    info.verb.as_str(),
                    info.api_prefix.as_str(),
                    info.api_group.as_str(),
                    info.api_version.as_str(),
                    info.namespace.clone(),
                    info.resource.as_str(),
                    info.name.clone(),
                    info.subresource.clone(),
                ),
                (
                    verb,
                    prefix,
                    group,
                    version,
                    some(ns),
                    resource,
                    some(name),
                    some(sub)
                ),
                "{method} {path}"
            );
        }
    }

    #[test]
    fn watch_parameter_turns_a_list_into_a_watch() {
        for (query, verb) in [
            ("watch=true", "watch"),
            ("watch=1", "watch"),
            ("limit=5&watch=true", "watch"),
            ("watch=false", "list"),
            ("watch", "list"),
            ("", "list"),
        ] {
            let info = RequestInfo::parse("GET", "/api/v1/namespaces/a/configmaps", query);
            assert_eq!(info.verb, verb, "{query}");
        }
        // On one object `?watch` changes nothing (a GET of it), as upstream.
        let info = RequestInfo::parse("GET", "/api/v1/namespaces/a/configmaps/c", "watch=true");
        assert_eq!(info.verb, "get");
    }

    #[test]
    fn non_resource_paths() {
        for (method, path) in [
            ("GET", "/"),
            ("GET", "/healthz"),
            ("GET", "/api"),
            ("GET", "/api/v1"),
            ("GET", "/apis"),
            ("GET", "/apis/example.dev"),
            ("GET", "/apis/example.dev/v1"),
            ("GET", "/api/v1/watch"),
            ("GET", "/openapi/v3/apis/example.dev/v1"),
            ("POST", "/version"),
        ] {
            let info = RequestInfo::parse(method, path, "");
            assert!(!info.is_resource_request, "{path}");
            assert_eq!(info.verb, method.to_ascii_lowercase(), "{path}");
        }
    }

    #[test]
    fn path_kinds_follow_the_kind_scope() {
        let kind = |path: &str, namespaced: bool| {
            RequestInfo::parse("GET", path, "").path_kind(namespaced, |s| match s {
                "status" => Some(codegen::endpoints::Subresource::Status),
                "scale" => Some(codegen::endpoints::Subresource::Scale),
                _ => None,
            })
        };
        use PathKind::*;
        assert_eq!(
            kind("/api/v1/namespaces/a/configmaps", true),
            Some(Collection)
        );
        assert_eq!(kind("/api/v1/configmaps", true), Some(AllNamespaces));
        assert_eq!(
            kind("/api/v1/namespaces/a/configmaps/c", true),
            Some(Object)
        );
        assert_eq!(kind("/api/v1/configmaps/c", true), None);
        assert_eq!(
            kind("/api/v1/watch/configmaps", true),
            Some(WatchAllNamespaces)
        );
        assert_eq!(
            kind("/api/v1/watch/namespaces/a/configmaps/c", true),
            Some(WatchObject)
        );
        assert_eq!(kind("/api/v1/namespaces", false), Some(Collection));
        assert_eq!(kind("/api/v1/namespaces/a", false), Some(Object));
        assert_eq!(
            kind("/api/v1/namespaces/a/status", false),
            Some(Subresource(codegen::endpoints::Subresource::Status))
        );
        assert_eq!(kind("/api/v1/namespaces/a/finalize", false), None);
        assert_eq!(
            kind("/apis/example.dev/v1/namespaces/a/gadgets", false),
            None
        );
        assert_eq!(
            kind("/apis/example.dev/v1/gadgets/g/scale", false),
            Some(Subresource(codegen::endpoints::Subresource::Scale))
        );
        assert_eq!(kind("/apis/example.dev/v1/gadgets/g/exec", false), None);
        assert_eq!(
            kind("/apis/example.dev/v1/watch/gadgets", false),
            Some(WatchCollection)
        );
        assert_eq!(kind("/apis/example.dev/v1/gadgets/g/status/x", false), None);
        assert_eq!(kind("/api/v1/namespaces//configmaps", true), None);
    }
}
