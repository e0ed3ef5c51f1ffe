//! Services on several instances sharing one etcd: cluster IPs and node ports handed
//! out through both never collide (each is claimed in storage: an `IPAddress` object
//! per cluster IP, as upstream's allocator writes them), a delete releases them, and a
//! missing claim is repaired.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use apiserver_tests::TestServer;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{json, Value};

const DEADLINE: Duration = Duration::from_secs(30);

/// Small ranges, so that concurrent choices through two instances meet often: /27 has
/// 29 cluster IPs to hand out besides the `kubernetes` Service's, and 40 node ports.
const SMALL_RANGES: [&str; 2] = [
    "--service-cluster-ip-range=10.0.0.0/27",
    "--service-node-port-range=30000-30039",
];

fn service(name: &str, kind: &str) -> Service {
    serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": { "type": kind, "ports": [{ "port": 80 }] },
    }))
    .unwrap()
}

fn cluster_ip(svc: &Service) -> Ipv4Addr {
    let spec = svc.spec.as_ref().expect("a spec");
    spec.cluster_ip
        .as_deref()
        .expect("a cluster IP")
        .parse()
        .expect("an IPv4 address")
}

fn node_port(svc: &Service) -> Option<i32> {
    svc.spec.as_ref()?.ports.as_ref()?[0].node_port
}

fn json_of(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}

/// The `IPAddress` objects as kubectl lists them, by name.
fn ip_addresses(s: &TestServer) -> Vec<Value> {
    json_of(&s.kubectl_ok(&["get", "ipaddresses", "-o", "json"]))["items"]
        .as_array()
        .expect("a list")
        .clone()
}

