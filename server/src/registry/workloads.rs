//! Pods and the workloads that stamp them out from a pod template: the defaults
//! kube-apiserver fills in (its `SetDefaults_*` functions) and the columns its table
//! printers show. No kubelet, scheduler or controller runs here, so nothing fills in
//! status; the columns read what clients write there.

use serde_json::{json, Map, Value};

use super::cel::library::parse_quantity;
use super::pod_spec;
use super::strategy::{column, ComputedColumn, Strategy};
use crate::api::StatusCause;

/// Sets `key` to `value` in `obj` when it is absent or null.
fn default(obj: &mut Map<String, Value>, key: &str, value: Value) {
    if obj.get(key).is_none_or(Value::is_null) {
        obj.insert(key.to_string(), value);
    }
}

/// Sets `key` to `value` in `obj` when it is absent, null or the empty string (Go's
/// defaulting sees an empty string as unset).
fn default_str(obj: &mut Map<String, Value>, key: &str, value: &str) {
    if obj.get(key).is_none_or(|v| v.is_null() || v == "") {
        obj.insert(key.to_string(), json!(value));
    }
}

/// Upstream's `SetDefaults_Probe` (and its HTTP action's path and scheme).
fn default_probe(probe: &mut Map<String, Value>) {
    for (key, value) in [
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ] {
        if probe.get(key).is_none_or(|v| v.is_null() || v == 0) {
            probe.insert(key.to_string(), json!(value));
        }
    }
    if let Some(http) = probe.get_mut("httpGet").and_then(Value::as_object_mut) {
        default_str(http, "path", "/");
        default_str(http, "scheme", "HTTP");
    }
}

/// Upstream's defaults of a pod volume: a volume without a source is an `emptyDir`;
/// secret, config map, projected and downward API files get mode 0644.
fn default_volume(vol: &mut Map<String, Value>) {
    let has_source = vol.iter().any(|(k, v)| k != "name" && !v.is_null());
    if !has_source {
        vol.insert("emptyDir".into(), json!({}));
    }
    for key in ["secret", "configMap", "projected", "downwardAPI"] {
        if let Some(source) = vol.get_mut(key).and_then(Value::as_object_mut) {
            default(source, "defaultMode", json!(0o644));
        }
    }
}

/// Upstream's `SetDefaults_ObjectFieldSelector` for `env[*].valueFrom.fieldRef`.
fn default_env(c: &mut Map<String, Value>) {
    if let Some(env) = c.get_mut("env").and_then(Value::as_array_mut) {
        for ev in env.iter_mut() {
            if let Some(field_ref) = ev
                .get_mut("valueFrom")
                .and_then(|f| f.get_mut("fieldRef"))
                .and_then(Value::as_object_mut)
            {
                default_str(field_ref, "apiVersion", "v1");
            }
        }
    }
}

/// The object at `key` of `obj`, created empty when absent.
fn object<'a>(obj: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    default(obj, key, json!({}));
    obj.get_mut(key).and_then(Value::as_object_mut)
}

/// A container's image pull policy by default: `Always` for `:latest` or no tag,
/// `IfNotPresent` otherwise (a digest counts as a tag).
fn pull_policy(image: &str) -> &'static str {
    let name = image.rsplit('/').next().unwrap_or(image);
    if image.contains('@') {
        return "IfNotPresent";
    }
    match name.rsplit_once(':') {
        Some((_, "latest")) | None => "Always",
        Some(_) => "IfNotPresent",
    }
}

/// Upstream's defaults of one container (regular, init or ephemeral).
pub fn default_container(c: &mut Map<String, Value>) {
    let image = c.get("image").and_then(Value::as_str).unwrap_or_default();
    let policy = pull_policy(image);
    default_str(c, "imagePullPolicy", policy);
    default(c, "terminationMessagePath", json!("/dev/termination-log"));
    default_str(c, "terminationMessagePolicy", "File");
    default(c, "resources", json!({}));
    if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            default_str(p, "protocol", "TCP");
        }
    }
    for key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = c.get_mut(key).and_then(Value::as_object_mut) {
            default_probe(probe);
        }
    }
    default_env(c);
}

