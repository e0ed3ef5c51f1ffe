//! The authentication, impersonation and authorization filters: who is asking, as whom,
//! and whether they may. Each reads what an earlier stage attached to the request.

use std::rc::Rc;
use std::sync::Arc;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Extensions, ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage};
use rustls::pki_types::CertificateDer;

use crate::api::ApiError;
use crate::audit::{RequestAudit, DECISION_ANNOTATION, REASON_ANNOTATION};
use crate::auth::authn::{bearer_token, Credentials};
use crate::auth::authz::{selected_name, Attributes, AuthorizerChain, Decision};
use crate::auth::names::{
    ANONYMOUS, AUTHENTICATED, SERVICE_ACCOUNTS, SERVICE_ACCOUNT_PREFIX, UNAUTHENTICATED,
};
use crate::auth::{Auth, UserInfo};
use crate::endpoints::request_info::RequestInfo;

/// The client certificate chain of a TLS connection, kept with the connection.
#[derive(Clone)]
pub struct PeerCertificates(pub Arc<Vec<CertificateDer<'static>>>);

/// At connection start (`server::connection::on_connect`): keeps the client's
/// certificates for every request on the connection.
pub fn remember_peer_certificates(tls: &crate::server::client_stream::Tls, ext: &mut Extensions) {
    if let Some(certs) = tls.get_ref().1.peer_certificates() {
        let chain = certs.iter().map(|c| c.clone().into_owned()).collect();
        ext.insert(PeerCertificates(Arc::new(chain)));
    }
}

fn auth_of(req: &ServiceRequest) -> web::Data<Auth> {
    req.app_data::<web::Data<Auth>>()
        .cloned()
        .expect("the handler chain installs Auth")
}

/// Authentication: attaches the requesting [`UserInfo`], or answers 401 Unauthorized.
/// The front-proxy headers are removed from every request once read, so no later stage
/// (audit, a proxy to another server) sees a client's forged ones.
pub async fn authenticate(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let auth = auth_of(&req);
    let header = req
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let certs = req.conn_data::<PeerCertificates>().cloned();
    let creds = Credentials {
        bearer: header.as_deref().and_then(bearer_token),
        client_certs: certs.as_ref().map(|c| c.0.as_slice()),
        headers: Some(req.headers()),
    };
    let outcome = auth.authenticator.authenticate(creds).await;
    if let Some(proxy) = auth.authenticator.request_header.current() {
        proxy.config.strip(req.headers_mut());
    }
    match outcome {
        Ok(user) => {
            req.extensions_mut().insert(Rc::new(user));
        }
        Err(why) => {
            tracing::info!(path = req.path(), reasons = ?why.0, "unauthorized request");
            if let Some(audit) = req.app_data::<web::Data<crate::audit::Audit>>().cloned() {
                return Ok(super::audit::failed_authentication(
                    &audit,
                    req,
                    ApiError::unauthorized(),
                )
                .await);
            }
            return Err(ApiError::unauthorized().into());
        }
    }
    next.call(req)
        .await
        .map(ServiceResponse::map_into_boxed_body)
}

/// Impersonation (`Impersonate-User`, `-Group`, `-Uid`, `-Extra-<key>`): each asked
/// identity is authorized with the `impersonate` verb, then replaces the requester.
pub async fn impersonate(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let asked = Impersonation::from_headers(req.headers())?;
    if let Some(asked) = asked {
        let requester = crate::auth::user(req.request()).ok_or_else(no_user)?;
        let user = asked
            .authorize(&requester, &auth_of(&req).authorizer)
            .await?;
        tracing::debug!(
            requester = requester.name,
            user = user.name,
            "impersonating"
        );
        if let Some(audit) = RequestAudit::of(req.request()) {
            audit.impersonate(&user);
        }
        req.extensions_mut().insert(Rc::new(user));
    }
    next.call(req)
        .await
        .map(ServiceResponse::map_into_boxed_body)
}

/// Authorization: the request's attributes, from its parsed request info, through the
/// `--authorization-mode` chain; 403 Forbidden when refused. The decision and its reason
/// are audit annotations of an audited request.
pub async fn authorize(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let user = crate::auth::user(req.request()).ok_or_else(no_user)?;
    let info = req
        .extensions()
        .get::<Rc<RequestInfo>>()
        .cloned()
        .ok_or_else(|| ApiError::internal("no request info"))?;
    let name = selected_name(&info, req.query_string()).unwrap_or_default();
    let attrs = Attributes::of_request(&user, &info, &name);
    let decision = auth_of(&req).authorizer.decide(&attrs).await;
    if let Some(audit) = RequestAudit::of(req.request()) {
        let verdict = if decision.is_allowed() {
            "allow"
        } else {
            "forbid"
        };
        audit.annotate(DECISION_ANNOTATION, verdict);
        let reason = match &decision {
            // Upstream's annotation for an authorizer's error; the error is logged.
            Decision::Error(_) => "internal error",
            other => other.reason(),
        };
        audit.annotate(REASON_ANNOTATION, reason);
    }
    match decision {
        Decision::Allow(_) => {}
        // As upstream's authorization filter: an authorizer that could not decide is a
        // server fault (the parent of delegated authorization is down), not a refusal.
        Decision::Error(e) => {
            tracing::warn!(path = %info.path, error = %e, "authorization failed");
            return Err(ApiError::internal(e).into());
        }
        refused => return Err(attrs.forbidden(refused.reason()).into()),
    }
    next.call(req)
        .await
        .map(ServiceResponse::map_into_boxed_body)
}

fn no_user() -> ApiError {
    ApiError::internal("no user attached to the request")
}

const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";
const IMPERSONATE_USER: &str = "impersonate-user";
const IMPERSONATE_GROUP: &str = "impersonate-group";
const IMPERSONATE_UID: &str = "impersonate-uid";
const IMPERSONATE_EXTRA: &str = "impersonate-extra-";

/// What the impersonation headers ask for.
#[derive(Debug, Default, PartialEq, Eq)]
struct Impersonation {
    user: String,
    groups: Vec<String>,
    uid: Option<String>,
    extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl Impersonation {
    /// `None` when no impersonation header is present; 400 for a group, uid or extra
    /// asked without a user (kube-apiserver answers that 500; it is the client's mistake).
    fn from_headers(
        headers: &actix_web::http::header::HeaderMap,
    ) -> Result<Option<Self>, ApiError> {
        let mut asked = Impersonation::default();
        let mut any = false;
        for (name, value) in headers {
            let name = name.as_str();
            let text = || {
                value
                    .to_str()
                    .map(str::to_string)
                    .map_err(|_| ApiError::bad_request(format!("header {name} is not text")))
            };
            if name == IMPERSONATE_USER {
                asked.user = text()?;
            } else if name == IMPERSONATE_GROUP {
                asked.groups.push(text()?);
            } else if name == IMPERSONATE_UID {
                asked.uid = Some(text()?);
            } else if let Some(key) = name.strip_prefix(IMPERSONATE_EXTRA) {
                let key = crate::auth::percent_decode(key)
                    .ok_or_else(|| ApiError::bad_request(format!("header {name}: bad escape")))?;
                asked
                    .extra
                    .entry(key.to_lowercase())
                    .or_default()
                    .push(text()?);
            } else {
                continue;
            }
            any = true;
        }
        if !any {
            return Ok(None);
        }
        if asked.user.is_empty() {
            return Err(ApiError::bad_request(
                "requested impersonation of groups, a uid or user extras without impersonating a user",
            ));
        }
        Ok(Some(asked))
    }

    /// The impersonated user, once `requester` is allowed to be each part of it.
    async fn authorize(
        self,
        requester: &UserInfo,
        authz: &AuthorizerChain,
    ) -> Result<UserInfo, ApiError> {
        let check = |resource: &'static str,
                     group: &'static str,
                     namespace: String,
                     name: String,
                     sub: String| async move {
            let attrs = Attributes::resource(requester, "impersonate", group, resource)
                .in_namespace(&namespace)
                .named(&name)
                .with_subresource(&sub);
            authz.check(&attrs).await
        };
        let service_account = self
            .user
            .strip_prefix(SERVICE_ACCOUNT_PREFIX)
            .and_then(|rest| rest.split_once(':'))
            .filter(|(ns, name)| !ns.is_empty() && !name.is_empty() && !name.contains(':'));
        let none = String::new;
        match service_account {
            Some((ns, name)) => {
                check("serviceaccounts", "", ns.into(), name.into(), none()).await?
            }
            None => check("users", "", none(), self.user.clone(), none()).await?,
        }
        for group in &self.groups {
            check("groups", "", none(), group.clone(), none()).await?;
        }
        if let Some(uid) = &self.uid {
            check("uids", AUTHENTICATION_GROUP, none(), uid.clone(), none()).await?;
        }
        for (key, values) in &self.extra {
            for value in values {
                let (value, key) = (value.clone(), key.clone());
                check("userextras", AUTHENTICATION_GROUP, none(), value, key).await?;
            }
        }
        let mut groups = self.groups;
        if let (Some((ns, _)), true) = (service_account, groups.is_empty()) {
            groups = vec![SERVICE_ACCOUNTS.into(), format!("{SERVICE_ACCOUNTS}:{ns}")];
        }
        let implied = if self.user == ANONYMOUS {
            UNAUTHENTICATED
        } else {
            AUTHENTICATED
        };
        if !groups
            .iter()
            .any(|g| g == AUTHENTICATED || g == UNAUTHENTICATED)
        {
            groups.push(implied.into());
        }
        Ok(UserInfo {
            name: self.user,
            uid: self.uid.unwrap_or_default(),
            groups,
            extra: self.extra,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::authz::{AlwaysAllow, AlwaysDeny};
    use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    fn alice() -> UserInfo {
        UserInfo {
            name: "alice".into(),
            groups: vec![AUTHENTICATED.into()],
            ..UserInfo::default()
        }
    }

    #[actix_web::test]
    async fn headers_become_a_user_with_implied_groups() {
        let asked = Impersonation::from_headers(&headers(&[
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "dev"),
            ("Impersonate-Group", "ops"),
            ("Impersonate-Extra-Scopes%2Fv1", "read"),
        ]))
        .unwrap()
        .unwrap();
        let allow = AuthorizerChain::new(vec![Arc::new(AlwaysAllow)]);
        let user = asked.authorize(&alice(), &allow).await.unwrap();
        assert_eq!(user.name, "bob");
        assert_eq!(user.groups, ["dev", "ops", AUTHENTICATED]);
        assert_eq!(user.extra["scopes/v1"], ["read"]);
    }

    #[actix_web::test]
    async fn a_service_account_gets_its_groups() {
        let asked = Impersonation::from_headers(&headers(&[(
            "Impersonate-User",
            "system:serviceaccount:ns1:robot",
        )]))
        .unwrap()
        .unwrap();
        let allow = AuthorizerChain::new(vec![Arc::new(AlwaysAllow)]);
        let user = asked.authorize(&alice(), &allow).await.unwrap();
        assert_eq!(
            user.groups,
            [
                SERVICE_ACCOUNTS,
                "system:serviceaccounts:ns1",
                AUTHENTICATED
            ]
        );
    }

    #[actix_web::test]
    async fn refused_and_malformed_impersonation() {
        assert_eq!(Impersonation::from_headers(&headers(&[])).unwrap(), None);
        let e = Impersonation::from_headers(&headers(&[("Impersonate-Group", "dev")])).unwrap_err();
        assert_eq!(e.code, 400);
        assert!(Impersonation::from_headers(&headers(&[
            ("Impersonate-User", "bob"),
            ("Impersonate-Extra-%zz", "x")
        ]))
        .is_err());
        let deny = AuthorizerChain::new(vec![Arc::new(AlwaysDeny)]);
        let asked = Impersonation::from_headers(&headers(&[("Impersonate-User", "bob")]))
            .unwrap()
            .unwrap();
        let e = asked.authorize(&alice(), &deny).await.unwrap_err();
        assert_eq!(e.code, 403);
        assert!(e.message.starts_with(
            r#"users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
        ), "{}", e.message);
    }
}
