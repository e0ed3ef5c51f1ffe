//! Criterion benchmarks of the server's hot paths, through its library:
//! label selectors, LIST encoding (10,000 items, JSON and Table), patch application
//! (JSON merge and strategic merge), watch fan-out through the storage event log, and
//! one change delivered to 100 selector watchers (decoded per watcher, or read once and
//! shared), schema validation of a Deployment and a custom object (the interpreting
//! walker against the compiled validator the server uses), and a ValidatingAdmissionPolicy's
//! two validations run on one ConfigMap (its variables bound per expression, as before, or
//! once).
//!
//! Run: `cargo bench -p apiserver-loadgen --bench hot_paths` (see BENCHMARKS.md).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use apiserver::api::selectors::{labels_of, LabelSelector};
use apiserver::catalog::Catalog;
use apiserver::endpoints::table::{table, IncludeObject};
use apiserver::registry::cel::{elements, Activation, Expression, Reach};
use apiserver::registry::strategic_merge;
use apiserver::registry::{schema_interpreter, validator::Validator};
use apiserver::storage::events::EventLog;
use apiserver::storage::StoredEvent;
use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use serde_json::{json, Value};

/// A ConfigMap as the server stores and returns it (about 1.3 KiB of JSON).
fn configmap(i: usize) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": format!("cm-{i:07}"),
            "namespace": "bench",
            "uid": format!("6f1c9d2e-0000-4000-8000-{i:012}"),
            "resourceVersion": (1000 + i).to_string(),
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "labels": { "app": "loadgen", "shard": (i % 16).to_string(), "tier": (["web", "db", "db"][i % 3]) },
            "managedFields": [{
                "manager": "loadgen", "operation": "Update", "apiVersion": "v1",
                "time": "2025-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": { "f:data": { ".": {}, "f:payload": {} }, "f:metadata": { "f:labels": { ".": {}, "f:app": {}, "f:shard": {} } } }
            }]
        },
        "data": { "payload": "x".repeat(900) }
    })
}

fn selectors(c: &mut Criterion) {
    let mut g = c.benchmark_group("label selector");
    let text = "app=loadgen,tier in (web,api),shard!=3,!legacy";
    g.bench_function("parse", |b| {
        b.iter(|| LabelSelector::parse(black_box(text)).expect("valid"))
    });
    let sel = LabelSelector::parse(text).expect("valid");
    let objects: Vec<Value> = (0..10_000).map(configmap).collect();
    let labels: Vec<_> = objects.iter().map(labels_of).collect();
    g.throughput(Throughput::Elements(labels.len() as u64));
    g.bench_function("match 10,000 label sets", |b| {
        b.iter(|| labels.iter().filter(|l| sel.matches(black_box(l))).count())
    });
    g.bench_function("labels_of + match 10,000 objects", |b| {
        b.iter(|| {
            objects
                .iter()
                .filter(|o| sel.matches(&labels_of(black_box(o))))
                .count()
        })
    });
    g.finish();
}

fn list_encoding(c: &mut Criterion) {
    let mut g = c.benchmark_group("list of 10,000 ConfigMaps");
    g.sample_size(20);
    let items: Vec<Value> = (0..10_000).map(configmap).collect();
    // What storage holds: each object's bytes (the server decodes them for every LIST).
    let stored: Vec<Bytes> = items
        .iter()
        .map(|o| Bytes::from(serde_json::to_vec(o).expect("serializes")))
        .collect();
    let total: u64 = stored.iter().map(|b| b.len() as u64).sum();
    g.throughput(Throughput::Bytes(total));
    g.bench_function("decode stored bytes to Values", |b| {
        b.iter(|| {
            stored
                .iter()
                .map(|b| serde_json::from_slice::<Value>(b).expect("valid"))
                .collect::<Vec<_>>()
        })
    });
    let list = json!({ "kind": "ConfigMapList", "apiVersion": "v1", "metadata": { "resourceVersion": "20000" }, "items": items });
    g.bench_function("encode JSON list", |b| {
        b.iter(|| serde_json::to_vec(black_box(&list)).expect("serializes"))
    });
    let catalog =
        Catalog::from_definitions(apiserver::generated::CATALOG).expect("the catalog loads");
    let res = catalog
        .get("", "v1", "configmaps")
        .expect("configmaps are served");
    let items = list["items"].as_array().expect("items").clone();
    g.bench_function("build + encode Table", |b| {
        b.iter_batched(
            || items.clone(),
            |items| {
                let t = table(
                    &res,
                    black_box(items),
                    json!({ "resourceVersion": "20000" }),
                    IncludeObject::Metadata,
                );
                serde_json::to_vec(&t).expect("serializes")
            },
            criterion::BatchSize::LargeInput,
        )
    });
    g.finish();
}

