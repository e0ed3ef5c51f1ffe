//! Lists (issue 3, items 5 and 6): label and field selectors, paging with limit and
//! continue, resourceVersion and resourceVersionMatch on get and list, and cluster-wide
//! lists of namespaced kinds.

use apiserver_tests::objects::{api_status, configmap, labelled, CONFIGMAPS};
use apiserver_tests::tables::header;
use apiserver_tests::{raw_request, TestServer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, GetParams, ListParams, PostParams, VersionMatch};
use kube::ResourceExt;
use serde_json::json;

/// A kube client that does not retry 429/503/504 answers (kube's default client retries
/// them with backoff for minutes), for tests that expect such an answer.
async fn client_without_retries(s: &TestServer) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(s.kubeconfig()).expect("kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("config");
    config.default_retry = false;
    kube::Client::try_from(config).expect("client")
}

/// Sorted `kubectl get ... -o name` output restricted to names in `mine`.
fn names_among(out: &str, mine: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = out
        .lines()
        .map(|l| l.rsplit('/').next().unwrap_or(l).to_string())
        .filter(|n| mine.contains(&n.as_str()))
        .collect();
    names.sort();
    names
}

// ---------------------------------------------------------------------------------------
// 5. Selectors
// ---------------------------------------------------------------------------------------