/// Upstream's defaults of a PodSpec, wherever one is (a Pod, a template).
pub fn default_pod_spec(spec: &mut Map<String, Value>) {
    default_str(spec, "restartPolicy", "Always");
    default(spec, "terminationGracePeriodSeconds", json!(30));
    default_str(spec, "dnsPolicy", "ClusterFirst");
    if let Some(volumes) = spec.get_mut("volumes").and_then(Value::as_array_mut) {
        for v in volumes.iter_mut().filter_map(Value::as_object_mut) {
            default_volume(v);
        }
    }
    default(spec, "securityContext", json!({}));
    default(spec, "schedulerName", json!("default-scheduler"));
    default(spec, "enableServiceLinks", json!(true));
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        if let Some(cs) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                default_container(c);
            }
        }
    }
}

/// The pod spec of a template at `path` (`["spec", "template"]`) of `obj`, if any.
fn template_spec<'a>(obj: &'a mut Value, path: &[&str]) -> Option<&'a mut Map<String, Value>> {
    let mut cur = obj;
    for p in path {
        cur = cur.get_mut(*p)?;
    }
    cur.get_mut("spec")?.as_object_mut()
}

/// `<none>` for a missing cell, as kubectl prints it.
fn or_none(v: Option<&Value>) -> Value {
    match v {
        Some(v) if !v.is_null() => v.clone(),
        _ => json!("<none>"),
    }
}

fn count(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

fn pod_ready(obj: &Value) -> Value {
    let total = obj["spec"]["containers"].as_array().map_or(0, Vec::len);
    let ready = obj["status"]["containerStatuses"]
        .as_array()
        .map_or(0, |s| {
            s.iter().filter(|c| c["ready"] == json!(true)).count()
        });
    json!(format!("{ready}/{total}"))
}

fn pod_status(obj: &Value) -> Value {
    if obj["metadata"]["deletionTimestamp"].is_string() {
        return json!("Terminating");
    }
    if let Some(reason) = obj["status"]["reason"].as_str() {
        return json!(reason);
    }
    let waiting_or_done = obj["status"]["containerStatuses"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|c| {
            c["state"]["waiting"]["reason"]
                .as_str()
                .or_else(|| c["state"]["terminated"]["reason"].as_str())
        });
    match waiting_or_done {
        Some(r) => json!(r),
        None => json!(obj["status"]["phase"].as_str().unwrap_or("Pending")),
    }
}

fn pod_restarts(obj: &Value) -> Value {
    let sum: i64 = obj["status"]["containerStatuses"]
        .as_array()
        .map_or(0, |s| s.iter().map(|c| count(&c["restartCount"])).sum());
    json!(sum)
}

fn pod_ip(obj: &Value) -> Value {
    or_none(obj["status"].get("podIP"))
}

fn pod_node(obj: &Value) -> Value {
    or_none(obj["spec"].get("nodeName"))
}

fn pod_nominated_node(obj: &Value) -> Value {
    or_none(obj["status"].get("nominatedNodeName"))
}

fn pod_readiness_gates(obj: &Value) -> Value {
    let Some(gates) = obj["spec"]["readinessGates"].as_array() else {
        return json!("<none>");
    };
    let conditions = obj["status"]["conditions"].as_array();
    let met = gates
        .iter()
        .filter(|g| {
            conditions.is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == g["conditionType"] && c["status"] == json!("True"))
            })
        })
        .count();
    json!(format!("{met}/{}", gates.len()))
}

const POD_FIELDS: &[&str] = &["spec", "status"];

const POD_COLUMNS: &[ComputedColumn] = &[
    column(
        "Ready",
        "string",
        "Ready containers of all containers.",
        0,
        POD_FIELDS,
        pod_ready,
    ),
    column(
        "Status",
        "string",
        "The pod's phase, or why it is not running.",
        0,
        POD_FIELDS,
        pod_status,
    ),
    column(
        "Restarts",
        "string",
        "Container restarts, summed.",
        0,
        POD_FIELDS,
        pod_restarts,
    ),
    column(
        "IP",
        "string",
        "The pod's IP address.",
        1,
        POD_FIELDS,
        pod_ip,
    ),
    column(
        "Node",
        "string",
        "The node the pod is bound to.",
        1,
        POD_FIELDS,
        pod_node,
    ),
    column(
        "Nominated Node",
        "string",
        "The node the scheduler nominated for preemption.",
        1,
        POD_FIELDS,
        pod_nominated_node,
    ),
    column(
        "Readiness Gates",
        "string",
        "Readiness gates met, of all gates.",
        1,
        POD_FIELDS,
        pod_readiness_gates,
    ),
];

