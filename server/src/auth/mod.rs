//! Who is asking, and whether they may: authentication (`authn`), what a request asks
//! (`attributes`), authorization (`authz`) and the RBAC policy engine (`rbac`).

pub mod attributes;
pub mod authn;
pub mod authz;
pub mod cache;
pub mod escalation;
pub mod extension_config;
pub mod extension_follower;
pub mod parent;
pub mod rbac;
pub mod reviews;
pub mod webhook_authz;

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use actix_web::{HttpMessage, HttpRequest};

/// The well-known user and group names of Kubernetes.
pub mod names {
    /// Every request no authenticator recognised, with anonymous access on.
    pub const ANONYMOUS: &str = "system:anonymous";
    /// The group of [`ANONYMOUS`].
    pub const UNAUTHENTICATED: &str = "system:unauthenticated";
    /// The group of every authenticated user.
    pub const AUTHENTICATED: &str = "system:authenticated";
    /// The superuser group: allowed everything, whatever the authorizers say.
    pub const MASTERS: &str = "system:masters";
    /// The group of every service account.
    pub const SERVICE_ACCOUNTS: &str = "system:serviceaccounts";
    /// Service account user names start with this (`system:serviceaccount:<ns>:<name>`).
    pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";
}

/// An authenticated identity (authentication.k8s.io `UserInfo`): what authorization,
/// admission, audit and the reviews see.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// `system:anonymous` in `system:unauthenticated`: a request without credentials.
    pub fn anonymous() -> Self {
        UserInfo {
            name: names::ANONYMOUS.into(),
            groups: vec![names::UNAUTHENTICATED.into()],
            ..UserInfo::default()
        }
    }

    /// The user as authentication.k8s.io/v1 `UserInfo` JSON (empty fields left out).
    pub fn to_json(&self) -> serde_json::Value {
        let mut out = serde_json::json!({ "username": self.name });
        if !self.uid.is_empty() {
            out["uid"] = self.uid.clone().into();
        }
        if !self.groups.is_empty() {
            out["groups"] = self.groups.clone().into();
        }
        if !self.extra.is_empty() {
            out["extra"] = serde_json::json!(self.extra);
        }
        out
    }
}

/// Who may do what: the configured authenticators and authorizers, and the service
/// account token issuer (TokenRequest) and verifier (TokenReview).
pub struct Auth {
    pub authenticator: authn::Authenticator,
    pub authorizer: authz::AuthorizerChain,
    pub token_issuer: Arc<authn::serviceaccount::TokenIssuer>,
    pub service_accounts: Arc<authn::serviceaccount::ServiceAccountTokens>,
    /// The RBAC mode, when `--authorization-mode` has it.
    pub rbac: Option<Arc<authz::RbacAuthorizer>>,
}

/// The user the authentication filter attached to `req` (after impersonation), if it ran.
pub fn user(req: &HttpRequest) -> Option<Rc<UserInfo>> {
    req.extensions().get::<Rc<UserInfo>>().cloned()
}

/// `%XX` escapes decoded (header names carry extra keys that way); `None` for a bad one.
pub fn percent_decode(s: &str) -> Option<String> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hex = [bytes.next()?, bytes.next()?];
            out.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).ok()
}
