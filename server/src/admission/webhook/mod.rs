//! `MutatingAdmissionWebhook` and `ValidatingAdmissionWebhook`: the webhooks of every
//! Mutating- and ValidatingWebhookConfiguration, kept current from the watch caches,
//! called over HTTPS with an AdmissionReview v1 for each request they match.
//!
//! Mutating webhooks run one after another, each seeing the object as the ones before
//! left it (JSON patches), and those with `reinvocationPolicy: IfNeeded` once more when
//! a later one changed it. Validating webhooks run concurrently, all of them, and any
//! refusal refuses the request. A webhook that cannot be called within its timeout is
//! skipped under `failurePolicy: Ignore` and refuses the request (500) under `Fail`.

mod config;
pub mod review;

use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use serde_json::Value;

use self::config::Webhook;
use super::matching::FailurePolicy;
use super::{Attributes, MutatingPlugin, ValidatingPlugin};
use crate::api::ApiError;
use crate::catalog::{ApiResource, Catalog};
use crate::registry::Store;

const GROUP: &str = "admissionregistration.k8s.io";

/// The webhooks of both kinds of configuration, as the watch caches last had them.
pub struct WebhookConfigurations {
    mutating: RwLock<Arc<Vec<Webhook>>>,
    validating: RwLock<Arc<Vec<Webhook>>>,
    store: Store,
}

impl WebhookConfigurations {
    /// Reads the configurations now (so the first request sees them) and keeps them
    /// current from then on. Without the admissionregistration kinds there are none.
    pub async fn start(catalog: &Catalog, store: Store) -> Arc<Self> {
        let kinds: Vec<Arc<ApiResource>> = [
            "mutatingwebhookconfigurations",
            "validatingwebhookconfigurations",
        ]
        .into_iter()
        .filter_map(|plural| catalog.get(GROUP, "v1", plural))
        .collect();
        let this = Arc::new(WebhookConfigurations {
            mutating: Default::default(),
            validating: Default::default(),
            store: store.clone(),
        });
        if kinds.len() != 2 {
            return this;
        }
        crate::controllers::follow(this.clone(), &store, kinds).await;
        this
    }
}

#[async_trait]
impl crate::controllers::Reload for WebhookConfigurations {
    /// Rebuilds both lists from the watch caches, configurations in name order (the
    /// order upstream calls them in).
    async fn reload(&self, kinds: &[Arc<ApiResource>]) {
        let store = &self.store;
        for (res, slot) in kinds.iter().zip([&self.mutating, &self.validating]) {
            let listed = match store
                .list(res, None, &crate::controllers::from_cache())
                .await
            {
                Ok(page) => page.items,
                Err(e) => {
                    tracing::warn!("admission webhooks: listing {}: {e}", res.def.plural);
                    continue;
                }
            };
            let mut configurations = listed;
            configurations.sort_by(|a, b| {
                a["metadata"]["name"]
                    .as_str()
                    .cmp(&b["metadata"]["name"].as_str())
            });
            let hooks: Vec<Webhook> = configurations.iter().flat_map(Webhook::all_of).collect();
            *slot.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(hooks);
        }
    }
}

impl WebhookConfigurations {
    fn mutating(&self) -> Arc<Vec<Webhook>> {
        self.mutating
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn validating(&self) -> Arc<Vec<Webhook>> {
        self.validating
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The webhooks of `hooks` that are called for this request.
    async fn matching<'h>(
        &self,
        hooks: &'h [Webhook],
        a: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<Vec<&'h Webhook>, ApiError> {
        // The configuration kinds themselves are never sent to webhooks (upstream: so a
        // broken webhook cannot lock its own configuration).
        if a.resource.def.group == GROUP && a.resource.def.plural.ends_with("webhookconfigurations")
        {
            return Ok(Vec::new());
        }
        let covered: Vec<&Webhook> = hooks.iter().filter(|h| h.covers(a, object)).collect();
        if covered.is_empty() {
            return Ok(covered);
        }
        let labels = match covered.iter().all(|h| h.any_namespace()) {
            true => None,
            false => super::matching::namespace_labels(&self.store, a, object).await?,
        };
        let mut called = Vec::new();
        for hook in covered {
            if !hook.selects_namespace(labels.as_ref()) {
                continue;
            }
            match conditions_hold(hook, a, object) {
                Ok(true) => called.push(hook),
                Ok(false) => {}
                Err(why) if hook.failure_policy == FailurePolicy::Ignore => {
                    tracing::warn!("webhook {:?}: {why}; failing open", hook.name)
                }
                Err(why) => return Err(review::call_failure(hook, &why)),
            }
        }
        Ok(called)
    }
}

/// Whether every match condition of `hook` holds for the request.
fn conditions_hold(
    hook: &Webhook,
    a: &Attributes<'_>,
    object: Option<&Value>,
) -> Result<bool, String> {
    if hook.match_conditions.is_empty() {
        return Ok(true);
    }
    let request = review::request("", a, None)["request"].clone();
    let null = Value::Null;
    let variables = [
        ("object", object.unwrap_or(&null)),
        ("oldObject", a.old_object.unwrap_or(&null)),
        ("request", &request),
    ];
    for c in &hook.match_conditions {
        let expression = c
            .expression
            .as_ref()
            .map_err(|e| format!("match condition {:?}: {e}", c.name))?;
        match expression.evaluate(&variables) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => return Ok(false),
            Ok(other) => {
                return Err(format!(
                    "match condition {:?} did not evaluate to a bool: {other:?}",
                    c.name
                ))
            }
            Err(e) => return Err(format!("match condition {:?}: {e}", c.name)),
        }
    }
    Ok(true)
}

