//! Start-up of authentication and authorization: the flags turned into the chain of
//! authenticators, the authorizers, and the service account token keys.

use std::path::Path;
use std::sync::Arc;

use actix_web::web;
use async_trait::async_trait;
use rustls::server::danger::ClientCertVerifier;

use crate::api::options::ReadAt;
use crate::auth::authn::serviceaccount::{ObjectLookup, ServiceAccountTokens, TokenIssuer};
use crate::auth::authn::{token_file::StaticTokens, x509::X509Authenticator, Authenticator};
use crate::auth::authz::RbacAuthorizer;
use crate::auth::{authz, names, Auth, UserInfo};
use crate::endpoints::ApiState;
use crate::options::ServerRunOptions;

/// The name of the user the admin kubeconfig's token stands for.
pub const ADMIN_USER: &str = "admin";

/// What [`configure`] sets up: the chain, the TLS verifier that requests client
/// certificates when `--client-ca-file` is given, and the RBAC authorizer to start.
pub struct Configured {
    pub auth: Auth,
    pub client_verifier: Option<Arc<dyn ClientCertVerifier>>,
    pub rbac: Option<Arc<RbacAuthorizer>>,
}

/// The authentication chain and authorizers the flags ask for. The admin token the
/// kubeconfig carries is a static token of [`ADMIN_USER`] in `system:masters`.
pub fn configure(
    opts: &ServerRunOptions,
    admin_token: &str,
    state: &web::Data<ApiState>,
) -> Result<Configured, String> {
    let mut tokens = match &opts.token_auth_file {
        Some(path) => StaticTokens::load(path)?,
        None => StaticTokens::default(),
    };
    tokens.insert(
        admin_token.to_string(),
        UserInfo {
            name: ADMIN_USER.into(),
            groups: vec![names::MASTERS.into()],
            ..UserInfo::default()
        },
    );
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let x509 = match &opts.client_ca_file {
        Some(path) => Some(X509Authenticator::load(path, provider.clone())?),
        None => None,
    };
    let verifier = x509.as_ref().map(|x| x.tls_verifier(provider));
    let (token_issuer, service_accounts) = service_account_tokens(opts, state)?;
    let mut rbac: Option<Arc<RbacAuthorizer>> = None;
    let modes = opts
        .authorization_mode
        .iter()
        .map(|mode| -> Arc<dyn authz::Authorizer> {
            match mode.as_str() {
                "AlwaysDeny" => Arc::new(authz::AlwaysDeny),
                "RBAC" => rbac.get_or_insert_with(Default::default).clone(),
                _ => Arc::new(authz::AlwaysAllow),
            }
        })
        .collect();
    let auth = Auth {
        authenticator: Authenticator {
            x509,
            tokens: vec![Arc::new(tokens), service_accounts.clone()],
            anonymous: opts.anonymous_auth,
        },
        authorizer: authz::AuthorizerChain::new(modes),
        token_issuer,
        service_accounts,
        rbac: rbac.clone(),
    };
    Ok(Configured {
        auth,
        client_verifier: verifier,
        rbac,
    })
}

/// The token issuer and verifier: the signing key of the flag, or one generated once
/// per data directory.
fn service_account_tokens(
    opts: &ServerRunOptions,
    state: &web::Data<ApiState>,
) -> Result<(Arc<TokenIssuer>, Arc<ServiceAccountTokens>), String> {
    let read = |flag: &str, p: &Path| {
        std::fs::read_to_string(p).map_err(|e| format!("{flag} {}: {e}", p.display()))
    };
    let signing_flag = "--service-account-signing-key-file";
    let signing_key = match &opts.service_account_signing_key_file {
        Some(path) => read(signing_flag, path)?,
        None => generated_signing_key(&opts.data_dir.join("service-account.key"))?,
    };
    let issuers = opts.service_account_issuer.clone();
    let audiences = if opts.api_audiences.is_empty() {
        issuers.clone()
    } else {
        opts.api_audiences.clone()
    };
    let mut issuer = TokenIssuer::new(&signing_key, issuers[0].clone(), audiences.clone())
        .map_err(|e| format!("{signing_flag}: {e}"))?;
    issuer.max_expiration = opts.service_account_max_token_expiration;
    let mut keys = Vec::new();
    for path in &opts.service_account_key_file {
        keys.push(read("--service-account-key-file", path)?);
    }
    if keys.is_empty() {
        keys.push(signing_key);
    }
    let lookup = Arc::new(StoreLookup(state.clone()));
    let verifier = ServiceAccountTokens::new(&keys, issuers, audiences, lookup)
        .map_err(|e| format!("--service-account-key-file: {e}"))?;
    Ok((Arc::new(issuer), Arc::new(verifier)))
}

/// The key in `path`, made (ECDSA P-256, PKCS#8, readable by the owner only) when
/// missing.
fn generated_signing_key(path: &Path) -> Result<String, String> {
    if let Ok(pem) = std::fs::read_to_string(path) {
        return Ok(pem);
    }
    let pem = rcgen::KeyPair::generate()
        .map_err(|e| format!("generating the service account key: {e}"))?
        .serialize_pem();
    super::tls::write_private(path, &pem)?;
    Ok(pem)
}

/// Bound objects of tokens, looked up as the server holds them (the watch cache).
struct StoreLookup(web::Data<ApiState>);

#[async_trait]
impl ObjectLookup for StoreLookup {
    async fn uid(&self, kind: &str, namespace: &str, name: &str) -> Option<String> {
        let res = self.0.catalog.by_kind("", "v1", kind)?;
        let ns = res.namespaced().then_some(namespace);
        let obj = self
            .0
            .store
            .get_at(&res, ns, name, ReadAt::Any)
            .await
            .ok()?;
        obj["metadata"]["uid"].as_str().map(str::to_string)
    }
}
