//! The audit policy (`--audit-policy-file`, `audit.k8s.io/v1` `Policy`): read, checked
//! with every problem reported at once, and asked which level a request is audited at.
//! Rules are tried in order and the first that matches decides, as upstream; a request
//! no rule matches is not audited.

use std::path::Path;

use serde::Deserialize;

use super::event::{Level, Stage};

/// Why a policy file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("--audit-policy-file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("--audit-policy-file {path}: not an audit policy: {source}")]
    Parse {
        path: String,
        source: serde_yaml::Error,
    },
    #[error("--audit-policy-file {path}: {}", problems.join("; "))]
    Invalid { path: String, problems: Vec<String> },
}

/// The policy as the file spells it (unknown fields refused, so a typo such as
/// `omitStage` is an error rather than a rule that silently does something else).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PolicyFile {
    api_version: String,
    kind: String,
    #[serde(default)]
    #[allow(dead_code)] // read so that it is accepted; names nothing here
    metadata: serde_yaml::Value,
    #[serde(default)]
    rules: Vec<RuleFile>,
    #[serde(default)]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RuleFile {
    #[serde(default)]
    level: String,
    #[serde(default)]
    users: Vec<String>,
    #[serde(default)]
    user_groups: Vec<String>,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    resources: Vec<GroupResourcesFile>,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
    #[serde(default)]
    omit_stages: Vec<String>,
    omit_managed_fields: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct GroupResourcesFile {
    #[serde(default)]
    group: String,
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    resource_names: Vec<String>,
}

/// A checked policy.
#[derive(Debug, Clone)]
pub struct Policy {
    rules: Vec<Rule>,
    omit_stages: Vec<Stage>,
    omit_managed_fields: bool,
}

#[derive(Debug, Clone)]
struct Rule {
    level: Level,
    users: Vec<String>,
    user_groups: Vec<String>,
    verbs: Vec<String>,
    resources: Vec<GroupResources>,
    namespaces: Vec<String>,
    non_resource_urls: Vec<String>,
    omit_stages: Vec<Stage>,
    omit_managed_fields: Option<bool>,
}

#[derive(Debug, Clone)]
struct GroupResources {
    group: String,
    resources: Vec<String>,
    resource_names: Vec<String>,
}

/// What a request looks like to the policy (upstream's authorizer attributes).
#[derive(Debug, Clone, Copy, Default)]
pub struct Attributes<'a> {
    /// `None` when authentication failed: rules naming users or groups do not match.
    pub user: Option<(&'a str, &'a [String])>,
    pub verb: &'a str,
    pub resource_request: bool,
    pub namespace: &'a str,
    pub api_group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub name: &'a str,
    pub path: &'a str,
}

/// How one request is audited: the first matching rule's level, the stages not
/// written, and whether managedFields are left out of the bodies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestAuditConfig {
    pub level: Level,
    pub omit_stages: Vec<Stage>,
    pub omit_managed_fields: bool,
}

impl RequestAuditConfig {
    /// Whether events of `stage` are written.
    pub fn writes(&self, stage: Stage) -> bool {
        !self.omit_stages.contains(&stage)
    }
}

