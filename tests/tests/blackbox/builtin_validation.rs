//! Upstream's validation of built-in kinds where a user meets it (issue 16): what a pod
//! update may change (`kubectl set image` yes, `kubectl set env` no), and the pod spec
//! checks of pods and pod templates (container names, images, ports, resources), in
//! kube-apiserver's words and field paths.

use apiserver_tests::{invalid_causes, send, TestServer};
use serde_json::{json, Value};

const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";

/// Upstream's list of what a pod update may change, as its refusal names it.
const UPDATABLE: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

fn pod_json(s: &TestServer, name: &str) -> Value {
    serde_json::from_str(&s.kubectl_ok(&["get", "pod", name, "-o", "json"])).expect("JSON")
}

const POD: &str = "/api/v1/namespaces/default/pods/web";

#[tokio::test(flavor = "multi_thread")]
async fn a_pod_update_changes_images_deadlines_and_tolerations_only() {
    let s = TestServer::start();
    s.kubectl_ok(&["run", "web", "--image=nginx"]);

    // What upstream lets change: images, a deadline set then shortened, tolerations
    // added, metadata.
    s.kubectl_ok(&["set", "image", "pod/web", "web=nginx:1.27"]);
    assert_eq!(
        pod_json(&s, "web")["spec"]["containers"][0]["image"],
        "nginx:1.27"
    );
    s.kubectl_ok(&[
        "patch",
        "pod",
        "web",
        "-p",
        r#"{"spec":{"activeDeadlineSeconds":600}}"#,
    ]);
    s.kubectl_ok(&[
        "patch",
        "pod",
        "web",
        "-p",
        r#"{"spec":{"activeDeadlineSeconds":300}}"#,
    ]);
    s.kubectl_ok(&[
        "patch",
        "pod",
        "web",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/spec/tolerations","value":[{"key":"a","operator":"Exists"}]}]"#,
    ]);
    s.kubectl_ok(&["label", "pod", "web", "tier=front"]);
    let pod = pod_json(&s, "web");
    assert_eq!(pod["spec"]["activeDeadlineSeconds"], 300);
    assert_eq!(pod["spec"]["tolerations"][0]["key"], "a", "{pod}");

    // Anything else is refused whole, at `spec`, naming what may change.
    let out = s.kubectl(&["set", "env", "pod/web", "COLOR=blue"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("spec: Forbidden: {UPDATABLE}")),
        "{err}"
    );
    assert!(pod_json(&s, "web")["spec"]["containers"][0]
        .get("env")
        .is_none());

    let r = send(
        &s,
        "PATCH",
        POD,
        MERGE,
        &json!({"spec": {"restartPolicy": "Never"}}),
    )
    .await;
    let c = invalid_causes(&r);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].0, "spec");
    assert!(
        c[0].1.starts_with(&format!("Forbidden: {UPDATABLE}\n")),
        "{}",
        c[0].1
    );
    assert!(
        c[0].1.contains("restartPolicy"),
        "the change is shown: {}",
        c[0].1
    );

    // The rules of each changeable field.
    let r = send(
        &s,
        "PATCH",
        POD,
        MERGE,
        &json!({"spec": {"activeDeadlineSeconds": 900}}),
    )
    .await;
    assert_eq!(
        invalid_causes(&r),
        vec![(
            "spec.activeDeadlineSeconds".to_string(),
            "Invalid value: 900: must be less than or equal to previous value".to_string()
        )]
    );
    let r = send(
        &s,
        "PATCH",
        POD,
        MERGE,
        &json!({"spec": {"activeDeadlineSeconds": null}}),
    )
    .await;
    assert_eq!(
        invalid_causes(&r),
        vec![(
            "spec.activeDeadlineSeconds".to_string(),
            "Invalid value: \"null\": must not update from a positive integer to nil value"
                .to_string()
        )]
    );
    let r = send(
        &s,
        "PATCH",
        POD,
        JSON_PATCH,
        &json!([{"op": "replace", "path": "/spec/tolerations/0/key", "value": "b"}]),
    )
    .await;
    assert_eq!(
        invalid_causes(&r),
        vec![(
            "spec.tolerations".to_string(),
            "Forbidden: existing toleration can not be modified except its tolerationSeconds"
                .to_string()
        )]
    );
    let r = send(
        &s,
        "PATCH",
        POD,
        JSON_PATCH,
        &json!([{"op": "add", "path": "/spec/containers/-", "value": {"name": "side", "image": "busybox"}}]),
    )
    .await;
    assert_eq!(
        invalid_causes(&r),
        vec![(
            "spec.containers".to_string(),
            "Forbidden: pod updates may not add or remove containers".to_string()
        )]
    );
    let r = send(
        &s,
        "PATCH",
        POD,
        JSON_PATCH,
        &json!([{"op": "replace", "path": "/spec/containers/0/image", "value": ""}]),
    )
    .await;
    assert_eq!(
        invalid_causes(&r),
        vec![(
            "spec.containers[0].image".to_string(),
            "Required value".to_string()
        )]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn pod_specs_are_checked_as_upstream_checks_them() {
    let s = TestServer::start();
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad"},
        "spec": {"containers": [
            {"name": "Web_1", "image": "nginx",
             "ports": [{"containerPort": 70000, "name": "http"}, {"containerPort": 81, "protocol": "HTTP", "name": "http"}],
             "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "500m"}}},
            {"name": "side", "image": ""},
            {"name": "side", "image": "busybox"}
        ]}
    });
    let r = send(&s, "POST", "/api/v1/namespaces/default/pods", JSON, &pod).await;
    let want: Vec<(String, String)> = [
        ("spec.containers[0].name", "Invalid value: \"Web_1\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
        ("spec.containers[0].ports[0].containerPort", "Invalid value: 70000: must be between 1 and 65535, inclusive"),
        ("spec.containers[0].ports[1].name", "Duplicate value: \"http\""),
        ("spec.containers[0].ports[1].protocol", "Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\""),
        ("spec.containers[0].resources.requests", "Invalid value: \"2\": must be less than or equal to cpu limit of 500m"),
        ("spec.containers[1].image", "Required value"),
        ("spec.containers[2].name", "Duplicate value: \"side\""),
    ]
    .iter()
    .map(|(f, m)| (f.to_string(), m.to_string()))
    .collect();
    assert_eq!(invalid_causes(&r), want, "{}", r.text);
    assert!(r.json["message"]
        .as_str()
        .unwrap_or_default()
        .starts_with("Pod \"bad\" is invalid: [spec.containers[0].name: Invalid value: \"Web_1\""));

    // A quantity that does not parse is a decoding error, as Go's decoder reports it.
    let r = send(
        &s,
        "POST",
        "/api/v1/namespaces/default/pods",
        JSON,
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"},
                "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"limits": {"memory": "lots"}}}]}}),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.json["reason"], "BadRequest");
    assert_eq!(
        r.json["message"],
        "Pod in version \"v1\" cannot be handled as a Pod: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );

    // Templates are pod specs too: a Deployment's container needs an image.
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}},
                 "template": {"metadata": {"labels": {"app": "d"}},
                              "spec": {"containers": [{"name": "c", "image": ""}]}}}
    });
    let r = send(
        &s,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        JSON,
        &deployment,
    )
    .await;
    assert_eq!(
        invalid_causes(&r),
        vec![(
            "spec.template.spec.containers[0].image".to_string(),
            "Required value".to_string()
        )]
    );

    // And kubectl shows the first of them as upstream's does.
    let file = s.write_file("bad.json", &pod.to_string());
    let out = s.kubectl(&["create", "-f", file.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("The Pod \"bad\" is invalid: "), "{err}");
    assert!(
        err.contains("spec.containers[1].image: Required value"),
        "{err}"
    );
}

