//! Per-kind behaviour, as hooks the generic store calls: what kube-apiserver keeps in each
//! resource's `strategy.go`. Kinds without special needs use [`DefaultStrategy`].

use base64::Engine;
use serde_json::{json, Value};

use crate::api::meta::NameRule;
use crate::api::StatusCause;
use crate::auth::UserInfo;
use crate::registry::config_data;

/// A Table column computed by code rather than a JSONPath (ConfigMap's and Secret's DATA).
pub struct ComputedColumn {
    pub name: &'static str,
    pub type_: &'static str,
    pub description: &'static str,
    /// 0, or 1 and more for columns kubectl shows only with `-o wide`.
    pub priority: i32,
    /// The top-level fields `value` reads (a Table built from stored bytes decodes only
    /// those).
    pub fields: &'static [&'static str],
    pub value: fn(&Value) -> Value,
}

/// A [`ComputedColumn`], positionally, so the column tables of many kinds stay short.
pub const fn column(
    name: &'static str,
    type_: &'static str,
    description: &'static str,
    priority: i32,
    fields: &'static [&'static str],
    value: fn(&Value) -> Value,
) -> ComputedColumn {
    ComputedColumn {
        name,
        type_,
        description,
        priority,
        fields,
        value,
    }
}

fn data_count(obj: &Value) -> Value {
    let count = |f: &str| obj.get(f).and_then(Value::as_object).map_or(0, |m| m.len());
    json!(count("data") + count("binaryData"))
}

const DATA_COLUMN: ComputedColumn = ComputedColumn {
    name: "Data",
    type_: "string",
    description: "The number of keys in data and binaryData.",
    priority: 0,
    fields: &["data", "binaryData"],
    value: data_count,
};

/// Hooks the generic store calls around writes, and the Table printer calls on reads.
pub trait Strategy: Send + Sync {
    /// Columns printed after the definition's printer columns.
    fn computed_columns(&self) -> &'static [ComputedColumn] {
        &[]
    }
    /// Fills in server-owned fields and normalises a new object.
    fn prepare_for_create(&self, _obj: &mut Value) {}
    /// Records who creates the object where the kind keeps it (a
    /// CertificateSigningRequest's requester), after [`Strategy::prepare_for_create`];
    /// `user` is `None` for the server's own writes.
    fn record_requester(&self, _obj: &mut Value, _user: Option<&UserInfo>) {}
    /// Normalises an object about to replace `old`.
    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        self.prepare_for_create(new);
    }
    /// Whether something besides `metadata.finalizers` holds the object on delete
    /// (a namespace's `spec.finalizers`).
    fn blocks_deletion(&self, _obj: &Value) -> bool {
        false
    }
    /// Marks an object whose deletion is pending (a namespace becomes Terminating).
    fn prepare_for_delete(&self, _obj: &mut Value) {}
    /// Whether objects are deleted gracefully: [`Strategy::grace_period`] decides.
    fn deletes_gracefully(&self) -> bool {
        false
    }
    /// For a kind deleted gracefully, the seconds a DELETE leaves the object before it
    /// goes (`requested`: the DeleteOptions' `gracePeriodSeconds`, at least 0); `None`
    /// for kinds deleted at once.
    fn grace_period(&self, _obj: &Value, _requested: Option<i64>) -> Option<i64> {
        None
    }
    /// Whether a DELETE that removes the object answers with it rather than a Status
    /// (pods, as upstream).
    fn returns_deleted_object(&self) -> bool {
        false
    }
    /// Kind-specific validation beyond the schema.
    fn validate(&self, _obj: &Value) -> Vec<StatusCause> {
        Vec::new()
    }
    /// Kind-specific checks of an update against the stored object (immutable fields),
    /// made before anything is allocated for it.
    fn validate_update(&self, _new: &Value, _old: &Value) -> Vec<StatusCause> {
        Vec::new()
    }
    /// Normalises an object written through `/status` (`new` is the stored object with
    /// the body's status).
    fn prepare_for_status_update(&self, _new: &mut Value, _old: &Value) {}
    /// Kind-specific checks of a `/status` write against the stored object.
    fn validate_status_update(&self, _new: &Value, _old: &Value) -> Vec<StatusCause> {
        Vec::new()
    }
    /// Warnings for the client about a write that passes validation (upstream's
    /// `WarningsOnCreate` / `WarningsOnUpdate`; `old` is the stored object on update).
    fn warnings(&self, _obj: &Value, _old: Option<&Value>) -> Vec<String> {
        Vec::new()
    }
    /// Kind-specific checks of a new object only (what may be set at create but not
    /// later, or the reverse).
    fn validate_create(&self, _obj: &Value) -> Vec<StatusCause> {
        Vec::new()
    }
    /// Whether objects take Service cluster IPs and node ports, which the store
    /// allocates (`registry::services`) after preparation and defaults.
    fn allocates_addresses(&self) -> bool {
        false
    }
    /// The rule names follow (DNS-1123 subdomains unless the kind says otherwise).
    fn name_rule(&self) -> NameRule {
        NameRule::Subdomain
    }
    /// Whether a PUT without `metadata.resourceVersion` is allowed (core kinds) or must
    /// name the version it replaces (custom resources, as CRDs do).
    fn allow_unconditional_update(&self) -> bool {
        !self.tracks_generation()
    }
    /// Whether objects are not stored but made on each read from the server's health
    /// checks (ComponentStatus): GET and LIST answer them, nothing writes them.
    fn reports_health(&self) -> bool {
        false
    }
    /// The `Warning` every request of a kind deprecated upstream gets.
    fn deprecation_warning(&self) -> Option<&'static str> {
        None
    }
    /// Whether Tables print Age (upstream prints none for ComponentStatus).
    fn prints_age(&self) -> bool {
        true
    }
    /// Whether Tables print Age right after Name (upstream's CertificateSigningRequest
    /// printer) rather than after the other columns.
    fn prints_age_first(&self) -> bool {
        false
    }
    /// Whether `metadata.generation` tracks spec changes (custom resources do; ConfigMaps
    /// and Secrets do not carry it).
    fn tracks_generation(&self) -> bool {
        true
    }
}

