//! `MutatingAdmissionWebhook` and `ValidatingAdmissionWebhook`: the webhooks of every
//! Mutating- and ValidatingWebhookConfiguration, kept current from the watch caches,
//! called over HTTPS with an AdmissionReview v1 for each request they match.
//!
//! Mutating webhooks run one after another, each seeing the object as the ones before
//! left it (JSON patches), and those with `reinvocationPolicy: IfNeeded` once more when
//! a later one changed it. Validating webhooks run concurrently, all of them, and any
//! refusal refuses the request. A webhook that cannot be called within its timeout is
//! skipped under `failurePolicy: Ignore` and refuses the request (500) under `Fail`.
//!
//! With `matchPolicy: Equivalent` (the default) a webhook whose rules name another
//! version of the requested resource (a CRD's other versions) is called too, with the
//! object converted to the version it named; a mutating one's patch is applied there and
//! the result converted back.

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
use crate::registry::codec::convert_to;
use crate::registry::Store;

const GROUP: &str = "admissionregistration.k8s.io";

/// The webhooks of both kinds of configuration, as the watch caches last had them.
pub struct WebhookConfigurations {
    mutating: RwLock<Arc<Vec<Webhook>>>,
    validating: RwLock<Arc<Vec<Webhook>>>,
    store: Store,
    catalog: Arc<Catalog>,
}

impl WebhookConfigurations {
    /// Reads the configurations now (so the first request sees them) and keeps them
    /// current from then on. Without the admissionregistration kinds there are none.
    pub async fn start(catalog: Arc<Catalog>, store: Store) -> Arc<Self> {
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
            catalog,
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

    /// The webhooks of `hooks` that are called for this request, each with the
    /// equivalent resource it is called for when its rules named that one.
    async fn matching<'h>(
        &self,
        hooks: &'h [Webhook],
        a: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<Vec<Invocation<'h>>, ApiError> {
        // The configuration kinds themselves are never sent to webhooks (upstream: so a
        // broken webhook cannot lock its own configuration).
        if a.resource.def.group == GROUP && a.resource.def.plural.ends_with("webhookconfigurations")
        {
            return Ok(Vec::new());
        }
        let mut equivalents = None;
        let mut covered = Vec::new();
        for hook in hooks.iter().filter(|h| h.selects_object(a, object)) {
            if hook.rules_match(a) {
                covered.push(Invocation {
                    hook,
                    equivalent: None,
                });
            } else if hook.equivalent && a.has_equivalents() {
                let equivalents =
                    equivalents.get_or_insert_with(|| self.catalog.equivalents(a.resource));
                let named = equivalents
                    .iter()
                    .find(|e| hook.rules_match(&a.as_equivalent(e, a.old_object)));
                if let Some(e) = named {
                    covered.push(Invocation {
                        hook,
                        equivalent: Some(e.clone()),
                    });
                }
            }
        }
        if covered.is_empty() {
            return Ok(covered);
        }
        let labels = match covered.iter().all(|i| i.hook.any_namespace()) {
            true => None,
            false => super::matching::namespace_labels(&self.store, a, object).await?,
        };
        let mut called = Vec::new();
        for invocation in covered {
            let hook = invocation.hook;
            if !hook.selects_namespace(labels.as_ref()) {
                continue;
            }
            let held = match hook.match_conditions.is_empty() {
                true => Ok(true),
                false => {
                    let seen = invocation.view(a, object).await?;
                    conditions_hold(hook, &seen.attributes(a), seen.object.as_ref())
                }
            };
            match held {
                Ok(true) => called.push(invocation),
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

/// A webhook called for a request: for the requested resource, or for an equivalent
/// one its rules named (matchPolicy Equivalent).
struct Invocation<'h> {
    hook: &'h Webhook,
    equivalent: Option<Arc<ApiResource>>,
}

/// The request's objects as a webhook is shown them: in the version it asked for.
struct View {
    resource: Option<Arc<ApiResource>>,
    object: Option<Value>,
    old_object: Option<Value>,
}

impl View {
    /// The attributes the webhook is told (the equivalent resource's, if any).
    fn attributes<'v>(&'v self, a: &'v Attributes<'_>) -> Attributes<'v> {
        match &self.resource {
            Some(res) => a.as_equivalent(res, self.old_object.as_ref()),
            None => Attributes {
                old_object: self.old_object.as_ref(),
                ..*a
            },
        }
    }
}

impl Invocation<'_> {
    /// The objects converted to the version the webhook asked for.
    async fn view(&self, a: &Attributes<'_>, object: Option<&Value>) -> Result<View, ApiError> {
        let convert = |obj: Option<&Value>| {
            let target = self.equivalent.clone();
            let obj = obj.cloned();
            async move {
                match (target, obj) {
                    (Some(to), Some(obj)) => convert_to(&to, obj).await.map(Some),
                    (_, obj) => Ok(obj),
                }
            }
        };
        Ok(View {
            resource: self.equivalent.clone(),
            object: convert(object).await?,
            old_object: convert(a.old_object).await?,
        })
    }

