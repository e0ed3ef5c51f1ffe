//! One webhook of a Mutating- or ValidatingWebhookConfiguration, read once when the
//! configuration changes: its endpoint, rules, selectors, match conditions and policies,
//! and the question of whether it is called for a request.

use std::time::Duration;

use serde_json::Value;

use super::super::matching::{strings, FailurePolicy, Rule};
use super::super::Attributes;
use crate::api::selectors::{labels_of, LabelSelector};
use crate::registry::cel::Expression;
use crate::webhook::Endpoint;

/// upstream's default and largest `timeoutSeconds`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_TIMEOUT_SECONDS: u64 = 30;

/// One webhook, ready to be matched and called.
pub struct Webhook {
    pub name: String,
    /// The endpoint, or why the client configuration cannot be used (every call fails
    /// with it, under the failure policy).
    pub endpoint: Result<Endpoint, String>,
    pub rules: Vec<Rule>,
    pub failure_policy: FailurePolicy,
    namespace_selector: Result<LabelSelector, String>,
    object_selector: Result<LabelSelector, String>,
    /// `None` or `NoneOnDryRun`: may be called for dry runs.
    pub dry_run_safe: bool,
    pub timeout: Duration,
    /// Whether it speaks AdmissionReview v1 (the only version this server sends).
    pub accepts_v1: bool,
    /// Mutating only: called again when later webhooks changed the object.
    pub reinvoke: bool,
    pub match_conditions: Vec<MatchCondition>,
    /// `matchPolicy: Equivalent` (the default): also called for another version of a
    /// resource its rules name, with the object converted to the named version.
    pub equivalent: bool,
}

/// A `matchConditions` entry: the webhook is called only when all are true.
pub struct MatchCondition {
    pub name: String,
    pub expression: Result<Expression, String>,
}

impl Webhook {
    /// The webhooks of one configuration object.
    pub fn all_of(configuration: &Value) -> Vec<Webhook> {
        configuration["webhooks"]
            .as_array()
            .into_iter()
            .flatten()
            .map(Webhook::from_json)
            .collect()
    }

    fn from_json(w: &Value) -> Webhook {
        let timeout = w["timeoutSeconds"]
            .as_u64()
            .map(|s| Duration::from_secs(s.clamp(1, MAX_TIMEOUT_SECONDS)))
            .unwrap_or(DEFAULT_TIMEOUT);
        let match_conditions = w["matchConditions"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, c)| MatchCondition {
                name: c["name"].as_str().unwrap_or_default().to_string(),
                expression: Expression::compile(
                    c["expression"].as_str().unwrap_or_default(),
                    &format!("matchConditions[{i}].expression"),
                )
                .map_err(|cause| cause.message),
            })
            .collect();
        Webhook {
            name: w["name"].as_str().unwrap_or_default().to_string(),
            endpoint: Endpoint::from_client_config(&w["clientConfig"]),
            rules: w["rules"]
                .as_array()
                .into_iter()
                .flatten()
                .map(Rule::from_json)
                .collect(),
            failure_policy: FailurePolicy::from_json(&w["failurePolicy"]),
            namespace_selector: LabelSelector::from_json(&w["namespaceSelector"]),
            object_selector: LabelSelector::from_json(&w["objectSelector"]),
            dry_run_safe: matches!(w["sideEffects"].as_str(), Some("None" | "NoneOnDryRun")),
            timeout,
            accepts_v1: strings(&w["admissionReviewVersions"])
                .iter()
                .any(|v| v == "v1"),
            reinvoke: w["reinvocationPolicy"] == "IfNeeded",
            match_conditions,
            equivalent: w["matchPolicy"] != "Exact",
        }
    }

    /// Whether a rule covers the request (as it is, not an equivalent resource).
    pub fn rules_match(&self, a: &Attributes<'_>) -> bool {
        self.rules.iter().any(|r| r.matches(a))
    }

    /// Whether the object selector selects the object (new or old). The namespace
    /// selector is asked apart ([`Self::selects_namespace`]), since it needs the
    /// namespace's labels.
    pub fn selects_object(&self, a: &Attributes<'_>, object: Option<&Value>) -> bool {
        let Ok(selector) = &self.object_selector else {
            return false;
        };
        selector.is_empty()
            || [object, a.old_object]
                .into_iter()
                .flatten()
                .any(|o| selector.matches(&labels_of(o)))
    }

    /// Whether the namespace selector selects `labels` (the namespace's, or a
    /// Namespace object's own); `None` for a cluster-scoped object, never exempt.
    pub fn selects_namespace(
        &self,
        labels: Option<&std::collections::BTreeMap<String, String>>,
    ) -> bool {
        match (&self.namespace_selector, labels) {
            (Err(_), _) => false,
            (Ok(_), None) => true,
            (Ok(s), Some(labels)) => s.matches(labels),
        }
    }

    /// Whether the namespace selector selects everything (no lookup needed).
    pub fn any_namespace(&self) -> bool {
        self.namespace_selector
            .as_ref()
            .is_ok_and(LabelSelector::is_empty)
    }

    /// Whether the webhook is called for a dry run (its side effects allow it).
    pub fn refuses_dry_run(&self, a: &Attributes<'_>) -> bool {
        a.dry_run && !self.dry_run_safe
    }
}
