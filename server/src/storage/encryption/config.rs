//! The `EncryptionConfiguration` file (`apiserver.config.k8s.io/v1`): parsed strictly,
//! then checked as kube-apiserver checks it, every problem reported with its field path.

use base64::Engine;
use serde::Deserialize;

use super::providers::{
    AesCbc, AesGcm, Secretbox, ValueTransformer, AES_KEY_SIZES, SECRETBOX_KEY_SIZES,
};
use super::transformers::Transformers;

/// The only apiVersion and kind accepted.
const API_VERSION: &str = "apiserver.config.k8s.io/v1";
const KIND: &str = "EncryptionConfiguration";

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EncryptionConfiguration {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    resources: Vec<ResourceConfiguration>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceConfiguration {
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    providers: Vec<ProviderConfiguration>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderConfiguration {
    identity: Option<Empty>,
    aescbc: Option<KeysConfiguration>,
    aesgcm: Option<KeysConfiguration>,
    secretbox: Option<KeysConfiguration>,
    /// Read only to refuse it by name.
    kms: Option<serde_yaml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Empty {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeysConfiguration {
    #[serde(default)]
    keys: Vec<Key>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Key {
    #[serde(default)]
    name: String,
    #[serde(default)]
    secret: String,
}

/// A group and resource as the file names them: `secrets` (core), `widgets.example.com`,
/// `*.apps` (every resource of a group), `*.` (of the core group), `*.*` (all).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GroupResource {
    /// `""` for the core group, `*` for any.
    pub group: String,
    /// The plural, or `*` for any.
    pub resource: String,
}

impl GroupResource {
    /// Splits at the first dot, as Kubernetes parses `resource.group`.
    fn parse(text: &str) -> GroupResource {
        let (resource, group) = text.split_once('.').unwrap_or((text, ""));
        GroupResource {
            group: group.to_string(),
            resource: resource.to_string(),
        }
    }

    fn any() -> GroupResource {
        GroupResource {
            group: "*".into(),
            resource: "*".into(),
        }
    }

    fn any_in(group: &str) -> GroupResource {
        GroupResource {
            group: group.into(),
            resource: "*".into(),
        }
    }
}

impl std::fmt::Display for GroupResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.resource.as_str(), self.group.as_str()) {
            ("*", "") => f.write_str("*."),
            (r, "") => f.write_str(r),
            (r, g) => write!(f, "{r}.{g}"),
        }
    }
}

/// The checked configuration: each named group resource with its chain, in file order.
pub type Rules = Vec<(GroupResource, Transformers)>;

/// What `rules` give the resource `resource` of `group`: its own rule, else its group's
/// wildcard (`*.apps`, `*.` for the core group), else `*.*` (upstream's precedence).
pub fn find_rule<'a, T>(
    rules: &'a [(GroupResource, T)],
    group: &str,
    resource: &str,
) -> Option<&'a T> {
    let rank = |gr: &GroupResource| match (gr.group.as_str(), gr.resource.as_str()) {
        (g, r) if g == group && r == resource => Some(0),
        (g, "*") if g == group => Some(1),
        ("*", "*") => Some(2),
        _ => None,
    };
    rules
        .iter()
        .filter_map(|(gr, t)| Some((rank(gr)?, t)))
        .min_by_key(|(rank, _)| *rank)
        .map(|(_, t)| t)
}

