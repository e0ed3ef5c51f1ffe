//! The parent's `kube-system/extension-apiserver-authentication` ConfigMap, followed:
//! an aggregated server given no CA flags trusts the client CA and front-proxy
//! settings its parent publishes, read at start-up and then every few seconds, so a
//! rotated front-proxy CA or a changed list of allowed names takes effect without a
//! restart (upstream follows the ConfigMap with an informer). A ConfigMap that cannot
//! be read or used keeps the settings in force.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rustls::crypto::CryptoProvider;

use super::authn::requestheader::{RequestHeaderAuthenticator, RequestHeaderConfig};
use super::authn::x509::{ClientCa, X509Authenticator};
use super::authn::Replaceable;
use super::extension_config::{ExtensionAuthentication, NAME, NAMESPACE};
use super::parent::{Parent, ParentError};

/// Between two reads of the parent's ConfigMap.
pub const FOLLOW_INTERVAL: Duration = Duration::from_secs(5);

/// The parent's published settings; `None` when it publishes none (404).
pub async fn lookup(parent: &Parent) -> Result<Option<ExtensionAuthentication>, String> {
    let path = format!("/api/v1/namespaces/{NAMESPACE}/configmaps/{NAME}");
    match parent.get(&path).await {
        Ok(config_map) => {
            let data: BTreeMap<String, String> =
                serde_json::from_value(config_map["data"].clone()).unwrap_or_default();
            ExtensionAuthentication::from_data(&data)
                .map(Some)
                .map_err(|e| format!("{NAMESPACE}/{NAME}: {e}"))
        }
        Err(ParentError::Status { code: 404, .. }) => Ok(None),
        // Upstream's hint: the reader role exists in every cluster for this.
        Err(ParentError::Status { code: 403, message }) => Err(format!(
            "{message}; usually fixed by 'kubectl create rolebinding -n {NAMESPACE} ROLEBINDING_NAME --role=extension-apiserver-authentication-reader --user=YOUR_USER'"
        )),
        Err(e) => Err(e.to_string()),
    }
}

fn from_parent(key: &str) -> String {
    format!("the parent's {NAMESPACE}/{NAME} {key}")
}

/// The client certificate authenticator of a published client CA.
pub fn x509_authenticator(
    pem: &str,
    provider: Arc<CryptoProvider>,
) -> Result<X509Authenticator, String> {
    let ca = ClientCa::from_pem(pem.as_bytes(), &from_parent("client-ca-file"), provider)?;
    Ok(X509Authenticator::new(ca))
}

/// The front-proxy authenticator of a published front-proxy CA and its settings.
pub fn request_header_authenticator(
    (pem, config): &(String, RequestHeaderConfig),
    provider: Arc<CryptoProvider>,
) -> Result<RequestHeaderAuthenticator, String> {
    let source = from_parent("requestheader-client-ca-file");
    let ca = ClientCa::from_pem(pem.as_bytes(), &source, provider)?;
    Ok(RequestHeaderAuthenticator::new(ca, config.clone()))
}

/// The authenticators built from what the parent publishes (those the flags give
/// are `None` here, and stay as they are).
pub struct Followed {
    pub x509: Option<Arc<Replaceable<X509Authenticator>>>,
    pub request_header: Option<Arc<Replaceable<RequestHeaderAuthenticator>>>,
}

/// Reads the parent's ConfigMap every [`FOLLOW_INTERVAL`] and, when what it says
/// changed since `seen`, replaces the followed authenticators.
pub fn spawn(
    parent: Arc<Parent>,
    followed: Followed,
    mut seen: ExtensionAuthentication,
    provider: Arc<CryptoProvider>,
) {
    crate::panics::spawn("extension-apiserver-authentication follower", async move {
        loop {
            tokio::time::sleep(FOLLOW_INTERVAL).await;
            let published = match lookup(&parent).await {
                Ok(found) => found.unwrap_or_default(),
                Err(e) => {
                    tracing::warn!("reading the parent's {NAMESPACE}/{NAME}: {e}");
                    continue;
                }
            };
            if published == seen {
                continue;
            }
            match apply(&followed, &published, &provider) {
                Ok(()) => {
                    tracing::info!("the parent's {NAMESPACE}/{NAME} changed: now trusted");
                    seen = published;
                }
                Err(e) => tracing::warn!("the parent's {NAMESPACE}/{NAME}: {e}; kept the last"),
            }
        }
    });
}

/// Replaces the followed authenticators with those `published` gives; none replaced
/// when one of them cannot be built.
fn apply(
    followed: &Followed,
    published: &ExtensionAuthentication,
    provider: &Arc<CryptoProvider>,
) -> Result<(), String> {
    let x509 = match (&followed.x509, &published.client_ca) {
        (Some(_), Some(pem)) => Some(x509_authenticator(pem, provider.clone())?),
        _ => None,
    };
    let request_header = match (&followed.request_header, &published.request_header) {
        (Some(_), Some(settings)) => {
            Some(request_header_authenticator(settings, provider.clone())?)
        }
        _ => None,
    };
    if let Some(slot) = &followed.x509 {
        slot.replace(x509);
    }
    if let Some(slot) = &followed.request_header {
        slot.replace(request_header);
    }
    Ok(())
}
