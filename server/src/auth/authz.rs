//! Authorization: `--authorization-mode`, a chain of authorizers asked in order; the
//! first that allows or denies decides, as kube-apiserver's union authorizer. Members of
//! `system:masters` are allowed everything before any mode is asked, as upstream.

use std::sync::Arc;

use super::names::MASTERS;
use super::UserInfo;
use crate::api::ApiError;
use crate::endpoints::request_info::RequestInfo;

/// What a request asks to do (upstream's authorizer attributes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    pub user: UserInfo,
    /// An API verb (`get`, `list`, `watch`, `create`, ..., `impersonate`, `bind`), or the
    /// lower-case HTTP method of a non-resource request.
    pub verb: String,
    pub resource_request: bool,
    /// Empty at the cluster scope.
    pub namespace: String,
    pub api_group: String,
    pub api_version: String,
    pub resource: String,
    pub subresource: String,
    /// The object's name; for a list or watch with `fieldSelector=metadata.name=x`, `x`.
    pub name: String,
    /// The URL path of a non-resource request.
    pub path: String,
}

impl Attributes {
    /// The attributes of a parsed request made by `user`.
    pub fn of_request(user: UserInfo, info: &RequestInfo, query: &str) -> Attributes {
        let mut name = info.name.clone().unwrap_or_default();
        if name.is_empty() && matches!(info.verb.as_str(), "list" | "watch") {
            name = selected_name(query).unwrap_or_default();
        }
        Attributes {
            user,
            verb: info.verb.clone(),
            resource_request: info.is_resource_request,
            namespace: info.namespace.clone().unwrap_or_default(),
            api_group: info.api_group.clone(),
            api_version: info.api_version.clone(),
            resource: info.resource.clone(),
            subresource: info.subresource.clone().unwrap_or_default(),
            name,
            path: info.path.clone(),
        }
    }

    /// The 403 Status for a refusal, worded as kube-apiserver words it.
    pub fn forbidden(&self, reason: &str) -> ApiError {
        let user = &self.user.name;
        let mut why = if !self.resource_request {
            format!("User {user:?} cannot {} path {:?}", self.verb, self.path)
        } else {
            let mut resource = self.resource.clone();
            if !self.subresource.is_empty() {
                resource = format!("{resource}/{}", self.subresource);
            }
            let scope = if self.namespace.is_empty() {
                "at the cluster scope".to_string()
            } else {
                format!("in the namespace {:?}", self.namespace)
            };
            format!(
                "User {user:?} cannot {} resource {resource:?} in API group {:?} {scope}",
                self.verb, self.api_group
            )
        };
        if !reason.is_empty() {
            why = format!("{why}: {reason}");
        }
        if !self.resource_request {
            return ApiError::forbidden_request("", "", "", &why);
        }
        ApiError::forbidden_request(&self.api_group, &self.resource, &self.name, &why)
    }
}

/// `metadata.name=x` (or `==`) among the terms of a `fieldSelector` query parameter.
fn selected_name(query: &str) -> Option<String> {
    let selector = url_query_value(query, "fieldSelector")?;
    selector.split(',').find_map(|term| {
        let (key, value) = term.split_once("==").or_else(|| term.split_once('='))?;
        (key.trim() == "metadata.name" && !key.ends_with('!')).then(|| value.trim().to_string())
    })
}

/// The decoded value of `key` in a query string.
fn url_query_value(query: &str, key: &str) -> Option<String> {
    let pairs = actix_web::web::Query::<Vec<(String, String)>>::from_query(query).ok()?;
    pairs
        .into_inner()
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
}

/// An authorizer's answer, with the reason it gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow(String),
    Deny(String),
    /// Neither: the next authorizer is asked.
    NoOpinion(String),
}

/// One `--authorization-mode`.
pub trait Authorizer: Send + Sync {
    fn authorize(&self, attrs: &Attributes) -> Decision;
}

/// `AlwaysAllow`.
pub struct AlwaysAllow;
impl Authorizer for AlwaysAllow {
    fn authorize(&self, _: &Attributes) -> Decision {
        Decision::Allow(String::new())
    }
}

/// `AlwaysDeny`: has no opinion on anything, so only `system:masters` gets through.
pub struct AlwaysDeny;
impl Authorizer for AlwaysDeny {
    fn authorize(&self, _: &Attributes) -> Decision {
        Decision::NoOpinion("Everything is forbidden.".into())
    }
}

