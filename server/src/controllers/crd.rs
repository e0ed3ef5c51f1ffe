//! The CustomResourceDefinition controller (kube-apiserver's naming and establishing
//! controllers in one): every served version of a definition becomes an entry of the live
//! catalog, served like any compiled-in kind, and the definition's status says so
//! (`NamesAccepted`, `Established`, `acceptedNames`, `storedVersions`). A definition
//! whose names another kind holds is not served (`NamesAccepted=False`).
//!
//! A definition is turned into codegen's model and checked by codegen's own validator,
//! so a CRD and a definition file are held to the same rules. A deleted definition stops
//! being served at once; its objects are deleted, then its cleanup finalizer removed,
//! and it disappears (as kube-apiserver's finalizer controller does).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::api::meta::now_rfc3339;
use crate::api::options::{DeleteOptions, ListOptions, ReadAt};
use crate::api::selectors::{FieldSelector, LabelSelector};
use crate::apiextensions::{accepted_names, definitions, stored_versions, version_settings};
use crate::catalog::{ApiResource, Catalog, RegisterError};
use crate::registry::codec::{decode, served_one};
use crate::registry::store::{Store, Target, WatchStart, WriteContext};
use crate::registry::strategy::CRD_CLEANUP_FINALIZER;

/// How often the definitions waiting for something are looked at again (a name freed by
/// another definition, objects of a deleted definition whose own finalizers finished).
const RESYNC: Duration = Duration::from_secs(1);

/// The field manager of the status this controller writes.
const MANAGER: &str = "apiextensions-apiserver";

/// What one definition registered, and for which generation of its spec.
struct Installed {
    generation: i64,
    /// The resourceVersion last reconciled: a resync skips a served definition still at
    /// it.
    reconciled: String,
    /// Served as a definition being deleted (no creates).
    terminating: bool,
    /// `(group, version, plural)` of each registered entry.
    entries: Vec<(String, String, String)>,
    /// The status it should have.
    status: Value,
}

/// Runs the controller until the process ends: a pass over every definition at start
/// (and again whenever its watch ends), then each changed definition on its own as the
/// watch brings it (as an informer's event handler would), so a change costs the same
/// whatever the number of definitions. Every [`RESYNC`] the definitions still waiting
/// for something (a name taken, a deletion's objects, an unwritten status) are looked
/// at again, one by one: re-reading every definition each second kept ~20 KB per
/// definition of decoded JSON passing through the heap, which the allocator kept as
/// resident memory. `synced` is set after the first pass (readiness waits for it).
pub fn spawn(catalog: Arc<Catalog>, store: Store, synced: Arc<AtomicBool>) {
    crate::panics::spawn("CRD controller", async move {
        let mut served: BTreeMap<String, Installed> = BTreeMap::new();
        loop {
            let Some(crds) = catalog.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            else {
                // No CRD kind, nothing to wait for.
                synced.store(true, Ordering::Release);
                return;
            };
            let seen = match sync(&catalog, &store, &crds, &mut served).await {
                Ok(revision) => {
                    synced.store(true, Ordering::Release);
                    revision
                }
                Err(e) => {
                    tracing::warn!("customresourcedefinition controller: {e}");
                    None
                }
            };
            follow(&catalog, &store, crds, &mut served, seen).await;
        }
    });
}

