//! The one endpoints table: which paths a resource has, and which verbs each path serves.
//!
//! The server routes requests with it, discovery lists its verbs and subresources, and the
//! OpenAPI emitter writes one operation per entry, so the three cannot disagree.

use crate::model::ResourceDef;

/// A Kubernetes API verb, as authorization and discovery name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verb {
    Create,
    Delete,
    DeleteCollection,
    Get,
    List,
    Patch,
    Update,
    Watch,
}

impl Verb {
    /// Every verb, in the order discovery lists them (by name).
    pub const ALL: [Verb; 8] = [
        Verb::Create,
        Verb::Delete,
        Verb::DeleteCollection,
        Verb::Get,
        Verb::List,
        Verb::Patch,
        Verb::Update,
        Verb::Watch,
    ];

    /// The verb's wire name (`deletecollection`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Create => "create",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Patch => "patch",
            Verb::Update => "update",
            Verb::Watch => "watch",
        }
    }

    /// The verb named `s`, if it is one.
    pub fn parse(s: &str) -> Option<Verb> {
        Some(match s {
            "create" => Verb::Create,
            "delete" => Verb::Delete,
            "deletecollection" => Verb::DeleteCollection,
            "get" => Verb::Get,
            "list" => Verb::List,
            "patch" => Verb::Patch,
            "update" => Verb::Update,
            "watch" => Verb::Watch,
            _ => return None,
        })
    }
}

/// A subresource the generic handlers serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Subresource {
    /// `/status`: the status written apart from the rest.
    Status,
    /// `/scale`: an `autoscaling/v1` `Scale` view of replica fields.
    Scale,
    /// A create-only subresource whose body is another kind: the definition's
    /// `subresources.createOnly[i]`.
    CreateOnly(u8),
    /// A subresource that answers the object and writes one part of it: the
    /// definition's `subresources.parts[i]`.
    Part(u8),
}

impl Subresource {
    /// The path segment (`d` is the definition that has the subresource).
    pub fn name(self, d: &ResourceDef) -> &str {
        match self {
            Subresource::Status => "status",
            Subresource::Scale => "scale",
            Subresource::CreateOnly(i) => d
                .subresources
                .create_only
                .get(usize::from(i))
                .map_or("", |s| s.name.as_str()),
            Subresource::Part(i) => d
                .subresources
                .parts
                .get(usize::from(i))
                .map_or("", |s| s.name.as_str()),
        }
    }

    /// The subresource of `d` named `s`, if it has one.
    pub fn parse(d: &ResourceDef, s: &str) -> Option<Subresource> {
        subresources(d).into_iter().find(|sub| sub.name(d) == s)
    }
}

/// What a path addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PathKind {
    /// The collection: in one namespace (namespaced kinds) or the whole kind (cluster-scoped).
    Collection,
    /// Every namespace of a namespaced kind (`/api/v1/configmaps`).
    AllNamespaces,
    /// One object.
    Object,
    /// A subresource of one object.
    Subresource(Subresource),
    /// The deprecated `/watch/` form of [`PathKind::Collection`].
    WatchCollection,
    /// The deprecated `/watch/` form of [`PathKind::AllNamespaces`].
    WatchAllNamespaces,
    /// The deprecated `/watch/` form of [`PathKind::Object`].
    WatchObject,
}

/// One HTTP method on a path, and the verb it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operation {
    /// Lower-case HTTP method.
    pub method: &'static str,
    pub verb: Verb,
}

/// One path of a resource and what it serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The path with `{namespace}` and `{name}` placeholders.
    pub path: String,
    pub kind: PathKind,
    pub operations: Vec<Operation>,
}

const fn op(method: &'static str, verb: Verb) -> Operation {
    Operation { method, verb }
}

const COLLECTION: &[Operation] = &[
    op("get", Verb::List),
    op("post", Verb::Create),
    op("delete", Verb::DeleteCollection),
];
const OBJECT: &[Operation] = &[
    op("get", Verb::Get),
    op("put", Verb::Update),
    op("delete", Verb::Delete),
    op("patch", Verb::Patch),
];
const SUBRESOURCE: &[Operation] = &[
    op("get", Verb::Get),
    op("put", Verb::Update),
    op("patch", Verb::Patch),
];
const LIST: &[Operation] = &[op("get", Verb::List)];
const CREATE: &[Operation] = &[op("post", Verb::Create)];
const WATCH: &[Operation] = &[op("get", Verb::Watch)];

/// Whether `d` serves `verb` on the resource itself: every verb unless its definition
/// lists some (subresources keep their own operations).
pub fn serves(d: &ResourceDef, verb: Verb) -> bool {
    d.verbs.is_empty() || d.verbs.iter().any(|v| v == verb.as_str())
}

