//! Kinds that are not stored: the reviews (`createOnly: true` definitions) and the body
//! kinds of create-only subresources (`serviceaccounts/token` → `TokenRequest`).
//!
//! A create of such a kind runs the generic part first (`endpoints/handlers/virtual_create.rs`:
//! decode, `apiVersion`/`kind` check, pruning, defaults, schema and CEL validation), then
//! the [`CreateHook`] the definition names (`strategy:`, one of codegen's
//! `CREATE_HOOKS`), whose answer is sent as `201 Created`. Nothing is written to storage.

use std::rc::Rc;

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::api::ApiError;
use crate::auth::{reviews, Auth, UserInfo};
use crate::endpoints::ApiState;

/// What a hook is given: one create request, its object already decoded, defaulted and
/// validated against the kind's schema.
pub struct CreateRequest<'a> {
    pub state: &'a ApiState,
    /// The server's authenticators and authorizers (`None` only outside the server's
    /// handler chain).
    pub auth: Option<&'a Auth>,
    /// The requesting user, as authentication attached it (`crate::auth::user`); `None`
    /// when no authentication ran.
    pub user: Option<Rc<UserInfo>>,
    /// The URL's namespace, for namespaced kinds and subresources of namespaced objects.
    pub namespace: Option<&'a str>,
    /// For a subresource: the name of the object it belongs to (the ServiceAccount).
    pub parent: Option<&'a str>,
    /// The request object (`kind`, `apiVersion`, `metadata` first).
    pub object: Value,
    /// `dryRun=All`: answer as usual but change nothing.
    pub dry_run: bool,
}

/// The server side of a kind that is not stored: turns the request object into the
/// answer (usually the object with `status` filled in).
#[async_trait(?Send)]
pub trait CreateHook: Sync {
    async fn create(&self, req: CreateRequest<'_>) -> Result<Value, ApiError>;
}

/// The hook named `name` (a definition's `strategy`); an error naming it when the
/// server has none, which refuses the catalog entry.
pub fn named(name: Option<&str>) -> Result<&'static dyn CreateHook, String> {
    Ok(match name {
        Some("SelfSubjectReview") => &SelfSubjectReview,
        Some("TokenReview") => &TokenReview,
        Some("SubjectAccessReview") => &SubjectAccessReview,
        Some("SelfSubjectAccessReview") => &SelfSubjectAccessReview,
        Some("LocalSubjectAccessReview") => &LocalSubjectAccessReview,
        Some("SelfSubjectRulesReview") => &SelfSubjectRulesReview,
        Some("TokenRequest") => &TokenRequest,
        Some("Binding") => &Binding,
        Some("Eviction") => &super::eviction::Eviction,
        Some(other) => return Err(format!("the server has no create hook named {other:?}")),
        None => return Err("a create-only kind needs a create hook (`strategy`)".into()),
    })
}

/// The user a request acts as: the authenticated one, or, when no authentication ran,
/// the anonymous user. A server with authentication off behaves as kube-apiserver with
/// only its anonymous authenticator enabled: every request is `system:anonymous` in
/// `system:unauthenticated`.
fn acting_user(user: Option<Rc<UserInfo>>) -> Rc<UserInfo> {
    user.unwrap_or_else(|| Rc::new(UserInfo::anonymous()))
}

/// authentication.k8s.io/v1 `SelfSubjectReview`: who the caller is (`kubectl auth whoami`).
struct SelfSubjectReview;

#[async_trait(?Send)]
impl CreateHook for SelfSubjectReview {
    async fn create(&self, req: CreateRequest<'_>) -> Result<Value, ApiError> {
        let user = acting_user(req.user);
        let mut answer = req.object;
        // As upstream, the answer carries a creation time and nothing the client sent
        // in its status.
        answer["metadata"]["creationTimestamp"] = json!(crate::api::meta::now_rfc3339());
        answer["status"] = json!({ "userInfo": user.to_json() });
        Ok(answer)
    }
}

/// The authenticators and authorizers a review needs.
fn auth<'a>(req: &CreateRequest<'a>) -> Result<&'a Auth, ApiError> {
    req.auth
        .ok_or_else(|| ApiError::internal("the reviews need the server's authorizers"))
}

/// authentication.k8s.io/v1 `TokenReview`.
struct TokenReview;

#[async_trait(?Send)]
impl CreateHook for TokenReview {
    async fn create(&self, req: CreateRequest<'_>) -> Result<Value, ApiError> {
        reviews::token_review(auth(&req)?, req.object).await
    }
}

/// authorization.k8s.io/v1 `SubjectAccessReview`.
struct SubjectAccessReview;

#[async_trait(?Send)]
impl CreateHook for SubjectAccessReview {
    async fn create(&self, req: CreateRequest<'_>) -> Result<Value, ApiError> {
        reviews::subject_access_review(auth(&req)?, req.object).await
    }
}

/// authorization.k8s.io/v1 `SelfSubjectAccessReview` (`kubectl auth can-i`).
struct SelfSubjectAccessReview;

#[async_trait(?Send)]
impl CreateHook for SelfSubjectAccessReview {
    async fn create(&self, req: CreateRequest<'_>) -> Result<Value, ApiError> {
        let auth = auth(&req)?;
        let user = acting_user(req.user);
        reviews::self_subject_access_review(auth, &user, req.object).await
    }
}

/// authorization.k8s.io/v1 `LocalSubjectAccessReview` (namespaced).
struct LocalSubjectAccessReview;