/// A pod's quality of service class, as the kubelet derives it from requests and limits
/// of cpu and memory (requests default to limits).
pub fn qos_class(pod: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .flat_map(|l| pod["spec"][*l].as_array().into_iter().flatten())
        .collect();
    let mut any = false;
    let mut guaranteed = true;
    for c in &containers {
        let requests = &c["resources"]["requests"];
        let limits = &c["resources"]["limits"];
        for res in ["cpu", "memory"] {
            let limit = limits[res].as_str().and_then(parse_quantity);
            let request = requests[res].as_str().and_then(parse_quantity).or(limit);
            if request.is_some_and(|q| q != 0.0) || limit.is_some_and(|q| q != 0.0) {
                any = true;
            }
            if limit.is_none() || request != limit {
                guaranteed = false;
            }
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

/// Pod: upstream's defaults and its table columns (`kubectl get pods -o wide`).
pub struct PodStrategy;
impl Strategy for PodStrategy {
    fn computed_columns(&self) -> &'static [ComputedColumn] {
        POD_COLUMNS
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            default_pod_spec(spec);
        }
        if let Some(o) = obj.as_object_mut() {
            let class = qos_class(&Value::Object(o.clone()));
            if let Some(status) = object(o, "status") {
                default(status, "phase", json!("Pending"));
                default(status, "qosClass", json!(class));
            }
        }
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        // Defaults only: what else changed is for `validate_update` to refuse (ephemeral
        // containers and resources change through their subresources).
        if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
            default_pod_spec(spec);
        }
    }

    fn validate(&self, obj: &Value) -> Vec<StatusCause> {
        pod_spec::validate_pod_spec(&obj["spec"], "spec", true)
    }

    fn warnings(&self, obj: &Value, _old: Option<&Value>) -> Vec<String> {
        pod_spec::pod_spec_warnings(&obj["spec"], "spec")
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        pod_spec::validate_pod_update(new, old)
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        if obj["spec"]["ephemeralContainers"]
            .as_array()
            .is_some_and(|e| !e.is_empty())
        {
            return vec![StatusCause::forbidden(
                "spec.ephemeralContainers",
                "cannot be set on create",
            )];
        }
        Vec::new()
    }

    fn deletes_gracefully(&self) -> bool {
        true
    }

    /// Upstream's `CheckGracefulDelete`: the requested period, else the pod's
    /// `terminationGracePeriodSeconds`; at once for a pod no node runs (unscheduled)
    /// or that has finished.
    fn grace_period(&self, obj: &Value, requested: Option<i64>) -> Option<i64> {
        let mut period = requested
            .or_else(|| obj["spec"]["terminationGracePeriodSeconds"].as_i64())
            .unwrap_or(0);
        if obj["spec"]["nodeName"].as_str().is_none_or(str::is_empty)
            || matches!(
                obj["status"]["phase"].as_str(),
                Some("Failed" | "Succeeded")
            )
        {
            period = 0;
        }
        Some(if period < 0 { 1 } else { period })
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }

    fn tracks_generation(&self) -> bool {
        false
    }
}

/// The labels a Job's pods get when its selector is generated: upstream's current and
/// legacy names of the job's name and uid.
const JOB_NAME_LABELS: [&str; 2] = ["job-name", "batch.kubernetes.io/job-name"];
const CONTROLLER_UID_LABELS: [&str; 2] = ["controller-uid", "batch.kubernetes.io/controller-uid"];
/// The label a generated selector selects.
const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";