/// Roles and bindings: core-kind behaviour, names as URL path segments (upstream's RBAC
/// names such as `system:basic-user` are no DNS names).
pub struct RbacStrategy;
impl Strategy for RbacStrategy {
    fn tracks_generation(&self) -> bool {
        false
    }
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }
}

/// PriorityClass: `preemptionPolicy` defaults to `PreemptLowerPriority`, as upstream's
/// (`kubectl get pc` prints it).
pub struct PriorityClassStrategy;
impl Strategy for PriorityClassStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(o) = obj.as_object_mut() {
            o.entry("preemptionPolicy")
                .or_insert_with(|| json!("PreemptLowerPriority"));
        }
    }
    fn tracks_generation(&self) -> bool {
        false
    }
}

/// Custom and example resources: generation tracking, nothing else.
pub struct DefaultStrategy;
impl Strategy for DefaultStrategy {}

/// Core kinds without special rules.
pub struct PlainCoreStrategy;
impl Strategy for PlainCoreStrategy {
    fn tracks_generation(&self) -> bool {
        false
    }
}

/// ConfigMap: prints its key count; keys, size and immutability as upstream checks them.
pub struct ConfigMapStrategy;
impl Strategy for ConfigMapStrategy {
    fn computed_columns(&self) -> &'static [ComputedColumn] {
        &[DATA_COLUMN]
    }

    fn validate(&self, obj: &Value) -> Vec<StatusCause> {
        config_data::validate_config_map(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        config_data::validate_immutable(new, old, &["data", "binaryData"])
    }

    fn tracks_generation(&self) -> bool {
        false
    }
}

/// Secret: `stringData` is write-only and folded into base64 `data`; `type` defaults to
/// `Opaque` and never changes; keys, size, each type's keys and immutability as upstream
/// checks them.
pub struct SecretStrategy;
impl Strategy for SecretStrategy {
    fn computed_columns(&self) -> &'static [ComputedColumn] {
        &[DATA_COLUMN]
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(Value::Object(string_data)) =
            obj.as_object_mut().and_then(|o| o.remove("stringData"))
        {
            if !obj.get("data").is_some_and(Value::is_object) {
                obj["data"] = json!({});
            }
            for (k, v) in string_data {
                let text = v.as_str().unwrap_or_default();
                obj["data"][k] =
                    Value::String(base64::engine::general_purpose::STANDARD.encode(text));
            }
        }
        if obj
            .get("type")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            obj["type"] = json!("Opaque");
        }
    }

    fn validate(&self, obj: &Value) -> Vec<StatusCause> {
        let mut causes = Vec::new();
        if let Some(data) = obj.get("data").and_then(Value::as_object) {
            for (k, v) in data {
                if v.as_str()
                    .is_some_and(|s| base64::engine::general_purpose::STANDARD.decode(s).is_err())
                {
                    causes.push(StatusCause::invalid(
                        &format!("data[{k}]"),
                        "<secret contents redacted>",
                        "must be base64-encoded",
                    ));
                }
            }
        }
        causes.extend(config_data::validate_secret(obj));
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut causes = Vec::new();
        if new.get("type") != old.get("type") {
            let new_type = new.get("type").unwrap_or(&Value::Null);
            causes.push(StatusCause::invalid_value(
                "type",
                new_type,
                "field is immutable",
            ));
        }
        causes.extend(config_data::validate_immutable(new, old, &["data"]));
        causes
    }

    fn tracks_generation(&self) -> bool {
        false
    }
}

