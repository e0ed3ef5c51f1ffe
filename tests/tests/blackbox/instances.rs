//! Several instances on one etcd, as kube-apiserver runs behind a load balancer: a write
//! through one is seen by watches, consistent lists and CRD serving of the other; of
//! kube-controller-manager's controllers, only the instance holding the
//! `kube-system/kube-controller-manager` Lease runs them, and the other takes over when
//! it stops (at once after SIGTERM, which releases the Lease; after the lease duration
//! after SIGKILL).

use std::time::{Duration, Instant};

use apiserver_tests::objects::{install_crd, CRONTABS_CRD};
use apiserver_tests::tables::{header, row};
use apiserver_tests::TestServer;
use futures_util::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(30);

/// Leader election flags short enough for a test: takeover after a kill within ~2 s.
const SHORT_LEASE: [&str; 3] = [
    "--leader-elect-lease-duration=2s",
    "--leader-elect-renew-deadline=1500ms",
    "--leader-elect-retry-period=250ms",
];

/// A lease duration a SIGTERM handover must beat by far.
const LONG_LEASE: [&str; 3] = [
    "--leader-elect-lease-duration=20s",
    "--leader-elect-renew-deadline=15s",
    "--leader-elect-retry-period=250ms",
];

/// Waits (up to [`DEADLINE`]) until `check` gives a value.
async fn eventually<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The holder identity an instance campaigns as, from its log (waited for: the
/// elector starts in the background).
async fn identity(s: &TestServer) -> String {
    let line = eventually("the instance campaigns for the Lease", async || {
        let log = s.stderr();
        log.lines()
            .find(|l| l.contains("attempting to acquire leader lease"))
            .map(str::to_string)
    })
    .await;
    let start = line.find("identity=\"").expect("an identity field") + "identity=\"".len();
    let id = &line[start..];
    id[..id.find('"').expect("a quoted identity")].to_string()
}

/// The controller manager Lease's holder, as stored.
async fn lease_holder(c: &kube::Client) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(c.clone(), "kube-system");
    let lease = leases.get_opt("kube-controller-manager").await.ok()??;
    lease.spec?.holder_identity.filter(|h| !h.is_empty())
}

/// The Lease's holder once it is no longer `previous`.
async fn holder_after(c: &kube::Client, previous: &str) -> String {
    eventually("another instance holds the Lease", async || {
        lease_holder(c).await.filter(|h| h != previous)
    })
    .await
}

/// The CA certificate an instance serves with, which its root CA publisher publishes.
fn ca_of(s: &TestServer) -> String {
    std::fs::read_to_string(s.data_dir().join("certs/ca.crt")).expect("reading the server's CA")
}

/// The CA in `namespace`'s published `kube-root-ca.crt`, once there is one.
async fn published_ca(c: &kube::Client, namespace: &str) -> Option<String> {
    let maps: Api<ConfigMap> = Api::namespaced(c.clone(), namespace);
    let map = maps.get_opt("kube-root-ca.crt").await.ok()??;
    map.data?.get("ca.crt").cloned()
}

async fn create_namespace(c: &kube::Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(c.clone());
    let ns = serde_json::from_value(json!({ "metadata": { "name": name } })).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

/// Waits until `namespace` has its `default` ServiceAccount.
async fn default_service_account(c: &kube::Client, namespace: &str) {
    let accounts: Api<ServiceAccount> = Api::namespaced(c.clone(), namespace);
    eventually(
        &format!("{namespace} has its default ServiceAccount"),
        async || accounts.get_opt("default").await.ok()?.map(|_| ()),
    )
    .await;
}

#[tokio::test]
async fn writes_through_one_instance_reach_the_others_watches_lists_and_crds() {
    let a = TestServer::start_on_etcd_with_flags(&SHORT_LEASE);
    let b = a.start_beside(&SHORT_LEASE);
    let (ca, cb) = (a.client().await, b.client().await);
    let on_a: Api<ConfigMap> = Api::namespaced(ca.clone(), "default");
    let on_b: Api<ConfigMap> = Api::namespaced(cb.clone(), "default");

    // A watch on B sees a create through A.
    let mut watch = on_b
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    let created = serde_json::from_value(json!({ "metadata": { "name": "from-a" } })).unwrap();
    on_a.create(&PostParams::default(), &created).await.unwrap();
    let seen = tokio::time::timeout(DEADLINE, async {
        while let Some(event) = watch.next().await {
            if let WatchEvent::Added(cm) = event.unwrap() {
                if cm.metadata.name.as_deref() == Some("from-a") {
                    return cm;
                }
            }
        }
        panic!("B's watch ended without the create through A");
    })
    .await
    .expect("B's watch saw the create through A");
    assert_eq!(seen.metadata.name.as_deref(), Some("from-a"));

    // A consistent list on B right after each write through A contains it.
    for i in 0..5 {
        let name = format!("listed-{i}");
        let cm = serde_json::from_value(json!({ "metadata": { "name": name } })).unwrap();
        on_a.create(&PostParams::default(), &cm).await.unwrap();
        let listed = on_b.list(&ListParams::default()).await.unwrap();
        assert!(
            listed
                .items
                .iter()
                .any(|c| c.metadata.name == Some(name.clone())),
            "B's consistent list after the write of {name} through A lacks it"
        );
    }

    // A CRD created through A is served by B: B creates a CronTab that A reads.
    install_crd(
        &a,
        &a.write_file("crd.yaml", CRONTABS_CRD),
        "crontabs.stable.example.com",
    );
    let crontab = a.write_file(
        "crontab.yaml",
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: nightly}\nspec: {cronSpec: '0 3 * * *', replicas: 1}\n",
    );
    eventually("B serves the CRD created through A", async || {
        b.kubectl(&["create", "-f", crontab.to_str().unwrap()])
            .status
            .success()
            .then_some(())
    })
    .await;
    let schedule = a.kubectl_ok(&[
        "get",
        "crontab",
        "nightly",
        "-o",
        "jsonpath={.spec.cronSpec}",
    ]);
    assert_eq!(schedule, "0 3 * * *");
}

