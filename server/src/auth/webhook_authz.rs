//! Delegated authorization (`--authorization-kubeconfig`), as an aggregated API server
//! authorizes: paths of `--authorization-always-allow-paths` are allowed to anyone,
//! every other request is asked of the parent API server as an authorization.k8s.io/v1
//! SubjectAccessReview, whose answers are cached (allowed and refused for their own
//! TTLs). `system:masters` is allowed before either, by the chain.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::attributes::{Attributes, Decision};
use super::authz::Authorizer;
use super::cache::TtlCache;
use super::parent::Parent;
use super::rbac::RulesFor;
use super::UserInfo;

/// Where SubjectAccessReviews are created on the parent.
const SUBJECT_ACCESS_REVIEWS: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
/// The most decisions kept (upstream's webhook authorizer keeps 8192 too).
const CACHE_SIZE: usize = 8192;

/// `--authorization-always-allow-paths`: non-resource paths anyone may request, exact or
/// (ending in `*`) by prefix.
pub struct AlwaysAllowPaths {
    exact: Vec<String>,
    prefixes: Vec<String>,
}

impl AlwaysAllowPaths {
    /// The paths of the flag; a `*` anywhere but at the end is an error.
    pub fn new(paths: &[String]) -> Result<Self, String> {
        let (mut exact, mut prefixes) = (Vec::new(), Vec::new());
        for path in paths.iter().filter(|p| !p.is_empty()) {
            let trimmed = path.trim_start_matches('/');
            match trimmed.strip_suffix('*') {
                Some(prefix) if !prefix.contains('*') => prefixes.push(prefix.to_string()),
                None if !trimmed.contains('*') => exact.push(trimmed.to_string()),
                _ => {
                    return Err(format!(
                    "--authorization-always-allow-paths: only a trailing * is allowed in {path:?}"
                ))
                }
            }
        }
        Ok(AlwaysAllowPaths { exact, prefixes })
    }
}

#[async_trait]
impl Authorizer for AlwaysAllowPaths {
    async fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        if attrs.resource_request {
            return Decision::NoOpinion(String::new());
        }
        let path = attrs.path.trim_start_matches('/');
        let allowed = self.exact.iter().any(|p| p == path)
            || self.prefixes.iter().any(|p| path.starts_with(p.as_str()));
        if allowed {
            Decision::Allow(String::new())
        } else {
            Decision::NoOpinion(String::new())
        }
    }

    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> RulesFor {
        RulesFor::default()
    }
}

/// How long decisions are kept.
#[derive(Clone, Copy, Debug)]
pub struct DecisionTtls {
    /// `--authorization-webhook-cache-authorized-ttl`.
    pub authorized: Duration,
    /// `--authorization-webhook-cache-unauthorized-ttl`.
    pub unauthorized: Duration,
}

/// The parent's SubjectAccessReviews as an authorizer.
pub struct SubjectAccessReviewAuthorizer {
    parent: Arc<Parent>,
    ttls: DecisionTtls,
    /// Decisions by the review's spec (its JSON text).
    cache: TtlCache<String, Decision>,
}

impl SubjectAccessReviewAuthorizer {
    /// Asks `parent`, keeping decisions for `ttls`.
    pub fn new(parent: Arc<Parent>, ttls: DecisionTtls) -> Self {
        SubjectAccessReviewAuthorizer {
            parent,
            ttls,
            cache: TtlCache::new(CACHE_SIZE),
        }
    }
}

#[async_trait]
impl Authorizer for SubjectAccessReviewAuthorizer {
    async fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        let spec = review_spec(attrs);
        let key = spec.to_string();
        if let Some(decision) = self.cache.get(&key, Instant::now()) {
            return decision;
        }
        let review = json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
        });
        let decision = match self.parent.post(SUBJECT_ACCESS_REVIEWS, &review).await {
            Ok(answer) => decision(&answer["status"]),
            // Not cached: the next request asks again.
            Err(e) => {
                return Decision::Error(format!("the parent's SubjectAccessReview failed: {e}"))
            }
        };
        let ttl = if decision.is_allowed() {
            self.ttls.authorized
        } else {
            self.ttls.unauthorized
        };
        self.cache
            .insert(key, decision.clone(), ttl, Instant::now());
        decision
    }

    /// As upstream's webhook authorizer: a webhook cannot list a user's rules.
    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> RulesFor {
        RulesFor {
            incomplete: true,
            errors: vec!["webhook authorizer does not support user rule resolution".into()],
            ..RulesFor::default()
        }
    }
}

