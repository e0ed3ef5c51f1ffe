//! `POST pods/<name>/eviction` (policy/v1 `Eviction`): a pod deletion that respects
//! PodDisruptionBudgets, what `kubectl drain` and cluster autoscalers use.
//!
//! As kube-apiserver: a pod that is not running (Pending, Succeeded, Failed) or already
//! being deleted is deleted without looking at budgets. Otherwise the one budget whose
//! selector matches the pod must allow a disruption: it is spent (`disruptionsAllowed`
//! down by one, the pod recorded in `disruptedPods`) and the pod deleted; a budget that
//! allows none, or that its controller has not yet observed, answers 429 so the client
//! retries. Budgets' status is computed by a disruption controller, which this server
//! does not run: without one, a budget never allows an eviction of a running pod.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::store::{Target, WriteContext};
use super::virtual_kinds::{CreateHook, CreateRequest};
use crate::api::options::{DeleteOptions, ListOptions};
use crate::api::selectors::{labels_of, LabelSelector};
use crate::api::status::StatusReason;
use crate::api::ApiError;

/// Upstream's bound on evictions a budget has recorded but its controller not yet seen.
const MAX_DISRUPTED_PODS: usize = 2000;

/// The create hook of `pods/eviction`.
pub struct Eviction;

#[async_trait(?Send)]
impl CreateHook for Eviction {
    async fn create(&self, req: CreateRequest<'_>) -> Result<Value, ApiError> {
        let name = req.parent.unwrap_or_default();
        let body_name = req.object["metadata"]["name"].as_str().unwrap_or_default();
        if !body_name.is_empty() && body_name != name {
            return Err(ApiError::bad_request(format!(
                "name in URL does not match name in Eviction object: {name} vs. {body_name}"
            )));
        }
        let catalog = &req.state.catalog;
        let pods = catalog
            .get("", "v1", "pods")
            .ok_or_else(|| ApiError::internal("pods are not served"))?;
        let store = &req.state.store;
        let pod = store.get(&pods, req.namespace, name).await?;
        let mut options = match &req.object["deleteOptions"] {
            Value::Null => DeleteOptions::default(),
            given => DeleteOptions::parse("", given.to_string().as_bytes())?,
        };
        options.dry_run |= req.dry_run;
        if !ignores_budgets(&pod) {
            spend_budget(&req, &pod, name, options.dry_run).await?;
        }
        store
            .delete(&pods, req.namespace, name, &options, None)
            .await?;
        Ok(
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
        )
    }
}

/// Pods an eviction deletes whatever their budgets say: not running, or already going.
fn ignores_budgets(pod: &Value) -> bool {
    pod["metadata"]["deletionTimestamp"].is_string()
        || matches!(
            pod["status"]["phase"].as_str(),
            None | Some("Pending" | "Succeeded" | "Failed")
        )
}

/// Finds the pod's budget and takes one disruption from it, or refuses the eviction.
async fn spend_budget(
    req: &CreateRequest<'_>,
    pod: &Value,
    name: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    let Some(budgets) = req
        .state
        .catalog
        .get("policy", "v1", "poddisruptionbudgets")
    else {
        return Ok(());
    };
    let store = &req.state.store;
    let labels = labels_of(pod);
    let all = store
        .list(&budgets, req.namespace, &ListOptions::default())
        .await?;
    let matching: Vec<&Value> = all
        .items
        .iter()
        .filter(|pdb| {
            // A budget without a selector selects nothing; `{}` selects every pod.
            let selector = &pdb["spec"]["selector"];
            !selector.is_null()
                && LabelSelector::from_json(selector).is_ok_and(|s| s.matches(&labels))
        })
        .collect();
    let budget = match matching.as_slice() {
        [] => return Ok(()),
        [one] => one,
        _ => {
            return Err(ApiError::internal(
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            ))
        }
    };
    let budget_name = budget["metadata"]["name"].as_str().unwrap_or_default();
    let ctx = WriteContext {
        dry_run,
        ..WriteContext::new("kube-apiserver")
    };
    let now = crate::api::meta::now_rfc3339();
    store
        .patch(
            &budgets,
            req.namespace,
            budget_name,
            Target::Status,
            &ctx,
            |old| {
                let status = &old["status"];
                let generation = old["metadata"]["generation"].as_i64().unwrap_or(0);
                if status["observedGeneration"].as_i64().unwrap_or(0) < generation {
                    return Err(refused(format!(
                        "The disruption budget {budget_name} is still being processed by the server."
                    )));
                }
                let allowed = status["disruptionsAllowed"].as_i64().unwrap_or(0);
                if allowed < 0 {
                    return Err(ApiError::new(
                        403,
                        StatusReason::Forbidden,
                        "pdb disruptions allowed is negative",
                    ));
                }
                let disrupted = status["disruptedPods"].as_object().map_or(0, |m| m.len());
                if disrupted > MAX_DISRUPTED_PODS {
                    return Err(ApiError::new(
                        403,
                        StatusReason::Forbidden,
                        "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
                    ));
                }
                if allowed == 0 {
                    return Err(refused(format!(
                        "The disruption budget {budget_name} needs {} healthy pods and has {} currently",
                        status["desiredHealthy"].as_i64().unwrap_or(0),
                        status["currentHealthy"].as_i64().unwrap_or(0),
                    )));
                }
                let mut new = old.clone();
                new["status"]["disruptionsAllowed"] = json!(allowed - 1);
                new["status"]["disruptedPods"][name] = json!(now);
                Ok(new)
            },
        )
        .await?;
    Ok(())
}

/// 429: the budget does not allow the eviction now; the client retries (kubectl drain
/// does, every few seconds).
fn refused(cause: String) -> ApiError {
    ApiError {
        details: Some(json!({ "causes": [{ "reason": "DisruptionBudget", "message": cause }] })),
        ..ApiError::new(
            429,
            StatusReason::TooManyRequests,
            "Cannot evict pod as it would violate the pod's disruption budget.",
        )
    }
}