/// A Deployment-like schema: a keyed list (`containers` by `name`) and a set.
fn workload_schema() -> Value {
    json!({ "type": "object", "properties": { "spec": { "type": "object", "properties": {
        "replicas": { "type": "integer" },
        "containers": { "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": { "type": "object", "properties": {
                "name": { "type": "string" }, "image": { "type": "string" },
                "env": { "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": { "type": "object" } } } } },
        "tolerations": { "type": "array", "x-kubernetes-list-type": "set", "items": { "type": "string" } }
    } } } })
}

fn workload() -> Value {
    let containers: Vec<Value> = (0..8)
        .map(|i| {
            json!({ "name": format!("c{i}"), "image": format!("registry.local/app{i}:1.0"),
            "env": (0..10).map(|e| json!({ "name": format!("E{e}"), "value": "v" })).collect::<Vec<_>>() })
        })
        .collect();
    let mut obj = configmap(1);
    obj["spec"] =
        json!({ "replicas": 3, "containers": containers, "tolerations": ["a", "b", "c"] });
    obj
}

fn patches(c: &mut Criterion) {
    let mut g = c.benchmark_group("patch");
    let schema = workload_schema();
    let original = workload();
    let smp = json!({
        "metadata": { "labels": { "rollout": "2" } },
        "spec": { "replicas": 5,
            "containers": [ { "name": "c3", "image": "registry.local/app3:2.0", "env": [ { "name": "E4", "value": "w" } ] } ],
            "tolerations": ["d"] }
    });
    g.bench_function("strategic merge (keyed lists)", |b| {
        b.iter(|| {
            strategic_merge::apply(black_box(&original), black_box(&smp), &schema).expect("applies")
        })
    });
    let merge = json!({ "metadata": { "labels": { "rollout": "2" } }, "spec": { "replicas": 5 }, "data": { "patched": "1" } });
    g.bench_function("JSON merge patch (json_patch::merge)", |b| {
        b.iter_batched(
            || original.clone(),
            |mut doc| {
                json_patch::merge(&mut doc, black_box(&merge));
                doc
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

fn watch_fanout(c: &mut Criterion) {
    const WATCHERS: usize = 1000;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let log = Arc::new(EventLog::new(0, 10_000));
    let mut receivers = rt.block_on(async {
        (0..WATCHERS)
            .map(|_| log.watch("/registry/configmaps/bench/", 0).expect("watch"))
            .collect::<Vec<_>>()
    });
    let value = Bytes::from(serde_json::to_vec(&configmap(1)).expect("serializes"));
    let mut revision = 0u64;
    let mut g = c.benchmark_group("event log");
    g.throughput(Throughput::Elements(WATCHERS as u64));
    g.measurement_time(Duration::from_secs(5));
    g.bench_function(
        "publish 1 event to 1,000 watchers (until all received)",
        |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        revision += 1;
                        log.publish(StoredEvent {
                            revision,
                            key: "/registry/configmaps/bench/cm-0000001".into(),
                            value: Some(value.clone()),
                            prev: None,
                            prev_create_revision: 0,
                            prev_mod_revision: 0,
                            encoded: Default::default(),
                            labels: Default::default(),
                        });
                        for rx in receivers.iter_mut() {
                            let got = rx.recv().await.expect("open").expect("event");
                            black_box(got.revision);
                        }
                    }
                    start.elapsed()
                })
            })
        },
    );
    g.finish();
}

