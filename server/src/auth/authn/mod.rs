//! Authentication: the chain that turns a request's credentials into a [`UserInfo`], as
//! kube-apiserver's union authenticator does. Each authenticator recognises its kind of
//! credential; the first that accepts one decides. Credentials that one of them
//! recognises but refuses (a certificate from another CA, an unknown or expired token)
//! are 401 even with anonymous access on: a bad credential never becomes anonymous.

pub mod requestheader;
pub mod serviceaccount;
pub mod token_file;
pub mod token_review;
pub mod x509;

use std::sync::{Arc, RwLock};

use actix_web::http::header::HeaderMap;
use async_trait::async_trait;
use rustls::pki_types::CertificateDer;

use super::names::AUTHENTICATED;
use super::UserInfo;

/// What a request presents: its bearer token, the client certificate chain of its
/// TLS connection, and its headers (a front proxy's user).
#[derive(Clone, Copy, Debug, Default)]
pub struct Credentials<'a> {
    /// The token of an `Authorization: Bearer <token>` header.
    pub bearer: Option<&'a str>,
    /// The client's certificate chain, leaf first.
    pub client_certs: Option<&'a [CertificateDer<'static>]>,
    /// The request's headers.
    pub headers: Option<&'a HeaderMap>,
}

/// Why a request is not authenticated (always answered 401, as upstream; the reasons
/// are logged, never sent).
#[derive(Debug, PartialEq, Eq)]
pub struct Unauthenticated(pub Vec<String>);

/// Recognises bearer tokens of one kind.
#[async_trait]
pub trait TokenAuthenticator: Send + Sync {
    /// `Ok(None)`: not a token of this kind; `Err`: one of this kind that is not valid.
    async fn authenticate_token(&self, token: &str) -> Result<Option<UserInfo>, String>;

    /// For a token meant for one of `wanted` (TokenReview's audiences): the user and the
    /// audiences it is good for. A token without audiences (a static one) is good for
    /// the API's own, `api`, as upstream treats audience-agnostic authenticators.
    async fn authenticate_for(
        &self,
        token: &str,
        wanted: &[String],
        api: &[String],
    ) -> Result<Option<(UserInfo, Vec<String>)>, String> {
        let both: Vec<String> = wanted.iter().filter(|a| api.contains(a)).cloned().collect();
        if both.is_empty() {
            return Ok(None);
        }
        Ok(self.authenticate_token(token).await?.map(|u| (u, both)))
    }
}

/// An authenticator that may be replaced while serving (one built from the parent's
/// published settings, which are followed); each request uses the one current when it
/// arrives.
pub struct Replaceable<T>(RwLock<Option<Arc<T>>>);

impl<T> Default for Replaceable<T> {
    fn default() -> Self {
        Replaceable(RwLock::new(None))
    }
}

impl<T> Replaceable<T> {
    /// Holding `value`.
    pub fn new(value: Option<T>) -> Self {
        Replaceable(RwLock::new(value.map(Arc::new)))
    }

    /// The current one.
    pub fn current(&self) -> Option<Arc<T>> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Puts `value` in its place, for the requests that arrive from now on.
    pub fn replace(&self, value: Option<T>) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = value.map(Arc::new);
    }
}

/// The authentication chain, in upstream's order: front proxies, client certificates,
/// bearer tokens, then anonymous.
#[derive(Default)]
pub struct Authenticator {
    /// `--requestheader-client-ca-file` (or the parent's published front-proxy CA).
    pub request_header: Arc<Replaceable<requestheader::RequestHeaderAuthenticator>>,
    /// `--client-ca-file` (or the parent's published client CA).
    pub x509: Arc<Replaceable<x509::X509Authenticator>>,
    /// Static tokens (the admin token, `--token-auth-file`), service account tokens, the
    /// parent's TokenReviews (`--authentication-kubeconfig`).
    pub tokens: Vec<Arc<dyn TokenAuthenticator>>,
    /// `--anonymous-auth`.
    pub anonymous: bool,
}