/// Reconciles each definition that changes after revision `seen`, and every [`RESYNC`]
/// the pending ones ([`recheck`]), until the watch ends (then the caller starts over
/// with a whole pass).
async fn follow(
    catalog: &Catalog,
    store: &Store,
    crds: Arc<ApiResource>,
    served: &mut BTreeMap<String, Installed>,
    seen: Option<u64>,
) {
    let watch = match seen {
        Some(rev) => store
            .watch(
                crds.clone(),
                None,
                WatchStart::After(rev),
                LabelSelector::default(),
                FieldSelector::default(),
            )
            .await
            .ok(),
        None => None,
    };
    let Some(mut w) = watch else {
        tokio::time::sleep(RESYNC).await;
        return;
    };
    let mut resync = tokio::time::interval_at(tokio::time::Instant::now() + RESYNC, RESYNC);
    resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let event = tokio::select! {
            event = w.next() => event,
            _ = resync.tick() => {
                recheck(catalog, store, &crds, served).await;
                continue;
            }
        };
        let Some(Ok(event)) = event else {
            return;
        };
        let Ok(e) = event.object_event(&crds) else {
            return;
        };
        let result = match e.type_ {
            "DELETED" => {
                forget(catalog, served, &e.object);
                Ok(())
            }
            _ => reconcile(catalog, store, &crds, served, &e.object).await,
        };
        if let Err(why) = result {
            tracing::warn!("customresourcedefinition controller: {why}");
        }
    }
}

/// Looks again at the definitions that wait for something: not served (a name another
/// definition holds may have been freed), being deleted (their objects' own finalizers
/// may have finished), or whose status is not yet seen written. Each is read from the
/// watch cache; the served ones cost nothing.
async fn recheck(
    catalog: &Catalog,
    store: &Store,
    crds: &ApiResource,
    served: &mut BTreeMap<String, Installed>,
) {
    let pending: Vec<String> = served
        .iter()
        .filter(|(_, s)| s.entries.is_empty() || s.terminating || s.reconciled.is_empty())
        .map(|(name, _)| name.clone())
        .collect();
    for name in pending {
        let result = match store.get_at(crds, None, &name, ReadAt::Any).await {
            Ok(crd) => reconcile(catalog, store, crds, served, &crd).await,
            Err(e) if e.is_not_found() => {
                if let Some(s) = served.remove(&name) {
                    unregister(catalog, &s.entries);
                }
                Ok(())
            }
            Err(e) => Err(e.to_string()),
        };
        if let Err(why) = result {
            tracing::warn!("customresourcedefinition controller: {why}");
        }
    }
}

/// Stops serving what a definition that is gone registered.
fn forget(catalog: &Catalog, served: &mut BTreeMap<String, Installed>, crd: &Value) {
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    if let Some(s) = served.remove(name) {
        unregister(catalog, &s.entries);
    }
}

/// One pass over every definition; the revision of the definitions it saw. Each is
/// decoded when its turn comes, so the pass holds one decoded definition at a time.
async fn sync(
    catalog: &Catalog,
    store: &Store,
    crds: &ApiResource,
    served: &mut BTreeMap<String, Installed>,
) -> Result<Option<u64>, String> {
    let list = store
        .list_stored(crds, None, &from_cache())
        .await
        .map_err(|e| e.to_string())?;
    let prefix = Store::prefix(crds, None);
    let names: std::collections::BTreeSet<&str> = list
        .items
        .iter()
        .filter_map(|kv| kv.key.strip_prefix(prefix.as_str()))
        .collect();
    // Definitions that are gone stop being served.
    let gone: Vec<String> = served
        .keys()
        .filter(|n| !names.contains(n.as_str()))
        .cloned()
        .collect();
    for name in gone {
        if let Some(s) = served.remove(&name) {
            unregister(catalog, &s.entries);
        }
    }
    for kv in &list.items {
        let crd = served_one(crds, decode(crds, kv).map_err(|e| e.to_string())?)
            .await
            .map_err(|e| e.to_string())?;
        reconcile(catalog, store, crds, served, &crd).await?;
    }
    Ok(list.resource_version.parse().ok())
}

