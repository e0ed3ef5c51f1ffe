//! Authorization: `--authorization-mode`, a chain of authorizers asked in order; the
//! first that allows or denies decides, as kube-apiserver's union authorizer. Members of
//! `system:masters` are allowed everything before any mode is asked, as upstream.

use std::sync::{Arc, RwLock};

use async_trait::async_trait;

use super::rbac::{PolicyRule, RbacIndex, RulesFor, WILDCARD};

use super::names::MASTERS;
use super::UserInfo;
use crate::api::ApiError;
use crate::endpoints::request_info::RequestInfo;

pub use super::attributes::{Attributes, Decision};

impl<'a> Attributes<'a> {
    /// The attributes of a parsed request made by `user`; `name` is the object's name,
    /// or for a list or watch the one [`selected_name`] found.
    pub fn of_request(user: &'a UserInfo, info: &'a RequestInfo, name: &'a str) -> Self {
        Attributes {
            user,
            verb: &info.verb,
            resource_request: info.is_resource_request,
            namespace: info.namespace.as_deref().unwrap_or_default(),
            api_group: &info.api_group,
            api_version: &info.api_version,
            resource: &info.resource,
            subresource: info.subresource.as_deref().unwrap_or_default(),
            name: info.name.as_deref().unwrap_or(name),
            path: &info.path,
        }
    }