impl Authenticator {
    /// The user the credentials prove, `system:authenticated` added; the anonymous user
    /// when there are none (and anonymous access is on).
    pub async fn authenticate(&self, creds: Credentials<'_>) -> Result<UserInfo, Unauthenticated> {
        let mut errors = Vec::new();
        if let (Some(proxy), Some(headers)) = (self.request_header.current(), creds.headers) {
            match proxy.authenticate(creds.client_certs, headers) {
                Ok(Some(user)) => return Ok(authenticated(user)),
                Ok(None) => {}
                Err(e) => errors.push(format!("front proxy: {e}")),
            }
        }
        if let (Some(x509), Some(chain)) = (self.x509.current(), creds.client_certs) {
            match x509.authenticate(chain) {
                Ok(user) => return Ok(authenticated(user)),
                Err(e) => errors.push(format!("x509: {e}")),
            }
        }
        if let Some(token) = creds.bearer {
            let mut recognised = false;
            for authenticator in &self.tokens {
                match authenticator.authenticate_token(token).await {
                    Ok(Some(user)) => return Ok(authenticated(user)),
                    Ok(None) => {}
                    Err(e) => {
                        recognised = true;
                        errors.push(e);
                    }
                }
            }
            // As upstream's bearer-token authenticator: a token nobody knows is an error.
            if !recognised {
                errors.push("invalid bearer token".into());
            }
        }
        if errors.is_empty() && self.anonymous {
            return Ok(UserInfo::anonymous());
        }
        if errors.is_empty() {
            errors.push("no credentials, and anonymous access is off".into());
        }
        Err(Unauthenticated(errors))
    }
}

impl Authenticator {
    /// TokenReview: the user of a bearer token meant for one of `wanted`, and the
    /// audiences it is good for; the reasons it is not valid otherwise.
    pub async fn review_token(
        &self,
        token: &str,
        wanted: &[String],
        api: &[String],
    ) -> Result<(UserInfo, Vec<String>), Vec<String>> {
        let mut errors = Vec::new();
        for authenticator in &self.tokens {
            match authenticator.authenticate_for(token, wanted, api).await {
                Ok(Some((user, audiences))) => return Ok((authenticated(user), audiences)),
                Ok(None) => {}
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            errors.push("invalid bearer token".into());
        }
        Err(errors)
    }
}

/// Adds `system:authenticated`, as upstream does for every authenticated user.
fn authenticated(mut user: UserInfo) -> UserInfo {
    if !user.groups.iter().any(|g| g == AUTHENTICATED) {
        user.groups.push(AUTHENTICATED.into());
    }
    user
}

/// The token of an `Authorization` header (`Bearer <token>`, scheme case-insensitive);
/// `None` for any other header or an empty token.
pub fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::names::{ANONYMOUS, UNAUTHENTICATED};

    struct Fixed;
    #[async_trait]
    impl TokenAuthenticator for Fixed {
        async fn authenticate_token(&self, token: &str) -> Result<Option<UserInfo>, String> {
            Ok(match token {
                "good" => Some(UserInfo {
                    name: "alice".into(),
                    groups: vec!["dev".into()],
                    ..UserInfo::default()
                }),
                "expired" => return Err("token expired".into()),
                _ => None,
            })
        }
    }

    fn chain(anonymous: bool) -> Authenticator {
        Authenticator {
            tokens: vec![Arc::new(Fixed)],
            anonymous,
            ..Authenticator::default()
        }
    }

    fn bearer(token: &str) -> Credentials<'_> {
        Credentials {
            bearer: Some(token),
            ..Credentials::default()
        }
    }

    #[actix_web::test]
    async fn a_known_token_authenticates_and_joins_system_authenticated() {
        let user = chain(true).authenticate(bearer("good")).await.unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, ["dev", AUTHENTICATED]);
    }

    #[actix_web::test]
    async fn bad_tokens_are_refused_even_with_anonymous_access() {
        for token in ["expired", "unknown"] {
            assert!(
                chain(true).authenticate(bearer(token)).await.is_err(),
                "{token}"
            );
        }
    }

    #[actix_web::test]
    async fn no_credentials_is_anonymous_only_when_allowed() {
        let user = chain(true)
            .authenticate(Credentials::default())
            .await
            .unwrap();
        assert_eq!(user.name, ANONYMOUS);
        assert_eq!(user.groups, [UNAUTHENTICATED]);
        assert!(chain(false)
            .authenticate(Credentials::default())
            .await
            .is_err());
    }

    #[test]
    fn bearer_headers() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Bearer "), None);
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer"), None);
    }
}
