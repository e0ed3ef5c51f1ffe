//! Label and field selectors, parsed with kube-apiserver's grammar and error texts.
//!
//! Labels: `k`, `!k`, `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k>1`, `k<1`,
//! comma-separated (all must hold). Fields: `f=v`, `f==v`, `f!=v` on `metadata.name`,
//! `metadata.namespace` and the fields a resource makes selectable.

use std::collections::BTreeMap;

use serde_json::Value;

/// One label requirement.
#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Gt(String, i64),
    Lt(String, i64),
}

/// A parsed label selector; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<Requirement>);

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Not,
    Eq,
    DoubleEq,
    NotEq,
    Gt,
    Lt,
    Comma,
    Open,
    Close,
}

fn describe(t: &Token) -> String {
    match t {
        Token::Ident(s) => s.clone(),
        Token::Not => "!".into(),
        Token::Eq => "=".into(),
        Token::DoubleEq => "==".into(),
        Token::NotEq => "!=".into(),
        Token::Gt => ">".into(),
        Token::Lt => "<".into(),
        Token::Comma => ",".into(),
        Token::Open => "(".into(),
        Token::Close => ")".into(),
    }
}

fn lex(s: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            ' ' | '\t' | '\n' => i += 1,
            '!' if next == Some('=') => {
                out.push(Token::NotEq);
                i += 2;
            }
            '!' => {
                out.push(Token::Not);
                i += 1;
            }
            '=' if next == Some('=') => {
                out.push(Token::DoubleEq);
                i += 2;
            }
            '=' => {
                out.push(Token::Eq);
                i += 1;
            }
            '>' => {
                out.push(Token::Gt);
                i += 1;
            }
            '<' => {
                out.push(Token::Lt);
                i += 1;
            }
            ',' => {
                out.push(Token::Comma);
                i += 1;
            }
            '(' => {
                out.push(Token::Open);
                i += 1;
            }
            ')' => {
                out.push(Token::Close);
                i += 1;
            }
            _ => {
                let start = i;
                while i < chars.len() && !" \t\n!=><,()".contains(chars[i]) {
                    i += 1;
                }
                out.push(Token::Ident(chars[start..i].iter().collect()));
            }
        }
    }
    out
}

fn is_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

fn check_key(key: &str) -> Result<(), String> {
    if key.len() > 253 + 1 + 63 {
        return Err(format!(
            "invalid label key {}: must be no more than 317 characters",
            shown(key)
        ));
    }
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        if p.is_empty()
            || p.len() > 253
            || !p.split('.').all(|l| {
                !l.is_empty()
                    && l.bytes()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
            })
        {
            return Err(format!(
                "invalid label key {key:?}: prefix part must be a lowercase RFC 1123 subdomain"
            ));
        }
    }
    if !is_name_part(name) {
        return Err(format!(
            "invalid label key {key:?}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        ));
    }
    Ok(())
}

/// A value for an error message: quoted, and cut short when long (a selector may be as
/// long as a URL; the answer need not repeat it).
fn shown(v: &str) -> String {
    format!("{:?}", cut(v))
}

/// `v`, cut after 64 characters, with how long it was.
fn cut(v: &str) -> std::borrow::Cow<'_, str> {
    const MAX: usize = 64;
    match v.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}... ({} bytes)", &v[..at], v.len()).into(),
        None => v.into(),
    }
}

fn check_value(v: &str) -> Result<(), String> {
    if v.len() > 63 {
        return Err(format!(
            "invalid label value: {}: must be no more than 63 characters",
            shown(v)
        ));
    }
    if v.is_empty() || is_name_part(v) {
        Ok(())
    } else {
        Err(format!("invalid label value: {}: at key: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", shown(v)))
    }
}