#[test]
fn kubectl_label_selectors_full_grammar() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "configmap", "a"]);
    s.kubectl_ok(&["create", "configmap", "b"]);
    s.kubectl_ok(&["create", "configmap", "c"]);
    s.kubectl_ok(&["create", "configmap", "d"]);
    s.kubectl_ok(&["label", "cm", "a", "env=prod", "tier=web"]);
    s.kubectl_ok(&["label", "cm", "b", "env=dev"]);
    s.kubectl_ok(&["label", "cm", "d", "env=qa", "tier=db"]);
    let mine = ["a", "b", "c", "d"];
    let mut failures = Vec::new();
    for (selector, want) in [
        ("env=prod", vec!["a"]),
        ("env==prod", vec!["a"]),
        ("env!=prod", vec!["b", "c", "d"]),
        ("env in (prod,dev)", vec!["a", "b"]),
        ("env notin (prod,dev)", vec!["c", "d"]),
        ("tier", vec!["a", "d"]),
        ("!tier", vec!["b", "c"]),
        ("env,!tier", vec!["b"]),
        ("env in (prod, qa),tier=db", vec!["d"]),
        ("env=nope", vec![]),
    ] {
        let out = s.kubectl_ok(&["get", "cm", "-l", selector, "-o", "name"]);
        let got = names_among(&out, &mine);
        if got != want {
            failures.push(format!("-l {selector:?}: want {want:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    let err = s.kubectl_err(&["get", "cm", "-l", "a b"]);
    assert!(
        err.contains("Error from server (BadRequest)")
            && err.contains(
                "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
            ),
        "stderr: {err}"
    );
}

#[test]
fn kubectl_field_selectors() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "n1"]);
    s.kubectl_ok(&["create", "configmap", "a"]);
    s.kubectl_ok(&["create", "configmap", "b"]);
    s.kubectl_ok(&["create", "configmap", "c", "-n", "n1"]);
    s.kubectl_ok(&["create", "secret", "generic", "plain", "--from-literal=a=b"]);
    s.kubectl_ok(&[
        "create",
        "secret",
        "docker-registry",
        "pull",
        "--docker-server=r.example",
        "--docker-username=u",
        "--docker-password=p",
    ]);
    for (name, color) in [("red1", "red"), ("blue1", "blue"), ("red2", "red")] {
        let f = s.write_file(
            &format!("{name}.yaml"),
            &format!(
                "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: {name}\nspec:\n  color: {color}\n"
            ),
        );
        s.kubectl_ok(&["create", "-f", f.to_str().unwrap()]);
    }
    let mine = [
        "a", "b", "c", "plain", "pull", "red1", "red2", "blue1", "default", "n1",
    ];
    let mut failures = Vec::new();
    for (args, want) in [
        (
            vec!["get", "cm", "--field-selector", "metadata.name=a"],
            vec!["a"],
        ),
        (
            vec!["get", "cm", "--field-selector", "metadata.name!=a"],
            vec!["b"],
        ),
        (
            vec![
                "get",
                "cm",
                "-A",
                "--field-selector",
                "metadata.namespace=n1",
            ],
            vec!["c"],
        ),
        (
            vec![
                "get",
                "cm",
                "-A",
                "--field-selector",
                "metadata.namespace!=n1,metadata.name!=b",
            ],
            vec!["a"],
        ),
        (
            vec!["get", "secrets", "--field-selector", "type=Opaque"],
            vec!["plain"],
        ),
        (
            vec![
                "get",
                "secrets",
                "--field-selector",
                "type=kubernetes.io/dockerconfigjson",
            ],
            vec!["pull"],
        ),
        (
            vec!["get", "ns", "--field-selector", "status.phase=Active"],
            vec!["default", "n1"],
        ),
        (
            vec!["get", "wd", "--field-selector", "spec.color=red"],
            vec!["red1", "red2"],
        ),
        (
            vec!["get", "wd", "--field-selector", "spec.color!=red"],
            vec!["blue1"],
        ),
    ] {
        let mut full = args.clone();
        full.extend(["-o", "name"]);
        let out = s.kubectl(&full);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let got = names_among(&stdout, &mine);
        if !out.status.success() || got != want {
            failures.push(format!(
                "kubectl {}: want {want:?}, got {got:?} {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    let err = s.kubectl_err(&["get", "cm", "--field-selector", "foo"]);
    assert!(
        err.contains("Error from server (BadRequest)")
            && err.contains("invalid selector: 'foo'; can't understand 'foo'"),
        "stderr: {err}"
    );
    let err = s.kubectl_err(&["get", "secrets", "--field-selector", "data.a=b"]);
    assert!(
        err.contains("field label not supported: data.a"),
        "secrets have their own field label conversion: {err}"
    );
    // ConfigMaps have no field label conversion of their own, so kube-apiserver's
    // default one answers for them.
    let err = s.kubectl_err(&["get", "cm", "--field-selector", "data.a=b"]);
    assert!(
        err.contains(r#""data.a" is not a known field selector: only "metadata.name", "metadata.namespace""#),
        "kube-apiserver answers 400 `\"data.a\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"` for configmaps; stderr: {err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kube_list_with_label_and_field_selectors() {
    let s = TestServer::start();
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    for (name, env) in [("p", "prod"), ("d", "dev")] {
        cms.create(&PostParams::default(), &labelled(name, &[("env", env)]))
            .await
            .unwrap();
    }
    let names = |l: kube::core::ObjectList<ConfigMap>| -> Vec<String> {
        l.items.iter().map(ResourceExt::name_any).collect()
    };
    let got = cms
        .list(&ListParams::default().labels("env in (prod)"))
        .await
        .unwrap();
    assert_eq!(names(got), ["p"]);
    let got = cms
        .list(&ListParams::default().fields("metadata.name=d"))
        .await
        .unwrap();
    assert_eq!(names(got), ["d"]);
    let got = cms
        .list(
            &ListParams::default()
                .labels("env")
                .fields("metadata.name!=d"),
        )
        .await
        .unwrap();
    assert_eq!(names(got), ["p"]);
    let status = api_status(
        cms.list(&ListParams::default().labels("env in prod")).await,
        "list with an invalid label selector",
    );
    assert_eq!(
        (status.code, status.reason.as_str()),
        (400, "BadRequest"),
        "{status:?}"
    );
    assert!(
        status.message.contains("unable to parse requirement"),
        "{status:?}"
    );
}

// ---------------------------------------------------------------------------------------
// 6. List: paging, resourceVersion, cluster-wide
// ---------------------------------------------------------------------------------------

#[test]
fn kubectl_get_chunk_size_pages_through_everything() {
    let s = TestServer::start_with_flags(&[apiserver_tests::WITHOUT_ROOT_CA_PUBLISHER]);
    for i in 0..5 {
        s.kubectl_ok(&["create", "configmap", &format!("c{i}")]);
    }
    let out = s.kubectl(&["get", "cm", "--chunk-size=1", "-o", "name", "-v=6"]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        names,
        [
            "configmap/c0",
            "configmap/c1",
            "configmap/c2",
            "configmap/c3",
            "configmap/c4"
        ]
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let requests = stderr.matches("limit=1").count();
    assert!(
        requests >= 5 && stderr.contains("continue="),
        "kubectl should page with limit=1 and continue tokens:\n{stderr}"
    );
    let table = s.kubectl_ok(&["get", "cm", "--chunk-size=2"]);
    assert_eq!(
        table.lines().count(),
        6,
        "one header and five rows:\n{table}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn continue_pages_are_a_snapshot_of_the_first_page() {
    let s = TestServer::start_with_flags(&[apiserver_tests::WITHOUT_ROOT_CA_PUBLISHER]);
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    for i in 0..5 {
        cms.create(&PostParams::default(), &configmap(&format!("p{i}"), &[]))
            .await
            .unwrap();
    }
    let first = cms.list(&ListParams::default().limit(2)).await.unwrap();
    let first_rv = first.metadata.resource_version.clone();
    assert_eq!(first.items.len(), 2);
    let token = first.metadata.continue_.clone().expect("continue token");
    assert!(
        first.metadata.remaining_item_count == Some(3)
            || first.metadata.remaining_item_count.is_none(),
        "remainingItemCount, when given, counts what is left: {:?}",
        first.metadata.remaining_item_count
    );
    // Changes after the first page are not seen by the rest of the list.
    cms.delete("p3", &DeleteParams::default()).await.unwrap();
    cms.create(&PostParams::default(), &configmap("p5", &[]))
        .await
        .unwrap();
    let mut seen: Vec<String> = first.items.iter().map(ResourceExt::name_any).collect();
    let mut page_rvs = Vec::new();
    let mut lp = ListParams::default().limit(2).continue_token(&token);
    loop {
        let page = cms.list(&lp).await.expect("continue");
        page_rvs.push(page.metadata.resource_version.clone());
        seen.extend(page.items.iter().map(ResourceExt::name_any));
        match page.metadata.continue_.filter(|t| !t.is_empty()) {
            Some(t) => lp = lp.continue_token(&t),
            None => break,
        }
    }
    assert_eq!(
        seen,
        ["p0", "p1", "p2", "p3", "p4"],
        "the pages after the first show the list as of the first page"
    );
    // kube-apiserver serves continue pages at the revision in the token and reports it:
    // every page's metadata.resourceVersion is the first page's.
    assert!(
        page_rvs.iter().all(|rv| *rv == first_rv),
        "every page of a paged list must report the first page's resourceVersion {first_rv:?}, got {page_rvs:?}"
    );

    let resp = raw_request(
        &c,
        "GET",
        &format!("{CONFIGMAPS}?limit=1&continue=garbage"),
        None,
        "",
    )
    .await;
    assert_eq!(resp.status, 400, "{}", resp.text);
    assert!(
        resp.json["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("invalid continue token"),
        "{}",
        resp.text
    );
}

/// `--storage-history-size` bounds the changes the embedded store remembers: a continue
/// token whose snapshot more changes have passed gets 410 Expired in kube-apiserver's
/// words for a compacted snapshot, where a server keeping more serves the same walk.
/// Always on the embedded store (the flag is its own; etcd's compaction decides there).
#[tokio::test(flavor = "multi_thread")]
async fn a_continue_token_older_than_the_storage_history_gets_410_expired() {
    for (history, expires) in [(100, true), (10_000, false)] {
        let flag = format!("--storage-history-size={history}");
        let dir = tempfile::TempDir::with_prefix("apiserver-test-history-").unwrap();
        let s = TestServer::start_in_with_flags(
            dir.path(),
            &[apiserver_tests::WITHOUT_ROOT_CA_PUBLISHER, &flag],
        );
        let c = s.client().await;
        let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
        for i in 0..3 {
            cms.create(&PostParams::default(), &configmap(&format!("p{i}"), &[]))
                .await
                .unwrap();
        }
        let first = cms.list(&ListParams::default().limit(1)).await.unwrap();
        let token = first.metadata.continue_.clone().expect("continue token");
        // More changes after the first page than a 100-change history holds.
        for i in 0..150 {
            cms.create(
                &PostParams::default(),
                &configmap(&format!("later{i}"), &[]),
            )
            .await
            .unwrap();
        }
        let next = raw_request(
            &c,
            "GET",
            &format!("{CONFIGMAPS}?limit=1&continue={token}"),
            None,
            "",
        )
        .await;
        if expires {
            assert_eq!(next.status, 410, "{flag}: {}", next.text);
            assert_eq!(next.json["reason"], "Expired", "{}", next.text);
            let message = next.json["message"].as_str().unwrap_or_default();
            assert!(
                message.starts_with("The provided continue parameter is too old"),
                "{}",
                next.text
            );
        } else {
            assert_eq!(next.status, 200, "{flag}: {}", next.text);
            assert_eq!(
                next.json["items"][0]["metadata"]["name"], "p1",
                "{flag}: the snapshot of the first page: {}",
                next.text
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn resource_version_and_match_on_get_and_list() {
    let s = TestServer::start_with_flags(&[apiserver_tests::WITHOUT_ROOT_CA_PUBLISHER]);
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let a = cms
        .create(&PostParams::default(), &configmap("a", &[("v", "1")]))
        .await
        .unwrap();
    let old_rv = a.resource_version().unwrap();
    cms.create(&PostParams::default(), &configmap("b", &[]))
        .await
        .unwrap();
    cms.delete("a", &DeleteParams::default()).await.unwrap();
    let now = cms.list(&ListParams::default()).await.unwrap();
    let now_rv = now.metadata.resource_version.clone().unwrap();

    // resourceVersion=0: any version (served from the cache in kube-apiserver).
    let any = cms.list(&ListParams::default().match_any()).await.unwrap();
    assert_eq!(any.items.len(), 1);
    // NotOlderThan the current revision.
    let nb = cms
        .list(
            &ListParams::default()
                .at(&now_rv)
                .matching(VersionMatch::NotOlderThan),
        )
        .await
        .unwrap();
    assert_eq!(nb.items.len(), 1);
    // Exact at the current revision.
    let exact = cms
        .list(
            &ListParams::default()
                .at(&now_rv)
                .matching(VersionMatch::Exact),
        )
        .await
        .unwrap();
    assert_eq!(exact.metadata.resource_version.as_deref(), Some(&*now_rv));
    assert_eq!(exact.items.len(), 1);

    // A revision from the future: 504 Timeout "Too large resource version".
    let future = now_rv.parse::<u64>().unwrap() + 1000;
    let resp = raw_request(
        &client_without_retries(&s).await,
        "GET",
        &format!("{CONFIGMAPS}?resourceVersion={future}&resourceVersionMatch=NotOlderThan"),
        None,
        "",
    )
    .await;
    assert_eq!(resp.status, 504, "{}", resp.text);
    assert_eq!(resp.json["reason"], "Timeout", "{}", resp.text);
    assert!(
        resp.json["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with(&format!("Too large resource version: {future}")),
        "{}",
        resp.text
    );
    assert_eq!(
        resp.json["details"]["causes"][0]["reason"], "ResourceVersionTooLarge",
        "{}",
        resp.text
    );

    let mut failures = Vec::new();

    // get at resourceVersion=0 and at the current revision.
    let b = cms.get_with("b", &GetParams::any()).await.unwrap();
    assert_eq!(b.name_any(), "b");
    let b = cms.get_with("b", &GetParams::at(&now_rv)).await.unwrap();
    assert_eq!(b.name_any(), "b");

    // Exact at an older revision: kube-apiserver answers the list as it was then (before
    // etcd compaction) or, once compacted, 410 Expired with the message
    // "The resourceVersion for the provided list is too old." ("too old resource
    // version: X (Y)" is the wording for watches).
    let resp = raw_request(
        &c,
        "GET",
        &format!("{CONFIGMAPS}?resourceVersion={old_rv}&resourceVersionMatch=Exact"),
        None,
        "",
    )
    .await;
    let names: Vec<&str> = resp.json["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    let ok = match resp.status {
        200 => names == ["a"] && resp.json["metadata"]["resourceVersion"] == json!(old_rv),
        410 => {
            resp.json["reason"] == "Expired"
                && resp.json["message"] == "The resourceVersion for the provided list is too old."
        }
        _ => false,
    };
    if !ok {
        failures.push(format!(
            "GET ?resourceVersion={old_rv}&resourceVersionMatch=Exact: expected 200 with the list as of {old_rv} (only \"a\") or 410 Expired `The resourceVersion for the provided list is too old.`, got {} {}",
            resp.status, resp.text
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn cluster_wide_lists_of_namespaced_kinds() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "n1"]);
    s.kubectl_ok(&["create", "namespace", "n2"]);
    s.kubectl_ok(&["create", "configmap", "x", "-n", "n1"]);
    s.kubectl_ok(&["create", "configmap", "x", "-n", "n2"]);
    s.kubectl_ok(&["create", "configmap", "y"]);
    let table = s.kubectl_ok(&["get", "cm", "-A"]);
    assert_eq!(
        header(&table),
        ["NAMESPACE", "NAME", "DATA", "AGE"],
        "{table}"
    );
    let mut pairs: Vec<(String, String)> = table
        .lines()
        .skip(1)
        .map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            (cells[0].to_string(), cells[1].to_string())
        })
        .filter(|(_, n)| n == "x" || n == "y")
        .collect();
    pairs.sort();
    assert_eq!(
        pairs,
        [
            ("default".to_string(), "y".to_string()),
            ("n1".to_string(), "x".to_string()),
            ("n2".to_string(), "x".to_string())
        ],
        "{table}"
    );
    let all: Api<ConfigMap> = Api::all(s.client().await);
    let list = all
        .list(&ListParams::default().fields("metadata.name=x"))
        .await
        .unwrap();
    let mut namespaces: Vec<String> = list.items.iter().filter_map(|c| c.namespace()).collect();
    namespaces.sort();
    assert_eq!(namespaces, ["n1", "n2"]);
}
