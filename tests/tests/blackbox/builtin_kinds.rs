//! The imported built-in kinds (ServiceAccount, RBAC, the reviews) as kubectl and
//! clients see them: typed `kubectl create` commands (protobuf bodies), `kubectl auth
//! whoami`, and the discovery and OpenAPI shape of create-only kinds and of
//! `serviceaccounts/token`.

use apiserver_tests::{raw_request, TestServer};
use serde_json::{json, Value};

/// The whitespace-separated cells of the row whose first cell is `name`.
fn row<'a>(table: &'a str, name: &str) -> Vec<&'a str> {
    table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|cells| cells.first() == Some(&name))
        .unwrap_or_else(|| panic!("no row {name:?} in:\n{table}"))
}

fn json_of(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}

#[test]
fn kubectl_creates_rbac_objects_and_service_accounts_with_typed_commands() {
    let s = TestServer::start();
    // Each of these sends a protobuf body (and accepts a protobuf answer).
    for args in [
        &[
            "create",
            "role",
            "reader",
            "--verb=get,list,watch",
            "--resource=configmaps,secrets",
            "-n",
            "default",
        ][..],
        &[
            "create",
            "rolebinding",
            "read-pods",
            "--role=reader",
            "--user=alice",
            "--serviceaccount=default:builder",
            "-n",
            "default",
        ],
        &[
            "create",
            "clusterrole",
            "metrics",
            "--verb=get",
            "--non-resource-url=/metrics",
        ],
        &[
            "create",
            "clusterrolebinding",
            "metrics",
            "--clusterrole=metrics",
            "--group=devs",
        ],
        &["create", "serviceaccount", "builder", "-n", "default"],
    ] {
        let out = s.kubectl_ok(args);
        assert!(out.contains("created"), "{args:?}: {out}");
    }

    let role = json_of(&s.kubectl_ok(&["get", "role", "reader", "-n", "default", "-o", "json"]));
    assert_eq!(role["apiVersion"], "rbac.authorization.k8s.io/v1");
    assert_eq!(
        role["rules"],
        json!([{"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "list", "watch"]}])
    );
    let binding = json_of(&s.kubectl_ok(&[
        "get",
        "rolebinding",
        "read-pods",
        "-n",
        "default",
        "-o",
        "json",
    ]));
    assert_eq!(
        binding["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"})
    );
    assert_eq!(
        binding["subjects"],
        json!([
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"},
            {"kind": "ServiceAccount", "name": "builder", "namespace": "default"}
        ])
    );
    let cluster_role = json_of(&s.kubectl_ok(&["get", "clusterrole", "metrics", "-o", "json"]));
    assert_eq!(
        cluster_role["rules"],
        json!([{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}])
    );
    assert!(cluster_role["metadata"].get("namespace").is_none());
    let cluster_binding =
        json_of(&s.kubectl_ok(&["get", "clusterrolebinding", "metrics", "-o", "json"]));
    assert_eq!(cluster_binding["roleRef"]["kind"], "ClusterRole");
    assert_eq!(
        cluster_binding["subjects"],
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "devs"}])
    );
    // The short name, and the binding's Role column.
    let sa = s.kubectl_ok(&["get", "sa", "-n", "default"]);
    assert_eq!(row(&sa, "builder")[0], "builder", "{sa}");
    let bindings = s.kubectl_ok(&["get", "rolebindings", "-n", "default"]);
    assert_eq!(row(&bindings, "read-pods")[1], "reader", "{bindings}");
    // A protobuf read answers the same object.
    let yaml = s.kubectl_ok(&[
        "get",
        "serviceaccount",
        "builder",
        "-n",
        "default",
        "-o",
        "yaml",
    ]);
    assert!(yaml.contains("name: builder"), "{yaml}");
    s.kubectl_ok(&["delete", "role", "reader", "-n", "default"]);
    let gone = s.kubectl_err(&["get", "role", "reader", "-n", "default"]);
    assert!(
        gone.contains("NotFound") || gone.contains("not found"),
        "{gone}"
    );
}