/// Namespace: the `kubernetes` finalizer, phase `Active`, and the
/// `kubernetes.io/metadata.name` label, as kube-apiserver sets them.
pub struct NamespaceStrategy;
impl Strategy for NamespaceStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if !obj["metadata"].get("labels").is_some_and(Value::is_object) {
            obj["metadata"]["labels"] = json!({});
        }
        obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = Value::String(name);
        if !obj.get("spec").is_some_and(Value::is_object) {
            obj["spec"] = json!({});
        }
        if obj["spec"].get("finalizers").is_none() {
            obj["spec"]["finalizers"] = json!(["kubernetes"]);
        }
        obj["status"] = json!({ "phase": "Active" });
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        let status = old
            .get("status")
            .cloned()
            .unwrap_or(json!({ "phase": "Active" }));
        self.prepare_for_create(new);
        new["status"] = status;
        // As upstream: `spec.finalizers` change through `finalize` alone.
        match old["spec"].get("finalizers") {
            Some(f) => new["spec"]["finalizers"] = f.clone(),
            None => {
                if let Some(spec) = new["spec"].as_object_mut() {
                    spec.remove("finalizers");
                }
            }
        }
    }

    fn name_rule(&self) -> NameRule {
        NameRule::Label
    }

    fn blocks_deletion(&self, obj: &Value) -> bool {
        obj["spec"]["finalizers"]
            .as_array()
            .is_some_and(|f| !f.is_empty())
    }

    fn prepare_for_delete(&self, obj: &mut Value) {
        obj["status"] = json!({ "phase": "Terminating" });
    }

    fn tracks_generation(&self) -> bool {
        false
    }
}

/// CustomResourceDefinition: the checks kube-apiserver makes of a definition's names
/// and versions (the schema is checked when the definition is served: see
/// `controllers::crd`); status is the server's.
pub struct CustomResourceDefinitionStrategy;
/// The finalizer that holds a deleted CustomResourceDefinition until its objects are
/// deleted (kube-apiserver's name for it).
pub const CRD_CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