/// One change (an update of a ~1.3 KiB ConfigMap) as 100 watchers of its namespace get
/// it, the soak's mix: one in 20 watches the whole namespace, the others one of 16 label
/// shards. "each watcher decodes" is what every selector watcher did alone before
/// (decode the object and its previous version, match, encode its own line); "labels
/// read once, shared" is `watcher::event_for` (labels parsed once per event, the watch
/// line encoded once). Both end with the watch line each watcher writes.
fn selector_watchers(c: &mut Criterion) {
    use apiserver::api::selectors::FieldSelector;
    use apiserver::registry::watcher::{event_for, to_object_event, WatchEvent};
    const WATCHERS: usize = 100;
    let catalog =
        Catalog::from_definitions(apiserver::generated::CATALOG).expect("the catalog loads");
    let res = catalog
        .get("", "v1", "configmaps")
        .expect("configmaps are served");
    let selectors: Vec<LabelSelector> = (0..WATCHERS)
        .map(|i| match i % 20 {
            0 => LabelSelector::default(),
            _ => LabelSelector::parse(&format!("shard={}", i % 16)).expect("valid"),
        })
        .collect();
    let fields = FieldSelector::default();
    let mut stored = configmap(3);
    stored["metadata"]
        .as_object_mut()
        .expect("metadata")
        .remove("resourceVersion");
    let prev = Bytes::from(serde_json::to_vec(&stored).expect("serializes"));
    stored["data"]["payload"] = json!("y".repeat(900));
    let value = Bytes::from(serde_json::to_vec(&stored).expect("serializes"));
    let update = || {
        Arc::new(StoredEvent {
            revision: 2000,
            key: "/registry/configmaps/bench/cm-0000003".into(),
            value: Some(value.clone()),
            prev: Some(prev.clone()),
            prev_create_revision: 1000,
            prev_mod_revision: 1003,
            encoded: Default::default(),
            labels: Default::default(),
        })
    };
    let mut g = c.benchmark_group("1 update to 100 watchers (95 with a label selector)");
    g.throughput(Throughput::Elements(WATCHERS as u64));
    g.bench_function("each watcher decodes", |b| {
        b.iter_batched(
            update,
            |event| {
                let mut bytes = 0;
                for sel in &selectors {
                    let delivered = if sel.is_empty() {
                        Some(Ok(WatchEvent::Shared(event.clone())))
                    } else {
                        to_object_event(&res, &event, sel, &fields)
                            .map(|e| e.map(WatchEvent::Decoded))
                    };
                    if let Some(Ok(e)) = delivered {
                        bytes += e.json_line(&res).expect("encodes").len();
                    }
                }
                bytes
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("labels read once, shared", |b| {
        b.iter_batched(
            update,
            |event| {
                let mut bytes = 0;
                for sel in &selectors {
                    if let Some(Ok(e)) = event_for(&res, &event, sel, &fields) {
                        bytes += e.json_line(&res).expect("encodes").len();
                    }
                }
                bytes
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

/// A Deployment as `kubectl create` sends a realistic one: two containers with ports,
/// environment (literal and from fields, secrets, config maps), resources, three probes,
/// volume mounts and a security context; four volumes.
fn deployment() -> Value {
    let container = |name: &str, port: u16| {
        json!({
            "name": name,
            "image": format!("registry.example.com/shop/{name}:1.24.3"),
            "imagePullPolicy": "IfNotPresent",
            "args": ["--listen", format!(":{port}"), "--log-level=info"],
            "ports": [
                { "name": "http", "containerPort": port, "protocol": "TCP" },
                { "name": "metrics", "containerPort": 9090, "protocol": "TCP" }
            ],
            "env": [
                { "name": "MODE", "value": "production" },
                { "name": "POD_NAME", "valueFrom": { "fieldRef": { "apiVersion": "v1", "fieldPath": "metadata.name" } } },
                { "name": "POD_IP", "valueFrom": { "fieldRef": { "fieldPath": "status.podIP" } } },
                { "name": "DB_PASSWORD", "valueFrom": { "secretKeyRef": { "name": "db", "key": "password" } } },
                { "name": "FEATURES", "valueFrom": { "configMapKeyRef": { "name": "flags", "key": "features", "optional": true } } },
                { "name": "GOMAXPROCS", "valueFrom": { "resourceFieldRef": { "resource": "limits.cpu", "divisor": "1" } } }
            ],
            "envFrom": [{ "configMapRef": { "name": "shop-config" } }],
            "resources": { "requests": { "cpu": "250m", "memory": "256Mi" }, "limits": { "cpu": "1", "memory": "512Mi" } },
            "livenessProbe": { "httpGet": { "path": "/healthz", "port": "http", "scheme": "HTTP" }, "initialDelaySeconds": 10, "periodSeconds": 10, "timeoutSeconds": 2, "failureThreshold": 3 },
            "readinessProbe": { "httpGet": { "path": "/ready", "port": port }, "periodSeconds": 5 },
            "startupProbe": { "tcpSocket": { "port": port }, "failureThreshold": 30, "periodSeconds": 2 },
            "volumeMounts": [
                { "name": "config", "mountPath": "/etc/shop", "readOnly": true },
                { "name": "cache", "mountPath": "/var/cache/shop" },
                { "name": "tls", "mountPath": "/etc/tls", "readOnly": true }
            ],
            "securityContext": { "runAsNonRoot": true, "runAsUser": 10001, "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "capabilities": { "drop": ["ALL"] } },
            "terminationMessagePolicy": "FallbackToLogsOnError"
        })
    };
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": { "name": "shop", "namespace": "bench", "labels": { "app": "shop", "tier": "web" } },
        "spec": {
            "replicas": 3,
            "revisionHistoryLimit": 5,
            "selector": { "matchLabels": { "app": "shop" } },
            "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": "25%", "maxUnavailable": 0 } },
            "template": {
                "metadata": { "labels": { "app": "shop", "tier": "web" }, "annotations": { "prometheus.io/scrape": "true" } },
                "spec": {
                    "serviceAccountName": "shop",
                    "terminationGracePeriodSeconds": 30,
                    "securityContext": { "fsGroup": 10001, "seccompProfile": { "type": "RuntimeDefault" } },
                    "containers": [container("frontend", 8080), container("worker", 8081)],
                    "initContainers": [{ "name": "migrate", "image": "registry.example.com/shop/migrate:1.24.3", "command": ["/migrate", "--up"] }],
                    "volumes": [
                        { "name": "config", "configMap": { "name": "shop-config", "items": [{ "key": "app.yaml", "path": "app.yaml" }] } },
                        { "name": "cache", "emptyDir": { "sizeLimit": "1Gi" } },
                        { "name": "tls", "secret": { "secretName": "shop-tls", "defaultMode": 420 } },
                        { "name": "data", "persistentVolumeClaim": { "claimName": "shop-data" } }
                    ],
                    "affinity": { "podAntiAffinity": { "preferredDuringSchedulingIgnoredDuringExecution": [{ "weight": 100, "podAffinityTerm": { "topologyKey": "kubernetes.io/hostname", "labelSelector": { "matchLabels": { "app": "shop" } } } }] } },
                    "tolerations": [{ "key": "dedicated", "operator": "Equal", "value": "shop", "effect": "NoSchedule" }],
                    "topologySpreadConstraints": [{ "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": { "matchLabels": { "app": "shop" } } }]
                }
            }
        }
    })
}

/// A CustomResourceDefinition's schema with the checks custom kinds use: patterns, enums,
/// formats, bounds, int-or-string, a map list, a set list, a string map.
const BACKUP_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: { name: backups.bench.example.com }
spec:
  group: bench.example.com
  scope: Namespaced
  names: { plural: backups, singular: backup, kind: Backup }
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [schedule, target]
              properties:
                schedule: { type: string, pattern: '^(\S+\s+){4}\S+$', maxLength: 64 }
                suspend: { type: boolean }
                retention: { type: integer, minimum: 1, maximum: 365 }
                startAfter: { type: string, format: date-time }
                owner: { type: string, format: hostname }
                window: { x-kubernetes-int-or-string: true }
                target:
                  type: object
                  required: [kind, name]
                  properties:
                    kind: { type: string, enum: [Database, Volume, Bucket] }
                    name: { type: string, minLength: 1, maxLength: 253, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' }
                    endpoint: { type: string, format: ipv4 }
                destinations:
                  type: array
                  maxItems: 8
                  x-kubernetes-list-type: map
                  x-kubernetes-list-map-keys: [name]
                  items:
                    type: object
                    required: [name, url]
                    properties:
                      name: { type: string }
                      url: { type: string, pattern: '^s3://' }
                      weight: { type: number, minimum: 0, maximum: 1 }
                      region: { type: string, enum: [eu-west-1, us-east-1, ap-south-1] }
                tags: { type: array, x-kubernetes-list-type: set, items: { type: string, maxLength: 63 } }
                labels: { type: object, additionalProperties: { type: string, maxLength: 63 } }
            status:
              type: object
              properties:
                phase: { type: string, enum: [Pending, Running, Succeeded, Failed] }
                lastRun: { type: string, format: date-time }
"#;

fn backup() -> Value {
    json!({
        "apiVersion": "bench.example.com/v1",
        "kind": "Backup",
        "metadata": { "name": "nightly", "namespace": "bench" },
        "spec": {
            "schedule": "0 3 * * *",
            "suspend": false,
            "retention": 30,
            "startAfter": "2026-12-01T00:00:00Z",
            "owner": "db-team.example.com",
            "window": "2h",
            "target": { "kind": "Database", "name": "orders", "endpoint": "10.0.0.12" },
            "destinations": [
                { "name": "primary", "url": "s3://backups/orders", "weight": 0.7, "region": "eu-west-1" },
                { "name": "secondary", "url": "s3://backups-dr/orders", "weight": 0.3, "region": "us-east-1" }
            ],
            "tags": ["orders", "nightly", "pii"],
            "labels": { "team": "db", "cost-center": "1234" }
        },
        "status": { "phase": "Succeeded", "lastRun": "2026-12-04T03:00:00Z" }
    })
}

/// Schema validation per object: `schema_interpreter::validate` walks the schema as JSON
/// (looking keywords up, compiling patterns, building paths, cloning the object), the
/// compiled `Validator` the server uses walks typed nodes. Both in one run, so their
/// ratio holds on a loaded machine.
fn schema_validation(c: &mut Criterion) {
    let catalog =
        Catalog::from_definitions(apiserver::generated::CATALOG).expect("the catalog loads");
    let deployments = catalog
        .get("apps", "v1", "deployments")
        .expect("deployments are served");
    let crd: Value = serde_yaml::from_str(BACKUP_CRD).expect("the CRD is YAML");
    let def = apiserver::apiextensions::definitions(&crd)
        .expect("the CRD is valid")
        .remove(0);
    let backups = apiserver::catalog::ApiResource::new(def).expect("the CRD is served");
    let mut g = c.benchmark_group("schema validation");
    for (name, res, obj) in [
        ("Deployment", &*deployments, deployment()),
        ("custom object", &backups, backup()),
    ] {
        let schema = res.schema();
        let compiled = res.validator();
        assert!(compiled.validate(&obj).is_empty(), "the {name} is valid");
        assert_eq!(
            schema_interpreter::validate(&obj, schema),
            compiled.validate(&obj)
        );
        g.bench_function(format!("{name}: interpreted"), |b| {
            b.iter(|| schema_interpreter::validate(black_box(&obj), schema))
        });
        g.bench_function(format!("{name}: compiled"), |b| {
            b.iter(|| compiled.validate(black_box(&obj)))
        });
    }
    let schema = deployments.schema();
    g.bench_function("compile the Deployment schema (once per kind)", |b| {
        b.iter(|| Validator::compile(black_box(schema)))
    });
    g.finish();
}

/// The validations of `loadgen admission`'s policy, run on one ~1.3 KiB ConfigMap as one
/// create's admission runs them: with the request's variables bound for each expression
/// (what the server did before `Activation`: the object converted to CEL values, then
/// copied into each expression's context), bound once, shared by both, and bound once
/// with only the fields the expressions read converted (what the server does now).
fn admission_policy(c: &mut Criterion) {
    const VALIDATIONS: [&str; 2] = [
        "object.metadata.name.size() <= 63",
        "!has(object.data) || !('forbidden' in object.data)",
    ];
    const NAMES: [&str; 5] = [
        "object",
        "oldObject",
        "request",
        "namespaceObject",
        "params",
    ];
    let object = configmap(7);
    let mut g = c.benchmark_group("admission policy");
    let root = cel::Context::default();
    let programs: Vec<cel::Program> = VALIDATIONS
        .iter()
        .map(|e| cel::Program::compile(e).expect("compiles"))
        .collect();
    g.bench_function("2 validations, variables bound per expression", |b| {
        b.iter(|| {
            let object = cel::to_value(black_box(&object)).expect("converts");
            for p in &programs {
                let mut ctx = root.new_inner_scope();
                for name in NAMES {
                    let v = if name == "object" {
                        object.clone()
                    } else {
                        cel::Value::Null
                    };
                    ctx.add_variable_from_value(name, v);
                }
                let variables: std::collections::HashMap<String, cel::Value> = Default::default();
                ctx.add_variable_from_value("variables", variables);
                assert_eq!(p.execute(&ctx), Ok(cel::Value::Bool(true)));
            }
        })
    });
    let expressions: Vec<Expression> = VALIDATIONS
        .iter()
        .map(|e| Expression::compile(e, "spec.validations").expect("compiles"))
        .collect();
    g.bench_function("2 validations, variables bound once", |b| {
        b.iter(|| {
            let mut scope = Activation::new();
            for name in NAMES {
                let v = if name == "object" {
                    black_box(&object)
                } else {
                    &Value::Null
                };
                scope.bind_json(name, v);
            }
            let mut scope = scope.nested();
            scope
                .bind(
                    "variables",
                    std::collections::HashMap::<String, cel::Value>::new().into(),
                )
                .expect("binds");
            for e in &expressions {
                assert_eq!(e.evaluate_in(&scope), Ok(cel::Value::Bool(true)));
            }
        })
    });
    // What the server binds since `object` is converted only where the expressions
    // read it (`metadata.name` and `data`).
    let reach = Reach::of("object", &expressions);
    g.bench_function("2 validations, object bound as reached", |b| {
        b.iter(|| {
            let mut scope = Activation::new();
            for name in NAMES {
                match name {
                    "object" => scope.bind_json_reached(name, black_box(&object), &reach),
                    _ => scope.bind_json(name, &Value::Null),
                }
            }
            let mut scope = scope.nested();
            scope
                .bind(
                    "variables",
                    std::collections::HashMap::<String, cel::Value>::new().into(),
                )
                .expect("binds");
            for e in &expressions {
                assert_eq!(e.evaluate_in(&scope), Ok(cel::Value::Bool(true)));
            }
        })
    });
    g.bench_function("quick cost bound of the 2 validations", |b| {
        b.iter(|| {
            let n = elements(std::iter::once(black_box(&object)));
            expressions.iter().map(|e| e.cost_within(n)).sum::<u64>()
        })
    });
    g.finish();
}

criterion_group!(
    benches,
    selectors,
    list_encoding,
    patches,
    watch_fanout,
    selector_watchers,
    schema_validation,
    admission_policy
);
criterion_main!(benches);
