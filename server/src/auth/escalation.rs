//! RBAC's privilege-escalation prevention on writes of roles and bindings, as a
//! validating admission check: writing a Role or ClusterRole needs its rules already
//! held (or `escalate`), a binding needs the bound role's rules (or `bind`), as
//! kube-apiserver's RBAC storage enforces.

use std::sync::Arc;

use async_trait::async_trait;

use serde_json::Value;

use super::attributes::{Attributes as AuthzAttributes, Decision};
use super::rbac::{self, EscalationError, RbacIndex, RoleRefError};
use super::Auth;
use crate::admission::{Attributes, Operation, ValidatingPlugin};
use crate::api::ApiError;

/// The check, run first in admission's validating phase.
pub struct EscalationCheck {
    pub auth: actix_web::web::Data<Auth>,
}

impl EscalationCheck {
    /// The requester's policy: the RBAC snapshot, or none when RBAC is off (then only
    /// `escalate`/`bind` allowed by the other modes lets a write through).
    fn index(&self) -> Arc<RbacIndex> {
        match &self.auth.rbac {
            Some(rbac) => rbac.index(),
            None => Arc::new(RbacIndex::default()),
        }
    }

    /// The escalate/bind question, asked of the whole authorizer chain (`None`: there is
    /// no such question, as for a roleRef kind that cannot be bound).
    async fn ask(&self, attrs: Option<AuthzAttributes<'_>>) -> Decision {
        let Some(attrs) = attrs else {
            return Decision::NoOpinion(String::new());
        };
        match self.auth.authorizer.authorize(&attrs).await {
            Ok(()) => Decision::Allow(String::new()),
            Err(reason) => Decision::NoOpinion(reason),
        }
    }
}

#[async_trait]
impl ValidatingPlugin for EscalationCheck {
    async fn validate(&self, a: &Attributes<'_>, new: Option<&Value>) -> Result<(), ApiError> {
        let res = a.resource;
        let (Some(new), Operation::Create | Operation::Update) = (new, a.operation) else {
            return Ok(());
        };
        if res.def.group != rbac::RBAC_GROUP || !a.subresource.is_empty() {
            return Ok(());
        }
        let old = a.old_object;
        // Named by the request path: empty on create, as upstream asks.
        let name = if a.operation == Operation::Create {
            ""
        } else {
            a.name
        };
        // Finalizers and owner references may change without holding the rules.
        if old.is_some_and(|old| rbac::only_gc_fields_changed(old, new)) {
            return Ok(());
        }
        let (index, user) = (self.index(), a.user);
        let unreadable = |e: rbac::ObjectIssue| ApiError::bad_request(e.reason);
        // The escalate/bind question is asked first (the authorizers may be remote, so
        // asynchronous); the pure checks are handed its answer.
        let result = match res.def.plural.as_str() {
            "roles" => {
                let role = rbac::Role::from_json(new).map_err(unreadable)?;
                let ns = role.meta.namespace.as_str();
                let escalate = rbac::escalate_attributes(user, rbac::Kind::Role, ns, name);
                let answer = self.ask(Some(escalate)).await;
                rbac::check_role_write(&index, user, &role, name, |_| answer)
            }
            "clusterroles" => {
                let role = rbac::ClusterRole::from_json(new).map_err(unreadable)?;
                let old = old.and_then(|o| rbac::ClusterRole::from_json(o).ok());
                let escalate = rbac::escalate_attributes(user, rbac::Kind::ClusterRole, "", name);
                let answer = self.ask(Some(escalate)).await;
                rbac::check_cluster_role_write(&index, user, &role, old.as_ref(), name, |_| answer)
            }
            "rolebindings" => {
                let binding = rbac::RoleBinding::from_json(new).map_err(unreadable)?;
                let ns = binding.meta.namespace.as_str();
                let answer = self
                    .ask(rbac::bind_attributes(user, &binding.role_ref, ns))
                    .await;
                rbac::check_role_binding_write(&index, user, &binding, |_| answer)
            }
            "clusterrolebindings" => {
                let binding = rbac::ClusterRoleBinding::from_json(new).map_err(unreadable)?;
                let answer = self
                    .ask(rbac::bind_attributes(user, &binding.role_ref, ""))
                    .await;
                rbac::check_cluster_role_binding_write(&index, user, &binding, |_| answer)
            }
            _ => Ok(()),
        };
        result.map_err(status)
    }
}

/// The Status of a refused write, as upstream answers it.
fn status(e: EscalationError) -> ApiError {
    match &e {
        EscalationError::Forbidden {
            resource,
            name,
            message,
        } => {
            let mut err = ApiError::forbidden_request(rbac::RBAC_GROUP, resource, name, "");
            err.message = message.clone();
            err
        }
        EscalationError::RoleRef(RoleRefError::NotFound { kind, name }) => {
            ApiError::not_found_in_group(rbac::RBAC_GROUP, kind.resource(), name)
        }
        EscalationError::RoleRef(RoleRefError::Unsupported(_)) => {
            ApiError::bad_request(e.message())
        }
    }
}