#[test]
fn kubectl_auth_whoami_answers_the_admin() {
    let s = TestServer::start();
    let table = s.kubectl_ok(&["auth", "whoami"]);
    assert_eq!(row(&table, "Username")[1], "admin", "{table}");
    assert!(
        table.contains("[system:masters system:authenticated]"),
        "{table}"
    );
    let review = json_of(&s.kubectl_ok(&["auth", "whoami", "-o", "json"]));
    assert_eq!(review["kind"], "SelfSubjectReview");
    assert_eq!(review["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(
        review["status"]["userInfo"],
        json!({"username": "admin", "groups": ["system:masters", "system:authenticated"]})
    );
}

#[test]
fn api_resources_lists_the_reviews_as_create_only() {
    let s = TestServer::start();
    let wide = s.kubectl_ok(&["api-resources", "-o", "wide"]);
    for (name, version, namespaced, kind) in [
        (
            "selfsubjectreviews",
            "authentication.k8s.io/v1",
            "false",
            "SelfSubjectReview",
        ),
        (
            "tokenreviews",
            "authentication.k8s.io/v1",
            "false",
            "TokenReview",
        ),
        (
            "localsubjectaccessreviews",
            "authorization.k8s.io/v1",
            "true",
            "LocalSubjectAccessReview",
        ),
        (
            "selfsubjectaccessreviews",
            "authorization.k8s.io/v1",
            "false",
            "SelfSubjectAccessReview",
        ),
        (
            "selfsubjectrulesreviews",
            "authorization.k8s.io/v1",
            "false",
            "SelfSubjectRulesReview",
        ),
        (
            "subjectaccessreviews",
            "authorization.k8s.io/v1",
            "false",
            "SubjectAccessReview",
        ),
    ] {
        assert_eq!(
            row(&wide, name),
            [name, version, namespaced, kind, "create"],
            "{wide}"
        );
    }
    let all = "create,delete,deletecollection,get,list,patch,update,watch";
    assert_eq!(
        row(&wide, "serviceaccounts"),
        ["serviceaccounts", "sa", "v1", "true", "ServiceAccount", all]
    );
    for (name, namespaced, kind) in [
        ("roles", "true", "Role"),
        ("rolebindings", "true", "RoleBinding"),
        ("clusterroles", "false", "ClusterRole"),
        ("clusterrolebindings", "false", "ClusterRoleBinding"),
    ] {
        assert_eq!(
            row(&wide, name),
            [name, "rbac.authorization.k8s.io/v1", namespaced, kind, all]
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn discovery_and_openapi_show_create_only_kinds_and_the_token_subresource() {
    let s = TestServer::start();
    let c = s.client().await;

    let core = raw_request(&c, "GET", "/api/v1", None, Vec::new())
        .await
        .json;
    let token = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "serviceaccounts/token")
        .unwrap_or_else(|| panic!("{core}"));
    assert_eq!(
        token,
        &json!({"name": "serviceaccounts/token", "singularName": "", "namespaced": true,
            "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest", "verbs": ["create"]})
    );
    let authz = raw_request(&c, "GET", "/apis/authorization.k8s.io/v1", None, Vec::new())
        .await
        .json;
    let sar = authz["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "subjectaccessreviews")
        .unwrap_or_else(|| panic!("{authz}"));
    // Not stored: no storage version hash, as upstream.
    assert_eq!(
        sar,
        &json!({"name": "subjectaccessreviews", "singularName": "subjectaccessreview", "namespaced": false,
            "kind": "SubjectAccessReview", "verbs": ["create"]})
    );

    // Aggregated discovery: the subresource's responseKind.
    let request = http::Request::builder()
        .uri("/api")
        .header(
            http::header::ACCEPT,
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        )
        .body(kube::client::Body::empty())
        .unwrap();
    let body = c
        .send(request)
        .await
        .unwrap()
        .into_body()
        .collect_bytes()
        .await
        .unwrap();
    let aggregated: Value = serde_json::from_slice(&body).unwrap();
    let sa = aggregated["items"][0]["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "serviceaccounts")
        .unwrap_or_else(|| panic!("{aggregated}"));
    assert_eq!(
        sa["subresources"],
        json!([{"subresource": "token",
            "responseKind": {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"},
            "verbs": ["create"]}])
    );

    // OpenAPI: the TokenRequest schema in core/v1, under upstream's name; POST only.
    let v1 = raw_request(&c, "GET", "/openapi/v3/api/v1", None, Vec::new())
        .await
        .json;
    let schema = &v1["components"]["schemas"]["io.k8s.api.authentication.v1.TokenRequest"];
    assert_eq!(
        schema["x-kubernetes-group-version-kind"],
        json!([{"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"}])
    );
    // Its parts are components of their own, referred to, as upstream's documents have it.
    let status = &schema["properties"]["status"]["allOf"][0]["$ref"];
    assert_eq!(
        status,
        "#/components/schemas/io.k8s.api.authentication.v1.TokenRequestStatus"
    );
    let status = &v1["components"]["schemas"]["io.k8s.api.authentication.v1.TokenRequestStatus"];
    assert!(status["properties"]["expirationTimestamp"].is_object());
    let path = &v1["paths"]["/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"];
    let methods: Vec<&String> = path
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| *k != "parameters")
        .collect();
    assert_eq!(methods, ["post"]);
    assert_eq!(
        path["post"]["x-kubernetes-group-version-kind"]["kind"],
        "TokenRequest"
    );
    let authz = raw_request(
        &c,
        "GET",
        "/openapi/v3/apis/authorization.k8s.io/v1",
        None,
        Vec::new(),
    )
    .await
    .json;
    let paths: Vec<&String> = authz["paths"].as_object().unwrap().keys().collect();
    assert_eq!(
        paths,
        [
            "/apis/authorization.k8s.io/v1/namespaces/{namespace}/localsubjectaccessreviews",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        ]
    );
    assert!(authz["components"]["schemas"]
        .get("io.k8s.api.authorization.v1.SubjectAccessReview")
        .is_some());
    assert!(authz["components"]["schemas"]
        .get("io.k8s.api.authorization.v1.SubjectAccessReviewList")
        .is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn create_only_kinds_serve_post_alone_and_unwritten_hooks_say_so() {
    let s = TestServer::start();
    let c = s.client().await;
    let sar_path = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    assert_eq!(
        raw_request(&c, "GET", sar_path, None, Vec::new())
            .await
            .status,
        405
    );
    let one = raw_request(&c, "GET", &format!("{sar_path}/x"), None, Vec::new()).await;
    assert_eq!(one.status, 404);
    let watch = raw_request(
        &c,
        "GET",
        "/apis/authorization.k8s.io/v1/watch/subjectaccessreviews",
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(watch.status, 404);

    // The body is decoded and checked before the hook runs.
    let wrong = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {}});
    let r = raw_request(
        &c,
        "POST",
        sar_path,
        Some("application/json"),
        wrong.to_string(),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    let invalid = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {"groups": "devs"}});
    let r = raw_request(
        &c,
        "POST",
        sar_path,
        Some("application/json"),
        invalid.to_string(),
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text);
    let sar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "pods"}}});
    let r = raw_request(
        &c,
        "POST",
        sar_path,
        Some("application/json"),
        sar.to_string(),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json["status"]["allowed"], false, "{}", r.text);

    // SelfSubjectReview answers 201 with the user, dryRun or not.
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    for query in ["", "?dryRun=All"] {
        let r = raw_request(
            &c,
            "POST",
            &format!("/apis/authentication.k8s.io/v1/selfsubjectreviews{query}"),
            Some("application/json"),
            review.to_string(),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text);
        assert_eq!(r.json["status"]["userInfo"]["username"], "admin");
    }

    // serviceaccounts/token: POST only.
    s.kubectl_ok(&["create", "serviceaccount", "builder", "-n", "default"]);
    let token_path = "/api/v1/namespaces/default/serviceaccounts/builder/token";
    assert_eq!(
        raw_request(&c, "GET", token_path, None, Vec::new())
            .await
            .status,
        405
    );
    let request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"audiences": ["api"]}});
    let file = s.write_file("token.json", &request.to_string());
    let answer =
        json_of(&s.kubectl_ok(&["create", "--raw", token_path, "-f", file.to_str().unwrap()]));
    assert_eq!(answer["kind"], "TokenRequest", "{answer}");
    assert_eq!(answer["spec"]["audiences"], json!(["api"]), "{answer}");
    assert!(
        answer["status"]["token"]
            .as_str()
            .is_some_and(|t| t.split('.').count() == 3),
        "{answer}"
    );
    let token = s.kubectl_ok(&["create", "token", "builder", "-n", "default"]);
    assert_eq!(token.trim().split('.').count(), 3, "{token}");
}