#[async_trait(?Send)]
impl CreateHook for LocalSubjectAccessReview {
    async fn create(&self, req: CreateRequest<'_>) -> Result<Value, ApiError> {
        let namespace = req.namespace.unwrap_or_default();
        reviews::local_subject_access_review(auth(&req)?, namespace, req.object).await
    }
}

/// authorization.k8s.io/v1 `SelfSubjectRulesReview` (`kubectl auth can-i --list`).
struct SelfSubjectRulesReview;

#[async_trait(?Send)]
impl CreateHook for SelfSubjectRulesReview {
    async fn create(&self, req: CreateRequest<'_>) -> Result<Value, ApiError> {
        let auth = auth(&req)?;
        let user = acting_user(req.user);
        reviews::self_subject_rules_review(auth, &user, req.object)
    }
}

/// authentication.k8s.io/v1 `TokenRequest`, the body of `serviceaccounts/token`
/// (`kubectl create token`); `parent` is the ServiceAccount's name.
struct TokenRequest;

#[async_trait(?Send)]
impl CreateHook for TokenRequest {
    async fn create(&self, req: CreateRequest<'_>) -> Result<Value, ApiError> {
        let auth = auth(&req)?;
        let namespace = req.namespace.unwrap_or_default();
        let parent = req.parent.unwrap_or_default();
        reviews::token_request(auth, req.state, namespace, parent, req.object, req.dry_run).await
    }
}
/// core/v1 `Binding` (`POST bindings`, `POST pods/<name>/binding`): assigns a pod to a
/// node, as a scheduler does. The pod gets `spec.nodeName`, the binding's annotations
/// and a `PodScheduled` condition; a pod already assigned, or being deleted, is 409.
struct Binding;

#[async_trait(?Send)]
impl CreateHook for Binding {
    async fn create(&self, req: CreateRequest<'_>) -> Result<Value, ApiError> {
        let body_name = req.object["metadata"]["name"].as_str().unwrap_or_default();
        let name = match req.parent {
            Some(parent) if !body_name.is_empty() && body_name != parent => {
                return Err(ApiError::bad_request(format!(
                    "name in URL does not match name in body: {parent} vs. {body_name}"
                )))
            }
            Some(parent) => parent,
            None if body_name.is_empty() => {
                return Err(ApiError::invalid_request("metadata.name: Required value"))
            }
            None => body_name,
        };
        let target = &req.object["target"];
        if !matches!(target["kind"].as_str(), None | Some("" | "Node")) {
            return Err(ApiError::invalid_request(format!(
                "target.kind: Unsupported value: {}: supported values: \"Node\"",
                target["kind"]
            )));
        }
        let node = target["name"].as_str().unwrap_or_default();
        if node.is_empty() {
            return Err(ApiError::invalid_request("target.name: Required value"));
        }
        let pods = req
            .state
            .catalog
            .get("", "v1", "pods")
            .ok_or_else(|| ApiError::internal("pods are not served"))?;
        let annotations = req.object["metadata"]["annotations"].clone();
        let ctx = crate::registry::store::WriteContext {
            dry_run: req.dry_run,
            ..crate::registry::store::WriteContext::new("kube-scheduler")
        };
        let now = crate::api::meta::now_rfc3339();
        req.state
            .store
            .patch(
                &pods,
                req.namespace,
                name,
                crate::registry::store::Target::Part(crate::registry::parts::Part::PodBinding),
                &ctx,
                |old| {
                    let mut pod = old.clone();
                    if pod["metadata"]["deletionTimestamp"].is_string() {
                        return Err(ApiError::conflict_with(
                            format!("pod {name} is being deleted, cannot be assigned to a host"),
                            json!({"name": name, "kind": "pods"}),
                        ));
                    }
                    if let Some(assigned) =
                        pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty())
                    {
                        return Err(ApiError::conflict_with(
                            format!("pod {name} is already assigned to node \"{assigned}\""),
                            json!({"name": name, "kind": "pods"}),
                        ));
                    }
                    pod["spec"]["nodeName"] = json!(node);
                    if let Some(extra) = annotations.as_object() {
                        for (k, v) in extra {
                            pod["metadata"]["annotations"][k] = v.clone();
                        }
                    }
                    Ok(pod)
                },
            )
            .await?;
        // The PodScheduled condition lives in status, which a main write leaves alone.
        let condition = json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now});
        let status = crate::registry::store::Target::Status;
        req.state
            .store
            .patch(&pods, req.namespace, name, status, &ctx, |old| {
                let mut pod = old.clone();
                match pod["status"]["conditions"].as_array_mut() {
                    Some(list) => {
                        list.retain(|c| c["type"] != "PodScheduled");
                        list.push(condition.clone());
                    }
                    None => pod["status"]["conditions"] = json!([condition.clone()]),
                }
                Ok(pod)
            })
            .await?;
        Ok(
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_hook_codegen_accepts_exists_and_others_are_refused() {
        for name in codegen::model::CREATE_HOOKS {
            assert!(named(Some(name)).is_ok(), "{name}");
        }
        assert!(named(Some("Secret")).is_err());
        assert!(named(None).is_err());
    }

    #[test]
    fn without_authentication_the_caller_is_anonymous() {
        let u = acting_user(None);
        assert_eq!(u.name, "system:anonymous");
        assert_eq!(u.groups, ["system:unauthenticated"]);
    }
}