const CLAIM: &str = "/api/v1/namespaces/default/persistentvolumeclaims/data";
const CLAIM_FIXED: &str = "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n";

/// A claim's spec is fixed at creation, as upstream's: a volume name may be set once,
/// and only a bound claim's storage request changes (never below its capacity).
#[tokio::test(flavor = "multi_thread")]
async fn a_claims_spec_is_fixed_but_a_bound_claim_expands() {
    let s = TestServer::start();
    let r = send(
        &s,
        "POST",
        "/api/v1/namespaces/default/persistentvolumeclaims",
        JSON,
        &json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let grow = json!({"spec": {"resources": {"requests": {"storage": "2Gi"}}}});

    // Unbound: the request is as fixed as the rest.
    let c = invalid_causes(&send(&s, "PATCH", CLAIM, MERGE, &grow).await);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].0, "spec");
    assert!(c[0].1.starts_with(CLAIM_FIXED), "{}", c[0].1);
    assert!(
        c[0].1.contains("spec.resources.requests.storage"),
        "{}",
        c[0].1
    );

    // Binding names the volume, once.
    let r = send(
        &s,
        "PATCH",
        CLAIM,
        MERGE,
        &json!({"spec": {"volumeName": "pv-1"}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let c = invalid_causes(
        &send(
            &s,
            "PATCH",
            CLAIM,
            MERGE,
            &json!({"spec": {"volumeName": "pv-2"}}),
        )
        .await,
    );
    assert!(c[0].1.starts_with(CLAIM_FIXED), "{c:?}");

    // Bound: it expands, and may shrink back no further than its capacity.
    let r = send(
        &s,
        "PATCH",
        &format!("{CLAIM}/status"),
        MERGE,
        &json!({"status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = send(&s, "PATCH", CLAIM, MERGE, &grow).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["spec"]["resources"]["requests"]["storage"], "2Gi");
    let shrink = json!({"spec": {"resources": {"requests": {"storage": "1Gi"}}}});
    assert_eq!(
        invalid_causes(&send(&s, "PATCH", CLAIM, MERGE, &shrink).await),
        vec![(
            "spec.resources.requests.storage".to_string(),
            "Forbidden: field can not be less than status.capacity".to_string()
        )]
    );

    // kubectl shows the refusal of anything else.
    let out = s.kubectl(&[
        "patch",
        "pvc",
        "data",
        "-p",
        r#"{"spec":{"accessModes":["ReadWriteMany"]}}"#,
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"), "{err}");
}

/// One cause, as (field, message).
fn cause(field: &str, message: &str) -> (String, String) {
    (field.to_string(), message.to_string())
}

/// Environment, volumes and mounts, probes, security contexts and policies: every fault
/// of a request is one cause, in upstream's order, words and field paths.
#[tokio::test(flavor = "multi_thread")]
async fn env_volumes_probes_and_security_contexts_are_checked_as_upstream() {
    let s = TestServer::start();
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "faults"},
        "spec": {
            "volumes": [{"name": "data", "emptyDir": {}}, {"name": "data", "configMap": {"name": "c"}},
                        {"name": "both", "emptyDir": {}, "secret": {"secretName": "s"}}],
            "containers": [{
                "name": "app", "image": "nginx", "terminationMessagePolicy": "Sometimes",
                "env": [{"name": "A=B", "value": "1"},
                        {"name": "C", "value": "x", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
                        {"name": "D", "valueFrom": {}}],
                "envFrom": [{"prefix": "P_", "configMapRef": {"name": "c"}, "secretRef": {"name": "s"}}],
                "volumeMounts": [{"name": "data", "mountPath": "/data", "subPath": "../up"},
                                 {"name": "missing", "mountPath": "/data"}],
                "imagePullPolicy": "Sometimes",
                "securityContext": {"runAsUser": -1, "procMount": "Masked"},
                "livenessProbe": {"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}, "successThreshold": 2},
                "readinessProbe": {"httpGet": {"port": 70000}, "periodSeconds": -5}
            }],
            "restartPolicy": "Sometimes", "dnsPolicy": "Sometimes",
            "securityContext": {"fsGroup": -1, "seccompProfile": {"type": "Custom"}}
        }
    });
    let r = send(&s, "POST", "/api/v1/namespaces/default/pods", JSON, &pod).await;
    let c = "spec.containers[0]";
    let want = vec![
        cause("spec.volumes[1].name", "Duplicate value: \"data\""),
        cause("spec.volumes[2].secret", "Forbidden: may not specify more than 1 volume type"),
        cause(&format!("{c}.terminationMessagePolicy"), "Unsupported value: \"Sometimes\": supported values: \"File\", \"FallbackToLogsOnError\""),
        cause(&format!("{c}.env[0].name"), "Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='"),
        cause(&format!("{c}.env[1].valueFrom"), "Invalid value: \"\": may not be specified when `value` is not empty"),
        cause(&format!("{c}.env[2].valueFrom"), "Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"),
        cause(&format!("{c}.envFrom"), "Invalid value: \"\": may not have more than one field specified at a time"),
        cause(&format!("{c}.volumeMounts.subPath"), "Invalid value: \"../up\": must not contain '..'"),
        cause(&format!("{c}.volumeMounts[1].name"), "Not found: \"missing\""),
        cause(&format!("{c}.volumeMounts[1].mountPath"), "Invalid value: \"/data\": must be unique"),
        cause(&format!("{c}.imagePullPolicy"), "Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\""),
        cause(&format!("{c}.securityContext.runAsUser"), "Invalid value: -1: must be between 0 and 2147483647, inclusive"),
        cause(&format!("{c}.securityContext.procMount"), "Unsupported value: \"Masked\": supported values: \"Default\", \"Unmasked\""),
        cause(&format!("{c}.livenessProbe.tcpSocket"), "Forbidden: may not specify more than 1 handler type"),
        cause(&format!("{c}.livenessProbe.successThreshold"), "Invalid value: 2: must be 1"),
        cause(&format!("{c}.readinessProbe.httpGet.port"), "Invalid value: 70000: must be between 1 and 65535, inclusive"),
        cause(&format!("{c}.readinessProbe.periodSeconds"), "Invalid value: -5: must be greater than or equal to 0"),
        cause("spec.restartPolicy", "Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\""),
        cause("spec.dnsPolicy", "Unsupported value: \"Sometimes\": supported values: \"ClusterFirst\", \"ClusterFirstWithHostNet\", \"Default\", \"None\""),
        cause("spec.securityContext.fsGroup", "Invalid value: -1: must be between 0 and 2147483647, inclusive"),
        cause("spec.securityContext.seccompProfile.type", "Unsupported value: \"Custom\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\""),
    ];
    assert_eq!(invalid_causes(&r), want, "{}", r.text);

    // A template is checked the same way, at its own path, with its kind's restart
    // policies: a Deployment's pods always restart, a Job's never always do.
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}},
                 "template": {"metadata": {"labels": {"app": "d"}},
                              "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "nginx",
                                       "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}, "fieldRef": {"fieldPath": "metadata.name"}}}]}]}}}
    });
    let r = send(
        &s,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        JSON,
        &deployment,
    )
    .await;
    assert_eq!(
        invalid_causes(&r),
        vec![
            cause(
                "spec.template.spec.containers[0].env[0].valueFrom",
                "Invalid value: \"\": may not have more than one field specified at a time"
            ),
            cause(
                "spec.template.spec.restartPolicy",
                "Unsupported value: \"Never\": supported values: \"Always\""
            ),
        ],
        "{}",
        r.text
    );
    let job = json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
    });
    let r = send(
        &s,
        "POST",
        "/apis/batch/v1/namespaces/default/jobs",
        JSON,
        &job,
    )
    .await;
    assert_eq!(
        invalid_causes(&r),
        vec![cause(
            "spec.template.spec.restartPolicy",
            "Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""
        )],
        "{}",
        r.text
    );

    // kubectl shows every cause.
    let file = s.write_file("faults.json", &pod.to_string());
    let out = s.kubectl(&["create", "-f", file.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("The Pod \"faults\" is invalid: "), "{err}");
    assert!(
        err.contains("spec.containers[0].volumeMounts[1].name: Not found: \"missing\""),
        "{err}"
    );
    assert!(err.contains("spec.securityContext.fsGroup: Invalid value: -1: must be between 0 and 2147483647, inclusive"), "{err}");
}

/// What kubectl and Helm charts typically send passes, and gets upstream's defaults:
/// env from config maps, secrets and the downward API, volumes and mounts, probes,
/// hooks and security contexts.
#[tokio::test(flavor = "multi_thread")]
async fn rich_pod_specs_from_kubectl_and_charts_are_accepted() {
    let s = TestServer::start();
    s.kubectl_ok(&[
        "create",
        "configmap",
        "settings",
        "--from-literal=mode=fast",
    ]);
    s.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "--from-literal=token=abc",
    ]);
    s.kubectl_ok(&[
        "run",
        "plain",
        "--image=nginx",
        "--env=COLOR=blue",
        "--port=80",
        "--restart=Never",
    ]);
    s.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--port=80",
        "--replicas=2",
    ]);
    s.kubectl_ok(&["create", "job", "once", "--image=busybox", "--", "true"]);
    s.kubectl_ok(&[
        "create",
        "cronjob",
        "tick",
        "--image=busybox",
        "--schedule=*/5 * * * *",
        "--",
        "date",
    ]);
    let chart = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: chart
  labels: {app.kubernetes.io/name: chart, app.kubernetes.io/instance: release}