/// The configured modes, in order.
#[derive(Clone, Default)]
pub struct AuthorizerChain {
    modes: Vec<Arc<dyn Authorizer>>,
}

impl AuthorizerChain {
    /// A chain asking `modes` in order.
    pub fn new(modes: Vec<Arc<dyn Authorizer>>) -> Self {
        AuthorizerChain { modes }
    }

    /// Whether `attrs` is allowed; the reasons of the modes that had no opinion otherwise.
    pub fn authorize(&self, attrs: &Attributes) -> Result<(), String> {
        if attrs.user.groups.iter().any(|g| g == MASTERS) {
            return Ok(());
        }
        let mut reasons = Vec::new();
        for mode in &self.modes {
            match mode.authorize(attrs) {
                Decision::Allow(_) => return Ok(()),
                Decision::Deny(reason) => return Err(reason),
                Decision::NoOpinion(reason) if !reason.is_empty() => reasons.push(reason),
                Decision::NoOpinion(_) => {}
            }
        }
        Err(reasons.join("\n"))
    }

    /// The same question, answered as a Status when refused.
    pub fn check(&self, attrs: &Attributes) -> Result<(), ApiError> {
        self.authorize(attrs)
            .map_err(|reason| attrs.forbidden(&reason))
    }
}

/// The `--authorization-mode` names this server knows.
pub const MODES: &[&str] = &["AlwaysAllow", "AlwaysDeny", "RBAC"];

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(user: &str, groups: &[&str], method: &str, path: &str, query: &str) -> Attributes {
        let user = UserInfo {
            name: user.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        };
        Attributes::of_request(user, &RequestInfo::parse(method, path, query), query)
    }

    #[test]
    fn forbidden_messages_as_upstream_words_them() {
        let a = attrs("x", &[], "GET", "/api/v1/namespaces/b/configmaps/c", "");
        let e = a.forbidden("");
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            r#"configmaps "c" is forbidden: User "x" cannot get resource "configmaps" in API group "" in the namespace "b""#
        );
        let a = attrs(
            "x",
            &[],
            "GET",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            "",
        );
        assert_eq!(
            a.forbidden("").message,
            r#"customresourcedefinitions.apiextensions.k8s.io is forbidden: User "x" cannot list resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope"#
        );
        let a = attrs("system:anonymous", &[], "GET", "/", "");
        assert_eq!(
            a.forbidden("").message,
            r#"forbidden: User "system:anonymous" cannot get path "/""#
        );
        let a = attrs("x", &[], "PUT", "/api/v1/namespaces/b/secrets/s/status", "");
        assert!(a.forbidden("RBAC: nope").message.ends_with(
            r#"cannot update resource "secrets/status" in API group "" in the namespace "b": RBAC: nope"#
        ));
    }

    #[test]
    fn a_name_field_selector_names_the_object_of_a_list_or_watch() {
        let a = attrs(
            "x",
            &[],
            "GET",
            "/api/v1/namespaces/b/configmaps",
            "fieldSelector=metadata.name%3Dc&watch=1",
        );
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("watch", "c"));
        let a = attrs(
            "x",
            &[],
            "GET",
            "/api/v1/namespaces/b/configmaps",
            "fieldSelector=metadata.name!%3Dc",
        );
        assert_eq!(a.name, "");
    }

    #[test]
    fn masters_pass_first_decision_wins_otherwise() {
        let deny = AuthorizerChain::new(vec![Arc::new(AlwaysDeny), Arc::new(AlwaysAllow)]);
        let allow = AuthorizerChain::new(vec![Arc::new(AlwaysAllow), Arc::new(AlwaysDeny)]);
        let a = attrs("x", &[], "GET", "/api/v1/namespaces", "");
        // AlwaysDeny has no opinion, so the next mode decides.
        assert!(deny.authorize(&a).is_ok());
        assert!(allow.authorize(&a).is_ok());
        let only_deny = AuthorizerChain::new(vec![Arc::new(AlwaysDeny)]);
        assert_eq!(
            only_deny.authorize(&a),
            Err("Everything is forbidden.".into())
        );
        let admin = attrs("admin", &[MASTERS], "GET", "/api/v1/namespaces", "");
        assert!(only_deny.authorize(&admin).is_ok());
        assert!(AuthorizerChain::default().authorize(&a).is_err());
    }
}
