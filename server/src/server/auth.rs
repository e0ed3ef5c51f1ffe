//! Start-up of authentication and authorization: the flags turned into the chain of
//! authenticators, the authorizers, and the service account token keys.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use actix_web::web;
use async_trait::async_trait;
use rustls::crypto::CryptoProvider;
use rustls::server::danger::ClientCertVerifier;

use crate::api::options::ReadAt;
use crate::auth::authn::requestheader::RequestHeaderAuthenticator;
use crate::auth::authn::serviceaccount::{ObjectLookup, ServiceAccountTokens, TokenIssuer};
use crate::auth::authn::token_review::TokenReviewAuthenticator;
use crate::auth::authn::x509::{self, ClientCa};
use crate::auth::authn::{
    token_file::StaticTokens, x509::X509Authenticator, Authenticator, Replaceable,
};
use crate::auth::authz::RbacAuthorizer;
use crate::auth::extension_config::{self, ExtensionAuthentication};
use crate::auth::extension_follower::{self, Followed};
use crate::auth::parent::Parent;
use crate::auth::webhook_authz::{AlwaysAllowPaths, DecisionTtls, SubjectAccessReviewAuthorizer};
use crate::auth::{authz, names, Auth, UserInfo};
use crate::endpoints::ApiState;
use crate::options::ServerRunOptions;

/// The name of the user the admin kubeconfig's token stands for.
pub const ADMIN_USER: &str = "admin";

/// What [`configure`] sets up: the chain, the TLS verifier that requests client
/// certificates when a client or front-proxy CA is known, the RBAC authorizer to start,
/// and what this server publishes for the API servers it fronts.
pub struct Configured {
    pub auth: Auth,
    pub client_verifier: Option<Arc<dyn ClientCertVerifier>>,
    pub rbac: Option<Arc<RbacAuthorizer>>,
    /// The CAs and front-proxy settings of this server's own flags, for
    /// [`publish_extension_authentication`].
    pub published: ExtensionAuthentication,
}

/// The authentication chain and authorizers the flags ask for. The admin token the
/// kubeconfig carries is a static token of [`ADMIN_USER`] in `system:masters`. With
/// `--authentication-kubeconfig`, CAs the flags do not give are looked up in the parent's
/// extension-apiserver-authentication ConfigMap first.
pub async fn configure(
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
    let authn_parent = parent(
        &opts.authentication_kubeconfig,
        "--authentication-kubeconfig",
    )?;
    let published = own_settings(opts)?;
    let cas = client_cas(opts, authn_parent.as_deref(), &published, provider.clone()).await?;
    let subjects: Vec<_> = cas
        .x509
        .iter()
        .map(X509Authenticator::ca)
        .chain(
            cas.request_header
                .iter()
                .map(RequestHeaderAuthenticator::ca),
        )
        .flat_map(|ca| ca.subjects().iter().cloned())
        .collect();
    let x509 = Arc::new(Replaceable::new(cas.x509));
    let request_header = Arc::new(Replaceable::new(cas.request_header));
    let verifier = match (&authn_parent, cas.looked_up) {
        // The parent's CAs may change while serving: certificates are asked for
        // without naming issuers (any is sent; the authenticators verify the chain).
        (Some(parent), Some(seen)) => {
            let followed = Followed {
                x509: opts.client_ca_file.is_none().then(|| x509.clone()),
                request_header: opts
                    .requestheader_client_ca_file
                    .is_none()
                    .then(|| request_header.clone()),
            };
            extension_follower::spawn(parent.clone(), followed, seen, provider.clone());
            Some(x509::tls_verifier(Vec::new(), provider))
        }
        _ => (!subjects.is_empty()).then(|| x509::tls_verifier(subjects, provider)),
    };
    let (token_issuer, service_accounts) = service_account_tokens(opts, state)?;
    let mut token_authenticators: Vec<Arc<dyn crate::auth::authn::TokenAuthenticator>> =
        vec![Arc::new(tokens), service_accounts.clone()];
    if let Some(parent) = &authn_parent {
        let ttl = opts.authentication_token_webhook_cache_ttl;
        token_authenticators.push(Arc::new(TokenReviewAuthenticator::new(parent.clone(), ttl)));
    }
    let mut rbac: Option<Arc<RbacAuthorizer>> = None;
    let mut modes: Vec<Arc<dyn authz::Authorizer>> = opts
        .authorization_modes()
        .iter()
        .map(|mode| -> Arc<dyn authz::Authorizer> {
            match mode.as_str() {
                "AlwaysDeny" => Arc::new(authz::AlwaysDeny),
                "RBAC" => rbac.get_or_insert_with(Default::default).clone(),
                _ => Arc::new(authz::AlwaysAllow),
            }
        })
        .collect();
    if let Some(parent) = parent(&opts.authorization_kubeconfig, "--authorization-kubeconfig")? {
        // As upstream's delegating authorizer: the always-allowed paths, then the parent
        // (system:masters is allowed first by the chain itself).
        modes.push(Arc::new(AlwaysAllowPaths::new(
            &opts.authorization_always_allow_paths,
        )?));
        let ttls = DecisionTtls {
            authorized: opts.authorization_webhook_cache_authorized_ttl,
            unauthorized: opts.authorization_webhook_cache_unauthorized_ttl,
        };
        modes.push(Arc::new(SubjectAccessReviewAuthorizer::new(parent, ttls)));
    }
    let auth = Auth {
        authenticator: Authenticator {
            request_header,
            x509,
            tokens: token_authenticators,
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
        published,
    })
}