/// The subresources `d` declares, sorted by name.
pub fn subresources(d: &ResourceDef) -> Vec<Subresource> {
    let mut subs = Vec::new();
    if d.subresources.scale.is_some() {
        subs.push(Subresource::Scale);
    }
    if d.subresources.status {
        subs.push(Subresource::Status);
    }
    // At most 256 (a u8 index); the validator refuses duplicate names, not counts, so
    // any beyond are ignored rather than aliased.
    for i in 0..d.subresources.create_only.len().min(256) {
        subs.push(Subresource::CreateOnly(i as u8));
    }
    for i in 0..d.subresources.parts.len().min(256) {
        subs.push(Subresource::Part(i as u8));
    }
    subs.sort_by(|a, b| a.name(d).cmp(b.name(d)));
    subs
}

/// Every path of `d`, in the order the OpenAPI documents list them.
pub fn endpoints(d: &ResourceDef) -> Vec<Endpoint> {
    let prefix = d.url_prefix();
    let plural = &d.plural;
    let namespaced = d.namespaced();
    let base = if namespaced {
        format!("{prefix}/namespaces/{{namespace}}/{plural}")
    } else {
        format!("{prefix}/{plural}")
    };
    let watch_base = if namespaced {
        format!("{prefix}/watch/namespaces/{{namespace}}/{plural}")
    } else {
        format!("{prefix}/watch/{plural}")
    };
    let at = |path: String, kind: PathKind, ops: &[Operation]| Endpoint {
        path,
        kind,
        operations: match kind {
            PathKind::Subresource(_) => ops.to_vec(),
            _ => ops.iter().copied().filter(|o| serves(d, o.verb)).collect(),
        },
    };
    if d.create_only {
        // Not stored: POST on the collection is the one endpoint.
        return vec![at(base, PathKind::Collection, CREATE)];
    }
    let mut out = vec![
        at(base.clone(), PathKind::Collection, COLLECTION),
        at(format!("{base}/{{name}}"), PathKind::Object, OBJECT),
    ];
    // Status before scale, as the documents have always listed them.
    for sub in subresources(d).into_iter().rev() {
        let ops = match sub {
            Subresource::CreateOnly(_) => CREATE,
            _ => SUBRESOURCE,
        };
        let mut endpoint = at(
            format!("{base}/{{name}}/{}", sub.name(d)),
            PathKind::Subresource(sub),
            ops,
        );
        if let Subresource::Part(i) = sub {
            // A part subresource may serve fewer verbs (`namespaces/finalize`: update).
            let verbs = d
                .subresources
                .parts
                .get(usize::from(i))
                .map(|p| p.verbs.as_slice())
                .unwrap_or_default();
            if !verbs.is_empty() {
                endpoint
                    .operations
                    .retain(|o| verbs.iter().any(|v| v == o.verb.as_str()));
            }
        }
        out.push(endpoint);
    }
    out.push(at(watch_base.clone(), PathKind::WatchCollection, WATCH));
    out.push(at(
        format!("{watch_base}/{{name}}"),
        PathKind::WatchObject,
        WATCH,
    ));
    if namespaced {
        out.push(at(
            format!("{prefix}/watch/{plural}"),
            PathKind::WatchAllNamespaces,
            WATCH,
        ));
        out.push(at(
            format!("{prefix}/{plural}"),
            PathKind::AllNamespaces,
            LIST,
        ));
    }
    // A path left with no verb (`verbs:` leaves some out) is not served at all.
    out.retain(|e| !e.operations.is_empty());
    out
}