/// Brings one definition's entries and status to what it says.
async fn reconcile(
    catalog: &Catalog,
    store: &Store,
    crds: &ApiResource,
    served: &mut BTreeMap<String, Installed>,
    crd: &Value,
) -> Result<(), String> {
    let name = crd["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let generation = crd["metadata"]["generation"].as_i64().unwrap_or(0);
    let terminating = !crd["metadata"]["deletionTimestamp"].is_null();
    let rv = crd["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default();
    let current = served.get(&name);
    // Unchanged and served: nothing to do. One not served (a name taken) is looked at on
    // every pass, as the name may have been freed.
    if !terminating && current.is_some_and(|s| s.reconciled == rv && !s.entries.is_empty()) {
        return Ok(());
    }
    let stale = |s: &Installed| {
        s.generation != generation || s.terminating != terminating || s.entries.is_empty()
    };
    if current.is_none_or(stale) {
        if let Some(old) = served.remove(&name) {
            unregister(catalog, &old.entries);
        }
        let (entries, status) = serve(catalog, crd, terminating);
        served.insert(
            name.clone(),
            Installed {
                generation,
                reconciled: String::new(),
                terminating,
                entries,
                status,
            },
        );
    }
    if terminating {
        return clean_up(store, crds, crd).await;
    }
    let Some(installed) = served.get_mut(&name) else {
        return Ok(());
    };
    let want = &installed.status;
    if same_status(&crd["status"], want) {
        installed.reconciled = rv.to_string();
    } else {
        let mut updated = crd.clone();
        updated["status"] = with_transition_times(&crd["status"], want);
        // A conflict (someone wrote meanwhile) is retried when that write arrives.
        let ctx = WriteContext::new(MANAGER);
        if let Err(e) = store
            .update(crds, None, &name, updated, Target::Status, &ctx)
            .await
        {
            if !e.is_conflict() {
                return Err(e.to_string());
            }
        }
    }
    Ok(())
}

/// For a deleted definition: deletes its objects, and once none is left removes the
/// cleanup finalizer (which lets the definition go).
async fn clean_up(store: &Store, crds: &ApiResource, crd: &Value) -> Result<(), String> {
    let finalizers = crd["metadata"]["finalizers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !finalizers.iter().any(|f| f == CRD_CLEANUP_FINALIZER) {
        return Ok(());
    }
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    let terminating = crd["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Terminating" && c["status"] == "True");
    let crd = if terminating {
        crd.clone()
    } else {
        // Says so first, as kube-apiserver's finalizer controller does.
        let mut updated = crd.clone();
        let mut conditions: Vec<Value> = crd["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        conditions.retain(|c| c["type"] != "Terminating");
        conditions.push(json!({
            "type": "Terminating",
            "status": "True",
            "reason": "InstanceDeletionInProgress",
            "message": "CustomResource deletion is in progress",
            "lastTransitionTime": now_rfc3339(),
        }));
        updated["status"]["conditions"] = json!(conditions);
        let ctx = WriteContext::new(MANAGER);
        match store
            .update(crds, None, name, updated, Target::Status, &ctx)
            .await
        {
            Ok(written) => written,
            // Someone wrote meanwhile: the next pass sees it.
            Err(e) if e.is_conflict() || e.is_not_found() => return Ok(()),
            Err(e) => return Err(e.to_string()),
        }
    };
    let crd = &crd;
    // Any version's entry addresses the objects: keys do not name the version.
    if let Some(def) = definitions(crd).ok().and_then(|d| d.into_iter().next()) {
        let res = ApiResource::new(def)?;
        let objects = store
            .list(&res, None, &from_cache())
            .await
            .map_err(|e| e.to_string())?;
        let pending = objects.items.len();
        for obj in &objects.items {
            let ns = obj["metadata"]["namespace"].as_str();
            let name = obj["metadata"]["name"].as_str().unwrap_or_default();
            match store
                .delete(&res, ns, name, &DeleteOptions::default(), None)
                .await
            {
                Ok(_) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        if pending > 0 {
            // Objects with finalizers of their own are waited for on later passes.
            return Ok(());
        }
    }
    let mut done = crd.clone();
    done["metadata"]["finalizers"] = json!(finalizers
        .into_iter()
        .filter(|f| f != CRD_CLEANUP_FINALIZER)
        .collect::<Vec<_>>());
    match store
        .update(
            crds,
            None,
            name,
            done,
            Target::Main,
            &WriteContext::new(MANAGER),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.is_conflict() || e.is_not_found() => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// Lists as informers read: from the watch cache (`resourceVersion=0`, never older than
/// this server's own writes), so a resync costs storage nothing; a stale view is put
/// right on a later pass.
fn from_cache() -> ListOptions {
    ListOptions {
        at: ReadAt::Any,
        ..ListOptions::default()
    }
}

fn unregister(catalog: &Catalog, entries: &[(String, String, String)]) {
    for (g, v, p) in entries {
        catalog.unregister(g, v, p);
    }
}

/// Registers the served versions of `crd`; what it registered and the status to write.
fn serve(
    catalog: &Catalog,
    crd: &Value,
    terminating: bool,
) -> (Vec<(String, String, String)>, Value) {
    let names = accepted_names(&crd["spec"]["names"]);
    let stored = stored_versions(crd);
    let status = |accepted: (&str, &str, String), established: (&str, &str, String)| {
        let mut s = json!({
            "conditions": [
                { "type": "NamesAccepted", "status": accepted.0, "reason": accepted.1, "message": accepted.2 },
                { "type": "Established", "status": established.0, "reason": established.1, "message": established.2 },
            ],
            "acceptedNames": if accepted.0 == "True" { names.clone() } else { json!({ "plural": "", "kind": "" }) },
            "storedVersions": stored,
        });
        if let Some(g) = crd["metadata"]["generation"].as_i64() {
            s["observedGeneration"] = json!(g);
        }
        s
    };
    let defs = match definitions(crd) {
        Ok(defs) => defs,
        Err(causes) => {
            let why = causes
                .iter()
                .map(|c| format!("{}: {}", c.field, c.message))
                .collect::<Vec<_>>()
                .join("; ");
            let s = status(
                ("True", "NoConflicts", "no conflicts found".into()),
                (
                    "False",
                    "Installing",
                    format!("the definition cannot be served: {why}"),
                ),
            );
            return (Vec::new(), s);
        }
    };
    let mut entries = Vec::new();
    for def in defs {
        let key = (def.group.clone(), def.version.clone(), def.plural.clone());
        let settings = version_settings(crd, &def, terminating);
        let entry = ApiResource::new(def).map(|mut e| {
            e.crd = Some(settings);
            e
        });
        match entry
            .map_err(RegisterError::Invalid)
            .and_then(|e| catalog.register_resource(e))
        {
            Ok(_) => entries.push(key),
            Err(RegisterError::Conflict(why)) => {
                unregister(catalog, &entries);
                let s = status(
                    ("False", "NameConflict", why),
                    ("False", "NotAccepted", "not all names are accepted".into()),
                );
                return (Vec::new(), s);
            }
            Err(RegisterError::Invalid(why)) => {
                unregister(catalog, &entries);
                let s = status(
                    ("True", "NoConflicts", "no conflicts found".into()),
                    ("False", "Installing", why),
                );
                return (Vec::new(), s);
            }
        }
    }
    let s = status(
        ("True", "NoConflicts", "no conflicts found".into()),
        (
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted".into(),
        ),
    );
    (entries, s)
}

/// Whether `have` already says what `want` does (transition times aside).
fn same_status(have: &Value, want: &Value) -> bool {
    let strip = |s: &Value| {
        let mut s = s.clone();
        if let Some(conds) = s["conditions"].as_array_mut() {
            for c in conds {
                if let Some(c) = c.as_object_mut() {
                    c.remove("lastTransitionTime");
                }
            }
        }
        s
    };
    strip(have) == strip(want)
}

/// `want` with each condition's `lastTransitionTime`: kept where its status is
/// unchanged, now where it changed.
fn with_transition_times(have: &Value, want: &Value) -> Value {
    let mut out = want.clone();
    let now = now_rfc3339();
    if let Some(conds) = out["conditions"].as_array_mut() {
        for c in conds {
            let before = have["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|h| h["type"] == c["type"] && h["status"] == c["status"]);
            c["lastTransitionTime"] = before
                .map(|h| h["lastTransitionTime"].clone())
                .filter(|t| t.is_string())
                .unwrap_or_else(|| json!(now));
        }
    }
    out
}
