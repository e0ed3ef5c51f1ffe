//! Services as kubectl sees them on a real cluster: `kubectl create service`,
//! `kubectl expose`, `kubectl get svc`; cluster IPs and node ports allocated from the
//! ranges, distinct under concurrent creates and across a restart; the `kubernetes`
//! Service and its endpoints; a taken or out-of-range cluster IP and a changed one
//! refused as upstream words it.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use apiserver_tests::tables::{header, row};
use apiserver_tests::TestServer;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, PostParams};
use serde_json::{json, Value};

fn json_of(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}

fn get_json(s: &TestServer, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    json_of(&s.kubectl_ok(&all))
}

/// The cluster IP of Service `name` in `default`, checked to be inside 10.0.0.0/24 and
/// to be the only entry of `clusterIPs`.
fn cluster_ip(svc: &Value) -> Ipv4Addr {
    let ip: Ipv4Addr = svc["spec"]["clusterIP"]
        .as_str()
        .unwrap_or_else(|| panic!("no clusterIP: {svc}"))
        .parse()
        .expect("an IPv4 address");
    assert_eq!(svc["spec"]["clusterIPs"], json!([ip.to_string()]), "{svc}");
    ip
}

fn service_manifest(name: &str, cluster_ip: &str) -> String {
    json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
        "spec": {"clusterIP": cluster_ip, "ports": [{"port": 80}]}
    })
    .to_string()
}