/// The verbs served on the resource itself (`None`) or on a subresource, sorted as
/// discovery lists them. `watch` comes from the `/watch/` paths, which exist wherever
/// watching is served (and then `?watch=true` on a list path too).
pub fn verbs(endpoints: &[Endpoint], subresource: Option<Subresource>) -> Vec<Verb> {
    let mut verbs: Vec<Verb> = endpoints
        .iter()
        .filter(|e| match e.kind {
            PathKind::Subresource(s) => Some(s) == subresource,
            _ => subresource.is_none(),
        })
        .flat_map(|e| e.operations.iter().map(|o| o.verb))
        .collect();
    verbs.sort();
    verbs.dedup();
    verbs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(namespaced: bool, status: bool, scale: bool) -> ResourceDef {
        let yaml = format!(
            "group: example.dev\nversion: v1\nkind: Widget\nscope: {}\n{}schema:\n  type: object\n  properties:\n    spec:\n      type: object\n      properties:\n        replicas: {{type: integer}}\n    status:\n      type: object\n      properties:\n        replicas: {{type: integer}}\n",
            if namespaced { "Namespaced" } else { "Cluster" },
            match (status, scale) {
                (false, false) => String::new(),
                (s, sc) => format!(
                    "subresources:\n{}{}",
                    if s { "  status: {}\n" } else { "" },
                    if sc {
                        "  scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}\n"
                    } else {
                        ""
                    }
                ),
            }
        );
        let mut diags = crate::Diagnostics::default();
        crate::load::yaml::load("w.yaml", &yaml, &mut diags).expect("test definition loads")
    }

    #[test]
    fn namespaced_kinds_have_all_namespace_paths_and_cluster_kinds_do_not() {
        let paths =
            |d: &ResourceDef| -> Vec<String> { endpoints(d).into_iter().map(|e| e.path).collect() };
        assert_eq!(
            paths(&def(true, true, true)),
            [
                "/apis/example.dev/v1/namespaces/{namespace}/widgets",
                "/apis/example.dev/v1/namespaces/{namespace}/widgets/{name}",
                "/apis/example.dev/v1/namespaces/{namespace}/widgets/{name}/status",
                "/apis/example.dev/v1/namespaces/{namespace}/widgets/{name}/scale",
                "/apis/example.dev/v1/watch/namespaces/{namespace}/widgets",
                "/apis/example.dev/v1/watch/namespaces/{namespace}/widgets/{name}",
                "/apis/example.dev/v1/watch/widgets",
                "/apis/example.dev/v1/widgets",
            ]
        );
        assert_eq!(
            paths(&def(false, false, false)),
            [
                "/apis/example.dev/v1/widgets",
                "/apis/example.dev/v1/widgets/{name}",
                "/apis/example.dev/v1/watch/widgets",
                "/apis/example.dev/v1/watch/widgets/{name}",
            ]
        );
    }

    #[test]
    fn verbs_are_what_discovery_lists() {
        let e = endpoints(&def(true, true, false));
        let names = |v: Vec<Verb>| v.into_iter().map(Verb::as_str).collect::<Vec<_>>();
        assert_eq!(
            names(verbs(&e, None)),
            [
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch"
            ]
        );
        assert_eq!(
            names(verbs(&e, Some(Subresource::Status))),
            ["get", "patch", "update"]
        );
        assert!(verbs(&e, Some(Subresource::Scale)).is_empty());
    }

    #[test]
    fn create_only_kinds_and_subresources_serve_post_alone() {
        let mut review = def(false, false, false);
        review.create_only = true;
        let e = endpoints(&review);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].path, "/apis/example.dev/v1/widgets");
        assert_eq!(verbs(&e, None), [Verb::Create]);

        let mut parent = def(true, true, false);
        parent
            .subresources
            .create_only
            .push(crate::model::CreateOnlySubresource {
                name: "token".into(),
                group: "authentication.k8s.io".into(),
                version: "v1".into(),
                kind: "TokenRequest".into(),
                strategy: "TokenRequest".into(),
                open_api_prefix: None,
                schema: Default::default(),
            });
        let token = Subresource::parse(&parent, "token").expect("declared");
        assert_eq!(token, Subresource::CreateOnly(0));
        assert_eq!(Subresource::parse(&parent, "scale"), None);
        let e = endpoints(&parent);
        assert!(e
            .iter()
            .any(|x| x.path == "/apis/example.dev/v1/namespaces/{namespace}/widgets/{name}/token"));
        assert_eq!(verbs(&e, Some(token)), [Verb::Create]);
        assert_eq!(
            subresources(&parent),
            [Subresource::Status, Subresource::CreateOnly(0)]
        );
    }

    #[test]
    fn part_subresources_serve_the_verbs_they_list() {
        let mut ns = def(false, true, false);
        ns.subresources.parts.push(crate::model::PartSubresource {
            name: "finalize".into(),
            strategy: "NamespaceFinalize".into(),
            verbs: vec!["update".into()],
        });
        ns.subresources.parts.push(crate::model::PartSubresource {
            name: "approval".into(),
            strategy: "CertificateApproval".into(),
            verbs: vec![],
        });
        let finalize = Subresource::parse(&ns, "finalize").expect("declared");
        assert_eq!(finalize, Subresource::Part(0));
        let e = endpoints(&ns);
        assert!(e
            .iter()
            .any(|x| x.path == "/apis/example.dev/v1/widgets/{name}/finalize"));
        assert_eq!(verbs(&e, Some(finalize)), [Verb::Update]);
        assert_eq!(
            verbs(&e, Some(Subresource::Part(1))),
            [Verb::Get, Verb::Patch, Verb::Update]
        );
        assert_eq!(
            subresources(&ns),
            [
                Subresource::Part(1),
                Subresource::Part(0),
                Subresource::Status
            ]
        );
    }

    #[test]
    fn listed_verbs_leave_out_paths_and_watch() {
        // componentstatuses: get and list, no watch.
        let mut d = def(false, true, false);
        d.verbs = vec!["get".into(), "list".into()];
        let e = endpoints(&d);
        assert_eq!(verbs(&e, None), [Verb::Get, Verb::List]);
        assert!(e
            .iter()
            .all(|x| !matches!(x.kind, PathKind::WatchCollection | PathKind::WatchObject)));
        // Subresources keep their own operations.
        assert_eq!(
            verbs(&e, Some(Subresource::Status)),
            [Verb::Get, Verb::Patch, Verb::Update]
        );
        // namespaces: everything but deletecollection.
        d.verbs = [
            "create", "delete", "get", "list", "patch", "update", "watch",
        ]
        .map(String::from)
        .to_vec();
        assert!(!verbs(&endpoints(&d), None).contains(&Verb::DeleteCollection));
        assert!(serves(&d, Verb::Watch) && !serves(&d, Verb::DeleteCollection));
    }
}
