//! RBAC in the server: the bootstrap policy reconciled at start-up, the authorizer's
//! [`RbacIndex`] rebuilt from the watch caches whenever a Role, ClusterRole or binding
//! changes, and aggregated ClusterRoles kept equal to the union of the roles they
//! select (upstream's clusterrole-aggregation controller).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Notify;

use crate::api::options::DeleteOptions;
use crate::api::ApiError;
use crate::auth::authz::RbacAuthorizer;
use crate::auth::rbac::{self, bootstrap, RbacIndex};
use crate::catalog::{ApiResource, Catalog};
use crate::registry::store::{Target, WriteContext};
use crate::registry::Store;

/// The field manager of the controller's writes.
const MANAGER: &str = "rbac-controller";
/// A full rebuild at least this often, whatever the watches say (they may have ended).
const RESYNC: Duration = Duration::from_secs(30);

/// The four RBAC kinds as catalog entries, in the order [`RbacIndex::from_json`] takes.
struct Kinds([Arc<ApiResource>; 4]);

impl Kinds {
    fn find(catalog: &Catalog) -> Option<Kinds> {
        let get = |plural| catalog.get(rbac::RBAC_GROUP, "v1", plural);
        Some(Kinds([
            get("roles")?,
            get("clusterroles")?,
            get("rolebindings")?,
            get("clusterrolebindings")?,
        ]))
    }
}

/// Reconciles the bootstrap policy and builds the first snapshot (so the first request
/// served is authorized by it), then keeps the snapshot current from a task.
pub async fn start(
    catalog: Arc<Catalog>,
    store: Store,
    authorizer: Arc<RbacAuthorizer>,
) -> Result<(), String> {
    let Some(kinds) = Kinds::find(&catalog) else {
        return Err(
            "--authorization-mode=RBAC needs the rbac.authorization.k8s.io/v1 kinds".into(),
        );
    };
    reconcile_bootstrap(&store, &kinds).await?;
    // Aggregated roles complete before the first request (a pass per level of nesting).
    for _ in 0..4 {
        if !aggregate_all(&store, &kinds).await {
            break;
        }
    }
    authorizer.replace(build(&store, &kinds).await?);
    crate::panics::spawn("RBAC controller", follow(store, kinds, authorizer));
    Ok(())
}

/// Writes what the bootstrap policy lacks, as upstream's reconciliation does at start-up.
async fn reconcile_bootstrap(store: &Store, kinds: &Kinds) -> Result<(), String> {
    let [roles, cluster_roles, role_bindings, cluster_role_bindings] = &kinds.0;
    let objects = bootstrap::cluster_roles()
        .into_iter()
        .map(|o| (cluster_roles, o))
        .chain(bootstrap::roles().into_iter().map(|o| (roles, o)))
        .chain(
            bootstrap::role_bindings()
                .into_iter()
                .map(|o| (role_bindings, o)),
        )
        .chain(
            bootstrap::cluster_role_bindings()
                .into_iter()
                .map(|o| (cluster_role_bindings, o)),
        );
    // All at once: concurrent writes share the embedded store's fsyncs (group commit), so
    // a first start stays fast.
    let writes = objects.map(|(res, wanted)| reconcile_one(store, res, wanted));
    futures_util::future::join_all(writes)
        .await
        .into_iter()
        .collect()
}

/// Reconciles one bootstrap object with what is stored, again on what another instance
/// wrote when both start together (their writes race: already exists, conflict).
async fn reconcile_one(store: &Store, res: &ApiResource, wanted: Value) -> Result<(), String> {
    const ATTEMPTS: usize = 5;
    let mut attempt = 1;
    loop {
        match reconcile_once(store, res, wanted.clone()).await {
            Err(e) if (e.is_already_exists() || e.is_conflict()) && attempt < ATTEMPTS => {
                attempt += 1;
            }
            done => return done.map_err(|e| reconcile_error(res, &wanted, e)),
        }
    }
}