impl Policy {
    /// Reads and checks the policy file at `path`.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
            path: shown.clone(),
            source,
        })?;
        Policy::parse(&text).map_err(|e| match e {
            ParseError::Yaml(source) => PolicyError::Parse {
                path: shown,
                source,
            },
            ParseError::Invalid(problems) => PolicyError::Invalid {
                path: shown,
                problems,
            },
        })
    }

    /// Parses and checks a policy document.
    fn parse(text: &str) -> Result<Policy, ParseError> {
        let file: PolicyFile = serde_yaml::from_str(text).map_err(ParseError::Yaml)?;
        let mut problems = Vec::new();
        if file.api_version != "audit.k8s.io/v1" {
            problems.push(format!(
                "apiVersion {:?} is not served: write audit.k8s.io/v1 (v1alpha1 and v1beta1 policies are no longer read, as upstream since 1.24)",
                file.api_version
            ));
        }
        if file.kind != "Policy" {
            problems.push(format!("kind {:?}: expected Policy", file.kind));
        }
        if file.rules.is_empty() {
            problems.push("the policy has no rules (without any, nothing is audited)".into());
        }
        let omit_stages = stages(&file.omit_stages, "omitStages", &mut problems);
        let rules = file
            .rules
            .into_iter()
            .enumerate()
            .map(|(i, r)| rule(r, &format!("rules[{i}]"), &mut problems))
            .collect();
        if !problems.is_empty() {
            return Err(ParseError::Invalid(problems));
        }
        Ok(Policy {
            rules,
            omit_stages,
            omit_managed_fields: file.omit_managed_fields,
        })
    }

    /// The audit of a request with these attributes; level None when no rule matches.
    pub fn evaluate(&self, a: &Attributes<'_>) -> RequestAuditConfig {
        let Some(rule) = self.rules.iter().find(|r| r.matches(a)) else {
            return RequestAuditConfig {
                level: Level::None,
                omit_stages: self.omit_stages.clone(),
                omit_managed_fields: self.omit_managed_fields,
            };
        };
        let mut omit_stages = self.omit_stages.clone();
        omit_stages.extend(
            rule.omit_stages
                .iter()
                .filter(|s| !self.omit_stages.contains(s)),
        );
        RequestAuditConfig {
            level: rule.level,
            omit_stages,
            omit_managed_fields: rule.omit_managed_fields.unwrap_or(self.omit_managed_fields),
        }
    }
}

enum ParseError {
    Yaml(serde_yaml::Error),
    Invalid(Vec<String>),
}

fn stages(names: &[String], field: &str, problems: &mut Vec<String>) -> Vec<Stage> {
    let mut out = Vec::new();
    for name in names {
        match Stage::parse(name) {
            Some(s) if !out.contains(&s) => out.push(s),
            Some(_) => {}
            None => problems.push(format!(
                "{field}: unsupported stage {name:?}; supported: {}",
                Stage::NAMES.join(", ")
            )),
        }
    }
    out
}