/// Parses and checks a configuration; every problem is one `field: message` line.
pub fn parse(text: &str) -> Result<Rules, Vec<String>> {
    let config: EncryptionConfiguration =
        serde_yaml::from_str(text).map_err(|e| vec![e.to_string()])?;
    let mut errors = Vec::new();
    if config.api_version != API_VERSION {
        errors.push(format!(
            "apiVersion: expected {API_VERSION}, got {:?}",
            config.api_version
        ));
    }
    if config.kind != KIND {
        errors.push(format!("kind: expected {KIND}, got {:?}", config.kind));
    }
    if config.resources.is_empty() {
        errors.push("resources: at least one resources entry is required".into());
    }
    let mut rules: Rules = Vec::new();
    for (i, entry) in config.resources.iter().enumerate() {
        let path = format!("resources[{i}]");
        check_resources(&entry.resources, &format!("{path}.resources"), &mut errors);
        let chain = build_chain(&entry.providers, &format!("{path}.providers"), &mut errors);
        // Overlaps within the entry were reported above; masking is by earlier entries.
        let earlier = rules.len();
        for (j, name) in entry.resources.iter().enumerate() {
            let gr = GroupResource::parse(name);
            // A wildcard of an earlier entry would hide this one (kube-apiserver refuses it).
            let masks = [GroupResource::any_in(&gr.group), GroupResource::any()];
            let masked = |m: &&GroupResource| rules[..earlier].iter().any(|(r, _)| r == *m);
            if let Some(mask) = masks.iter().find(masked) {
                errors.push(format!(
                    "{path}.resources[{j}]: resource {gr} is masked by the earlier rule {mask}"
                ));
            }
            // A resource named again in a later entry gets that entry's providers after
            // its earlier ones, as upstream appends them.
            let Some(chain) = chain.as_ref().map(|c| c()) else {
                continue;
            };
            match rules.iter_mut().find(|(r, _)| *r == gr) {
                Some((_, existing)) => existing.extend(chain),
                None => rules.push((gr, chain)),
            }
        }
    }
    if errors.is_empty() {
        Ok(rules)
    } else {
        Err(errors)
    }
}

/// kube-apiserver's checks of one entry's resource names.
fn check_resources(resources: &[String], path: &str, errors: &mut Vec<String>) {
    if resources.is_empty() {
        errors.push(format!("{path}: at least one resource is required"));
    }
    let parsed: Vec<GroupResource> = resources.iter().map(|r| GroupResource::parse(r)).collect();
    for (j, (name, gr)) in resources.iter().zip(&parsed).enumerate() {
        let problem = if name.to_lowercase() != *name {
            Some("resource names must be lowercase")
        } else if name.is_empty() {
            Some("resource name must not be empty")
        } else if name == "*" {
            Some("use '*.' for every resource of the core group, or '*.*' for every resource")
        } else if [
            "apiserveripinfo",
            "serviceipallocations",
            "servicenodeportallocations",
        ]
        .contains(&name.as_str())
        {
            Some("resources without a REST API cannot be encrypted")
        } else if gr.group == "events.k8s.io" {
            Some("events.k8s.io objects are stored as 'events' of the core group: name 'events' instead")
        } else if gr.group == "extensions" {
            Some("the 'extensions' group has been removed and cannot be encrypted")
        } else if gr.group == "*" && gr.resource != "*" {
            Some("a resource cannot be encrypted across groups: name its group, or use '*.*'")
        } else {
            None
        };
        if let Some(problem) = problem {
            errors.push(format!("{path}[{j}]: {name:?}: {problem}"));
        }
        if parsed[..j].contains(gr) {
            errors.push(format!("{path}[{j}]: {name:?} is listed twice"));
        }
    }
    // A wildcard beside what it covers makes the narrower name pointless.
    let overlaps = parsed.iter().enumerate().any(|(i, a)| {
        parsed.iter().enumerate().any(|(j, b)| {
            i != j
                && a != b
                && (*a == GroupResource::any()
                    || (a.group == b.group && (a.resource == "*" || b.resource == "*")))
        })
    });
    if overlaps {
        errors.push(format!(
            "{path}: a wildcard and a resource it covers (such as 'secrets' and '*.') cannot be listed together"
        ));
    }
}

/// A factory of the entry's chain: one fresh chain per resource it names (the ciphers
/// are not shared between resources, which keeps `Transformers` free of `Arc`s).
type ChainFactory<'a> = Box<dyn Fn() -> Transformers + 'a>;