/// Waits (up to [`DEADLINE`]) until `check` holds.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test]
async fn concurrent_creates_through_two_instances_never_share_an_address() {
    let a = TestServer::start_on_etcd_with_flags(&SMALL_RANGES);
    let b = a.start_beside(&SMALL_RANGES);
    let (ca, cb) = (a.client().await, b.client().await);

    // 24 Services at once, alternately through A and B, half of them NodePort.
    let creates = (0..24).map(|i| {
        let client = if i % 2 == 0 { ca.clone() } else { cb.clone() };
        async move {
            let services: Api<Service> = Api::namespaced(client, "default");
            let kind = if i % 4 < 2 { "NodePort" } else { "ClusterIP" };
            services
                .create(&PostParams::default(), &service(&format!("s{i}"), kind))
                .await
                .unwrap_or_else(|e| panic!("creating s{i}: {e}"))
        }
    });
    let created = futures_util::future::join_all(creates).await;
    let ips: Vec<Ipv4Addr> = created.iter().map(cluster_ip).collect();
    let distinct: BTreeSet<&Ipv4Addr> = ips.iter().collect();
    assert_eq!(
        distinct.len(),
        ips.len(),
        "a cluster IP handed out twice: {ips:?}"
    );
    assert!(
        !distinct.contains(&Ipv4Addr::new(10, 0, 0, 1)),
        "the kubernetes Service's address handed out: {ips:?}"
    );
    let ports: Vec<i32> = created.iter().filter_map(node_port).collect();
    assert_eq!(ports.len(), 12, "every NodePort Service has a node port");
    let distinct_ports: BTreeSet<&i32> = ports.iter().collect();
    assert_eq!(
        distinct_ports.len(),
        ports.len(),
        "a node port handed out twice: {ports:?}"
    );

    // Each address is an IPAddress object naming its Service, as upstream writes them;
    // either instance lists them.
    for s in [&a, &b] {
        let listed = ip_addresses(s);
        for (svc, ip) in created.iter().zip(&ips) {
            let name = svc.metadata.name.as_deref().unwrap();
            let obj = listed
                .iter()
                .find(|o| o["metadata"]["name"] == ip.to_string())
                .unwrap_or_else(|| panic!("no IPAddress {ip} for {name}"));
            assert_eq!(
                obj["spec"]["parentRef"],
                json!({ "resource": "services", "namespace": "default", "name": name })
            );
            assert_eq!(
                obj["metadata"]["labels"]["ipaddress.kubernetes.io/managed-by"],
                "ipallocator.k8s.io"
            );
        }
        assert!(
            listed.iter().any(|o| o["metadata"]["name"] == "10.0.0.1"
                && o["spec"]["parentRef"]["name"] == "kubernetes"),
            "the kubernetes Service's address is claimed"
        );
    }
    let table = a.kubectl_ok(&["get", "ipaddresses"]);
    assert!(table.contains(&ips[0].to_string()), "{table}");

    // A taken address asked for through the other instance is refused as upstream
    // words it.
    let taken = b.kubectl_err(&[
        "create",
        "service",
        "clusterip",
        "copy",
        "--tcp=80",
        &format!("--clusterip={}", ips[0]),
    ]);
    assert!(
        taken.contains("provided IP is already allocated"),
        "{taken}"
    );

    // Deleting a Service through A releases its address and node port: B can hand
    // them out again at once.
    let (freed_ip, freed_port) = (ips[0], node_port(&created[0]).expect("s0 is NodePort"));
    let on_a: Api<Service> = Api::namespaced(ca.clone(), "default");
    on_a.delete("s0", &DeleteParams::default()).await.unwrap();
    let gone = ip_addresses(&b);
    assert!(
        !gone
            .iter()
            .any(|o| o["metadata"]["name"] == freed_ip.to_string()),
        "the IPAddress of a deleted Service stays"
    );
    let reuse = json!({
        "metadata": { "name": "reuse" },
        "spec": { "type": "NodePort", "clusterIP": freed_ip.to_string(),
                  "ports": [{ "port": 80, "nodePort": freed_port }] },
    });
    let on_b: Api<Service> = Api::namespaced(cb.clone(), "default");
    let reused = on_b
        .create(
            &PostParams::default(),
            &serde_json::from_value(reuse).unwrap(),
        )
        .await
        .expect("the released address and node port can be taken again");
    assert_eq!(cluster_ip(&reused), freed_ip);
    assert_eq!(node_port(&reused), Some(freed_port));

    // A type change releases what the new type does not use: s1's node port.
    let s1_port = node_port(&created[1]).expect("s1 is NodePort");
    a.kubectl_ok(&[
        "patch",
        "service",
        "s1",
        "--type=merge",
        "-p",
        r#"{"spec":{"type":"ClusterIP"}}"#,
    ]);
    let port_reuse = json!({
        "metadata": { "name": "port-reuse" },
        "spec": { "type": "NodePort", "ports": [{ "port": 80, "nodePort": s1_port }] },
    });
    on_b.create(
        &PostParams::default(),
        &serde_json::from_value(port_reuse).unwrap(),
    )
    .await
    .expect("the node port given up by a type change can be taken again");
}

#[tokio::test]
async fn a_missing_claim_is_repaired_and_its_address_stays_taken_meanwhile() {
    let a = TestServer::start_on_etcd();
    a.kubectl_ok(&["create", "service", "clusterip", "web", "--tcp=80"]);
    let ip = a.kubectl_ok(&["get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}"]);
    // As a Service stored before claims existed: its IPAddress is gone.
    a.kubectl_ok(&["delete", "ipaddress", &ip]);

    // The stored Service still holds the address: it is not handed out again.
    let taken = a.kubectl_err(&[
        "create",
        "service",
        "clusterip",
        "copy",
        "--tcp=80",
        &format!("--clusterip={ip}"),
    ]);
    assert!(
        taken.contains("provided IP is already allocated"),
        "{taken}"
    );

    // An instance's repair pass at start-up claims it again for its Service.
    let b = a.start_beside(&[]);
    eventually("the IPAddress of web is back", || {
        let out = b.kubectl(&["get", "ipaddress", &ip, "-o", "json"]);
        out.status.success()
            && json_of(&String::from_utf8_lossy(&out.stdout))["spec"]["parentRef"]["name"] == "web"
    });
}

/// The ports the `kubernetes` Service's Endpoints list, each with its addresses.
fn endpoint_ports(s: &TestServer) -> Vec<(u64, Value)> {
    let endpoints = json_of(&s.kubectl_ok(&["get", "endpoints", "kubernetes", "-o", "json"]));
    endpoints["subsets"]
        .as_array()
        .expect("subsets")
        .iter()
        .map(|subset| {
            (
                subset["ports"][0]["port"].as_u64().expect("a port"),
                subset["addresses"].clone(),
            )
        })
        .collect()
}