/// Calls one webhook; `Ok(None)` when it failed and its policy says to go on.
async fn call(
    hook: &Webhook,
    a: &Attributes<'_>,
    object: Option<&Value>,
    slot: Slot,
) -> Result<Option<review::Answer>, ApiError> {
    if hook.refuses_dry_run(a) {
        return Err(ApiError::bad_request(format!(
            "admission webhook {:?} does not support dry run",
            hook.name
        )));
    }
    let uid = uuid::Uuid::new_v4().to_string();
    let result = async {
        if !hook.accepts_v1 {
            return Err("webhook does not accept admission.k8s.io/v1 AdmissionReview".to_string());
        }
        let endpoint = hook.endpoint.as_ref().map_err(Clone::clone)?;
        let body = review::request(&uid, a, object).to_string();
        let answer = endpoint.post(body, hook.timeout, "AdmissionReview").await?;
        review::answer(&answer, &uid)
    }
    .await;
    match result {
        Ok(answer) => Ok(Some(answer)),
        Err(why) if hook.failure_policy == FailurePolicy::Ignore => {
            tracing::warn!(
                "failed calling webhook {:?}, failing open: {why}",
                hook.name
            );
            a.outcome.annotate(
                format!(
                    "failed-open.{}.webhook.admission.k8s.io/round_{}_index_{}",
                    slot.phase, slot.round, slot.index
                ),
                hook.name.clone(),
            );
            Ok(None)
        }
        Err(why) => Err(review::call_failure(hook, &why)),
    }
}

/// Which call a webhook's call is, for the audit annotation of one that failed open
/// (upstream's `failed-open.<phase>.webhook.admission.k8s.io/round_<r>_index_<i>`).
#[derive(Clone, Copy)]
struct Slot {
    phase: &'static str,
    round: usize,
    index: usize,
}

/// What any answer carries besides its decision.
fn record(hook: &Webhook, a: &Attributes<'_>, answer: &review::Answer) {
    for w in &answer.warnings {
        a.outcome.warn(w.clone());
    }
    for (k, v) in &answer.audit_annotations {
        a.outcome.annotate(format!("{}/{k}", hook.name), v.clone());
    }
}

/// The mutating plugin.
pub struct Mutating(pub Arc<WebhookConfigurations>);

#[async_trait]
impl MutatingPlugin for Mutating {
    async fn admit(
        &self,
        a: &Attributes<'_>,
        mut object: Option<&mut Value>,
    ) -> Result<(), ApiError> {
        let hooks = self.0.mutating();
        let matching = self.0.matching(&hooks, a, object.as_deref()).await?;
        if matching.is_empty() {
            return Ok(());
        }
        // The object each webhook last saw, to know whom a later change concerns.
        let mut seen: Vec<Option<Value>> = Vec::with_capacity(matching.len());
        for (index, hook) in matching.iter().enumerate() {
            seen.push(object.as_deref().cloned());
            let slot = Slot {
                phase: "mutation",
                round: 0,
                index,
            };
            mutate_once(hook, a, object.as_deref_mut(), slot).await?;
        }
        // One more round for IfNeeded webhooks that did not see the final object.
        for (index, (hook, saw)) in matching.iter().zip(seen).enumerate() {
            if hook.reinvoke && saw.as_ref() != object.as_deref() {
                let slot = Slot {
                    phase: "mutation",
                    round: 1,
                    index,
                };
                mutate_once(hook, a, object.as_deref_mut(), slot).await?;
            }
        }
        Ok(())
    }
}

/// Calls one mutating webhook and applies its patch.
async fn mutate_once(
    hook: &Webhook,
    a: &Attributes<'_>,
    object: Option<&mut Value>,
    slot: Slot,
) -> Result<(), ApiError> {
    let Some(answer) = call(hook, a, object.as_deref(), slot).await? else {
        return Ok(());
    };
    record(hook, a, &answer);
    if !answer.allowed {
        return Err(review::rejection(hook, &answer.status));
    }
    if let (Some(patch), Some(object)) = (&answer.patch, object) {
        let mut patched = object.clone();
        json_patch::patch(&mut patched, patch).map_err(|e| {
            review::call_failure(
                hook,
                &format!("the webhook's JSON patch does not apply: {e}"),
            )
        })?;
        if !patched.is_object() {
            return Err(review::call_failure(
                hook,
                "the patched object is not an object",
            ));
        }
        *object = patched;
    }
    Ok(())
}

/// The validating plugin.
pub struct Validating(pub Arc<WebhookConfigurations>);

#[async_trait]
impl ValidatingPlugin for Validating {
    async fn validate(&self, a: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        let hooks = self.0.validating();
        let matching = self.0.matching(&hooks, a, object).await?;
        let calls = matching.iter().enumerate().map(|(index, hook)| async move {
            let slot = Slot {
                phase: "validating",
                round: 0,
                index,
            };
            let answer = call(hook, a, object, slot).await?;
            match answer {
                Some(answer) => {
                    record(hook, a, &answer);
                    if answer.allowed {
                        Ok(())
                    } else {
                        Err(review::rejection(hook, &answer.status))
                    }
                }
                None => Ok(()),
            }
        });
        // All are asked; the first refusal (in call order) is the answer.
        for result in futures_util::future::join_all(calls).await {
            result?;
        }
        Ok(())
    }
}