/// Job: its pod template's defaults and, unless `spec.manualSelector` is true, a
/// selector generated on create with the labels it selects on the template, as
/// upstream's job strategy does; the selector never changes.
pub struct JobStrategy;
impl Strategy for JobStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        SPEC_TEMPLATE.prepare_for_create(obj);
        if obj["spec"]["manualSelector"] == json!(true) || !obj["spec"].is_object() {
            return;
        }
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let uid = obj["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        if let Some(template) = object(spec, "template") {
            if let Some(meta) = object(template, "metadata") {
                if let Some(labels) = object(meta, "labels") {
                    // Labels the user set are kept (validation then says what is wrong).
                    for key in JOB_NAME_LABELS {
                        default(labels, key, json!(name));
                    }
                    for key in CONTROLLER_UID_LABELS {
                        default(labels, key, json!(uid));
                    }
                }
            }
        }
        if let Some(selector) = object(spec, "selector") {
            if let Some(match_labels) = object(selector, "matchLabels") {
                default(match_labels, CONTROLLER_UID, json!(uid));
            }
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        // The template's defaults alone: a selector is generated on create only.
        SPEC_TEMPLATE.prepare_for_update(new, old);
    }

    fn validate(&self, obj: &Value) -> Vec<StatusCause> {
        validate_template(obj, &["spec", "template"], JOB_POLICIES)
    }

    fn warnings(&self, obj: &Value, old: Option<&Value>) -> Vec<String> {
        template_warnings(obj, old, &["spec", "template"])
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        let spec = &obj["spec"];
        if spec["manualSelector"] == json!(true) {
            // The user's selector: it must be there and select the template's labels.
            let selector = &spec["selector"];
            if !selector.is_object() {
                return vec![StatusCause::required("spec.selector", "")];
            }
            let labels = crate::api::selectors::labels_of(&spec["template"]);
            let selects = crate::api::selectors::LabelSelector::from_json(selector)
                .is_ok_and(|s| s.matches(&labels));
            if !selects {
                return vec![StatusCause::invalid_value(
                    "spec.template.metadata.labels",
                    &spec["template"]["metadata"]["labels"],
                    "`selector` does not match template `labels`",
                )];
            }
            return Vec::new();
        }
        let labels = &spec["template"]["metadata"]["labels"];
        let path = "spec.template.metadata.labels";
        let mut causes = Vec::new();
        let uid = obj["metadata"]["uid"].as_str().unwrap_or_default();
        let name = obj["metadata"]["name"].as_str().unwrap_or_default();
        for (key, want) in [
            (CONTROLLER_UID_LABELS[0], uid),
            (JOB_NAME_LABELS[0], name),
            (CONTROLLER_UID_LABELS[1], uid),
            (JOB_NAME_LABELS[1], name),
        ] {
            let must = format!("must be '{want}'");
            match labels[key].as_str() {
                None => causes.push(StatusCause::required(&format!("{path}[{key}]"), &must)),
                Some(v) if v != want => causes.push(StatusCause::invalid_value(
                    &format!("{path}[{key}]"),
                    labels,
                    &must,
                )),
                Some(_) => {}
            }
        }
        let generated = json!({ "matchLabels": { CONTROLLER_UID: uid } });
        if spec["selector"] != generated {
            causes.push(StatusCause::invalid_value(
                "spec.selector",
                &spec["selector"],
                "`selector` not auto-generated",
            ));
        }
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        if new["spec"]["selector"] != old["spec"]["selector"] {
            return vec![StatusCause::invalid_value(
                "spec.selector",
                &new["spec"]["selector"],
                "field is immutable",
            )];
        }
        Vec::new()
    }

    fn allow_unconditional_update(&self) -> bool {
        true
    }
}

/// The containers' names and images of a template, comma-separated, as kubectl's wide
/// columns print them.
fn template_containers(obj: &Value, key: &str) -> Value {
    let list: Vec<&str> = obj["spec"]["template"]["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c[key].as_str())
        .collect();
    json!(list.join(","))
}

fn containers(obj: &Value) -> Value {
    template_containers(obj, "name")
}

fn images(obj: &Value) -> Value {
    template_containers(obj, "image")
}

/// The `spec.selector` of `obj` as `kubectl` prints it: `k=v,k in (a,b)`.
fn selector(obj: &Value) -> Value {
    format_selector(&obj["spec"]["selector"])
}

/// A label selector `s` as kubectl prints it, `<none>` when it selects nothing.
pub fn format_selector(s: &Value) -> Value {
    let mut parts: Vec<String> = s["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    for e in s["matchExpressions"].as_array().into_iter().flatten() {
        let key = e["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        parts.push(match e["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other}"),
        });
    }
    if parts.is_empty() {
        json!("<none>")
    } else {
        json!(parts.join(","))
    }
}

fn deployment_ready(obj: &Value) -> Value {
    let ready = count(&obj["status"]["readyReplicas"]);
    let want = count(&obj["spec"]["replicas"]);
    json!(format!("{ready}/{want}"))
}

fn status_count(obj: &Value, key: &str) -> Value {
    json!(count(&obj["status"][key]))
}

fn updated(obj: &Value) -> Value {
    status_count(obj, "updatedReplicas")
}

fn available(obj: &Value) -> Value {
    status_count(obj, "availableReplicas")
}

const SPEC_STATUS: &[&str] = &["spec", "status"];