impl LabelSelector {
    /// Parses a selector; the error text is kube-apiserver's.
    pub fn parse(s: &str) -> Result<Self, String> {
        let tokens = lex(s);
        let mut reqs = Vec::new();
        let mut i = 0;
        let at = |i: usize| tokens.get(i);
        while i < tokens.len() {
            let req = if at(i) == Some(&Token::Not) {
                let Some(Token::Ident(key)) = at(i + 1) else {
                    return Err(format!(
                        "unable to parse requirement: found '{}', expected: identifier",
                        at(i + 1).map(describe).unwrap_or_default()
                    ));
                };
                check_key(key)?;
                i += 2;
                Requirement::NotExists(key.clone())
            } else {
                let Some(Token::Ident(key)) = at(i) else {
                    return Err(format!(
                        "unable to parse requirement: found '{}', expected: !, identifier",
                        at(i).map(describe).unwrap_or_default()
                    ));
                };
                check_key(key)?;
                i += 1;
                match at(i) {
                    None | Some(Token::Comma) => Requirement::Exists(key.clone()),
                    Some(Token::Eq | Token::DoubleEq | Token::NotEq) => {
                        let neg = at(i) == Some(&Token::NotEq);
                        let value = match at(i + 1) {
                            Some(Token::Ident(v)) => {
                                i += 2;
                                v.clone()
                            }
                            None | Some(Token::Comma) => {
                                i += 1;
                                String::new()
                            }
                            Some(t) => return Err(format!("unable to parse requirement: found '{}', expected: identifier", describe(t))),
                        };
                        check_value(&value)?;
                        if neg { Requirement::NotIn(key.clone(), vec![value]) } else { Requirement::In(key.clone(), vec![value]) }
                    }
                    Some(Token::Gt | Token::Lt) => {
                        let gt = at(i) == Some(&Token::Gt);
                        let Some(Token::Ident(v)) = at(i + 1) else {
                            return Err("unable to parse requirement: found '', expected: identifier".into());
                        };
                        let n: i64 = v.parse().map_err(|_| format!("unable to parse requirement: for 'gt', 'lt' operators, the value must be an integer, got {v:?}"))?;
                        i += 2;
                        if gt { Requirement::Gt(key.clone(), n) } else { Requirement::Lt(key.clone(), n) }
                    }
                    Some(Token::Ident(op)) if op == "in" || op == "notin" => {
                        let notin = op == "notin";
                        if at(i + 1) != Some(&Token::Open) {
                            return Err(format!("unable to parse requirement: found '{}', expected: '('", at(i + 1).map(describe).unwrap_or_default()));
                        }
                        i += 2;
                        let mut values = Vec::new();
                        loop {
                            match at(i) {
                                Some(Token::Ident(v)) => {
                                    check_value(v)?;
                                    values.push(v.clone());
                                    i += 1;
                                }
                                Some(Token::Close) if values.is_empty() => {
                                    values.push(String::new());
                                }
                                _ => {}
                            }
                            match at(i) {
                                Some(Token::Comma) => i += 1,
                                Some(Token::Close) => {
                                    i += 1;
                                    break;
                                }
                                other => return Err(format!("unable to parse requirement: found '{}', expected: ',', ')' or identifier", other.map(describe).unwrap_or_default())),
                            }
                        }
                        if notin { Requirement::NotIn(key.clone(), values) } else { Requirement::In(key.clone(), values) }
                    }
                    Some(t) => return Err(format!("unable to parse requirement: found '{}', expected: in, notin, =, ==, !=, gt, lt", describe(t))),
                }
            };
            reqs.push(req);
            match at(i) {
                None => break,
                Some(Token::Comma) => {
                    i += 1;
                    if at(i).is_none() {
                        return Err(
                            "unable to parse requirement: found '', expected: identifier after ','"
                                .into(),
                        );
                    }
                }
                Some(t) => {
                    return Err(format!(
                        "unable to parse requirement: found '{}', expected: ','",
                        describe(t)
                    ))
                }
            }
        }
        Ok(LabelSelector(reqs))
    }