fn reconcile_error(res: &ApiResource, wanted: &Value, e: ApiError) -> String {
    let name = wanted["metadata"]["name"].as_str().unwrap_or_default();
    format!("reconciling {} {name}: {e}", res.def.plural)
}

async fn reconcile_once(store: &Store, res: &ApiResource, wanted: Value) -> Result<(), ApiError> {
    let name = wanted["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let namespace = wanted["metadata"]["namespace"].as_str().map(str::to_string);
    let ns = namespace.as_deref();
    let existing = match store.get(res, ns, &name).await {
        Ok(obj) => Some(obj),
        Err(e) if e.is_not_found() => None,
        Err(e) => return Err(e),
    };
    let Some(change) = bootstrap::reconcile(existing.as_ref(), &wanted) else {
        return Ok(());
    };
    let ctx = WriteContext::new(MANAGER);
    let written = match change.op {
        bootstrap::ReconcileOp::Create => store.create(res, ns, change.object, &ctx).await,
        bootstrap::ReconcileOp::Update => {
            store
                .update(res, ns, &name, change.object, Target::Main, &ctx)
                .await
        }
        bootstrap::ReconcileOp::Recreate => {
            // roleRef cannot change: the old binding goes, the new one is created.
            let _ = store
                .delete(res, ns, &name, &DeleteOptions::default(), None)
                .await;
            store.create(res, ns, change.object, &ctx).await
        }
    };
    written.map(|_| ())
}

async fn list(store: &Store, res: &ApiResource) -> Result<Vec<Value>, String> {
    Ok(store
        .list(res, None, &super::from_cache())
        .await
        .map_err(|e| format!("listing {}: {e}", res.def.plural))?
        .items)
}

/// A snapshot of the policy as the watch caches hold it.
async fn build(store: &Store, kinds: &Kinds) -> Result<RbacIndex, String> {
    let [roles, cluster_roles, role_bindings, cluster_role_bindings] = &kinds.0;
    let index = RbacIndex::from_json(
        &list(store, roles).await?,
        &list(store, cluster_roles).await?,
        &list(store, role_bindings).await?,
        &list(store, cluster_role_bindings).await?,
    );
    for issue in index.issues() {
        tracing::debug!(?issue, "RBAC object grants nothing");
    }
    Ok(index)
}

/// Writes the rules of each aggregated ClusterRole that differ from the union of the
/// roles it selects; whether it wrote any (then another pass may change more: `admin`
/// gathers `edit`, which gathers `view`).
async fn aggregate_all(store: &Store, kinds: &Kinds) -> bool {
    let cluster_roles = &kinds.0[1];
    let Ok(all) = list(store, cluster_roles).await else {
        return false;
    };
    let mut wrote = false;
    for role in &all {
        match rbac::aggregate(role, &all) {
            Ok(Some(rules)) => {
                let name = role["metadata"]["name"].as_str().unwrap_or_default();
                let updated = rbac::with_rules(role, &rules);
                let ctx = WriteContext::new("clusterrole-aggregation-controller");
                wrote = true;
                if let Err(e) = store
                    .update(cluster_roles, None, name, updated, Target::Main, &ctx)
                    .await
                {
                    if !e.is_conflict() {
                        tracing::warn!("aggregating clusterrole {name}: {e}");
                    }
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!("aggregating a clusterrole: {e}"),
        }
    }
    wrote
}

/// Rebuilds after every change of an RBAC object (changes arriving together make one
/// rebuild), and every [`RESYNC`].
async fn follow(store: Store, kinds: Kinds, authorizer: Arc<RbacAuthorizer>) {
    let changed = Arc::new(Notify::new());
    for res in &kinds.0 {
        crate::panics::spawn(
            "change notifier",
            super::notify_on_changes(store.clone(), res.clone(), changed.clone()),
        );
    }
    loop {
        let _ = tokio::time::timeout(RESYNC, changed.notified()).await;
        aggregate_all(&store, &kinds).await;
        match build(&store, &kinds).await {
            Ok(index) => authorizer.replace(index),
            Err(e) => tracing::warn!("RBAC: {e}"),
        }
    }
}