/// Checks one entry's providers; when they are all valid returns how to build its chain.
fn build_chain<'a>(
    providers: &'a [ProviderConfiguration],
    path: &str,
    errors: &mut Vec<String>,
) -> Option<ChainFactory<'a>> {
    if providers.is_empty() {
        errors.push(format!("{path}: at least one provider is required"));
        return None;
    }
    let before = errors.len();
    let mut links: Vec<Link<'a>> = Vec::new();
    for (j, p) in providers.iter().enumerate() {
        let at = format!("{path}[{j}]");
        let given = [
            p.identity.is_some(),
            p.aescbc.is_some(),
            p.aesgcm.is_some(),
            p.secretbox.is_some(),
            p.kms.is_some(),
        ]
        .iter()
        .filter(|g| **g)
        .count();
        if given == 0 {
            errors.push(format!(
                "{at}: name one provider: identity, aescbc, aesgcm or secretbox"
            ));
            continue;
        }
        if given > 1 {
            errors.push(format!(
                "{at}: more than one provider in one element; give each its own list element"
            ));
            continue;
        }
        if p.kms.is_some() {
            errors.push(format!(
                "{at}.kms: KMS providers are not supported by this server; use aescbc, aesgcm or secretbox"
            ));
            continue;
        }
        if p.identity.is_some() {
            links.push(Link::Identity);
            continue;
        }
        let (provider, keys, sizes): (&'static str, _, &[usize]) = match (&p.aescbc, &p.aesgcm) {
            (Some(k), _) => ("aescbc", k, AES_KEY_SIZES),
            (_, Some(k)) => ("aesgcm", k, AES_KEY_SIZES),
            _ => (
                "secretbox",
                p.secretbox.as_ref().expect("one provider is set"),
                SECRETBOX_KEY_SIZES,
            ),
        };
        let at = format!("{at}.{provider}.keys");
        if keys.keys.is_empty() {
            errors.push(format!("{at}: at least one key is required"));
        }
        for (k, key) in keys.keys.iter().enumerate() {
            if let Some(secret) = check_key(key, &format!("{at}[{k}]"), sizes, errors) {
                if keys.keys[..k].iter().any(|other| other.name == key.name) {
                    errors.push(format!(
                        "{at}[{k}].name: key name {:?} is used twice in this provider",
                        key.name
                    ));
                }
                links.push(Link::Key {
                    provider,
                    name: &key.name,
                    secret,
                });
            }
        }
    }
    if errors.len() > before {
        return None;
    }
    Some(Box::new(move || {
        let mut chain = Transformers::new();
        for link in &links {
            match link {
                Link::Identity => chain.identity(),
                Link::Key {
                    provider,
                    name,
                    secret,
                } => chain.key(provider, name, cipher(provider, secret)),
            }
        }
        chain
    }))
}

/// A checked link, before its cipher is built.
enum Link<'a> {
    Identity,
    Key {
        provider: &'static str,
        name: &'a str,
        secret: Vec<u8>,
    },
}

fn cipher(provider: &str, secret: &[u8]) -> Box<dyn ValueTransformer> {
    // Sizes were checked against the provider's: construction cannot fail.
    let built: Option<Box<dyn ValueTransformer>> = match provider {
        "aescbc" => AesCbc::new(secret).map(|c| Box::new(c) as _),
        "aesgcm" => AesGcm::new(secret).map(|c| Box::new(c) as _),
        _ => Secretbox::new(secret).map(|c| Box::new(c) as _),
    };
    built.expect("key size checked")
}