    /// The selector a metav1 `LabelSelector` object describes: `matchLabels` pairs and
    /// `matchExpressions` as `(key, operator, values)` with `In`, `NotIn`, `Exists` and
    /// `DoesNotExist`, checked as upstream checks one.
    pub fn from_object<'a>(
        match_labels: impl IntoIterator<Item = (&'a str, &'a str)>,
        match_expressions: impl IntoIterator<Item = (&'a str, &'a str, &'a [String])>,
    ) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for (key, value) in match_labels {
            check_key(key)?;
            check_value(value)?;
            reqs.push(Requirement::In(key.to_string(), vec![value.to_string()]));
        }
        for (key, operator, values) in match_expressions {
            check_key(key)?;
            let needs_values = matches!(operator, "In" | "NotIn");
            if needs_values == values.is_empty() {
                let must = if needs_values { "non-empty" } else { "empty" };
                return Err(format!(
                    "{key:?}: values must be {must} for operator {operator}"
                ));
            }
            for v in values {
                check_value(v)?;
            }
            let (key, values) = (key.to_string(), values.to_vec());
            reqs.push(match operator {
                "In" => Requirement::In(key, values),
                "NotIn" => Requirement::NotIn(key, values),
                "Exists" => Requirement::Exists(key),
                "DoesNotExist" => Requirement::NotExists(key),
                other => return Err(format!("{other:?} is not a valid label selector operator")),
            });
        }
        Ok(LabelSelector(reqs))
    }

    /// The selector a metav1 `LabelSelector` in JSON describes (absent or `{}`: everything).
    pub fn from_json(v: &Value) -> Result<Self, String> {
        let labels: Vec<(&str, &str)> = v["matchLabels"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default()))
            .collect();
        let exprs: Vec<(&str, &str, Vec<String>)> = v["matchExpressions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| {
                let values = e["values"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect();
                (
                    e["key"].as_str().unwrap_or_default(),
                    e["operator"].as_str().unwrap_or_default(),
                    values,
                )
            })
            .collect();
        Self::from_object(
            labels,
            exprs.iter().map(|(k, o, vs)| (*k, *o, vs.as_slice())),
        )
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::NotExists(k) => !labels.contains_key(k),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Gt(k, n) => labels
                .get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            Requirement::Lt(k, n) => labels
                .get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        })
    }

    /// Whether the selector is empty (matches everything).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The selector as text, in upstream's `labels.Selector` `String()` form (`k=v`, `k!=v`,
/// `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, `k>1`, `k<1`, comma-separated), which
/// [`LabelSelector::parse`] reads back as the same selector.
impl std::fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, r) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match r {
                Requirement::Exists(k) => write!(f, "{k}")?,
                Requirement::NotExists(k) => write!(f, "!{k}")?,
                Requirement::In(k, vs) if vs.len() == 1 => write!(f, "{k}={}", vs[0])?,
                Requirement::NotIn(k, vs) if vs.len() == 1 => write!(f, "{k}!={}", vs[0])?,
                Requirement::In(k, vs) => write!(f, "{k} in ({})", vs.join(","))?,
                Requirement::NotIn(k, vs) => write!(f, "{k} notin ({})", vs.join(","))?,
                Requirement::Gt(k, n) => write!(f, "{k}>{n}")?,
                Requirement::Lt(k, n) => write!(f, "{k}<{n}")?,
            }
        }
        Ok(())
    }
}

/// A parsed field selector: `field=value` / `field!=value` terms, all of which must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parses a selector; `selectable` lists the fields (JSON paths without the leading
    /// dot) a resource can be filtered on besides `metadata.name` and `metadata.namespace`.
    /// Core kinds with fields of their own word an unknown field as kube-apiserver's
    /// per-kind conversions do (`core_kind`).
    pub fn parse<S: AsRef<str>>(
        s: &str,
        selectable: &[S],
        core_kind: bool,
    ) -> Result<Self, String> {
        let mut terms = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, negate, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, false, v)
            } else {
                return Err(format!(
                    "invalid selector: '{}'; can't understand '{}'",
                    cut(s),
                    cut(part)
                ));
            };
            let field = field.trim();
            if field != "metadata.name"
                && field != "metadata.namespace"
                && !selectable.iter().any(|f| f.as_ref() == field)
            {
                if core_kind && !selectable.is_empty() {
                    return Err(format!("field label not supported: {}", cut(field)));
                }
                let known: Vec<String> = ["metadata.name", "metadata.namespace"]
                    .into_iter()
                    .chain(selectable.iter().map(AsRef::as_ref))
                    .map(|f| format!("{f:?}"))
                    .collect();
                return Err(format!(
                    "{:?} is not a known field selector: only {}",
                    cut(field),
                    known.join(", ")
                ));
            }
            terms.push((field.to_string(), negate, value.trim().to_string()));
        }
        Ok(FieldSelector(terms))
    }

    /// Adds `metadata.name=<name>` (a watch of one object).
    pub fn require_name(&mut self, name: &str) {
        self.0
            .push(("metadata.name".to_string(), false, name.to_string()));
    }

    /// Whether `obj` satisfies every term.
    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(field, negate, value)| {
            let mut cur = obj;
            for p in field.split('.') {
                cur = cur.get(p).unwrap_or(&Value::Null);
            }
            let actual = match cur {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (actual == *value) != *negate
        })
    }

    /// Whether the selector is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Whether `obj` matches both selectors (empty selectors match everything).