    /// The 403 Status for a refusal, worded as kube-apiserver words it.
    pub fn forbidden(&self, reason: &str) -> ApiError {
        let user = &self.user.name;
        let mut why = if !self.resource_request {
            format!("User {user:?} cannot {} path {:?}", self.verb, self.path)
        } else {
            let mut resource = self.resource.to_string();
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
        ApiError::forbidden_request(self.api_group, self.resource, self.name, &why)
    }
}

/// The object a list or watch is limited to by `fieldSelector=metadata.name=x` (or
/// `==`), which authorization treats as the request's name, as upstream does.
pub fn selected_name(info: &RequestInfo, query: &str) -> Option<String> {
    if info.name.is_some() || !matches!(info.verb.as_str(), "list" | "watch") {
        return None;
    }
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

/// One `--authorization-mode` (or the delegated authorizer): asynchronous, since a
/// webhook authorizer asks another server.
#[async_trait]
pub trait Authorizer: Send + Sync {
    /// The decision on one request.
    async fn authorize(&self, attrs: &Attributes<'_>) -> Decision;

    /// What `user` may do in `namespace` (SelfSubjectRulesReview); by default nothing
    /// known, so incomplete.
    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> RulesFor {
        RulesFor {
            incomplete: true,
            ..RulesFor::default()
        }
    }
}

/// `AlwaysAllow`.
pub struct AlwaysAllow;
#[async_trait]
impl Authorizer for AlwaysAllow {
    async fn authorize(&self, _: &Attributes<'_>) -> Decision {
        Decision::Allow(String::new())
    }

    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> RulesFor {
        let all = [WILDCARD];
        RulesFor {
            resource_rules: vec![PolicyRule::resource(&all, &all, &all)],
            non_resource_rules: vec![PolicyRule::non_resource(&all, &all)],
            ..RulesFor::default()
        }
    }
}

/// `AlwaysDeny`: has no opinion on anything, so only `system:masters` gets through.
pub struct AlwaysDeny;
#[async_trait]
impl Authorizer for AlwaysDeny {
    async fn authorize(&self, _: &Attributes<'_>) -> Decision {
        Decision::NoOpinion("Everything is forbidden.".into())
    }

    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> RulesFor {
        RulesFor::default()
    }
}

/// `--authorization-mode=RBAC`: answers from the latest snapshot of the policy.
#[derive(Default)]
pub struct RbacAuthorizer {
    index: RwLock<Arc<RbacIndex>>,
}

impl RbacAuthorizer {
    /// The current snapshot.
    pub fn index(&self) -> Arc<RbacIndex> {
        self.index.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Serves `index` from now on.
    pub fn replace(&self, index: RbacIndex) {
        *self.index.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(index);
    }
}

#[async_trait]
impl Authorizer for RbacAuthorizer {
    async fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        self.index().authorize(attrs)
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> RulesFor {
        self.index().rules_for(user, namespace)
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

    /// The first Allow or Deny of the modes; when none decides, Error if a mode failed
    /// (as upstream's union authorizer), else NoOpinion with their reasons.
    pub async fn decide(&self, attrs: &Attributes<'_>) -> Decision {
        if attrs.user.groups.iter().any(|g| g == MASTERS) {
            return Decision::Allow(String::new());
        }
        let (mut reasons, mut errors) = (Vec::new(), Vec::new());
        for mode in &self.modes {
            match mode.authorize(attrs).await {
                Decision::NoOpinion(reason) if !reason.is_empty() => reasons.push(reason),
                Decision::NoOpinion(_) => {}
                Decision::Error(e) => errors.push(e),
                decided => return decided,
            }
        }
        if !errors.is_empty() {
            return Decision::Error(errors.join("\n"));
        }
        Decision::NoOpinion(reasons.join("\n"))
    }

    /// Whether `attrs` is allowed; the reason it is not otherwise.
    pub async fn authorize(&self, attrs: &Attributes<'_>) -> Result<(), String> {
        match self.decide(attrs).await {
            Decision::Allow(_) => Ok(()),
            Decision::Deny(reason) | Decision::NoOpinion(reason) | Decision::Error(reason) => {
                Err(reason)
            }
        }
    }

    /// The rules of every mode together; incomplete when one of them is.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> RulesFor {
        let mut all = RulesFor::default();
        for mode in &self.modes {
            let rules = mode.rules_for(user, namespace);
            all.resource_rules.extend(rules.resource_rules);
            all.non_resource_rules.extend(rules.non_resource_rules);
            all.incomplete |= rules.incomplete;
            all.errors.extend(rules.errors);
        }
        all
    }

    /// The same question, answered as a Status when refused.
    pub async fn check(&self, attrs: &Attributes<'_>) -> Result<(), ApiError> {
        self.authorize(attrs)
            .await
            .map_err(|reason| attrs.forbidden(&reason))
    }
}

/// The `--authorization-mode` names this server knows.
pub const MODES: &[&str] = &["AlwaysAllow", "AlwaysDeny", "RBAC"];

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks `f` against the attributes of a request.
    fn with_attrs(
        user: &str,
        groups: &[&str],
        method: &str,
        path: &str,
        query: &str,
        f: impl FnOnce(&Attributes<'_>),
    ) {
        let user = UserInfo {
            name: user.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        };
        let info = RequestInfo::parse(method, path, query);
        let name = selected_name(&info, query).unwrap_or_default();
        f(&Attributes::of_request(&user, &info, &name));
    }

    fn message(user: &str, method: &str, path: &str, reason: &str) -> String {
        let mut out = String::new();
        with_attrs(user, &[], method, path, "", |a| {
            out = a.forbidden(reason).message
        });
        out
    }

    #[test]
    fn forbidden_messages_as_upstream_words_them() {
        with_attrs(
            "x",
            &[],
            "GET",
            "/api/v1/namespaces/b/configmaps/c",
            "",
            |a| assert_eq!(a.forbidden("").code, 403),
        );
        assert_eq!(
            message("x", "GET", "/api/v1/namespaces/b/configmaps/c", ""),
            r#"configmaps "c" is forbidden: User "x" cannot get resource "configmaps" in API group "" in the namespace "b""#
        );
        assert_eq!(
            message(
                "x",
                "GET",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                ""
            ),
            r#"customresourcedefinitions.apiextensions.k8s.io is forbidden: User "x" cannot list resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope"#
        );
        assert_eq!(
            message("system:anonymous", "GET", "/", ""),
            r#"forbidden: User "system:anonymous" cannot get path "/""#
        );
        assert!(message("x", "PUT", "/api/v1/namespaces/b/secrets/s/status", "RBAC: nope").ends_with(
            r#"cannot update resource "secrets/status" in API group "" in the namespace "b": RBAC: nope"#
        ));
    }

    #[test]
    fn a_name_field_selector_names_the_object_of_a_list_or_watch() {
        let list = "/api/v1/namespaces/b/configmaps";
        with_attrs(
            "x",
            &[],
            "GET",
            list,
            "fieldSelector=metadata.name%3Dc&watch=1",
            |a| assert_eq!((a.verb, a.name), ("watch", "c")),
        );
        with_attrs(
            "x",
            &[],
            "GET",
            list,
            "fieldSelector=metadata.name!%3Dc",
            |a| assert_eq!(a.name, ""),
        );
    }

    /// The chain's answer to one request by `user` in `groups`.
    async fn chain_answer(chain: &AuthorizerChain, user: &str, groups: &[&str]) -> Decision {
        let user = UserInfo {
            name: user.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        };
        let info = RequestInfo::parse("GET", "/api/v1/namespaces", "");
        chain
            .decide(&Attributes::of_request(&user, &info, ""))
            .await
    }

    #[actix_web::test]
    async fn masters_pass_first_decision_wins_otherwise() {
        let deny = AuthorizerChain::new(vec![Arc::new(AlwaysDeny), Arc::new(AlwaysAllow)]);
        let allow = AuthorizerChain::new(vec![Arc::new(AlwaysAllow), Arc::new(AlwaysDeny)]);
        let only_deny = AuthorizerChain::new(vec![Arc::new(AlwaysDeny)]);
        // AlwaysDeny has no opinion, so the next mode decides.
        assert!(chain_answer(&deny, "x", &[]).await.is_allowed());
        assert!(chain_answer(&allow, "x", &[]).await.is_allowed());
        assert_eq!(
            chain_answer(&only_deny, "x", &[]).await,
            Decision::NoOpinion("Everything is forbidden.".into())
        );
        let none = AuthorizerChain::default();
        assert!(!chain_answer(&none, "x", &[]).await.is_allowed());
        assert!(chain_answer(&only_deny, "admin", &[MASTERS])
            .await
            .is_allowed());
    }

    /// A mode that cannot answer (a parent that is down).
    struct Unreachable;
    #[async_trait]
    impl Authorizer for Unreachable {
        async fn authorize(&self, _: &Attributes<'_>) -> Decision {
            Decision::Error("parent down".into())
        }
    }

    #[actix_web::test]
    async fn a_failed_mode_is_an_error_unless_a_later_mode_decides() {
        let failed = AuthorizerChain::new(vec![Arc::new(Unreachable), Arc::new(AlwaysDeny)]);
        assert_eq!(
            chain_answer(&failed, "x", &[]).await,
            Decision::Error("parent down".into())
        );
        let rescued = AuthorizerChain::new(vec![Arc::new(Unreachable), Arc::new(AlwaysAllow)]);
        assert!(chain_answer(&rescued, "x", &[]).await.is_allowed());
    }
}