/// The parent a kubeconfig flag names, if given.
fn parent(
    kubeconfig: &Option<std::path::PathBuf>,
    flag: &str,
) -> Result<Option<Arc<Parent>>, String> {
    kubeconfig
        .as_ref()
        .map(|path| Parent::from_kubeconfig(path, flag).map(Arc::new))
        .transpose()
}

/// The client and front-proxy CAs (with its headers) of this server's own flags.
fn own_settings(opts: &ServerRunOptions) -> Result<ExtensionAuthentication, String> {
    let read = |flag: &str, path: &Path| {
        std::fs::read_to_string(path).map_err(|e| format!("{flag} {}: {e}", path.display()))
    };
    let client_ca = match &opts.client_ca_file {
        Some(path) => Some(read("--client-ca-file", path)?),
        None => None,
    };
    let request_header = match &opts.requestheader_client_ca_file {
        Some(path) => Some((
            read("--requestheader-client-ca-file", path)?,
            opts.request_header_config(),
        )),
        None => None,
    };
    Ok(ExtensionAuthentication {
        client_ca,
        request_header,
    })
}

/// The certificate authenticators.
struct ClientCas {
    x509: Option<X509Authenticator>,
    request_header: Option<RequestHeaderAuthenticator>,
    /// What the parent published, when it was asked (what its follower starts from).
    looked_up: Option<ExtensionAuthentication>,
}

/// The CAs of the flags; those not given, from the parent's published settings when
/// there is a parent to ask (as upstream's delegating authentication looks them up).
async fn client_cas(
    opts: &ServerRunOptions,
    parent: Option<&Parent>,
    own: &ExtensionAuthentication,
    provider: Arc<CryptoProvider>,
) -> Result<ClientCas, String> {
    let missing = own.client_ca.is_none() || own.request_header.is_none();
    let looked_up = match parent {
        Some(parent) if missing && !opts.authentication_skip_lookup => {
            match extension_follower::lookup(parent).await {
                Ok(found) => Some(found.unwrap_or_default()),
                Err(e) if opts.authentication_tolerate_lookup_failure => {
                    tracing::warn!(
                        "cannot read the parent's {}/{}, continuing without the CAs it would give: {e}",
                        extension_config::NAMESPACE,
                        extension_config::NAME
                    );
                    Some(ExtensionAuthentication::default())
                }
                Err(e) => {
                    return Err(format!(
                        "unable to load configmap based request-header-client-ca-file: {e} (--authentication-skip-lookup or --authentication-tolerate-lookup-failure start without it)"
                    ))
                }
            }
        }
        _ => None,
    };
    let published = looked_up.clone().unwrap_or_default();
    let x509 = match (&opts.client_ca_file, &published.client_ca) {
        (Some(path), _) => Some(X509Authenticator::load(path, provider.clone())?),
        (None, Some(pem)) => {
            tracing::info!("client certificates verified against the parent's published CA");
            Some(extension_follower::x509_authenticator(
                pem,
                provider.clone(),
            )?)
        }
        (None, None) => None,
    };
    let request_header = match (
        &opts.requestheader_client_ca_file,
        &published.request_header,
    ) {
        (Some(path), _) => {
            let ca = ClientCa::load(path, "--requestheader-client-ca-file", provider)?;
            Some(RequestHeaderAuthenticator::new(
                ca,
                opts.request_header_config(),
            ))
        }
        (None, Some(settings)) => {
            tracing::info!("front proxies verified against the parent's published CA");
            Some(extension_follower::request_header_authenticator(
                settings, provider,
            )?)
        }
        (None, None) => None,
    };
    Ok(ClientCas {
        x509,
        request_header,
        looked_up,
    })
}

/// Writes this server's client and front-proxy CAs into
/// kube-system/extension-apiserver-authentication, added to what is there, as
/// kube-apiserver keeps it for the API servers it fronts. Nothing to publish: nothing
/// written.
pub async fn publish_extension_authentication(
    state: &ApiState,
    ours: &ExtensionAuthentication,
) -> Result<(), String> {
    use crate::registry::store::{Target, WriteContext};
    if ours.client_ca.is_none() && ours.request_header.is_none() {
        return Ok(());
    }
    let Some(res) = state.catalog.get("", "v1", "configmaps") else {
        return Ok(());
    };
    let (ns, name) = (extension_config::NAMESPACE, extension_config::NAME);
    let fail = |e: crate::api::ApiError| format!("writing configmap {ns}/{name}: {e}");
    let ctx = WriteContext::new("kube-apiserver");
    // A write that raced another server's is tried again on what that one wrote.
    for _ in 0..3 {
        let existing = match state.store.get(&res, Some(ns), name).await {
            Ok(obj) => Some(obj),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(fail(e)),
        };
        let current: BTreeMap<String, String> = existing
            .as_ref()
            .and_then(|o| serde_json::from_value(o["data"].clone()).ok())
            .unwrap_or_default();
        let published = ExtensionAuthentication::from_data(&current).unwrap_or_default();
        let data = ours.merged_into(&published).to_data();
        let written = match existing {
            Some(_) if data == current => return Ok(()),
            Some(mut obj) => {
                obj["data"] = serde_json::json!(data);
                state
                    .store
                    .update(&res, Some(ns), name, obj, Target::Main, &ctx)
                    .await
            }
            None => {
                let obj = serde_json::json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": { "name": name, "namespace": ns },
                    "data": data,
                });
                state.store.create(&res, Some(ns), obj, &ctx).await
            }
        };
        match written {
            Ok(_) => return Ok(()),
            Err(e) if e.is_conflict() || e.is_already_exists() => continue,
            Err(e) => return Err(fail(e)),
        }
    }
    Err(format!(
        "writing configmap {ns}/{name}: kept conflicting with other writers"
    ))
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
