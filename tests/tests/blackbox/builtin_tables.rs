//! `kubectl get` of built-in kinds prints kube-apiserver's columns: the headers (and
//! `-o wide`'s) as upstream's table printers define them, and computed cells (a job's
//! status, completions and duration, an endpoints list cut at three, a role's CREATED AT).
//! The expected headers are written from upstream's printers, not read from this server.

use apiserver_tests::tables::{cells, column_names, rows};
use apiserver_tests::TestServer;

/// One object of each kind whose columns are checked.
const OBJECTS: &str = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  completions: 2
  parallelism: 1
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cj}
spec:
  schedule: "*/5 * * * *"
  timeZone: Etc/UTC
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: main, image: busybox}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec:
  replicas: 2
  selector: {matchLabels: {app: rs}}
  template:
    metadata: {labels: {app: rs}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: rc}
spec:
  replicas: 3
  selector: {app: rc}
  template:
    metadata: {labels: {app: rc}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds}
spec:
  selector: {matchLabels: {app: ds}}
  template:
    metadata: {labels: {app: ds}}
    spec:
      nodeSelector: {disk: ssd}
      containers: [{name: agent, image: busybox}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: sts}
spec:
  replicas: 2
  serviceName: sts
  selector: {matchLabels: {app: sts}}
  template:
    metadata: {labels: {app: sts}}
    spec: {containers: [{name: db, image: postgres}]}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: builder}
secrets: [{name: one}, {name: two}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: ep}
subsets:
- addresses: [{ip: 10.0.0.1}, {ip: 10.0.0.2}]
  ports: [{name: http, port: 80}, {name: https, port: 443}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: es}
addressType: IPv4
ports: [{name: http, port: 80}]
endpoints:
- addresses: [10.0.0.1]
- addresses: [10.0.0.2]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader}
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cluster-reader}
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {node-role.kubernetes.io/control-plane: ""}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv1}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce, ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: standard
  hostPath: {path: /data}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: pvc1}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: standard
  resources: {requests: {storage: 1Gi}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fast
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: example.com/fast
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ing}
spec:
  ingressClassName: nginx
  rules:
  - host: a.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend: {service: {name: web, port: {number: 80}}}
---
apiVersion: v1
kind: PodTemplate
metadata: {name: pt}
template:
  metadata: {labels: {app: web}}
  spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pdb}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np}
spec:
  podSelector: {matchLabels: {app: web}}
---
apiVersion: v1
kind: LimitRange
metadata: {name: lr}
spec:
  limits: [{type: Container, default: {cpu: 500m}}]
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: rq}
spec:
  hard: {pods: "10", limits.cpu: "2"}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: external}
spec:
  controller: example.com/ingress
  parameters: {apiGroup: k8s.example.com, kind: IngressParameters, name: external-lb}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: sandboxed}
handler: runsc
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: n1}
spec:
  drivers: [{name: csi.example.com, nodeID: n1}]
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: va}
spec:
  attacher: csi.example.com
  nodeName: n1
  source: {persistentVolumeName: pv1}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttributesClass
metadata: {name: gold}
driverName: csi.example.com
parameters: {iops: "3000"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: vwc}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: mwc}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: vap}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  validations: [{expression: "object.spec.replicas <= 5"}]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: pl}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 5
    limitResponse:
      type: Queue
      queuing: {queues: 16, handSize: 4, queueLengthLimit: 50}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: fs}
spec:
  priorityLevelConfiguration: {name: pl}
  matchingPrecedence: 1000
  distinguisherMethod: {type: ByUser}