spec:
  replicas: 1
  selector:
    matchLabels: {app.kubernetes.io/name: chart}
  template:
    metadata:
      labels: {app.kubernetes.io/name: chart}
    spec:
      serviceAccountName: default
      securityContext: {runAsNonRoot: true, runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000, seccompProfile: {type: RuntimeDefault}}
      initContainers:
      - name: init
        image: busybox:1.36
        command: [sh, -c, "echo ready > /work/ready"]
        volumeMounts: [{name: work, mountPath: /work}]
      containers:
      - name: app
        image: "nginx:1.27"
        imagePullPolicy: IfNotPresent
        ports:
        - {name: http, containerPort: 8080, protocol: TCP}
        env:
        - {name: MODE, valueFrom: {configMapKeyRef: {name: settings, key: mode}}}
        - {name: TOKEN, valueFrom: {secretKeyRef: {name: creds, key: token, optional: true}}}
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory}}}
        - {name: EMPTY, value: ""}
        - {name: my.dotted-name, value: "x"}
        envFrom:
        - configMapRef: {name: settings}
        - prefix: SECRET_
          secretRef: {name: creds}
        volumeMounts:
        - {name: config, mountPath: /etc/app, readOnly: true}
        - {name: config, mountPath: /etc/app-mode, subPath: mode}
        - {name: work, mountPath: /work}
        - {name: tmp, mountPath: /tmp}
        livenessProbe:
          httpGet: {path: /healthz, port: http}
          initialDelaySeconds: 10
        readinessProbe:
          tcpSocket: {port: 8080}
        startupProbe:
          exec: {command: [cat, /work/ready]}
          failureThreshold: 30
        lifecycle:
          preStop: {exec: {command: [sleep, "5"]}}
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL]}
        resources:
          requests: {cpu: 100m, memory: 128Mi}
          limits: {memory: 256Mi}
      volumes:
      - {name: config, configMap: {name: settings}}
      - {name: secret, secret: {secretName: creds}}
      - {name: work, emptyDir: {}}
      - name: tmp