impl Strategy for CustomResourceDefinitionStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({});
        let finalizers = &mut obj["metadata"]["finalizers"];
        if !finalizers.is_array() {
            *finalizers = json!([]);
        }
        if let Some(list) = finalizers.as_array_mut() {
            if !list.iter().any(|f| f == CRD_CLEANUP_FINALIZER) {
                list.push(json!(CRD_CLEANUP_FINALIZER));
            }
        }
    }

    /// Updates keep the status (the store does) and the finalizers as sent.
    fn prepare_for_update(&self, _new: &mut Value, _old: &Value) {}

    fn validate(&self, obj: &Value) -> Vec<StatusCause> {
        let mut causes = Vec::new();
        let spec = &obj["spec"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let (group, plural) = (text(&spec["group"]), text(&spec["names"]["plural"]));
        let name = text(&obj["metadata"]["name"]);
        if name != format!("{plural}.{group}") {
            causes.push(StatusCause::invalid(
                "metadata.name",
                &name,
                "must be spec.names.plural+\".\"+spec.group",
            ));
        }
        if !group.contains('.') {
            causes.push(StatusCause::invalid(
                "spec.group",
                &group,
                "should be a domain with at least one dot",
            ));
        }
        for (field, value) in [
            ("spec.names.plural", &spec["names"]["plural"]),
            ("spec.names.singular", &spec["names"]["singular"]),
        ] {
            let v = text(value);
            if !value.is_null() && !codegen::names::is_dns_label(&v) {
                causes.push(StatusCause::invalid(
                    field,
                    &v,
                    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
                ));
            }
        }
        if spec["preserveUnknownFields"] == json!(true) {
            causes.push(StatusCause::invalid(
                "spec.preserveUnknownFields",
                "true",
                "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in openAPIV3Schema instead",
            ));
        }
        let versions = spec["versions"].as_array().cloned().unwrap_or_default();
        if versions.is_empty() {
            causes.push(StatusCause::required(
                "spec.versions",
                "must have at least one version",
            ));
        } else if versions
            .iter()
            .filter(|v| v["storage"] == json!(true))
            .count()
            != 1
        {
            causes.push(StatusCause::invalid(
                "spec.versions",
                &serde_json::to_string(&versions).unwrap_or_default(),
                "must have exactly one version marked as storage version",
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, v) in versions.iter().enumerate() {
            let name = text(&v["name"]);
            if !seen.insert(name.clone()) {
                causes.push(StatusCause::invalid(
                    &format!("spec.versions[{i}].name"),
                    &name,
                    "must appear only once",
                ));
            }
        }
        causes.extend(validate_conversion(&spec["conversion"]));
        // What each served version would be: its schema, kind and columns, checked as
        // a definition file is (once the names above are sound).
        if causes.is_empty() {
            if let Err(more) = crate::apiextensions::definitions(obj) {
                causes.extend(more);
            }
        }
        causes
    }
}

/// The hooks a definition names (`strategy:`, one of codegen's `STRATEGIES`), or the
/// generic ones of built-in or custom kinds.
pub fn named(name: Option<&str>, builtin: bool) -> Result<&'static dyn Strategy, String> {
    Ok(match name {
        Some("APIService") => &crate::aggregator::strategy::ApiServiceStrategy,
        Some("Secret") => &SecretStrategy,
        Some("CertificateSigningRequest") => {
            &super::certificates::CertificateSigningRequestStrategy
        }
        Some("Job") => &super::workloads::JobStrategy,
        Some("ConfigMap") => &ConfigMapStrategy,
        Some("Event") => &super::events::EventStrategy,
        Some("EventsV1") => &super::events::EventsV1Strategy,
        Some("ComponentStatus") => &super::component_status::ComponentStatusStrategy,
        Some("Namespace") => &NamespaceStrategy,
        Some("CustomResourceDefinition") => &CustomResourceDefinitionStrategy,
        Some("RBAC") => &RbacStrategy,
        Some("PriorityClass") => &PriorityClassStrategy,
        Some("Service") => &super::service_strategy::ServiceStrategy,
        Some("Pod") => &super::workloads::PodStrategy,
        Some("PersistentVolumeClaim") => &super::claims::PersistentVolumeClaimStrategy,
        Some("PersistentVolume") => &super::persistent_volumes::PersistentVolumeStrategy,
        Some("Node") => &super::nodes::NodeStrategy,
        Some("Deployment") => &super::workloads::DeploymentStrategy,
        Some("PodTemplateOwner") => &super::workloads::SPEC_TEMPLATE,
        Some("CronJob") => &super::workloads::CronJobStrategy,
        Some("PodTemplate") => &super::workloads::POD_TEMPLATE,
        // Built-in kinds whose metadata.generation counts spec changes, as upstream's
        // strategies for them keep it (PodDisruptionBudget, HPA, Ingress, NetworkPolicy).
        Some("SpecGeneration") => &DefaultStrategy,
        Some("HorizontalPodAutoscaler") => &super::autoscalers::HorizontalPodAutoscalerStrategy,
        Some(other) => return Err(format!("the server has no strategy named {other:?}")),
        None if builtin => &PlainCoreStrategy,
        None => &DefaultStrategy,
    })
}

/// `spec.conversion` of a CustomResourceDefinition: `None`, or a `Webhook` this server can
/// call (ConversionReview v1, at an https URL).
fn validate_conversion(conversion: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let webhook = &conversion["webhook"];
    match conversion["strategy"].as_str() {
        None | Some("None") => {
            if webhook.is_object() {
                causes.push(StatusCause::forbidden(
                    "spec.conversion.webhook",
                    "should not be set when strategy is not set to Webhook",
                ));
            }
        }
        Some("Webhook") => {
            let config = &webhook["clientConfig"];
            if !config.is_object() {
                causes.push(StatusCause::required(
                    "spec.conversion.webhook.clientConfig",
                    "required when strategy is set to Webhook",
                ));
            } else if config["url"].is_string() == config["service"].is_object() {
                causes.push(StatusCause::required(
                    "spec.conversion.webhook.clientConfig",
                    "exactly one of url or service is required",
                ));
            } else if let Some(url) = config["url"].as_str() {
                if !url.starts_with("https://") {
                    causes.push(StatusCause::invalid(
                        "spec.conversion.webhook.clientConfig.url",
                        url,
                        "'https' is the only allowed URL scheme",
                    ));
                }
            }
            let versions = webhook["conversionReviewVersions"].as_array();
            if !versions.is_some_and(|v| v.contains(&json!("v1"))) {
                causes.push(StatusCause::invalid(
                    "spec.conversion.webhook.conversionReviewVersions",
                    &webhook["conversionReviewVersions"].to_string(),
                    "must include at least one of v1",
                ));
            }
        }
        Some(other) => causes.push(StatusCause::unsupported(
            "spec.conversion.strategy",
            &format!("{other:?}"),
            &["None", "Webhook"],
        )),
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_strategy_codegen_accepts_exists() {
        for name in codegen::model::STRATEGIES {
            assert!(named(Some(name), true).is_ok(), "{name}");
        }
    }

    #[test]
    fn secret_folds_string_data() {
        let mut s = json!({"stringData": {"a": "b"}, "data": {"c": "ZA=="}});
        SecretStrategy.prepare_for_create(&mut s);
        assert_eq!(
            s,
            json!({"data": {"a": "Yg==", "c": "ZA=="}, "type": "Opaque"})
        );
    }
}