"#;

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn kubectl_get_prints_kube_apiservers_columns_for_builtin_kinds() {
    let s = TestServer::start();
    let file = s.write_file("objects.yaml", OBJECTS);
    s.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
    // A revision the daemon set controls (its real uid, or the collector deletes it).
    let uid = s.kubectl_ok(&["get", "ds", "ds", "-o", "jsonpath={.metadata.uid}"]);
    let revision = s.write_file(
        "revision.yaml",
        &format!(
            "apiVersion: apps/v1\nkind: ControllerRevision\nmetadata:\n  name: ds-1\n  \
             ownerReferences: [{{apiVersion: apps/v1, kind: DaemonSet, name: ds, uid: {uid}, controller: true}}]\n\
             revision: 1\n"
        ),
    );
    s.kubectl_ok(&["create", "-f", revision.to_str().unwrap()]);

    // (resource, the header, the `-o wide` header), from upstream's printers.
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "jobs",
            &["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"],
            &[
                "NAME",
                "STATUS",
                "COMPLETIONS",
                "DURATION",
                "AGE",
                "CONTAINERS",
                "IMAGES",
                "SELECTOR",
            ],
        ),
        (
            "cronjobs",
            &[
                "NAME",
                "SCHEDULE",
                "TIMEZONE",
                "SUSPEND",
                "ACTIVE",
                "LAST SCHEDULE",
                "AGE",
            ],
            &[
                "NAME",
                "SCHEDULE",
                "TIMEZONE",
                "SUSPEND",
                "ACTIVE",
                "LAST SCHEDULE",
                "AGE",
                "CONTAINERS",
                "IMAGES",
                "SELECTOR",
            ],
        ),
        (
            "replicasets",
            &["NAME", "DESIRED", "CURRENT", "READY", "AGE"],
            &[
                "NAME",
                "DESIRED",
                "CURRENT",
                "READY",
                "AGE",
                "CONTAINERS",
                "IMAGES",
                "SELECTOR",
            ],
        ),
        (
            "replicationcontrollers",
            &["NAME", "DESIRED", "CURRENT", "READY", "AGE"],
            &[
                "NAME",
                "DESIRED",
                "CURRENT",
                "READY",
                "AGE",
                "CONTAINERS",
                "IMAGES",
                "SELECTOR",
            ],
        ),
        (
            "daemonsets",
            &[
                "NAME",
                "DESIRED",
                "CURRENT",
                "READY",
                "UP-TO-DATE",
                "AVAILABLE",
                "NODE SELECTOR",
                "AGE",
            ],
            &[
                "NAME",
                "DESIRED",
                "CURRENT",
                "READY",
                "UP-TO-DATE",
                "AVAILABLE",
                "NODE SELECTOR",
                "AGE",
                "CONTAINERS",
                "IMAGES",
                "SELECTOR",
            ],
        ),
        (
            "statefulsets",
            &["NAME", "READY", "AGE"],
            &["NAME", "READY", "AGE", "CONTAINERS", "IMAGES"],
        ),
        (
            "serviceaccounts",
            &["NAME", "SECRETS", "AGE"],
            &["NAME", "SECRETS", "AGE"],
        ),
        (
            "endpoints",
            &["NAME", "ENDPOINTS", "AGE"],
            &["NAME", "ENDPOINTS", "AGE"],
        ),
        (
            "endpointslices",
            &["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"],
            &["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"],
        ),
        ("roles", &["NAME", "CREATED AT"], &["NAME", "CREATED AT"]),
        (
            "clusterroles",
            &["NAME", "CREATED AT"],
            &["NAME", "CREATED AT"],
        ),
        (
            "priorityclasses",
            &["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"],
            &["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"],
        ),
        (
            "nodes",
            &["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
            &[
                "NAME",
                "STATUS",
                "ROLES",
                "AGE",
                "VERSION",
                "INTERNAL-IP",
                "EXTERNAL-IP",
                "OS-IMAGE",
                "KERNEL-VERSION",
                "CONTAINER-RUNTIME",
            ],
        ),
        (
            "persistentvolumes",
            &[
                "NAME",
                "CAPACITY",
                "ACCESS MODES",
                "RECLAIM POLICY",
                "STATUS",
                "CLAIM",
                "STORAGECLASS",
                "VOLUMEATTRIBUTESCLASS",
                "REASON",
                "AGE",
            ],
            &[
                "NAME",
                "CAPACITY",
                "ACCESS MODES",
                "RECLAIM POLICY",
                "STATUS",
                "CLAIM",
                "STORAGECLASS",
                "VOLUMEATTRIBUTESCLASS",
                "REASON",
                "AGE",
                "VOLUMEMODE",
            ],
        ),
        (
            "persistentvolumeclaims",
            &[
                "NAME",
                "STATUS",
                "VOLUME",
                "CAPACITY",
                "ACCESS MODES",
                "STORAGECLASS",
                "VOLUMEATTRIBUTESCLASS",
                "AGE",
            ],
            &[
                "NAME",
                "STATUS",
                "VOLUME",
                "CAPACITY",
                "ACCESS MODES",
                "STORAGECLASS",
                "VOLUMEATTRIBUTESCLASS",
                "AGE",
                "VOLUMEMODE",
            ],
        ),
        (
            "storageclasses",
            &[
                "NAME",
                "PROVISIONER",
                "RECLAIMPOLICY",
                "VOLUMEBINDINGMODE",
                "ALLOWVOLUMEEXPANSION",
                "AGE",
            ],
            &[
                "NAME",
                "PROVISIONER",
                "RECLAIMPOLICY",
                "VOLUMEBINDINGMODE",
                "ALLOWVOLUMEEXPANSION",
                "AGE",
            ],
        ),
        (
            "ingresses",
            &["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"],
            &["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"],
        ),
        (
            "controllerrevisions",
            &["NAME", "CONTROLLER", "REVISION", "AGE"],
            &["NAME", "CONTROLLER", "REVISION", "AGE"],
        ),
        (
            "podtemplates",
            &["NAME", "CONTAINERS", "IMAGES", "POD LABELS"],
            &["NAME", "CONTAINERS", "IMAGES", "POD LABELS"],
        ),
        (
            "poddisruptionbudgets",
            &[
                "NAME",
                "MIN AVAILABLE",
                "MAX UNAVAILABLE",
                "ALLOWED DISRUPTIONS",
                "AGE",
            ],
            &[
                "NAME",
                "MIN AVAILABLE",
                "MAX UNAVAILABLE",
                "ALLOWED DISRUPTIONS",
                "AGE",
            ],
        ),
        (
            "networkpolicies",
            &["NAME", "POD-SELECTOR", "AGE"],
            &["NAME", "POD-SELECTOR", "AGE"],
        ),
        (
            "limitranges",
            &["NAME", "CREATED AT"],
            &["NAME", "CREATED AT"],
        ),
        (
            "resourcequotas",
            &["NAME", "AGE", "REQUEST", "LIMIT"],
            &["NAME", "AGE", "REQUEST", "LIMIT"],
        ),
        (
            "ingressclasses",
            &["NAME", "CONTROLLER", "PARAMETERS", "AGE"],
            &["NAME", "CONTROLLER", "PARAMETERS", "AGE"],
        ),
        (
            "runtimeclasses",
            &["NAME", "HANDLER", "AGE"],
            &["NAME", "HANDLER", "AGE"],
        ),
        (
            "csinodes",
            &["NAME", "DRIVERS", "AGE"],
            &["NAME", "DRIVERS", "AGE"],
        ),
        (
            "volumeattachments",
            &["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"],
            &["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"],
        ),
        (
            "volumeattributesclasses",
            &["NAME", "DRIVERNAME", "AGE"],
            &["NAME", "DRIVERNAME", "AGE"],
        ),
        (
            "validatingwebhookconfigurations",
            &["NAME", "WEBHOOKS", "AGE"],
            &["NAME", "WEBHOOKS", "AGE"],
        ),
        (
            "mutatingwebhookconfigurations",
            &["NAME", "WEBHOOKS", "AGE"],
            &["NAME", "WEBHOOKS", "AGE"],
        ),
        (
            "validatingadmissionpolicies",
            &["NAME", "VALIDATIONS", "PARAMKIND", "AGE"],
            &["NAME", "VALIDATIONS", "PARAMKIND", "AGE"],
        ),
        (
            "flowschemas",
            &[
                "NAME",
                "PRIORITYLEVEL",
                "MATCHINGPRECEDENCE",
                "DISTINGUISHERMETHOD",
                "AGE",
                "MISSINGPL",
            ],
            &[
                "NAME",
                "PRIORITYLEVEL",
                "MATCHINGPRECEDENCE",
                "DISTINGUISHERMETHOD",
                "AGE",
                "MISSINGPL",
            ],
        ),
        (
            "prioritylevelconfigurations",
            &[
                "NAME",
                "TYPE",
                "NOMINALCONCURRENCYSHARES",
                "QUEUES",
                "HANDSIZE",
                "QUEUELENGTHLIMIT",
                "AGE",
            ],
            &[
                "NAME",
                "TYPE",
                "NOMINALCONCURRENCYSHARES",
                "QUEUES",
                "HANDSIZE",
                "QUEUELENGTHLIMIT",
                "AGE",
            ],
        ),
    ];
    for (resource, narrow, wide) in cases {
        let t = s.kubectl_ok(&["get", resource]);
        assert_eq!(
            column_names(&t),
            names(narrow),
            "kubectl get {resource}:\n{t}"
        );
        let t = s.kubectl_ok(&["get", resource, "-o", "wide"]);
        assert_eq!(
            column_names(&t),
            names(wide),
            "kubectl get {resource} -o wide:\n{t}"
        );
    }

    // A job not started: Running, none of two done, no duration yet.
    let t = s.kubectl_ok(&["get", "job", "j", "-o", "wide"]);
    let c = cells(&t, "j");
    assert_eq!(c[1..4], ["Running", "0/2", ""], "{t}");
    assert_eq!(c[5..7], ["main", "busybox"], "{t}");
    assert!(
        c[7].starts_with("batch.kubernetes.io/controller-uid="),
        "{t}"
    );
    // Finished in 90 seconds: Complete, 2/2, 90s.
    s.kubectl_ok(&[
        "patch",
        "job",
        "j",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"startTime":"2024-01-01T00:00:00Z","completionTime":"2024-01-01T00:01:30Z","succeeded":2,"conditions":[{"type":"SuccessCriteriaMet","status":"True"},{"type":"Complete","status":"True"}]}}"#,
    ]);
    let t = s.kubectl_ok(&["get", "job", "j"]);
    assert_eq!(cells(&t, "j")[1..4], ["Complete", "2/2", "90s"], "{t}");

    // Not suspended: upstream's default, printed False.
    let t = s.kubectl_ok(&["get", "cronjob", "cj"]);
    assert_eq!(
        cells(&t, "cj")[1..6],
        ["*/5 * * * *", "Etc/UTC", "False", "0", "<none>"],
        "{t}"
    );
    let defaults = s.kubectl_ok(&[
        "get",
        "cronjob",
        "cj",
        "-o",
        "jsonpath={.spec.concurrencyPolicy},{.spec.successfulJobsHistoryLimit},{.spec.failedJobsHistoryLimit}",
    ]);
    assert_eq!(defaults, "Allow,3,1");

    // Every port of every address, the first three, and how many more.
    let t = s.kubectl_ok(&["get", "endpoints", "ep"]);
    assert_eq!(
        cells(&t, "ep")[1],
        "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...",
        "{t}"
    );
    let t = s.kubectl_ok(&["get", "endpointslice", "es"]);
    assert_eq!(
        cells(&t, "es")[1..4],
        ["IPv4", "80", "10.0.0.1,10.0.0.2"],
        "{t}"
    );

    let t = s.kubectl_ok(&["get", "sa", "builder"]);
    assert_eq!(cells(&t, "builder")[1], "2", "{t}");
    let t = s.kubectl_ok(&["get", "rs", "rs", "-o", "wide"]);
    assert_eq!(
        cells(&t, "rs"),
        [
            "rs",
            "2",
            "0",
            "0",
            cells(&t, "rs")[4].as_str(),
            "web",
            "nginx",
            "app=rs"
        ],
        "{t}"
    );
    let t = s.kubectl_ok(&["get", "rc", "rc", "-o", "wide"]);
    assert_eq!(cells(&t, "rc")[7], "app=rc", "{t}");
    let t = s.kubectl_ok(&["get", "ds", "ds"]);
    assert_eq!(cells(&t, "ds")[6], "disk=ssd", "{t}");
    let t = s.kubectl_ok(&["get", "sts", "sts"]);
    assert_eq!(cells(&t, "sts")[1], "0/2", "{t}");

    // CREATED AT is the creation time in RFC 3339, not an age.
    let created = s.kubectl_ok(&[
        "get",
        "role",
        "reader",
        "-o",
        "jsonpath={.metadata.creationTimestamp}",
    ]);
    let t = s.kubectl_ok(&["get", "role", "reader"]);
    assert_eq!(cells(&t, "reader")[1], created.trim(), "{t}");
    assert!(
        created.trim().ends_with('Z') && created.contains('T'),
        "{created}"
    );

    // AGE before PREEMPTIONPOLICY, upstream's default policy.
    let t = s.kubectl_ok(&["get", "pc", "high"]);
    let c = cells(&t, "high");
    assert_eq!(
        (c[1].as_str(), c[2].as_str(), c[4].as_str()),
        ("1000", "false", "PreemptLowerPriority"),
        "{t}"
    );

    // A node that never reported: Unknown; its role from the label.
    let t = s.kubectl_ok(&["get", "node", "n1", "-o", "wide"]);
    let c = cells(&t, "n1");
    assert_eq!(c[1..3], ["Unknown", "control-plane"], "{t}");
    assert_eq!(
        c[5..],
        ["<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"],
        "{t}"
    );

    let t = s.kubectl_ok(&["get", "pv", "pv1"]);
    let c = cells(&t, "pv1");
    assert_eq!(c[1..4], ["1Gi", "RWO,RWX", "Retain"], "{t}");
    assert_eq!(c[6..8], ["standard", "<unset>"], "{t}");

    // The default class's name says so.
    let t = s.kubectl_ok(&["get", "sc", "fast"]);
    assert_eq!(
        cells(&t, "fast")[..5],
        [
            "fast (default)",
            "example.com/fast",
            "Delete",
            "Immediate",
            "false"
        ],
        "{t}"
    );
    let t = s.kubectl_ok(&["get", "ingress", "ing"]);
    let c = cells(&t, "ing");
    assert_eq!(
        (c[1].as_str(), c[2].as_str(), c[4].as_str()),
        ("nginx", "a.example.com", "80"),
        "{t}"
    );

    let one = |resource: &str, name: &str| cells(&s.kubectl_ok(&["get", resource, name]), name);
    assert_eq!(
        one("controllerrevision", "ds-1")[1..3],
        ["daemonset.apps/ds", "1"]
    );
    assert_eq!(one("podtemplate", "pt"), ["pt", "web", "nginx", "app=web"]);
    assert_eq!(one("pdb", "pdb")[1..4], ["1", "N/A", "0"]);
    assert_eq!(one("netpol", "np")[1], "app=web");
    assert_eq!(
        one("ingressclass", "external")[1..3],
        [
            "example.com/ingress",
            "IngressParameters.k8s.example.com/external-lb"
        ]
    );
    assert_eq!(one("runtimeclass", "sandboxed")[1], "runsc");
    assert_eq!(one("csinode", "n1")[1], "1");
    assert_eq!(
        one("volumeattachment", "va")[1..5],
        ["csi.example.com", "pv1", "n1", "false"]
    );
    assert_eq!(one("volumeattributesclass", "gold")[1], "csi.example.com");
    assert_eq!(one("validatingwebhookconfiguration", "vwc")[1], "0");
    assert_eq!(
        one("validatingadmissionpolicy", "vap")[1..3],
        ["1", "<unset>"]
    );
    assert_eq!(one("flowschema", "fs")[1..4], ["pl", "1000", "ByUser"]);
    assert_eq!(
        one("prioritylevelconfiguration", "pl")[1..6],
        ["Limited", "5", "16", "4", "50"]
    );
}

