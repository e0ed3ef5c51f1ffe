//! One real store for the targets that need state: the compiled-in catalog, the embedded
//! (redb) storage in a temporary directory with the watch caches on, as the server runs
//! by default, and a few objects written at several revisions (so lists page and past
//! revisions exist). Targets write only with `dryRun`, so every input sees the same state.

use std::sync::{Arc, OnceLock};

use apiserver::catalog::{ApiResource, Catalog};
use apiserver::registry::store::WriteContext;
use apiserver::registry::Store;
use apiserver::storage::embedded::EmbeddedStorage;
use apiserver::storage::ResourceStorages;
use serde_json::{json, Value};

/// The namespace of the fixture's namespaced objects.
pub const NAMESPACE: &str = "fuzz";

/// The shared state of one fuzzing process.
pub struct Fixture {
    pub runtime: tokio::runtime::Runtime,
    pub catalog: Arc<Catalog>,
    pub store: Store,
    /// One stored object per kind of [`seed_objects`], by resource plural.
    pub objects: Vec<(Arc<ApiResource>, Value)>,
    _dir: tempfile::TempDir,
}

/// The fixture, built on first use.
pub fn get() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(build)
}

/// A dry-run write by the fuzzer: everything runs, nothing is stored.
pub fn dry_run() -> WriteContext {
    WriteContext {
        dry_run: true,
        ..WriteContext::new("fuzz")
    }
}

/// The objects the stateful targets patch and list: one per kind with a strategy of its
/// own or a schema that matters (built-in workloads and config, a custom kind), as the
/// black-box tests create them.
fn seed_objects() -> Vec<(&'static str, &'static str, &'static str, Value)> {
    vec![
        (
            "",
            "v1",
            "namespaces",
            json!({ "metadata": { "name": NAMESPACE } }),
        ),
        (
            "",
            "v1",
            "configmaps",
            json!({
                "metadata": { "name": "cm", "labels": { "app": "web", "tier": "front" } },
                "data": { "a": "1", "b": "2" }
            }),
        ),
        (
            "",
            "v1",
            "secrets",
            json!({
                "metadata": { "name": "secret" }, "type": "Opaque", "data": { "k": "dmFsdWU=" }
            }),
        ),
        (
            "",
            "v1",
            "services",
            json!({
                "metadata": { "name": "svc" },
                "spec": { "selector": { "app": "web" }, "ports": [{ "port": 80, "protocol": "TCP" }] }
            }),
        ),
        (
            "",
            "v1",
            "pods",
            json!({
                "metadata": { "name": "pod", "labels": { "app": "web" } },
                "spec": { "containers": [{ "name": "c", "image": "nginx", "ports": [{ "containerPort": 80 }] }] }
            }),
        ),
        (
            "apps",
            "v1",
            "deployments",
            json!({
                "metadata": { "name": "deploy" },
                "spec": {
                    "replicas": 2,
                    "selector": { "matchLabels": { "app": "web" } },
                    "template": {
                        "metadata": { "labels": { "app": "web" } },
                        "spec": { "containers": [{ "name": "c", "image": "nginx", "env": [{ "name": "A", "value": "1" }] }] }
                    }
                }
            }),
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "clusterroles",
            json!({
                "metadata": { "name": "role" },
                "rules": [{ "apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"] }]
            }),
        ),
        (
            "example.dev",
            "v1",
            "widgets",
            json!({
                "metadata": { "name": "widget", "labels": { "app": "web" } },
                "spec": { "color": "red", "replicas": 2, "ports": [{ "port": 80, "name": "http" }] }
            }),
        ),
    ]
}

fn build() -> Fixture {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    let catalog = Arc::new(
        Catalog::from_definitions(apiserver::generated::CATALOG).expect("the catalog loads"),
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (store, objects) = runtime.block_on(async {
        let storage = Arc::new(
            EmbeddedStorage::open(&dir.path().join("store.redb")).expect("the embedded store"),
        );
        let store = Store::new(ResourceStorages::new(storage, None), true);
        for res in catalog.all() {
            store.warm_up(&res);
        }
        store.follow(&catalog);
        let ctx = WriteContext::new("fuzz-fixture");
        let mut objects = Vec::new();
        for (group, version, plural, obj) in seed_objects() {
            let res = catalog
                .get(group, version, plural)
                .expect("a seeded kind is served");
            let ns = res.namespaced().then_some(NAMESPACE);
            let created = store
                .create(&res, ns, obj, &ctx)
                .await
                .unwrap_or_else(|e| panic!("seeding {plural}: {e}"));
            objects.push((res, created));
        }
        // More ConfigMaps, each write a revision: pages to continue and a history to
        // read past states from.
        let cms = catalog.get("", "v1", "configmaps").expect("configmaps");
        for i in 0..6 {
            let obj = json!({
                "metadata": { "name": format!("cm-{i}"), "labels": { "index": i.to_string() } },
                "data": { "i": i.to_string() }
            });
            store
                .create(&cms, Some(NAMESPACE), obj, &ctx)
                .await
                .expect("seeding a ConfigMap");
        }
        store.wait_caches_loaded().await;
        (store, objects)
    });
    Fixture {
        runtime,
        catalog,
        store,
        objects,
        _dir: dir,
    }
}

impl Fixture {
    /// The stored object whose resource is named `name` (`plural` or `plural.group`),
    /// else one picked by `name`.
    pub fn object(&self, name: &str) -> &(Arc<ApiResource>, Value) {
        self.objects
            .iter()
            .find(|(res, _)| names(res, name))
            .unwrap_or_else(|| &self.objects[crate::pick(name, self.objects.len())])
    }

    /// The catalog entry named `name` (`plural` or `plural.group`), else one picked by
    /// `name`; only kinds that are stored (create-only kinds have no store path).
    pub fn resource(&self, name: &str) -> Arc<ApiResource> {
        let mut all: Vec<_> = self
            .catalog
            .all()
            .into_iter()
            .filter(|r| r.stored())
            .collect();
        all.sort_by(|a, b| a.qualified_resource().cmp(&b.qualified_resource()));
        match all.iter().find(|r| names(r, name)) {
            Some(r) => r.clone(),
            None => all[crate::pick(name, all.len())].clone(),
        }
    }
}

/// Whether `name` is `res`'s plural, or `plural.group`.
fn names(res: &ApiResource, name: &str) -> bool {
    name == res.qualified_resource() || (res.def.group.is_empty() && name == res.def.plural)
}