const DEPLOYMENT_COLUMNS: &[ComputedColumn] = &[
    column(
        "Ready",
        "string",
        "Ready replicas of those wanted.",
        0,
        SPEC_STATUS,
        deployment_ready,
    ),
    column(
        "Up-to-date",
        "integer",
        "Replicas running the current template.",
        0,
        SPEC_STATUS,
        updated,
    ),
    column(
        "Available",
        "integer",
        "Replicas available to serve.",
        0,
        SPEC_STATUS,
        available,
    ),
    column(
        "Containers",
        "string",
        "The template's container names.",
        1,
        SPEC_STATUS,
        containers,
    ),
    column(
        "Images",
        "string",
        "The template's container images.",
        1,
        SPEC_STATUS,
        images,
    ),
    column(
        "Selector",
        "string",
        "The label selector of the pods.",
        1,
        SPEC_STATUS,
        selector,
    ),
];

/// Deployment: upstream's defaults (replicas, rolling update, history and progress
/// limits, the template's pod spec) and its table columns.
pub struct DeploymentStrategy;
impl Strategy for DeploymentStrategy {
    fn computed_columns(&self) -> &'static [ComputedColumn] {
        DEPLOYMENT_COLUMNS
    }

    fn validate(&self, obj: &Value) -> Vec<StatusCause> {
        validate_template(obj, &["spec", "template"], ALWAYS)
    }

    fn warnings(&self, obj: &Value, old: Option<&Value>) -> Vec<String> {
        template_warnings(obj, old, &["spec", "template"])
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            default(spec, "replicas", json!(1));
            default(spec, "revisionHistoryLimit", json!(10));
            default(spec, "progressDeadlineSeconds", json!(600));
            if let Some(strategy) = object(spec, "strategy") {
                default(strategy, "type", json!("RollingUpdate"));
                if strategy["type"] == json!("RollingUpdate") {
                    if let Some(ru) = object(strategy, "rollingUpdate") {
                        default(ru, "maxUnavailable", json!("25%"));
                        default(ru, "maxSurge", json!("25%"));
                    }
                }
            }
        }
        if let Some(spec) = template_spec(obj, &["spec", "template"]) {
            default_pod_spec(spec);
        }
    }

    fn allow_unconditional_update(&self) -> bool {
        true
    }
}

/// Kinds whose only code is their pod template's defaults (ReplicaSet, StatefulSet,
/// DaemonSet, Job, ReplicationController, PodTemplate): `path` leads to the template.
pub struct TemplateStrategy {
    pub path: &'static [&'static str],
    /// The restart policies the kind's pods may have (`Always` for controllers that
    /// keep pods running, `OnFailure` or `Never` for jobs); empty: any.
    pub restart_policies: &'static [&'static str],
}
impl Strategy for TemplateStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(spec) = template_spec(obj, self.path) {
            default_pod_spec(spec);
        }
    }

    fn validate(&self, obj: &Value) -> Vec<StatusCause> {
        validate_template(obj, self.path, self.restart_policies)
    }

    fn warnings(&self, obj: &Value, old: Option<&Value>) -> Vec<String> {
        template_warnings(obj, old, self.path)
    }

    // Built-in kinds take a PUT without resourceVersion (a pod template has no
    // generation to track).
    fn allow_unconditional_update(&self) -> bool {
        true
    }

    fn tracks_generation(&self) -> bool {
        self.path.len() > 1
    }
}

/// The pod spec checks of the template at `path` (`["spec", "template"]`) of `obj`,
/// and upstream's rule of the kind's restart policies (`restart_policies`, unless
/// empty), once the policy itself is one a pod may have.
fn validate_template(obj: &Value, path: &[&str], restart_policies: &[&str]) -> Vec<StatusCause> {
    let mut template = obj;
    for p in path {
        template = &template[*p];
    }
    if !template.is_object() {
        return Vec::new();
    }
    let at = format!("{}.spec", path.join("."));
    // A StatefulSet's pods also get a volume per claim template.
    let claims: Vec<&str> = obj["spec"]["volumeClaimTemplates"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["metadata"]["name"].as_str())
        .collect();
    let mut causes =
        pod_spec::validate_pod_spec_with_claims(&template["spec"], &at, false, &claims);
    let policy = template["spec"]["restartPolicy"]
        .as_str()
        .unwrap_or_default();
    let known = ["Always", "OnFailure", "Never"].contains(&policy);
    if known && !restart_policies.is_empty() && !restart_policies.contains(&policy) {
        causes.push(StatusCause::unsupported(
            &format!("{at}.restartPolicy"),
            &format!("{policy:?}"),
            restart_policies,
        ));
    }
    causes
}