#[tokio::test]
async fn only_the_lease_holder_runs_the_controllers_and_sigterm_hands_them_over_at_once() {
    let mut a = TestServer::start_on_etcd_with_flags(&LONG_LEASE);
    let b = a.start_beside(&LONG_LEASE);
    let (ida, idb) = (identity(&a).await, identity(&b).await);
    assert_ne!(ida, idb);
    let cb = b.client().await;

    // A started first: it holds the Lease, and only its controllers publish (each
    // instance has a CA of its own, so the published one names the publisher).
    let holder = eventually("A holds the Lease", async || lease_holder(&cb).await).await;
    assert_eq!(holder, ida);
    // As kubectl shows it on a cluster.
    let table = b.kubectl_ok(&["get", "lease", "-n", "kube-system"]);
    assert_eq!(header(&table), ["NAME", "HOLDER", "AGE"]);
    assert_eq!(row(&table, "kube-controller-manager")[1], ida);
    create_namespace(&cb, "first").await;
    default_service_account(&cb, "first").await;
    let published = eventually("first has kube-root-ca.crt", async || {
        published_ca(&cb, "first").await
    })
    .await;
    assert_eq!(published.trim(), ca_of(&a).trim(), "not the leader's CA");

    // SIGTERM: A releases the Lease and B takes it at its next try, far within the
    // lease duration (20 s).
    let stopped = Instant::now();
    a.signal("TERM");
    let holder = holder_after(&cb, &ida).await;
    let handover = stopped.elapsed();
    assert_eq!(holder, idb);
    assert!(
        handover < Duration::from_secs(10),
        "handover took {handover:?}"
    );
    let exit = a.wait_for_exit(DEADLINE).expect("A exited after SIGTERM");
    assert!(exit.success(), "A exited with {exit}");

    // B's controllers now run: its root CA publisher puts its own CA right, and a new
    // namespace gets its ServiceAccount.
    let cab = ca_of(&b);
    eventually("B republishes its CA in first", async || {
        published_ca(&cb, "first")
            .await
            .filter(|p| p.trim() == cab.trim())
    })
    .await;
    create_namespace(&cb, "second").await;
    default_service_account(&cb, "second").await;
}

#[tokio::test]
async fn after_sigkill_the_other_instance_takes_over_once_the_lease_expires() {
    let mut a = TestServer::start_on_etcd_with_flags(&SHORT_LEASE);
    let b = a.start_beside(&SHORT_LEASE);
    let (ida, idb) = (identity(&a).await, identity(&b).await);
    let cb = b.client().await;
    let holder = eventually("A holds the Lease", async || lease_holder(&cb).await).await;
    assert_eq!(holder, ida);

    // A killed cannot release: B waits until the Lease has gone unrenewed for its
    // duration (2 s), then takes it.
    let killed = Instant::now();
    a.signal("KILL");
    a.wait_for_exit(DEADLINE).expect("A exited after SIGKILL");
    let holder = holder_after(&cb, &ida).await;
    let takeover = killed.elapsed();
    assert_eq!(holder, idb);
    assert!(
        takeover >= Duration::from_secs(1),
        "B took a lease renewed {takeover:?} ago"
    );
    create_namespace(&cb, "after-kill").await;
    default_service_account(&cb, "after-kill").await;
}