    /// Calls the webhook with the objects in its version; `Ok(None)` when it failed and
    /// its policy says to go on.
    async fn call(
        &self,
        a: &Attributes<'_>,
        object: Option<&Value>,
        slot: Slot,
    ) -> Result<(View, Option<review::Answer>), ApiError> {
        let view = self.view(a, object).await?;
        let seen = view.attributes(a);
        let answer = call(self.hook, &seen, view.object.as_ref(), a, slot).await?;
        Ok((view, answer))
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

/// Calls one webhook (`asked`: the request as the client made it, `a` as the webhook
/// sees it); `Ok(None)` when it failed and its policy says to go on.
async fn call(
    hook: &Webhook,
    a: &Attributes<'_>,
    object: Option<&Value>,
    asked: &Attributes<'_>,
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
        let mut body = review::request(&uid, a, object);
        review::requested_as(&mut body, asked);
        let body = body.to_string();
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
        for (index, invocation) in matching.iter().enumerate() {
            seen.push(object.as_deref().cloned());
            let slot = Slot {
                phase: "mutation",
                round: 0,
                index,
            };
            mutate_once(invocation, a, object.as_deref_mut(), slot).await?;
        }
        // One more round for IfNeeded webhooks that did not see the final object.
        for (index, (invocation, saw)) in matching.iter().zip(seen).enumerate() {
            if invocation.hook.reinvoke && saw.as_ref() != object.as_deref() {
                let slot = Slot {
                    phase: "mutation",
                    round: 1,
                    index,
                };
                mutate_once(invocation, a, object.as_deref_mut(), slot).await?;
            }
        }
        Ok(())
    }
}

/// Calls one mutating webhook and applies its patch (to the object in the webhook's
/// version, then converted back).
async fn mutate_once(
    invocation: &Invocation<'_>,
    a: &Attributes<'_>,
    object: Option<&mut Value>,
    slot: Slot,
) -> Result<(), ApiError> {
    let hook = invocation.hook;
    let (view, answer) = invocation.call(a, object.as_deref(), slot).await?;
    let Some(answer) = answer else {
        return Ok(());
    };
    record(hook, a, &answer);
    if !answer.allowed {
        return Err(review::rejection(hook, &answer.status));
    }
    if let (Some(patch), Some(object), Some(mut patched)) = (&answer.patch, object, view.object) {
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
        if invocation.equivalent.is_some() {
            patched = convert_to(a.resource, patched).await?;
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
        let calls = matching
            .iter()
            .enumerate()
            .map(|(index, invocation)| async move {
                let slot = Slot {
                    phase: "validating",
                    round: 0,
                    index,
                };
                let hook = invocation.hook;
                let (_, answer) = invocation.call(a, object, slot).await?;
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