pub fn selects(labels: &LabelSelector, fields: &FieldSelector, obj: &Value) -> bool {
    labels.matches(&labels_of(obj)) && fields.matches(obj)
}

/// The labels of an object, as a sorted map.
pub fn labels_of(obj: &Value) -> BTreeMap<String, String> {
    obj.get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn grammar() {
        let l = labels(&[("app", "web"), ("tier", "front"), ("n", "5")]);
        for (sel, want) in [
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app in (web, api)", true),
            ("app notin (web)", false),
            ("tier", true),
            ("!tier", false),
            ("!missing", true),
            ("app=web,tier=back", false),
            ("n>4,n<6", true),
            ("missing!=x", true),
            ("", true),
        ] {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(&l),
                want,
                "{sel}"
            );
        }
    }

    #[test]
    fn errors_read_like_kube_apiserver() {
        assert_eq!(
            LabelSelector::parse("a b c").unwrap_err(),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert!(LabelSelector::parse("app in web").is_err());
        assert!(LabelSelector::parse("app=web,").is_err());
        assert!(LabelSelector::parse("-bad=x").is_err());
        assert!(LabelSelector::parse("n>x").is_err());
    }

    #[test]
    fn field_selectors() {
        let obj = serde_json::json!({"metadata": {"name": "a", "namespace": "ns"}, "spec": {"color": "red"}});
        assert!(FieldSelector::parse::<&str>("metadata.name=a", &[], false)
            .unwrap()
            .matches(&obj));
        assert!(
            !FieldSelector::parse::<&str>("metadata.name!=a", &[], false)
                .unwrap()
                .matches(&obj)
        );
        assert!(
            FieldSelector::parse("spec.color==red", &["spec.color"], false)
                .unwrap()
                .matches(&obj)
        );
        assert_eq!(
            FieldSelector::parse::<&str>("spec.color=red", &[], false).unwrap_err(),
            "\"spec.color\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        assert!(FieldSelector::parse::<&str>("nonsense", &[], false).is_err());
    }

    mod properties {
        use proptest::prelude::*;

        use super::super::*;

        /// A label name: a DNS-1123 subdomain prefix sometimes, then a name part.
        fn key() -> impl Strategy<Value = String> {
            (
                "([a-z]{1,5}\\.){0,2}[a-z]{1,5}/",
                "[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,10}[a-zA-Z0-9])?",
            )
                .prop_flat_map(|(prefix, name)| {
                    prop_oneof![Just(name.clone()), Just(format!("{prefix}{name}"))]
                })
        }

        fn value() -> impl Strategy<Value = String> {
            "([a-zA-Z0-9]([-a-zA-Z0-9_.]{0,10}[a-zA-Z0-9])?)?"
        }

        fn values() -> impl Strategy<Value = Vec<String>> {
            prop::collection::vec("[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,10}[a-zA-Z0-9])?", 1..4)
        }

        fn requirement() -> impl Strategy<Value = Requirement> {
            prop_oneof![
                key().prop_map(Requirement::Exists),
                key().prop_map(Requirement::NotExists),
                (key(), value()).prop_map(|(k, v)| Requirement::In(k, vec![v])),
                (key(), value()).prop_map(|(k, v)| Requirement::NotIn(k, vec![v])),
                (key(), values()).prop_map(|(k, vs)| Requirement::In(k, vs)),
                (key(), values()).prop_map(|(k, vs)| Requirement::NotIn(k, vs)),
                (key(), any::<i64>()).prop_map(|(k, n)| Requirement::Gt(k, n)),
                (key(), any::<i64>()).prop_map(|(k, n)| Requirement::Lt(k, n)),
            ]
        }

        proptest! {
            #[test]
            fn label_selectors_print_as_text_that_parses_back_to_the_same_selector(
                reqs in prop::collection::vec(requirement(), 0..6)
            ) {
                let selector = LabelSelector(reqs);
                let text = selector.to_string();
                prop_assert_eq!(LabelSelector::parse(&text), Ok(selector), "printed as {:?}", text);
            }
        }
    }
}
