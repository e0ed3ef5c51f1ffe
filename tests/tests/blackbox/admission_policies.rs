//! ValidatingAdmissionPolicy: CEL validations bound to requests by
//! ValidatingAdmissionPolicyBindings, tried with kubectl: Deny refuses with the
//! policy's message, Warn warns, parameters come from another object, variables and
//! match conditions work, a policy whose expression does not compile is refused, and an
//! expression too costly for the object it sees fails by the policy's failurePolicy.

use std::time::{Duration, Instant};

use apiserver_tests::TestServer;

fn apply(s: &TestServer, name: &str, manifest: &str) {
    let file = s.write_file(name, manifest);
    s.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
}

/// A policy on ConfigMaps in namespaces labelled `policies=on`, and its binding.
fn require_team_label(s: &TestServer, actions: &str) {
    apply(
        s,
        "team-policy.yaml",
        &format!(
            "\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: require-team
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - {{apiGroups: [''], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}}
  matchConditions:
    - name: not-skipped
      expression: \"!object.metadata.name.startsWith('skip-')\"
  variables:
    - name: labels
      expression: \"has(object.metadata.labels) ? object.metadata.labels : {{}}\"
  validations:
    - expression: \"'team' in variables.labels\"
      message: every ConfigMap needs a team label
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: require-team-binding
spec:
  policyName: require-team
  validationActions: [{actions}]
  matchResources:
    namespaceSelector: {{matchLabels: {{policies: 'on'}}}}
"
        ),
    );
}

/// Waits until a server-side dry run of `args` fails with `want` in kubectl's error.
fn wait_until_refused(s: &TestServer, args: &[&str], want: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut args = args.to_vec();
    args.push("--dry-run=server");
    loop {
        let out = s.kubectl(&args);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        if !out.status.success() && stderr.contains(want) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the policy never refused {args:?} with {want:?}; last answer: {stderr}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_deny_binding_refuses_with_the_policy_message_where_it_matches() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "guarded"]);
    s.kubectl_ok(&["label", "namespace", "guarded", "policies=on"]);
    require_team_label(&s, "Deny");
    let create = [
        "create",
        "configmap",
        "c",
        "-n",
        "guarded",
        "--from-literal=a=1",
    ];
    wait_until_refused(&s, &create, "every ConfigMap needs a team label");

    let refused = s.kubectl_err(&create);
    assert!(
        refused.contains(
            "ValidatingAdmissionPolicy 'require-team' with binding 'require-team-binding' denied request: every ConfigMap needs a team label"
        ),
        "{refused}"
    );
    assert!(!s
        .kubectl(&["get", "configmap", "c", "-n", "guarded"])
        .status
        .success());

    // What the policy allows: a team label, a skipped name, another namespace.
    let labelled =
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":{"team":"a"}}}"#;
    let out = s.kubectl_with_stdin(&["create", "-n", "guarded", "-f", "-"], Some(labelled));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    s.kubectl_ok(&["create", "configmap", "skip-me", "-n", "guarded"]);
    s.kubectl_ok(&["create", "configmap", "c"]);
    // Updates are checked too: removing the label is refused.
    let refused = s.kubectl_err(&["label", "configmap", "c", "-n", "guarded", "team-"]);
    assert!(
        refused.contains("every ConfigMap needs a team label"),
        "{refused}"
    );
}