/// `kubectl get events` prints upstream's event columns: no leading NAME (the last wide
/// column), no AGE, the object as `kind/name`, the source as `component, host`.
#[test]
fn kubectl_get_events_prints_kube_apiservers_event_columns() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "ev"]);
    let event = s.write_file(
        "event.yaml",
        "apiVersion: v1\nkind: Event\nmetadata: {name: web.1, namespace: ev}\n\
         involvedObject: {kind: Pod, name: web, namespace: ev, fieldPath: \"spec.containers{web}\"}\n\
         reason: BackOff\nmessage: \"  Back-off restarting failed container  \"\ntype: Warning\n\
         source: {component: kubelet, host: n1}\ncount: 7\n\
         firstTimestamp: \"2024-01-01T00:00:00Z\"\nlastTimestamp: \"2024-01-01T00:00:00Z\"\n",
    );
    s.kubectl_ok(&["create", "-f", event.to_str().unwrap()]);

    let t = s.kubectl_ok(&["get", "events", "-n", "ev"]);
    assert_eq!(
        column_names(&t),
        ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        "{t}"
    );
    let r = rows(&t);
    assert_eq!(r.len(), 1, "{t}");
    assert_eq!(
        r[0][1..],
        [
            "Warning",
            "BackOff",
            "pod/web",
            "Back-off restarting failed container"
        ],
        "{t}"
    );
    assert!(
        r[0][0].ends_with('d') || r[0][0].ends_with('y'),
        "an age: {t}"
    );

    let t = s.kubectl_ok(&["get", "events", "-n", "ev", "-o", "wide"]);
    assert_eq!(
        column_names(&t),
        [
            "LAST SEEN",
            "TYPE",
            "REASON",
            "OBJECT",
            "SUBOBJECT",
            "SOURCE",
            "MESSAGE",
            "FIRST SEEN",
            "COUNT",
            "NAME"
        ],
        "{t}"
    );
    let r = rows(&t);
    assert_eq!(r[0][4..6], ["spec.containers{web}", "kubelet, n1"], "{t}");
    assert_eq!(r[0][8..], ["7", "web.1"], "{t}");
}