/// `kubectl get cs` as upstream prints it: ComponentStatus is not stored but made per
/// read from the storage's health (`etcd-0`), read-only, with upstream's deprecation
/// warning and columns (no AGE).
#[tokio::test(flavor = "multi_thread")]
async fn kubectl_get_cs_reports_the_storage_as_etcd_0() {
    let s = TestServer::start();
    let out = s.kubectl(&["get", "cs"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("Warning: v1 ComponentStatus is deprecated in v1.19+"),
        "{stderr}"
    );
    assert_eq!(row(&stdout, "NAME"), ["NAME", "STATUS", "MESSAGE", "ERROR"]);
    assert_eq!(row(&stdout, "etcd-0"), ["etcd-0", "Healthy", "ok"]);
    assert_eq!(stdout.lines().count(), 2, "{stdout}");

    let one = json_of(&s.kubectl_ok(&["get", "componentstatus", "etcd-0", "-o", "json"]));
    assert_eq!(one["kind"], "ComponentStatus");
    assert_eq!(one["metadata"]["name"], "etcd-0");
    assert_eq!(
        one["conditions"],
        json!([{"type": "Healthy", "status": "True", "message": "ok"}])
    );
    let list = json_of(&s.kubectl_ok(&["get", "cs", "-o", "json"]));
    assert_eq!(list["items"][0], one, "{list}");

    let missing = s.kubectl(&["get", "cs", "scheduler"]);
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .contains("Error from server (NotFound): componentstatuses \"scheduler\" not found"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );

    // Read-only: no other verb is served.
    let client = s.client().await;
    let body = json!({"apiVersion": "v1", "kind": "ComponentStatus", "metadata": {"name": "mine"}});
    let created = raw_request(
        &client,
        "POST",
        "/api/v1/componentstatuses",
        Some("application/json"),
        body.to_string(),
    )
    .await;
    assert_eq!(created.status, 405, "{}", created.text);
    let deleted = raw_request(
        &client,
        "DELETE",
        "/api/v1/componentstatuses/etcd-0",
        None,
        String::new(),
    )
    .await;
    assert_eq!(deleted.status, 405, "{}", deleted.text);
}
