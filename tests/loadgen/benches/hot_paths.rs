//! Criterion benchmarks of the server's hot paths, through its library:
//! label selectors, LIST encoding (10,000 items, JSON and Table), patch application
//! (JSON merge and strategic merge), watch fan-out through the storage event log, and
//! one change delivered to 100 selector watchers (decoded per watcher, or read once and
//! shared), and a ValidatingAdmissionPolicy's two validations run on one ConfigMap (its
//! variables bound per expression, as before, or once).
//!
//! Run: `cargo bench -p apiserver-loadgen --bench hot_paths` (see BENCHMARKS.md).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use apiserver::api::selectors::{labels_of, LabelSelector};
use apiserver::catalog::Catalog;
use apiserver::endpoints::table::{table, IncludeObject};
use apiserver::registry::cel::{elements, Activation, Expression};
use apiserver::registry::strategic_merge;
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

/// The validations of `loadgen admission`'s policy, run on one ~1.3 KiB ConfigMap as one
/// create's admission runs them: with the request's variables bound for each expression
/// (what the server did before `Activation`: the object converted to CEL values, then
/// copied into each expression's context) and bound once, shared by both.
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
    admission_policy
);
criterion_main!(benches);