/// The warnings of the template at `path` of `obj`, on create or when an update
/// changes the template (as upstream's workload strategies give them).
fn template_warnings(obj: &Value, old: Option<&Value>, path: &[&str]) -> Vec<String> {
    let at = |o: &'_ Value| -> Value {
        let mut t = o;
        for p in path {
            t = &t[*p];
        }
        t.clone()
    };
    let template = at(obj);
    if old.is_some_and(|o| pod_spec::semantic(&at(o)) == pod_spec::semantic(&template)) {
        return Vec::new();
    }
    pod_spec::pod_spec_warnings(&template["spec"], &format!("{}.spec", path.join(".")))
}

/// What pods kept running by a controller may have.
const ALWAYS: &[&str] = &["Always"];
/// What a job's pods may have.
const JOB_POLICIES: &[&str] = &["OnFailure", "Never"];

/// ReplicaSet, StatefulSet, DaemonSet and ReplicationController (`spec.template`);
/// Job's defaults.
pub static SPEC_TEMPLATE: TemplateStrategy = TemplateStrategy {
    path: &["spec", "template"],
    restart_policies: ALWAYS,
};

/// CronJob (`spec.jobTemplate.spec.template`).
pub static JOB_TEMPLATE: TemplateStrategy = TemplateStrategy {
    path: &["spec", "jobTemplate", "spec", "template"],
    restart_policies: JOB_POLICIES,
};

/// CronJob: upstream's defaults (concurrency `Allow`, not suspended, 3 successful and 1
/// failed job kept: `kubectl get cronjobs` prints SUSPEND `False`) and its job
/// template's pod defaults and checks.
pub struct CronJobStrategy;
impl Strategy for CronJobStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        JOB_TEMPLATE.prepare_for_create(obj);
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            default(spec, "concurrencyPolicy", json!("Allow"));
            default(spec, "suspend", json!(false));
            default(spec, "successfulJobsHistoryLimit", json!(3));
            default(spec, "failedJobsHistoryLimit", json!(1));
        }
    }

    fn validate(&self, obj: &Value) -> Vec<StatusCause> {
        JOB_TEMPLATE.validate(obj)
    }

    fn warnings(&self, obj: &Value, old: Option<&Value>) -> Vec<String> {
        JOB_TEMPLATE.warnings(obj, old)
    }

    fn allow_unconditional_update(&self) -> bool {
        JOB_TEMPLATE.allow_unconditional_update()
    }

    fn tracks_generation(&self) -> bool {
        JOB_TEMPLATE.tracks_generation()
    }
}

/// PodTemplate (`template`).
pub static POD_TEMPLATE: TemplateStrategy = TemplateStrategy {
    path: &["template"],
    restart_policies: &[],
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_policy_follows_the_tag() {
        assert_eq!(pull_policy("nginx"), "Always");
        assert_eq!(pull_policy("nginx:latest"), "Always");
        assert_eq!(pull_policy("nginx:1.27"), "IfNotPresent");
        assert_eq!(pull_policy("registry:5000/nginx"), "Always");
        assert_eq!(pull_policy("nginx@sha256:abc"), "IfNotPresent");
    }

    #[test]
    fn pods_get_upstreams_defaults_and_keep_what_was_set() {
        let mut pod = json!({"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]}});
        PodStrategy.prepare_for_create(&mut pod);
        assert_eq!(pod["spec"]["restartPolicy"], "Never");
        assert_eq!(pod["spec"]["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["spec"]["schedulerName"], "default-scheduler");
        assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(pod["spec"]["containers"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(pod["status"]["phase"], "Pending");
        assert_eq!(pod_ready(&pod), "0/1");
        assert_eq!(pod_status(&pod), "Pending");
        assert_eq!(pod_ip(&pod), "<none>");
    }

    #[test]
    fn deployments_default_their_rollout_and_template() {
        let mut d = json!({"spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}}});
        DeploymentStrategy.prepare_for_create(&mut d);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
        assert_eq!(deployment_ready(&d), "0/1");
        assert_eq!(selector(&d), "app=web");
        assert_eq!(images(&d), "nginx:1.27");
    }
}