/// The `kubernetes` Service's EndpointSlices, by name, with their port.
fn slice_ports(s: &TestServer) -> Vec<(String, u64)> {
    let slices = json_of(&s.kubectl_ok(&[
        "get",
        "endpointslices.discovery.k8s.io",
        "-l",
        "kubernetes.io/service-name=kubernetes",
        "-o",
        "json",
    ]));
    slices["items"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|slice| {
            (
                slice["metadata"]["name"]
                    .as_str()
                    .expect("a name")
                    .to_string(),
                slice["ports"][0]["port"].as_u64().expect("a port"),
            )
        })
        .collect()
}

#[test]
fn the_kubernetes_endpoints_list_every_live_instance_until_it_stops() {
    let mut a = TestServer::start_on_etcd();
    let b = a.start_beside(&[]);
    let (pa, pb) = (a.port() as u64, b.port() as u64);
    let localhost = json!([{ "ip": "127.0.0.1" }]);

    // Both instances serve on 127.0.0.1, on ports of their own: a subset per port.
    let mut both = vec![(pa, localhost.clone()), (pb, localhost.clone())];
    both.sort_by_key(|(p, _)| *p);
    eventually("both instances are in the endpoints", || {
        endpoint_ports(&a) == both
    });
    assert_eq!(endpoint_ports(&b), both);
    let (low, high) = (pa.min(pb), pa.max(pb));
    assert_eq!(
        slice_ports(&b),
        [
            ("kubernetes".to_string(), low),
            (format!("kubernetes-{high}"), high)
        ]
    );
    // Each instance's endpoint Lease, as kubectl shows it.
    let leases = b.kubectl_ok(&["get", "lease", "-n", "kube-system"]);
    for port in [pa, pb] {
        assert!(
            leases.contains(&format!("apiserver-endpoint-127.0.0.1-{port}")),
            "{leases}"
        );
    }

    // A stops gracefully: it takes itself out before it exits.
    a.signal("TERM");
    let exit = a.wait_for_exit(DEADLINE).expect("A exited after SIGTERM");
    assert!(exit.success(), "A exited with {exit}");
    // (At once, unless B's pass read A's Lease just before it went: then B's next pass.)
    eventually("A is out of the endpoints", || {
        endpoint_ports(&b) == [(pb, localhost.clone())]
            && slice_ports(&b) == [("kubernetes".to_string(), pb)]
    });
}

#[test]
fn a_write_refused_after_its_address_was_claimed_gives_the_address_back() {
    let s = TestServer::start();
    // Claimed, then refused by validation (two ports need names).
    let refused = json!({
        "apiVersion": "v1", "kind": "Service", "metadata": { "name": "refused" },
        "spec": { "type": "NodePort", "clusterIP": "10.0.0.50",
                  "ports": [{ "port": 80, "nodePort": 30050 }, { "port": 81 }] },
    });
    let file = s.write_file("refused.json", &refused.to_string());
    let err = s.kubectl_err(&["create", "-f", file.to_str().unwrap()]);
    assert!(err.contains("spec.ports[1].name: Required value"), "{err}");
    let claims = s.kubectl_ok(&["get", "ipaddresses", "-o", "name"]);
    assert!(!claims.contains("10.0.0.50"), "{claims}");

    // Both are free at once for the next Service.
    let taken = json!({
        "apiVersion": "v1", "kind": "Service", "metadata": { "name": "taken" },
        "spec": { "type": "NodePort", "clusterIP": "10.0.0.50",
                  "ports": [{ "port": 80, "nodePort": 30050 }] },
    });
    let file = s.write_file("taken.json", &taken.to_string());
    s.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
    let parent = s.kubectl_ok(&[
        "get",
        "ipaddress",
        "10.0.0.50",
        "-o",
        "jsonpath={.spec.parentRef.name}",
    ]);
    assert_eq!(parent, "taken");
}