"#;
    let file = s.write_file("chart.yaml", chart);
    s.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    let d: Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "deployment", "chart", "-o", "json"]))
            .expect("JSON");
    let spec = &d["spec"]["template"]["spec"];
    let app = &spec["containers"][0];
    // Upstream's defaults of what was left out.
    assert_eq!(app["livenessProbe"]["periodSeconds"], 10, "{spec}");
    assert_eq!(app["livenessProbe"]["timeoutSeconds"], 1);
    assert_eq!(app["livenessProbe"]["successThreshold"], 1);
    assert_eq!(app["livenessProbe"]["failureThreshold"], 3);
    assert_eq!(app["livenessProbe"]["httpGet"]["scheme"], "HTTP");
    assert_eq!(app["env"][2]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
    assert_eq!(spec["volumes"][0]["configMap"]["defaultMode"], 420);
    assert_eq!(
        spec["volumes"][3]["emptyDir"],
        json!({}),
        "a volume without a source is an emptyDir"
    );
    // A second apply of the same manifest changes nothing and is accepted.
    s.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);

    // The same spec as a pod.
    let pod = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: rich}}\nspec:\n{}",
        chart
            .split("    spec:\n")
            .nth(1)
            .expect("template spec")
            .lines()
            .map(|l| l.strip_prefix("    ").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let file = s.write_file("pod.yaml", &pod);
    s.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    let pod = pod_json(&s, "rich");
    assert_eq!(
        pod["spec"]["containers"][0]["startupProbe"]["failureThreshold"],
        30
    );
    // Applying it again (nothing changed) passes the pod update rules.
    s.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);

    // A StatefulSet's containers mount its claim templates.
    let sts = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  serviceName: db\n  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec:\n      containers:\n      - name: db\n        image: postgres:16\n        volumeMounts: [{name: data, mountPath: /var/lib/postgresql/data, subPath: pgdata}]\n  volumeClaimTemplates:\n  - metadata: {name: data}\n    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n";
    let file = s.write_file("sts.yaml", sts);
    s.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);

    // A variable defined twice is allowed, with upstream's warning.
    let twice = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: twice}\nspec:\n  selector: {matchLabels: {app: twice}}\n  template:\n    metadata: {labels: {app: twice}}\n    spec:\n      containers:\n      - name: c\n        image: nginx\n        env: [{name: A, value: '1'}, {name: A, value: '2'}]\n";
    let file = s.write_file("twice.yaml", twice);
    let out = s.kubectl(&["apply", "-f", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("Warning: spec.template.spec.containers[0].env[1]: hides previous definition of environment variable \"A\""),
        "{err}"
    );
}