#[test]
fn kubectl_creates_exposes_and_lists_services_as_on_a_cluster() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "service", "clusterip", "s1", "--tcp=80:8080"]);
    s.kubectl_ok(&["create", "service", "nodeport", "n1", "--tcp=80:8080"]);
    s.kubectl_ok(&["create", "deployment", "web", "--image=nginx"]);
    s.kubectl_ok(&["expose", "deployment", "web", "--port=80"]);

    // Defaults as kube-apiserver gives them.
    let s1 = get_json(&s, &["svc", "s1"]);
    assert_eq!(s1["spec"]["type"], "ClusterIP");
    assert_eq!(s1["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(s1["spec"]["ipFamilyPolicy"], "SingleStack");
    assert_eq!(s1["spec"]["sessionAffinity"], "None");
    assert_eq!(s1["spec"]["internalTrafficPolicy"], "Cluster");
    assert_eq!(
        s1["spec"]["ports"],
        json!([{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}])
    );
    assert!(s1["spec"].get("externalTrafficPolicy").is_none(), "{s1}");
    let n1 = get_json(&s, &["svc", "n1"]);
    assert_eq!(n1["spec"]["type"], "NodePort");
    assert_eq!(n1["spec"]["externalTrafficPolicy"], "Cluster");
    let node_port = n1["spec"]["ports"][0]["nodePort"]
        .as_u64()
        .expect("a node port");
    assert!((30000..=32767).contains(&node_port), "{node_port}");
    let web = get_json(&s, &["svc", "web"]);
    assert_eq!(web["spec"]["selector"], json!({"app": "web"}));
    assert_eq!(web["spec"]["ports"][0]["port"], 80);
    assert_eq!(web["spec"]["ports"][0]["targetPort"], 80);
    assert_eq!(web["spec"]["ports"][0]["protocol"], "TCP");

    // The kubernetes Service, its Endpoints and EndpointSlice point at this server.
    let kubernetes = get_json(&s, &["svc", "kubernetes"]);
    assert_eq!(cluster_ip(&kubernetes), Ipv4Addr::new(10, 0, 0, 1));
    assert_eq!(
        kubernetes["spec"]["ports"],
        json!([{"name": "https", "port": 443, "protocol": "TCP", "targetPort": s.port()}])
    );
    let endpoints = get_json(&s, &["endpoints", "kubernetes"]);
    assert_eq!(
        endpoints["subsets"],
        json!([{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": s.port(), "protocol": "TCP"}]}])
    );
    let slice = get_json(&s, &["endpointslices.discovery.k8s.io", "kubernetes"]);
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(slice["endpoints"][0]["addresses"], json!(["127.0.0.1"]));
    assert_eq!(slice["ports"][0]["port"], s.port());
    assert_eq!(
        slice["metadata"]["labels"]["kubernetes.io/service-name"],
        "kubernetes"
    );

    // Allocated IPs are inside the range and distinct.
    let ips: Vec<Ipv4Addr> = [&s1, &n1, &web, &kubernetes]
        .iter()
        .map(|svc| cluster_ip(svc))
        .collect();
    for ip in &ips {
        assert_eq!(ip.octets()[..3], [10, 0, 0], "{ip}");
        assert!(!matches!(ip.octets()[3], 0 | 255), "{ip}");
    }
    assert_eq!(
        ips.iter().collect::<BTreeSet<_>>().len(),
        ips.len(),
        "{ips:?}"
    );

    // kubectl get svc: upstream's columns.
    let table = s.kubectl_ok(&["get", "svc"]);
    assert_eq!(
        header(&table),
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ]
    );
    assert_eq!(
        row(&table, "s1")[..5],
        ["s1", "ClusterIP", &ips[0].to_string(), "<none>", "80/TCP"]
    );
    let n1_ports = format!("80:{node_port}/TCP");
    assert_eq!(
        row(&table, "n1")[..5],
        ["n1", "NodePort", &ips[1].to_string(), "<none>", &n1_ports]
    );
    assert_eq!(
        row(&table, "kubernetes")[..5],
        ["kubernetes", "ClusterIP", "10.0.0.1", "<none>", "443/TCP"]
    );
    let wide = s.kubectl_ok(&["get", "svc", "-o", "wide"]);
    assert_eq!(
        header(&wide),
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE",
            "SELECTOR"
        ]
    );
    assert_eq!(row(&wide, "web")[6], "app=web");
    assert_eq!(row(&wide, "s1")[6], "app=s1");

    // A taken IP, one outside the range, a changed one: 422 in upstream's words.
    let taken = ips[0].to_string();
    let out = s.kubectl_with_stdin(
        &["create", "-f", "-"],
        Some(&service_manifest("dup", &taken)),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "spec.clusterIPs: Invalid value: []string{{\"{taken}\"}}: failed to allocate IP {taken}: provided IP is already allocated"
        )),
        "{stderr}"
    );
    let out = s.kubectl_with_stdin(
        &["create", "-f", "-"],
        Some(&service_manifest("far", "10.1.0.5")),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("failed to allocate IP 10.1.0.5: the provided IP (10.1.0.5) is not in the valid range. The range of valid IPs is 10.0.0.0/24"),
        "{stderr}"
    );
    let free = (2..255u8)
        .map(|i| Ipv4Addr::new(10, 0, 0, i))
        .find(|ip| !ips.contains(ip))
        .expect("a free address");
    let err = s.kubectl_err(&[
        "patch",
        "svc",
        "s1",
        "-p",
        &json!({"spec": {"clusterIP": free.to_string()}}).to_string(),
    ]);
    assert!(
        err.contains(&format!(
            "spec.clusterIP: Invalid value: \"{free}\": field is immutable"
        )),
        "{err}"
    );
    // Other updates keep the address; a delete frees it for a new Service.
    s.kubectl_ok(&["label", "svc", "s1", "tier=front"]);
    assert_eq!(cluster_ip(&get_json(&s, &["svc", "s1"])), ips[0]);
    s.kubectl_ok(&["delete", "svc", "s1"]);
    let out = s.kubectl_with_stdin(
        &["create", "-f", "-"],
        Some(&service_manifest("again", &taken)),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A NodePort Service turned ClusterIP drops its node port and external traffic
    // policy, as upstream.
    s.kubectl_ok(&[
        "patch",
        "svc",
        "n1",
        "-p",
        r#"{"spec":{"type":"ClusterIP"}}"#,
    ]);
    let n1 = get_json(&s, &["svc", "n1"]);
    assert_eq!(n1["spec"]["type"], "ClusterIP");
    assert!(n1["spec"]["ports"][0].get("nodePort").is_none(), "{n1}");
    assert!(n1["spec"].get("externalTrafficPolicy").is_none(), "{n1}");
    assert_eq!(cluster_ip(&n1), ips[1]);
    // Headless and ExternalName Services get no address.
    let out = s.kubectl_with_stdin(
        &["create", "-f", "-"],
        Some(&service_manifest("headless", "None")),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        get_json(&s, &["svc", "headless"])["spec"]["clusterIPs"],
        json!(["None"])
    );
    s.kubectl_ok(&[
        "create",
        "service",
        "externalname",
        "ext",
        "--external-name=example.com",
    ]);
    let ext = get_json(&s, &["svc", "ext"]);
    assert!(ext["spec"].get("clusterIP").is_none(), "{ext}");
    assert_eq!(
        row(&s.kubectl_ok(&["get", "svc", "ext"]), "ext")[3],
        "example.com"
    );
}

/// A /28 range has 14 usable addresses, the first the `kubernetes` Service's: thirteen
/// concurrent creates take the other thirteen, distinct; the next is refused; after a
/// restart the stored Services still hold theirs, and a delete frees one.
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_creates_get_distinct_addresses_that_survive_a_restart() {
    let mut s = TestServer::start_with_flags(&[
        "--service-cluster-ip-range=10.96.0.0/28",
        "--service-node-port-range=31000-31099",
    ]);
    let services: Api<Service> = Api::default_namespaced(s.client().await);
    let new = |name: String| -> Service {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"type": "NodePort", "ports": [{"port": 80}]}
        }))
        .expect("a Service")
    };
    let creates = (0..13).map(|i| {
        let services = services.clone();
        let svc = new(format!("c{i}"));
        async move { services.create(&PostParams::default(), &svc).await }
    });
    let created = futures_util::future::join_all(creates).await;
    let mut ips = BTreeSet::new();
    let mut ports = BTreeSet::new();
    for svc in created {
        let svc = svc.expect("created");
        let spec = svc.spec.expect("spec");
        let ip: Ipv4Addr = spec.cluster_ip.expect("clusterIP").parse().expect("IPv4");
        assert_eq!(ip.octets()[..3], [10, 96, 0], "{ip}");
        assert!((2..15).contains(&ip.octets()[3]), "{ip}");
        ips.insert(ip);
        let port = spec.ports.expect("ports")[0].node_port.expect("nodePort");
        assert!((31000..=31099).contains(&port), "{port}");
        ports.insert(port);
    }
    assert_eq!((ips.len(), ports.len()), (13, 13));
    let kubernetes = services
        .get("kubernetes")
        .await
        .expect("the kubernetes Service");
    assert_eq!(
        kubernetes.spec.expect("spec").cluster_ip.as_deref(),
        Some("10.96.0.1")
    );
    let full = services
        .create(&PostParams::default(), &new("c13".into()))
        .await
        .expect_err("the range is full");
    let kube::Error::Api(status) = full else {
        panic!("not an API error: {full}")
    };
    assert_eq!(status.code, 422, "{status:?}");
    assert!(status.message.contains("range is full"), "{status:?}");

    s.restart();
    let services: Api<Service> = Api::default_namespaced(s.client().await);
    let still_full = services
        .create(&PostParams::default(), &new("c13".into()))
        .await
        .expect_err("the range is still full after a restart");
    assert!(
        matches!(still_full, kube::Error::Api(ref st) if st.code == 422),
        "{still_full}"
    );
    let freed = services.get("c3").await.expect("c3");
    let freed_ip = freed.spec.expect("spec").cluster_ip.expect("clusterIP");
    services
        .delete("c3", &Default::default())
        .await
        .expect("deleted");
    let reused = services
        .create(&PostParams::default(), &new("c13".into()))
        .await
        .expect("created in the freed address");
    assert_eq!(reused.spec.expect("spec").cluster_ip, Some(freed_ip));
}
