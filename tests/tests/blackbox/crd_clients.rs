//! Custom resources as client libraries use them: a kube-rs operator (a kind derived with
//! `#[derive(CustomResource)]`, its CRD installed from the derived schema, a
//! `kube::runtime::Controller` reconciling status) and the official Python client's
//! `CustomObjectsApi`.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use apiserver_tests::objects::{install_crd, CRONTABS_CRD};
use apiserver_tests::TestServer;
use futures_util::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::watcher;
use kube::{CustomResource, CustomResourceExt, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// How long a condition may take before the test gives up on it.
const WAIT: Duration = Duration::from_secs(20);

/// A kind as an operator written with kube-rs defines it: optional and defaulted fields,
/// lists, maps, enums (plain and with data: `oneOf`), sized integers, formats, lengths, a
/// free-form field and a status subresource with conditions.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
#[kube(
    group = "clients.example.com",
    version = "v1",
    kind = "Greeting",
    namespaced,
    status = "GreetingStatus",
    shortname = "gr"
)]
pub struct GreetingSpec {
    message: String,
    #[serde(default)]
    repeat: Option<u32>,
    #[serde(default)]
    tone: Tone,
    #[serde(default)]
    recipients: Vec<String>,
    #[serde(default)]
    tags: BTreeMap<String, String>,
    #[serde(default)]
    fallback: Option<Tone>,
    #[serde(default)]
    schedule: Option<Schedule>,
    #[serde(default)]
    #[schemars(length(min = 1, max = 63))]
    nickname: Option<String>,
    // Free-form, as a structural schema has to say so.
    #[serde(default)]
    #[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
    extra: Option<serde_json::Value>,
    #[serde(default)]
    weight: Option<f64>,
    #[serde(default)]
    delivery: Option<Delivery>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct Schedule {
    every_seconds: i64,
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    until: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Delivery {
    Email { address: String },
    Pager { number: u64 },
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub enum Tone {
    #[default]
    Friendly,
    Formal,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
pub struct GreetingStatus {
    observed: String,
    #[serde(default)]
    conditions: Vec<GreetingCondition>,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GreetingCondition {
    r#type: String,
    status: String,
    #[schemars(extend("format" = "date-time"))]
    last_transition_time: String,
}

/// Copies `spec.message` into `status.observed` and says the greeting is Ready, through
/// the status subresource.
async fn reconcile(g: Arc<Greeting>, client: Arc<kube::Client>) -> kube::Result<Action> {
    let api: Api<Greeting> = Api::namespaced((*client).clone(), &g.namespace().unwrap());
    let ready = json!({
        "type": "Ready",
        "status": "True",
        "lastTransitionTime": g.creation_timestamp(),
    });
    let patch = json!({ "status": { "observed": g.spec.message, "conditions": [ready] } });
    api.patch_status(
        &g.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(Action::await_change())
}

/// A greeting with every optional field set.
fn full_greeting(name: &str, message: &str) -> Greeting {
    let mut g = Greeting::new(
        name,
        GreetingSpec {
            message: message.into(),
            repeat: Some(2),
            tone: Tone::Formal,
            recipients: vec!["ops".into()],
            tags: BTreeMap::from([("team".into(), "a".into())]),
            fallback: Some(Tone::Friendly),
            schedule: Some(Schedule {
                every_seconds: 3600,
                until: Some("2030-01-01T00:00:00Z".into()),
            }),
            nickname: Some("hey".into()),
            extra: Some(json!({ "any": ["thing", { "nested": 1 }] })),
            weight: Some(0.5),
            delivery: Some(Delivery::Pager { number: 42 }),
        },
    );
    g.metadata.namespace = Some("default".into());
    g
}

/// A greeting with only the required field: its optional fields are sent as nulls.
fn bare_greeting(name: &str, message: &str) -> Greeting {
    let mut g = Greeting::new(
        name,
        GreetingSpec {
            message: message.into(),
            ..GreetingSpec::default()
        },
    );
    g.metadata.namespace = Some("default".into());
    g
}

/// Waits until the controller has written `message` into `name`'s status.
async fn await_observed(api: &Api<Greeting>, name: &str, message: &str) {
    let observed = |g: Option<&Greeting>| {
        g.and_then(|g| g.status.as_ref())
            .is_some_and(|s| s.observed == message)
    };
    let waited = tokio::time::timeout(WAIT, await_condition(api.clone(), name, observed)).await;
    let got = waited
        .unwrap_or_else(|_| panic!("{name}: status.observed never became {message:?}"))
        .expect("watching the greeting");
    assert_eq!(got.unwrap().spec.message, message, "{name}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kube_runtime_controller_reconciles_a_derived_custom_resource() {
    let s = TestServer::start();
    let client = s.client().await;

    // The CRD as kube-rs derives it, schema and all, is accepted and established.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &Greeting::crd())
        .await
        .unwrap_or_else(|e| panic!("creating the derived CRD: {e}\n{}", s.stderr_tail()));
    let established = await_condition(
        crds.clone(),
        Greeting::crd_name(),
        conditions::is_crd_established(),
    );
    tokio::time::timeout(WAIT, established)
        .await
        .expect("the derived CRD was not Established in time")
        .expect("watching the CRD");

    let greetings: Api<Greeting> = Api::namespaced(client.clone(), "default");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let controller = Controller::new(greetings.clone(), watcher::Config::default())
        .graceful_shutdown_on(async {
            let _ = stopped.await;
        })
        .run(
            reconcile,
            |_, _, _| Action::requeue(Duration::from_millis(200)),
            Arc::new(client.clone()),
        )
        .for_each(|_| async {});
    let controller = tokio::spawn(controller);

    let create = |g: Greeting| {
        let greetings = greetings.clone();
        async move {
            let name = g.name_any();
            greetings
                .create(&PostParams::default(), &g)
                .await
                .unwrap_or_else(|e| panic!("creating {name}: {e}"))
        }
    };
    let hello = create(full_greeting("hello", "hi")).await;
    // kube-rs sends unset optional fields as nulls, also where the schema does not say
    // `nullable` (`extra`): those count as absent.
    create(bare_greeting("bye", "so long")).await;
    // As a user writes it: only the required field, the rest from the schema's defaults.
    let yaml = "apiVersion: clients.example.com/v1\nkind: Greeting\nmetadata:\n  name: thanks\nspec:\n  message: ta\n";
    s.kubectl_ok(&[
        "apply",
        "-f",
        s.write_file("thanks.yaml", yaml).to_str().unwrap(),
    ]);
    for (name, message) in [("hello", "hi"), ("bye", "so long"), ("thanks", "ta")] {
        await_observed(&greetings, name, message).await;
    }

    // What was written reads back: nothing pruned, the free-form field kept whole.
    let got = greetings.get("hello").await.expect("get hello");
    assert_eq!(
        serde_json::to_value(&got.spec).unwrap(),
        serde_json::to_value(&hello.spec).unwrap()
    );
    assert_eq!(
        got.spec.extra,
        Some(json!({ "any": ["thing", { "nested": 1 }] }))
    );
    let status = got.status.expect("hello's status");
    assert_eq!(status.conditions.len(), 1, "{status:?}");
    assert_eq!(status.conditions[0].r#type, "Ready");
    let defaults = s.kubectl_ok(&[
        "get",
        "gr",
        "thanks",
        "-o",
        "jsonpath={.spec.tone} {.spec.recipients} {.spec.tags}",
    ]);
    assert_eq!(defaults, "Friendly [] {}");

    // A spec change is reconciled again.
    let patch = json!({ "spec": { "message": "hi again" } });
    greetings
        .patch("hello", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patching hello's spec");
    await_observed(&greetings, "hello", "hi again").await;
    let names = s.kubectl_ok(&["get", "gr", "-o", "name"]);
    assert_eq!(
        names.lines().collect::<Vec<_>>(),
        [
            "greeting.clients.example.com/bye",
            "greeting.clients.example.com/hello",
            "greeting.clients.example.com/thanks"
        ]
    );

    // The controller stops when asked.
    stop.send(()).unwrap();
    tokio::time::timeout(WAIT, controller)
        .await
        .expect("the controller did not shut down in time")
        .expect("the controller task");
}

/// The Python client's `CustomObjectsApi` on CronTabs: each call's answer (or error) in
/// one JSON object, printed for the test to check.
const CUSTOM_OBJECTS_SCRIPT: &str = r#"
import copy, json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config(config_file=sys.argv[1])
api = client.CustomObjectsApi()
at = ("stable.example.com", "v1", "default", "crontabs")

def crontab(name, cron, replicas, tier):
    return {"apiVersion": "stable.example.com/v1", "kind": "CronTab",
            "metadata": {"name": name, "labels": {"tier": tier}},
            "spec": {"cronSpec": cron, "replicas": replicas}}

def error(call):
    try:
        call()
    except ApiException as e:
        return {"status": e.status, "reason": json.loads(e.body)["reason"]}
    sys.exit("expected the call to fail")

out = {}
out["created"] = api.create_namespaced_custom_object(*at, crontab("nightly", "0 3 * * *", 1, "gold"))
api.create_namespaced_custom_object(*at, crontab("hourly", "0 * * * *", 1, "silver"))
out["got"] = api.get_namespaced_custom_object(*at, "nightly")
gold = api.list_namespaced_custom_object(*at, label_selector="tier=gold")
out["gold"] = [o["metadata"]["name"] for o in gold["items"]]
out["patched"] = api.patch_namespaced_custom_object(*at, "nightly", {"spec": {"replicas": 3}})
body = copy.deepcopy(out["patched"])
body["spec"]["cronSpec"] = "30 3 * * *"
out["replaced"] = api.replace_namespaced_custom_object(*at, "nightly", body)
# The same body again carries a resourceVersion that is no longer current.
out["stale"] = error(lambda: api.replace_namespaced_custom_object(*at, "nightly", body))
out["status"] = api.patch_namespaced_custom_object_status(
    *at, "nightly", {"status": {"active": 2}, "spec": {"replicas": 9}})
out["invalid"] = error(lambda: api.create_namespaced_custom_object(*at, crontab("bad", "x", 0, "gold")))
out["deleted"] = api.delete_namespaced_custom_object(*at, "nightly")
out["gone"] = error(lambda: api.get_namespaced_custom_object(*at, "nightly"))
out["left"] = [o["metadata"]["name"] for o in api.list_namespaced_custom_object(*at)["items"]]
print(json.dumps(out))
"#;

#[test]
fn the_python_client_custom_objects_api_works_on_custom_objects() {
    let s = TestServer::start();
    let crd = s.write_file("crd.yaml", CRONTABS_CRD);
    install_crd(&s, &crd, "crontabs.stable.example.com");

    let script = s.write_file("custom_objects.py", CUSTOM_OBJECTS_SCRIPT);
    let run = Command::new(apiserver_tests::python_binary())
        .arg(&script)
        .arg(s.kubeconfig())
        .env_remove("KUBECONFIG")
        .output()
        .expect("running python3 (with `pip install kubernetes`; tests/run.sh installs it)");
    assert!(
        run.status.success(),
        "the Python client script failed ({}):\n{}\nserver log:\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr),
        s.stderr_tail()
    );
    let out: Value = serde_json::from_slice(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "the script's output is not JSON ({e}):\n{}",
            String::from_utf8_lossy(&run.stdout)
        )
    });
    let rv = |step: &str| -> String {
        let rv = out[step]["metadata"]["resourceVersion"].as_str();
        rv.unwrap_or_else(|| panic!("{step}: no resourceVersion in {}", out[step]))
            .to_string()
    };

    assert_eq!(out["created"]["metadata"]["name"], "nightly");
    assert_eq!(out["created"]["spec"]["cronSpec"], "0 3 * * *");
    assert_eq!(
        out["got"], out["created"],
        "get returns what create returned"
    );
    assert_eq!(out["gold"], json!(["nightly"]), "the label selector");

    assert_eq!(
        out["patched"]["spec"],
        json!({"cronSpec": "0 3 * * *", "replicas": 3})
    );
    assert_ne!(rv("patched"), rv("created"));
    assert_eq!(
        out["replaced"]["spec"],
        json!({"cronSpec": "30 3 * * *", "replicas": 3})
    );
    assert_ne!(rv("replaced"), rv("patched"));
    assert_eq!(out["stale"], json!({"status": 409, "reason": "Conflict"}));

    // The status subresource writes status only.
    assert_eq!(out["status"]["status"], json!({"active": 2}));
    assert_eq!(out["status"]["spec"], out["replaced"]["spec"]);
    assert_ne!(rv("status"), rv("replaced"));

    assert_eq!(out["invalid"], json!({"status": 422, "reason": "Invalid"}));
    assert_eq!(out["deleted"]["metadata"]["name"], "nightly");
    assert_eq!(out["gone"], json!({"status": 404, "reason": "NotFound"}));
    assert_eq!(out["left"], json!(["hourly"]));
}
