//! Text as upstream prints it, so clients and tests that read messages see the same
//! thing: Go's `%q` quoting, rules in their compact form, aggregated error lists.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::types::PolicyRule;

/// `s` quoted as Go's `%q` (strconv.Quote) does.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() || (c.is_whitespace() && c != ' ') => {
                if (c as u32) < 0x10000 {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                } else {
                    let _ = write!(out, "\\U{:08x}", c as u32);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A list quoted as Go's `%q` prints a `[]string`: `["a" "b"]`.
pub fn go_quote_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}

/// A rule as upstream's escalation messages print it:
/// `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`, empty fields left out.
pub fn compact_rule(rule: &PolicyRule) -> String {
    let fields = [
        ("APIGroups", &rule.api_groups),
        ("Resources", &rule.resources),
        ("NonResourceURLs", &rule.non_resource_urls),
        ("ResourceNames", &rule.resource_names),
        ("Verbs", &rule.verbs),
    ];
    let parts: Vec<String> = fields
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}:{}", go_quote_list(v)))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// Several errors as one message, as upstream's aggregate error prints them: one alone,
/// several as `[a, b]`, repeated messages once.
pub fn aggregate_errors(errors: &[String]) -> String {
    match errors {
        [] => String::new(),
        [one] => one.clone(),
        many => {
            let mut seen = BTreeSet::new();
            let unique: Vec<&str> = many
                .iter()
                .filter(|e| seen.insert(e.as_str()))
                .map(String::as_str)
                .collect();
            if unique.len() == 1 {
                unique[0].to_string()
            } else {
                format!("[{}]", unique.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_go() {
        assert_eq!(go_quote("alice"), r#""alice""#);
        assert_eq!(go_quote(""), r#""""#);
        assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go_quote("a\nb\tc\u{1}\u{7f}"), r#""a\nb\tc\x01\x7f""#);
        assert_eq!(go_quote("é☃ x"), "\"é☃ x\"");
        assert_eq!(go_quote("\u{a0}\u{85}"), r#""\u00a0\u0085""#);
        assert_eq!(go_quote_list(&[]), "[]");
        assert_eq!(
            go_quote_list(&["system:authenticated".into(), "b".into()]),
            r#"["system:authenticated" "b"]"#
        );
    }

    #[test]
    fn compact_rules() {
        let r = PolicyRule::resource(&["get", "list"], &[""], &["pods"]);
        assert_eq!(
            compact_rule(&r),
            r#"{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}"#
        );
        let r = PolicyRule::resource(&["get"], &["apps"], &["deployments"]).with_names(&["d"]);
        assert_eq!(
            compact_rule(&r),
            r#"{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["d"], Verbs:["get"]}"#
        );
        let r = PolicyRule::non_resource(&["get"], &["/healthz"]);
        assert_eq!(
            compact_rule(&r),
            r#"{NonResourceURLs:["/healthz"], Verbs:["get"]}"#
        );
        assert_eq!(compact_rule(&PolicyRule::default()), "{}");
    }

    #[test]
    fn aggregates() {
        assert_eq!(aggregate_errors(&[]), "");
        assert_eq!(aggregate_errors(&["a".into()]), "a");
        assert_eq!(aggregate_errors(&["a".into(), "a".into()]), "a");
        assert_eq!(
            aggregate_errors(&["a".into(), "b".into(), "a".into()]),
            "[a, b]"
        );
    }
}