#[test]
fn a_warn_binding_lets_the_write_through_with_a_kubectl_warning() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "guarded"]);
    s.kubectl_ok(&["label", "namespace", "guarded", "policies=on"]);
    require_team_label(&s, "Warn");
    let want = "Warning: Validation failed for ValidatingAdmissionPolicy 'require-team' with binding 'require-team-binding': every ConfigMap needs a team label";
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = s.kubectl(&[
            "create",
            "configmap",
            "probe",
            "-n",
            "guarded",
            "--dry-run=server",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if String::from_utf8_lossy(&out.stderr).contains(want) {
            break;
        }
        assert!(Instant::now() < deadline, "no warning came");
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = s.kubectl(&["create", "configmap", "w", "-n", "guarded"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains(want));
    s.kubectl_ok(&["get", "configmap", "w", "-n", "guarded"]);
}

#[test]
fn parameters_come_from_the_object_the_binding_names() {
    let s = TestServer::start();
    s.kubectl_ok(&[
        "create",
        "configmap",
        "secret-limits",
        "--from-literal=maxKeys=2",
    ]);
    apply(
        &s,
        "limits.yaml",
        "\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: secret-size
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
      - {apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [secrets]}
  validations:
    - expression: \"!has(object.data) || size(object.data) <= int(params.data.maxKeys)\"
      messageExpression: \"'a secret may hold ' + params.data.maxKeys + ' keys, this one has ' + string(size(object.data))\"
      reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: secret-size-default
spec:
  policyName: secret-size
  validationActions: [Deny]
  paramRef: {name: secret-limits, namespace: default, parameterNotFoundAction: Deny}
",
    );
    let three = [
        "create",
        "secret",
        "generic",
        "big",
        "--from-literal=a=1",
        "--from-literal=b=2",
        "--from-literal=c=3",
    ];
    wait_until_refused(&s, &three, "a secret may hold 2 keys, this one has 3");
    let refused = s.kubectl_err(&three);
    assert!(
        refused.contains("secrets \"big\" is forbidden: ValidatingAdmissionPolicy 'secret-size' with binding 'secret-size-default' denied request: a secret may hold 2 keys, this one has 3"),
        "{refused}"
    );
    s.kubectl_ok(&["create", "secret", "generic", "small", "--from-literal=a=1"]);

    // The parameter changes, the verdict follows; without it, Deny refuses everything.
    s.kubectl_ok(&[
        "patch",
        "configmap",
        "secret-limits",
        "--type=merge",
        "-p",
        r#"{"data":{"maxKeys":"3"}}"#,
    ]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !s
        .kubectl(&[&three[..], &["--dry-run=server"]].concat())
        .status
        .success()
    {
        assert!(Instant::now() < deadline, "the new parameter never applied");
        std::thread::sleep(Duration::from_millis(100));
    }
    s.kubectl_ok(&three);
    s.kubectl_ok(&["delete", "configmap", "secret-limits"]);
    wait_until_refused(
        &s,
        &["create", "secret", "generic", "any", "--from-literal=a=1"],
        "no params found for policy binding with `Deny` parameterNotFoundAction",
    );
}

#[test]
fn a_policy_that_does_not_compile_or_a_binding_that_makes_no_sense_is_refused() {
    let s = TestServer::start();
    let file = s.write_file(
        "broken.yaml",
        "\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: broken
spec:
  matchConstraints:
    resourceRules:
      - {apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
    - expression: \"object.metadata.name ==\"
",
    );
    let refused = s.kubectl_err(&["apply", "-f", file.to_str().unwrap()]);
    assert!(
        refused.contains("spec.validations[0].expression")
            && refused.contains("compilation failed"),
        "{refused}"
    );
    let file = s.write_file(
        "binding.yaml",
        "\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: both
spec:
  policyName: anything
  validationActions: [Deny, Warn]
",
    );
    let refused = s.kubectl_err(&["apply", "-f", file.to_str().unwrap()]);
    assert!(
        refused.contains("spec.validationActions") && refused.contains("may not contain both"),
        "{refused}"
    );
}

/// A policy on Deployments with one validation, `expression`.
fn replicas_policy(expression: &str) -> String {
    format!(
        "\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replicas
spec:
  matchConstraints:
    resourceRules:
      - {{apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}}
  validations:
    - expression: \"{expression}\"
"
    )
}

/// The policy's status once it was written for `generation`.
fn status_for_generation(s: &TestServer, name: &str, generation: u64) -> serde_yaml::Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let yaml = s.kubectl_ok(&["get", "validatingadmissionpolicy", name, "-o", "yaml"]);
        let policy: serde_yaml::Value = serde_yaml::from_str(&yaml).unwrap();
        if policy["status"]["observedGeneration"].as_u64() == Some(generation) {
            return policy["status"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "no status for generation {generation}:\n{yaml}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_policy_selecting_a_field_its_kind_lacks_gets_a_type_checking_warning_in_its_status() {
    let s = TestServer::start();
    apply(&s, "replicas.yaml", &replicas_policy("object.replicas > 1"));
    let status = status_for_generation(&s, "replicas", 1);
    let warnings = status["typeChecking"]["expressionWarnings"]
        .as_sequence()
        .unwrap_or_else(|| panic!("no warnings: {status:?}"));
    assert_eq!(warnings.len(), 1, "{status:?}");
    assert_eq!(
        warnings[0]["fieldRef"].as_str(),
        Some("spec.validations[0].expression")
    );
    assert_eq!(
        warnings[0]["warning"].as_str(),
        Some(
            "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n | ......^\n"
        )
    );

    // Fixed: the next generation is checked and has nothing to say.
    apply(
        &s,
        "replicas.yaml",
        &replicas_policy("object.spec.replicas > 1"),
    );
    let status = status_for_generation(&s, "replicas", 2);
    assert!(
        status["typeChecking"]["expressionWarnings"].is_null(),
        "{status:?}"
    );
}

#[test]
fn a_policy_for_one_crd_version_checks_writes_to_the_other_converted_to_its_version() {
    let s = TestServer::start();
    let crd = s.write_file("gizmos.yaml", apiserver_tests::objects::GIZMOS_CRD);
    apiserver_tests::objects::install_crd(&s, &crd, "gizmos.example.com");
    // Written for v1 objects; matchPolicy left to its default (Equivalent).
    apply(
        &s,
        "gizmo-policy.yaml",
        "\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: v1-gizmos
spec:
  matchConstraints:
    resourceRules:
      - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [gizmos]}
  validations:
    - expression: \"object.apiVersion == 'example.com/v1' && !has(object.spec.forbidden)\"
      messageExpression: \"'seen as ' + object.apiVersion + ', forbidden set'\"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: v1-gizmos
spec:
  policyName: v1-gizmos
  validationActions: [Deny]
",
    );
    let v2 = s.write_file(
        "v2.yaml",
        "apiVersion: example.com/v2\nkind: Gizmo\nmetadata: {name: g}\nspec: {forbidden: true}\n",
    );
    let v2 = v2.to_str().unwrap();
    wait_until_refused(
        &s,
        &["create", "-f", v2],
        "seen as example.com/v1, forbidden set",
    );
    let refused = s.kubectl_err(&["create", "-f", v2]);
    assert!(
        refused.contains(
            "ValidatingAdmissionPolicy 'v1-gizmos' with binding 'v1-gizmos' denied request: seen as example.com/v1, forbidden set"
        ),
        "{refused}"
    );
    // The same object without the field passes: the policy saw a v1 object.
    let fine = s.write_file(
        "fine.yaml",
        "apiVersion: example.com/v2\nkind: Gizmo\nmetadata: {name: g}\nspec: {}\n",
    );
    s.kubectl_ok(&["create", "-f", fine.to_str().unwrap()]);
}

/// A ConfigMap manifest named `name` with `keys` data entries.
fn configmap_with_keys(name: &str, keys: usize) -> String {
    let data: String = (0..keys).map(|i| format!("  k{i}: v\n")).collect();
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n{data}")
}

#[test]
fn an_expression_too_costly_for_the_object_it_sees_fails_by_the_failure_policy() {
    let s = TestServer::start();
    // Quadratic in the number of keys: cheap on a few, over upstream's per-call limit
    // (1,000,000) on a thousand.
    apply(
        &s,
        "pairs-policy.yaml",
        "\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: pairs
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - {apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
    - expression: \"!has(object.data) || object.data.all(a, object.data.all(b, size(object.data[a]) + size(object.data[b]) >= 0))\"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: pairs-binding
spec:
  policyName: pairs
  validationActions: [Deny]
",
    );
    let big = s.write_file("big.yaml", &configmap_with_keys("big", 1000));
    let big = big.to_str().unwrap();
    let want = "ValidatingAdmissionPolicy 'pairs' with binding 'pairs-binding' denied request: expression '!has(object.data) || object.data.all(a, object.data.all(b, size(object.data[a]) + size(object.data[b]) >= 0))' resulted in error: operation cancelled: actual cost limit exceeded";
    wait_until_refused(&s, &["create", "-f", big], want);

    // The same policy admits an object small enough to evaluate it on.
    let small = s.write_file("small.yaml", &configmap_with_keys("small", 3));
    s.kubectl_ok(&["create", "-f", small.to_str().unwrap()]);
    s.kubectl_ok(&["get", "configmap", "small"]);

    let out = s.kubectl(&["create", "-f", big]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains(want), "{stderr}");
    let out = s.kubectl(&["get", "configmap", "big"]);
    assert!(!out.status.success(), "the refused ConfigMap was stored");
}