/// The SubjectAccessReview spec of a request (empty fields left out, as client-go
/// sends it).
fn review_spec(attrs: &Attributes<'_>) -> Value {
    let mut fields = Map::new();
    let put = |map: &mut Map<String, Value>, key: &str, value: &str| {
        if !value.is_empty() {
            map.insert(key.into(), value.into());
        }
    };
    let user = attrs.user;
    put(&mut fields, "user", &user.name);
    put(&mut fields, "uid", &user.uid);
    if !user.groups.is_empty() {
        fields.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        fields.insert("extra".into(), json!(user.extra));
    }
    let mut attributes = Map::new();
    if attrs.resource_request {
        put(&mut attributes, "namespace", attrs.namespace);
        put(&mut attributes, "verb", attrs.verb);
        put(&mut attributes, "group", attrs.api_group);
        put(&mut attributes, "version", attrs.api_version);
        put(&mut attributes, "resource", attrs.resource);
        put(&mut attributes, "subresource", attrs.subresource);
        put(&mut attributes, "name", attrs.name);
        fields.insert("resourceAttributes".into(), attributes.into());
    } else {
        put(&mut attributes, "path", attrs.path);
        put(&mut attributes, "verb", attrs.verb);
        fields.insert("nonResourceAttributes".into(), attributes.into());
    }
    fields.into()
}

/// What a SubjectAccessReview's status decides.
fn decision(status: &Value) -> Decision {
    let reason = status["reason"].as_str().unwrap_or_default().to_string();
    if status["allowed"].as_bool() == Some(true) {
        Decision::Allow(reason)
    } else if status["denied"].as_bool() == Some(true) {
        Decision::Deny(reason)
    } else {
        Decision::NoOpinion(reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoints::request_info::RequestInfo;

    fn alice() -> UserInfo {
        UserInfo {
            name: "alice".into(),
            groups: vec!["devs".into(), "system:authenticated".into()],
            extra: [("scopes".to_string(), vec!["read".to_string()])].into(),
            ..UserInfo::default()
        }
    }

    #[test]
    fn a_resource_request_becomes_resource_attributes() {
        let user = alice();
        let info = RequestInfo::parse(
            "GET",
            "/apis/apps/v1/namespaces/ns1/deployments/web/scale",
            "",
        );
        let spec = review_spec(&Attributes::of_request(&user, &info, ""));
        assert_eq!(
            spec,
            json!({
                "user": "alice",
                "groups": ["devs", "system:authenticated"],
                "extra": {"scopes": ["read"]},
                "resourceAttributes": {
                    "namespace": "ns1", "verb": "get", "group": "apps", "version": "v1",
                    "resource": "deployments", "subresource": "scale", "name": "web",
                },
            })
        );
        let info = RequestInfo::parse("GET", "/healthz/etcd", "");
        let spec = review_spec(&Attributes::of_request(&user, &info, ""));
        assert_eq!(
            spec["nonResourceAttributes"],
            json!({"path": "/healthz/etcd", "verb": "get"})
        );
    }

    #[test]
    fn the_review_status_decides_with_its_reason() {
        assert_eq!(
            decision(&json!({"allowed": true, "reason": "RBAC: allowed"})),
            Decision::Allow("RBAC: allowed".into())
        );
        assert_eq!(
            decision(&json!({"allowed": false, "denied": true, "reason": "no"})),
            Decision::Deny("no".into())
        );
        assert_eq!(
            decision(&json!({"allowed": false})),
            Decision::NoOpinion(String::new())
        );
    }

    #[actix_web::test]
    async fn always_allowed_paths_are_exact_or_trailing_star_prefixes() {
        let paths =
            AlwaysAllowPaths::new(&["/healthz".into(), "/readyz".into(), "/metrics/*".into()])
                .unwrap();
        let user = alice();
        let answer = |path: &'static str| {
            let info = RequestInfo::parse("GET", path, "");
            let paths = &paths;
            let user = &user;
            async move {
                paths
                    .authorize(&Attributes::of_request(user, &info, ""))
                    .await
                    .is_allowed()
            }
        };
        assert!(answer("/healthz").await);
        assert!(answer("/metrics/slis").await);
        assert!(!answer("/healthz/etcd").await);
        assert!(!answer("/api/v1/namespaces").await);
        assert!(AlwaysAllowPaths::new(&["/a*/b".into()]).is_err());
    }
}
