//! Which admission plugins run, by upstream's names: `--enable-admission-plugins` adds to
//! upstream's default set, `--disable-admission-plugins` takes away, and the chain runs
//! them in upstream's fixed order whatever order the flags list them in.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::namespaces::{NamespaceAutoProvision, NamespaceExists, NamespaceLifecycle};
use super::policy::{Policies, ValidatingAdmissionPolicy};
use super::webhook::{self, WebhookConfigurations};
use super::{Attributes, Chain, MutatingPlugin, ValidatingPlugin};
use crate::api::ApiError;
use crate::auth::escalation::EscalationCheck;
use crate::catalog::Catalog;
use crate::registry::Store;

/// What this server does with a plugin upstream has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Support {
    /// Implemented here.
    Implemented,
    /// Upstream's plugin acts only on kinds this server does not serve (pods, nodes,
    /// persistent volumes, ...); naming it is accepted and it does nothing.
    NothingToActOn,
}

use Support::{Implemented, NothingToActOn};

/// Upstream's plugins in the order kube-apiserver runs them, whether each is on by
/// default, and what this server does with it.
const ORDERED: &[(&str, bool, Support)] = &[
    ("AlwaysAdmit", false, Implemented),
    ("NamespaceAutoProvision", false, Implemented),
    ("NamespaceLifecycle", true, Implemented),
    ("NamespaceExists", false, Implemented),
    ("LimitPodHardAntiAffinityTopology", false, NothingToActOn),
    ("LimitRanger", true, NothingToActOn),
    ("ServiceAccount", true, NothingToActOn),
    ("NodeRestriction", false, NothingToActOn),
    ("TaintNodesByCondition", true, NothingToActOn),
    ("AlwaysPullImages", false, NothingToActOn),
    ("ImagePolicyWebhook", false, NothingToActOn),
    ("PodSecurity", true, NothingToActOn),
    ("PodNodeSelector", false, NothingToActOn),
    ("Priority", true, NothingToActOn),
    ("DefaultTolerationSeconds", true, NothingToActOn),
    ("PodTolerationRestriction", false, NothingToActOn),
    ("EventRateLimit", false, NothingToActOn),
    ("ExtendedResourceToleration", false, NothingToActOn),
    ("DefaultStorageClass", true, NothingToActOn),
    ("StorageObjectInUseProtection", true, NothingToActOn),
    (
        "OwnerReferencesPermissionEnforcement",
        false,
        NothingToActOn,
    ),
    ("PersistentVolumeClaimResize", true, NothingToActOn),
    ("RuntimeClass", true, NothingToActOn),
    ("CertificateApproval", true, NothingToActOn),
    ("CertificateSigning", true, NothingToActOn),
    ("ClusterTrustBundleAttest", true, NothingToActOn),
    ("CertificateSubjectRestriction", true, NothingToActOn),
    ("DefaultIngressClass", true, NothingToActOn),
    ("DenyServiceExternalIPs", false, NothingToActOn),
    ("PodTopologyLabels", true, NothingToActOn),
    ("MutatingAdmissionPolicy", false, NothingToActOn),
    ("MutatingAdmissionWebhook", true, Implemented),
    ("ValidatingAdmissionPolicy", true, Implemented),
    ("ValidatingAdmissionWebhook", true, Implemented),
    ("ResourceQuota", true, NothingToActOn),
    ("AlwaysDeny", false, Implemented),
];

/// The plugins the flags select, in upstream's order; every problem with the flags.
pub fn select(enable: &[String], disable: &[String]) -> Result<Vec<&'static str>, Vec<String>> {
    let mut errors = Vec::new();
    for (flag, names) in [
        ("enable-admission-plugins", enable),
        ("disable-admission-plugins", disable),
    ] {
        for name in names {
            if !ORDERED.iter().any(|(n, _, _)| n == name) {
                errors.push(format!(
                    "--{flag}: plugin {name:?} is unknown; known plugins: {}",
                    ORDERED
                        .iter()
                        .map(|(n, _, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
    let both: Vec<&str> = enable
        .iter()
        .filter(|n| disable.contains(n))
        .map(String::as_str)
        .collect();
    if !both.is_empty() {
        errors.push(format!(
            "--enable-admission-plugins and --disable-admission-plugins have overlapped plugins: [{}]",
            both.join(" ")
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(ORDERED
        .iter()
        .filter(|(name, on, _)| {
            (*on || enable.iter().any(|e| e == name)) && !disable.iter().any(|d| d == name)
        })
        .map(|(name, _, _)| *name)
        .collect())
}

/// The selected plugins that have nothing to act on in this server (said once at start-up).
pub fn inert(selected: &[&str]) -> Vec<&'static str> {
    ORDERED
        .iter()
        .filter(|(n, _, s)| *s == NothingToActOn && selected.contains(n))
        .map(|(n, _, _)| *n)
        .collect()
}

/// What the plugins are made from.
pub struct Dependencies {
    pub catalog: Arc<Catalog>,
    pub store: Store,
    pub escalation: EscalationCheck,
    pub webhooks: Arc<WebhookConfigurations>,
    pub policies: Arc<Policies>,
}

/// The chain of the selected plugins; RBAC's escalation checks always run first in the
/// validating phase.
pub fn build(selected: &[&str], deps: Dependencies) -> Chain {
    let mut mutating: Vec<Arc<dyn MutatingPlugin>> = Vec::new();
    let mut validating: Vec<Arc<dyn ValidatingPlugin>> = vec![Arc::new(deps.escalation)];
    for name in selected {
        match *name {
            "NamespaceAutoProvision" => {
                if let Some(namespaces) = deps.catalog.get("", "v1", "namespaces") {
                    mutating.push(Arc::new(NamespaceAutoProvision {
                        store: deps.store.clone(),
                        namespaces,
                    }))
                }
            }
            "NamespaceLifecycle" => mutating.push(Arc::new(NamespaceLifecycle {
                store: deps.store.clone(),
            })),
            "NamespaceExists" => mutating.push(Arc::new(NamespaceExists {
                store: deps.store.clone(),
            })),
            "MutatingAdmissionWebhook" => {
                mutating.push(Arc::new(webhook::Mutating(deps.webhooks.clone())))
            }
            "ValidatingAdmissionPolicy" => {
                validating.push(Arc::new(ValidatingAdmissionPolicy(deps.policies.clone())))
            }
            "ValidatingAdmissionWebhook" => {
                validating.push(Arc::new(webhook::Validating(deps.webhooks.clone())))
            }
            "AlwaysDeny" => validating.push(Arc::new(AlwaysDeny)),
            _ => {}
        }
    }
    Chain::new(mutating, validating)
}

/// `AlwaysDeny`: refuses every write (a test plugin upstream too).
struct AlwaysDeny;

#[async_trait]
impl ValidatingPlugin for AlwaysDeny {
    async fn validate(&self, _: &Attributes<'_>, _: Option<&Value>) -> Result<(), ApiError> {
        Err(ApiError::forbidden_request(
            "",
            "",
            "",
            "admission control is denying all modifications",
        ))
    }
}