/// One key's name and secret; the decoded secret when both are valid.
fn check_key(key: &Key, at: &str, sizes: &[usize], errors: &mut Vec<String>) -> Option<Vec<u8>> {
    let mut ok = true;
    if key.name.is_empty() {
        errors.push(format!("{at}.name: a key needs a name"));
        ok = false;
    }
    if key.secret.is_empty() {
        errors.push(format!("{at}.secret: a key needs a secret (base64)"));
        return None;
    }
    // The secret itself is never echoed.
    let secret = match base64::engine::general_purpose::STANDARD.decode(&key.secret) {
        Ok(s) => s,
        Err(_) => {
            errors.push(format!("{at}.secret: must be base64 encoded"));
            return None;
        }
    };
    if !sizes.contains(&secret.len()) {
        errors.push(format!(
            "{at}.secret: the key is {} bytes long; expected one of {sizes:?} bytes",
            secret.len()
        ));
        return None;
    }
    ok.then_some(secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    const K16: &str = "MTIzNDU2Nzg5MDEyMzQ1Ng=="; // 16 bytes
    const K32: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI="; // 32 bytes

    fn errors(yaml: &str) -> Vec<String> {
        match parse(yaml) {
            Ok(_) => panic!("accepted:\n{yaml}"),
            Err(e) => e,
        }
    }

    fn one_error(yaml: &str) -> String {
        let e = errors(yaml);
        assert_eq!(e.len(), 1, "{e:#?}");
        e.into_iter().next().unwrap()
    }

    fn config(resources: &str, providers: &str) -> String {
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: {resources}\n  providers:\n{providers}"
        )
    }

    #[test]
    fn a_full_configuration_parses_in_order() {
        let yaml = format!(
            "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets, widgets.example.com]
  providers:
  - aesgcm:
      keys:
      - name: key2
        secret: {K32}
      - name: key1
        secret: {K16}
  - aescbc:
      keys: [{{name: old, secret: {K32}}}]
  - secretbox:
      keys: [{{name: box, secret: {K32}}}]
  - identity: {{}}
- resources: ['*.apps', '*.']
  providers:
  - identity: {{}}
"
        );
        let rules = parse(&yaml).unwrap();
        let names: Vec<String> = rules.iter().map(|(gr, _)| gr.to_string()).collect();
        assert_eq!(names, ["secrets", "widgets.example.com", "*.apps", "*."]);
        assert_eq!(rules[1].0.group, "example.com");
        assert_eq!(rules[1].0.resource, "widgets");
        assert!(!rules[0].1.writes_plain());
        assert!(rules[3].1.writes_plain());
    }

    #[test]
    fn apiversion_kind_and_unknown_fields_are_checked() {
        let e = errors("apiVersion: v1\nkind: EncryptionConfig\nresources: []\n");
        assert_eq!(
            e,
            [
                "apiVersion: expected apiserver.config.k8s.io/v1, got \"v1\"",
                "kind: expected EncryptionConfiguration, got \"EncryptionConfig\"",
                "resources: at least one resources entry is required",
            ]
        );
        let e = one_error(&config("[secrets]", "  - aescbcc: {}\n"));
        assert!(e.contains("unknown field `aescbcc`"), "{e}");
        assert!(e.contains("line"), "{e}");
    }

    #[test]
    fn keys_are_checked_with_their_field_paths() {
        let e = errors(&config(
            "[secrets]",
            "  - aescbc:\n      keys:\n      - name: a\n        secret: c2hvcnQ=\n      - name: ''\n        secret: '!!'\n      - name: c\n  - secretbox:\n      keys:\n      - {name: s, secret: MTIzNDU2Nzg5MDEyMzQ1Ng==}\n  - aesgcm:\n      keys: []\n",
        ));
        assert_eq!(
            e,
            [
                "resources[0].providers[0].aescbc.keys[0].secret: the key is 5 bytes long; expected one of [16, 24, 32] bytes",
                "resources[0].providers[0].aescbc.keys[1].name: a key needs a name",
                "resources[0].providers[0].aescbc.keys[1].secret: must be base64 encoded",
                "resources[0].providers[0].aescbc.keys[2].secret: a key needs a secret (base64)",
                "resources[0].providers[1].secretbox.keys[0].secret: the key is 16 bytes long; expected one of [32] bytes",
                "resources[0].providers[2].aesgcm.keys: at least one key is required",
            ]
        );
    }

    #[test]
    fn key_names_are_unique_within_a_provider() {
        let e = one_error(&config(
            "[secrets]",
            &format!("  - aesgcm:\n      keys:\n      - {{name: k, secret: {K16}}}\n      - {{name: k, secret: {K32}}}\n"),
        ));
        assert_eq!(
            e,
            "resources[0].providers[0].aesgcm.keys[1].name: key name \"k\" is used twice in this provider"
        );
    }

    #[test]
    fn providers_are_one_per_element_and_kms_is_refused() {
        let e = one_error(&config(
            "[secrets]",
            &format!("  - identity: {{}}\n    aescbc:\n      keys: [{{name: k, secret: {K16}}}]\n"),
        ));
        assert!(
            e.starts_with("resources[0].providers[0]: more than one provider"),
            "{e}"
        );
        let e = one_error(&config(
            "[secrets]",
            "  - kms:\n      name: vault\n      endpoint: unix:///tmp/kms.sock\n",
        ));
        assert_eq!(e, "resources[0].providers[0].kms: KMS providers are not supported by this server; use aescbc, aesgcm or secretbox");
        let e = one_error(&config("[secrets]", "  - {}\n"));
        assert!(
            e.starts_with("resources[0].providers[0]: name one provider"),
            "{e}"
        );
        let e = one_error(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n",
        );
        assert_eq!(
            e,
            "resources[0].providers: at least one provider is required"
        );
    }

    #[test]
    fn resource_names_are_checked_as_upstream() {
        let identity = "  - identity: {}\n";
        for (resources, expected) in [
            ("[Secrets]", "resources[0].resources[0]: \"Secrets\": resource names must be lowercase"),
            ("['*']", "resources[0].resources[0]: \"*\": use '*.' for every resource of the core group, or '*.*' for every resource"),
            ("[serviceipallocations]", "resources[0].resources[0]: \"serviceipallocations\": resources without a REST API cannot be encrypted"),
            ("[events.events.k8s.io]", "resources[0].resources[0]: \"events.events.k8s.io\": events.k8s.io objects are stored as 'events' of the core group: name 'events' instead"),
            ("[deployments.extensions]", "resources[0].resources[0]: \"deployments.extensions\": the 'extensions' group has been removed and cannot be encrypted"),
            ("['secrets.*']", "resources[0].resources[0]: \"secrets.*\": a resource cannot be encrypted across groups: name its group, or use '*.*'"),
            ("[secrets, secrets]", "resources[0].resources[1]: \"secrets\" is listed twice"),
            ("[secrets, '*.']", "resources[0].resources: a wildcard and a resource it covers (such as 'secrets' and '*.') cannot be listed together"),
            ("['*.*', deployments.apps]", "resources[0].resources: a wildcard and a resource it covers (such as 'secrets' and '*.') cannot be listed together"),
            ("[]", "resources[0].resources: at least one resource is required"),
        ] {
            assert_eq!(one_error(&config(resources, identity)), expected, "{resources}");
        }
        // Different groups do not overlap.
        assert!(parse(&config(
            "[secrets, '*.apps', widgets.example.com]",
            identity
        ))
        .is_ok());
    }

    #[test]
    fn a_wildcard_masks_later_entries_but_not_earlier_ones() {
        let two = |first: &str, second: &str| {
            format!(
                "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: {first}\n  providers: [identity: {{}}]\n- resources: {second}\n  providers: [identity: {{}}]\n"
            )
        };
        assert_eq!(
            one_error(&two("['*.']", "[secrets]")),
            "resources[1].resources[0]: resource secrets is masked by the earlier rule *."
        );
        assert_eq!(
            one_error(&two("['*.*']", "['*.apps']")),
            "resources[1].resources[0]: resource *.apps is masked by the earlier rule *.*"
        );
        assert!(parse(&two("[secrets]", "['*.*']")).is_ok());
        // The same resource twice: the later entry's providers come after.
        let rules = parse(&two("[secrets]", "[secrets]")).unwrap();
        assert_eq!(rules.len(), 1);
    }

    #[test]
    fn a_resource_finds_its_own_rule_then_its_groups_then_any() {
        let gr = |s: &str| GroupResource::parse(s);
        let rules = vec![
            (gr("*.*"), "any"),
            (gr("*."), "core"),
            (gr("*.apps"), "apps"),
            (gr("secrets"), "secrets"),
            (gr("widgets.example.com"), "widgets"),
        ];
        assert_eq!(find_rule(&rules, "", "secrets"), Some(&"secrets"));
        assert_eq!(find_rule(&rules, "", "configmaps"), Some(&"core"));
        assert_eq!(find_rule(&rules, "apps", "deployments"), Some(&"apps"));
        assert_eq!(
            find_rule(&rules, "example.com", "widgets"),
            Some(&"widgets")
        );
        assert_eq!(find_rule(&rules, "example.com", "gadgets"), Some(&"any"));
        assert_eq!(find_rule(&rules[3..], "", "configmaps"), None);
        assert_eq!(find_rule(&rules[3..], "apps", "secrets"), None);
    }
}