fn rule(r: RuleFile, at: &str, problems: &mut Vec<String>) -> Rule {
    let level = if r.level.is_empty() {
        problems.push(format!(
            "{at}.level is required (one of {})",
            Level::NAMES.join(", ")
        ));
        Level::None
    } else {
        Level::parse(&r.level).unwrap_or_else(|| {
            problems.push(format!(
                "{at}.level: unsupported level {:?}; supported: {}",
                r.level,
                Level::NAMES.join(", ")
            ));
            Level::None
        })
    };
    if !r.non_resource_urls.is_empty() && (!r.resources.is_empty() || !r.namespaces.is_empty()) {
        problems.push(format!(
            "{at}: a rule cannot apply to both resources (resources, namespaces) and nonResourceURLs"
        ));
    }
    for url in &r.non_resource_urls {
        let body = url.strip_suffix('*').unwrap_or(url);
        if url != "*" && !url.starts_with('/') {
            problems.push(format!(
                "{at}.nonResourceURLs: {url:?} must start with \"/\" (or be \"*\")"
            ));
        } else if body.contains('*') {
            problems.push(format!(
                "{at}.nonResourceURLs: {url:?}: \"*\" is only allowed as the last character"
            ));
        }
    }
    for (j, gr) in r.resources.iter().enumerate() {
        if !gr.group.is_empty() && !is_dns_subdomain(&gr.group) {
            problems.push(format!(
                "{at}.resources[{j}].group: {:?} is not an API group name (a lower-case DNS subdomain such as apps or rbac.authorization.k8s.io, without a version)",
                gr.group
            ));
        }
        if !gr.resource_names.is_empty() && gr.resources.is_empty() {
            problems.push(format!(
                "{at}.resources[{j}].resourceNames: using resourceNames requires at least one resource"
            ));
        }
    }
    Rule {
        level,
        users: r.users,
        user_groups: r.user_groups,
        verbs: r.verbs,
        resources: r
            .resources
            .into_iter()
            .map(|g| GroupResources {
                group: g.group,
                resources: g.resources,
                resource_names: g.resource_names,
            })
            .collect(),
        namespaces: r.namespaces,
        non_resource_urls: r.non_resource_urls,
        omit_stages: stages(&r.omit_stages, &format!("{at}.omitStages"), problems),
        omit_managed_fields: r.omit_managed_fields,
    }
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

fn has(list: &[String], s: &str) -> bool {
    list.iter().any(|x| x == s)
}

impl Rule {
    fn matches(&self, a: &Attributes<'_>) -> bool {
        if !self.users.is_empty() && !a.user.is_some_and(|(name, _)| has(&self.users, name)) {
            return false;
        }
        if !self.user_groups.is_empty()
            && !a
                .user
                .is_some_and(|(_, groups)| groups.iter().any(|g| has(&self.user_groups, g)))
        {
            return false;
        }
        if !self.verbs.is_empty() && !has(&self.verbs, a.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(a);
        }
        if !self.non_resource_urls.is_empty() {
            return !a.resource_request
                && self
                    .non_resource_urls
                    .iter()
                    .any(|spec| path_matches(a.path, spec));
        }
        true
    }

    /// Namespaces (non-namespaced requests have `""`), then the resources: a resource
    /// with a subresource is `resource/subresource` and is also matched by
    /// `*/subresource` and `resource/*` (which also matches the resource itself).
    fn matches_resource(&self, a: &Attributes<'_>) -> bool {
        if !a.resource_request {
            return false;
        }
        if !self.namespaces.is_empty() && !has(&self.namespaces, a.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let combined = if a.subresource.is_empty() {
            a.resource.to_string()
        } else {
            format!("{}/{}", a.resource, a.subresource)
        };
        let named =
            |gr: &GroupResources| gr.resource_names.is_empty() || has(&gr.resource_names, a.name);
        let covers = |spec: &String| {
            spec == "*"
                || *spec == combined
                || (!a.subresource.is_empty() && spec.strip_prefix("*/") == Some(a.subresource))
                || spec.strip_suffix("/*") == Some(a.resource)
        };
        self.resources.iter().any(|gr| {
            gr.group == a.api_group
                && (gr.resources.is_empty() || (named(gr) && gr.resources.iter().any(covers)))
        })
    }
}

/// `*` matches every path, `/prefix*` every path starting with `/prefix`, anything else
/// only itself.
fn path_matches(path: &str, spec: &str) -> bool {
    match spec.strip_suffix('*') {
        _ if spec == path => true,
        Some(prefix) => path.starts_with(prefix),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(rules: &str) -> Policy {
        let text = format!("apiVersion: audit.k8s.io/v1\nkind: Policy\n{rules}");
        match Policy::parse(&text) {
            Ok(p) => p,
            Err(ParseError::Yaml(e)) => panic!("{e}"),
            Err(ParseError::Invalid(p)) => panic!("{p:?}"),
        }
    }

    fn problems(text: &str) -> String {
        match Policy::parse(text) {
            Ok(_) => panic!("accepted: {text}"),
            Err(ParseError::Yaml(e)) => e.to_string(),
            Err(ParseError::Invalid(p)) => p.join("; "),
        }
    }

    const GROUPS: &[String] = &[];

    fn resource<'a>(
        verb: &'a str,
        ns: &'a str,
        group: &'a str,
        res: &'a str,
        sub: &'a str,
        name: &'a str,
    ) -> Attributes<'a> {
        Attributes {
            user: Some(("alice", GROUPS)),
            verb,
            resource_request: true,
            namespace: ns,
            api_group: group,
            resource: res,
            subresource: sub,
            name,
            path: "/api/v1/whatever",
        }
    }

    fn level(p: &Policy, a: Attributes<'_>) -> Level {
        p.evaluate(&a).level
    }

    #[test]
    fn the_first_matching_rule_decides() {
        let p = policy(
            "rules:
- level: None
  namespaces: [quiet]
- level: RequestResponse
  resources: [{group: '', resources: [secrets]}]
- level: Metadata
  verbs: [get]
",
        );
        assert_eq!(
            level(&p, resource("get", "quiet", "", "secrets", "", "s")),
            Level::None
        );
        assert_eq!(
            level(&p, resource("get", "loud", "", "secrets", "", "s")),
            Level::RequestResponse
        );
        assert_eq!(
            level(&p, resource("get", "loud", "", "configmaps", "", "c")),
            Level::Metadata
        );
        assert_eq!(
            level(&p, resource("list", "loud", "", "configmaps", "", "")),
            Level::None
        );
    }

    #[test]
    fn subresources_wildcards_and_names_as_upstream() {
        let p = policy(
            "rules:
- level: Request
  resources: [{group: '', resources: ['pods/log']}]
- level: RequestResponse
  resources: [{group: '', resources: ['*/status']}]
- level: Metadata
  resources: [{group: apps, resources: ['deployments/*']}]
- level: Metadata
  resources: [{group: '', resources: [configmaps], resourceNames: [special]}]
",
        );
        let r = |res, sub, group, name| level(&p, resource("get", "n", group, res, sub, name));
        assert_eq!(r("pods", "log", "", ""), Level::Request);
        assert_eq!(r("pods", "", "", ""), Level::None);
        assert_eq!(r("namespaces", "status", "", ""), Level::RequestResponse);
        assert_eq!(r("deployments", "", "apps", ""), Level::Metadata);
        assert_eq!(r("deployments", "scale", "apps", ""), Level::Metadata);
        assert_eq!(r("deployments", "", "", ""), Level::None);
        assert_eq!(r("configmaps", "", "", "special"), Level::Metadata);
        assert_eq!(r("configmaps", "", "", "plain"), Level::None);
    }

    #[test]
    fn users_groups_and_non_resource_urls() {
        let p = policy(
            "omitStages: [RequestReceived]
omitManagedFields: true
rules:
- level: Metadata
  users: [bob]
  omitStages: [ResponseStarted]
  omitManagedFields: false
- level: Request
  userGroups: [ops]
- level: Metadata
  nonResourceURLs: ['/healthz*', /version]
",
        );
        let groups = ["ops".to_string()];
        let bob = Attributes {
            user: Some(("bob", GROUPS)),
            ..Attributes::default()
        };
        let c = p.evaluate(&bob);
        assert_eq!(c.level, Level::Metadata);
        assert_eq!(
            c.omit_stages,
            [Stage::RequestReceived, Stage::ResponseStarted]
        );
        assert!(!c.omit_managed_fields);
        let ops = Attributes {
            user: Some(("carol", &groups)),
            ..Attributes::default()
        };
        assert_eq!(p.evaluate(&ops).level, Level::Request);
        assert!(p.evaluate(&ops).omit_managed_fields);
        let path = |path| Attributes {
            user: None,
            verb: "get",
            path,
            ..Attributes::default()
        };
        assert_eq!(p.evaluate(&path("/healthz/etcd")).level, Level::Metadata);
        assert_eq!(p.evaluate(&path("/version")).level, Level::Metadata);
        assert_eq!(p.evaluate(&path("/versions")).level, Level::None);
        assert_eq!(p.evaluate(&path("/readyz")).level, Level::None);
    }

    #[test]
    fn bad_policies_say_what_is_wrong() {
        let head = "apiVersion: audit.k8s.io/v1\nkind: Policy\n";
        let e = problems(&format!("{head}rules:\n- level: Everything\n"));
        assert!(
            e.contains("rules[0].level: unsupported level \"Everything\""),
            "{e}"
        );
        let e = problems(&format!("{head}rules:\n- verbs: [get]\n"));
        assert!(e.contains("rules[0].level is required"), "{e}");
        let e = problems(&format!(
            "{head}rules:\n- level: None\n  omitStage: [Panic]\n"
        ));
        assert!(e.contains("unknown field `omitStage`"), "{e}");
        let e = problems(&format!(
            "{head}omitStages: [Done]\nrules:\n- level: None\n  nonResourceURLs: ['/a*b']\n  namespaces: [x]\n"
        ));
        assert!(e.contains("omitStages: unsupported stage \"Done\""), "{e}");
        assert!(e.contains("cannot apply to both"), "{e}");
        assert!(e.contains("only allowed as the last character"), "{e}");
        let e = problems(&format!(
            "{head}rules:\n- level: None\n  resources: [{{group: apps/v1, resourceNames: [x]}}]\n"
        ));
        assert!(e.contains("is not an API group name"), "{e}");
        assert!(e.contains("requires at least one resource"), "{e}");
        let e = problems("apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: []\n");
        assert!(
            e.contains("is not served") && e.contains("has no rules"),
            "{e}"
        );
    }
}