/// Nodes: pod CIDRs and the provider ID are set once; PersistentVolumes need access
/// modes, a storage capacity and one source, which never changes.
#[tokio::test(flavor = "multi_thread")]
async fn nodes_and_persistent_volumes_follow_upstreams_rules() {
    let s = TestServer::start();
    let r = send(
        &s,
        "POST",
        "/api/v1/nodes",
        JSON,
        &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "spec": {"podCIDR": "10.244.1.0/24"}}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json["spec"]["podCIDRs"], json!(["10.244.1.0/24"]));
    // The provider ID may be set where there was none; neither changes after.
    s.kubectl_ok(&[
        "patch",
        "node",
        "n1",
        "-p",
        r#"{"spec":{"providerID":"kind://docker/n1"}}"#,
    ]);
    s.kubectl_ok(&["label", "node", "n1", "zone=a"]);
    s.kubectl_ok(&["cordon", "n1"]);
    let r = send(
        &s,
        "PATCH",
        "/api/v1/nodes/n1",
        MERGE,
        &json!({"spec": {"podCIDR": "10.244.2.0/24", "podCIDRs": ["10.244.2.0/24"], "providerID": "kind://docker/n2"}}),
    )
    .await;
    assert_eq!(
        invalid_causes(&r),
        vec![
            cause(
                "spec.podCIDRs",
                "Forbidden: node updates may not change podCIDR except from \"\" to valid"
            ),
            cause(
                "spec.providerID",
                "Forbidden: node updates may not change providerID except from \"\" to valid"
            ),
        ]
    );
    let r = send(
        &s,
        "POST",
        "/api/v1/nodes",
        JSON,
        &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}, "spec": {"podCIDRs": ["10.0.0.0/33"]}}),
    )
    .await;
    assert_eq!(
        invalid_causes(&r),
        vec![cause("spec.podCIDRs[0]", "Invalid value: \"10.0.0.0/33\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")]
    );

    // Taints, which upstream names under `metadata`.
    let r = send(
        &s,
        "PATCH",
        "/api/v1/nodes/n1",
        MERGE,
        &json!({"spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"},
                                    {"key": "dedicated", "value": "web", "effect": "NoSchedule"},
                                    {"key": "bad key", "effect": "Sometimes"}]}}),
    )
    .await;
    assert_eq!(
        invalid_causes(&r),
        vec![
            cause("metadata.taints[1]", "Duplicate value: core.Taint{Key:\"dedicated\", Value:\"web\", Effect:\"NoSchedule\", TimeAdded:(*v1.Time)(nil)}: taints must be unique by key and effect pair"),
            cause("metadata.taints[2].key", "Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
            cause("metadata.taints[2].effect", "Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""),
        ]
    );
    s.kubectl_ok(&["taint", "node", "n1", "dedicated=db:NoSchedule"]);

    let r = send(
        &s,
        "POST",
        "/api/v1/persistentvolumes",
        JSON,
        &json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "bad"},
                "spec": {"accessModes": ["ReadWriteSometimes"], "capacity": {"storage": "0"}}}),
    )
    .await;
    assert_eq!(
        invalid_causes(&r),
        vec![
            cause("spec.capacity[storage]", "Invalid value: \"0\": must be greater than zero"),
            cause("spec.accessModes", "Unsupported value: \"ReadWriteSometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\""),
            cause("spec", "Required value: must specify a volume type"),
        ]
    );
    let pv = "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv1}\nspec:\n  capacity: {storage: 5Gi}\n  accessModes: [ReadWriteOnce]\n  hostPath: {path: /data/pv1}\n";
    let file = s.write_file("pv.yaml", pv);
    s.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    let got: Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "pv", "pv1", "-o", "json"])).expect("JSON");
    assert_eq!(
        got["spec"]["persistentVolumeReclaimPolicy"], "Retain",
        "{got}"
    );
    assert_eq!(got["spec"]["volumeMode"], "Filesystem");
    assert_eq!(got["status"]["phase"], "Pending");
    // What binding and reclaiming change may change; the source may not.
    s.kubectl_ok(&[
        "patch",
        "pv",
        "pv1",
        "-p",
        r#"{"spec":{"persistentVolumeReclaimPolicy":"Delete"}}"#,
    ]);
    let out = s.kubectl(&[
        "patch",
        "pv",
        "pv1",
        "-p",
        r#"{"spec":{"hostPath":{"path":"/elsewhere"}}}"#,
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation"), "{err}");
}
