//! Kubernetes' CEL `format` library: named string formats (`format.dns1123Label()`,
//! `format.named('uuid')`, ...) whose `validate(s)` answers an empty optional when `s`
//! is valid, else the list of its problems, worded as kube-apiserver words them.

use std::sync::Arc;

use cel::extractors::This;
use cel::objects::{Opaque, OptionalValue};
use cel::{Context, ExecutionError, Value};

use crate::api::meta::{
    dns1035_label_errors, dns1123_label_errors, dns1123_subdomain_errors, label_value_errors,
    qualified_name_errors,
};

/// One named format.
#[derive(Debug)]
struct Format {
    /// The name `format.named` knows it by (and the constructor's, after `format.`).
    name: &'static str,
    check: fn(&str) -> Vec<String>,
}

/// A format as a CEL value.
#[derive(Debug)]
struct FormatValue(&'static Format);

impl PartialEq for FormatValue {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for FormatValue {}

impl Opaque for FormatValue {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.NamedFormat"
    }
}

/// Every format, by the name upstream gives it.
static FORMATS: &[Format] = &[
    Format {
        name: "dns1123Label",
        check: dns1123_label_errors,
    },
    Format {
        name: "dns1123Subdomain",
        check: dns1123_subdomain_errors,
    },
    Format {
        name: "dns1035Label",
        check: dns1035_label_errors,
    },
    Format {
        name: "qualifiedName",
        check: qualified_name_errors,
    },
    Format {
        name: "portName",
        check: port_name_errors,
    },
    Format {
        name: "dns1123LabelPrefix",
        check: |s| dns1123_label_errors(&as_prefix(s)),
    },
    Format {
        name: "dns1123SubdomainPrefix",
        check: |s| dns1123_subdomain_errors(&as_prefix(s)),
    },
    Format {
        name: "dns1035LabelPrefix",
        check: |s| dns1035_label_errors(&as_prefix(s)),
    },
    Format {
        name: "labelValue",
        check: label_value_errors,
    },
    Format {
        name: "uri",
        check: uri_errors,
    },
    Format {
        name: "uuid",
        check: |s| one_if(!is_uuid(s), "does not match the UUID format"),
    },
    Format {
        name: "byte",
        check: |s| {
            use base64::Engine;
            let bad = base64::engine::general_purpose::STANDARD.decode(s).is_err();
            one_if(bad, "invalid base64")
        },
    },
    Format {
        name: "date",
        check: |s| {
            let bad = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_err();
            one_if(bad, "invalid date")
        },
    },
    Format {
        name: "datetime",
        check: |s| {
            let bad = chrono::DateTime::parse_from_rfc3339(s).is_err();
            one_if(bad, "invalid datetime")
        },
    },
];

/// Adds `format.<name>()` for every format, `format.named(name)` and `validate`.
pub fn install(ctx: &mut Context) {
    for f in FORMATS {
        let _ = ctx.add_function(&format!("format.{}", f.name), move || {
            Value::Opaque(Arc::new(FormatValue(f)))
        });
    }
    let _ = ctx.add_function("format.named", named);
    let _ = ctx.add_function("validate", validate);
}

/// `format.named(name)`: the format, or an empty optional for a name no format has.
fn named(name: Arc<String>) -> Value {
    let found = FORMATS.iter().find(|f| f.name == name.as_str());
    optional(found.map(|f| Value::Opaque(Arc::new(FormatValue(f)))))
}

/// `<Format>.validate(s)`: empty when `s` is valid, else its problems.
fn validate(This(f): This<Arc<dyn Opaque>>, s: Arc<String>) -> Result<Value, ExecutionError> {
    let f = f
        .downcast_ref::<FormatValue>()
        .ok_or_else(|| ExecutionError::function_error("validate", "expects a format"))?;
    let errors = (f.0.check)(&s);
    Ok(optional((!errors.is_empty()).then(|| {
        Value::List(Arc::new(
            errors
                .into_iter()
                .map(|e| Value::String(Arc::new(e)))
                .collect(),
        ))
    })))
}

fn optional(v: Option<Value>) -> Value {
    let o = match v {
        Some(v) => OptionalValue::of(v),
        None => OptionalValue::none(),
    };
    Value::Opaque(Arc::new(o))
}

fn one_if(bad: bool, message: &str) -> Vec<String> {
    if bad {
        vec![message.to_string()]
    } else {
        Vec::new()
    }
}

/// A prefix of a generated name may end in `-`; upstream masks a trailing dash (the
/// last two characters become `a`) before checking the rest.
fn as_prefix(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() > 1 && chars[chars.len() - 1] == '-' {
        let mut kept: String = chars[..chars.len() - 2].iter().collect();
        kept.push('a');
        kept
    } else {
        s.to_string()
    }
}

/// An IANA service name, as a named container port (`http`, `metrics-2`).
pub(crate) fn port_name_errors(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 15 {
        errors.push("must be no more than 15 characters".to_string());
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        errors
            .push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !s.bytes().any(|b| b.is_ascii_lowercase()) {
        errors.push("must contain at least one letter (a-z)".into());
    }
    if s.contains("--") {
        errors.push("must not contain consecutive hyphens".into());
    }
    if s.starts_with('-') || s.ends_with('-') {
        errors.push("must not begin or end with a hyphen".into());
    }
    errors
}

/// What Go's `url.ParseRequestURI` accepts, simplified: an absolute URL (a scheme) or
/// an absolute path, without control characters or spaces.
fn uri_errors(s: &str) -> Vec<String> {
    let scheme = s.split_once(':').map(|(scheme, _)| scheme);
    let has_scheme = scheme.is_some_and(|sc| {
        sc.starts_with(|c: char| c.is_ascii_alphabetic())
            && sc
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    let clean = !s.chars().any(|c| c.is_control() || c == ' ');
    one_if(
        !((has_scheme || s.starts_with('/')) && clean),
        &format!("parse {s:?}: invalid URI for request"),
    )
}

/// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` in hexadecimal digits of either case.
fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::super::library::tests::eval;
    use cel::Value;

    #[test]
    fn every_format_accepts_upstreams_examples() {
        for expr in [
            "format.dns1123Label().validate('my-label-name')",
            "format.dns1123Subdomain().validate('apiextensions.k8s.io')",
            "format.dns1035Label().validate('my-label-name')",
            "format.qualifiedName().validate('apiextensions.k8s.io/v1beta1')",
            "format.portName().validate('http-2')",
            "format.dns1123LabelPrefix().validate('my-label-prefix-')",
            "format.dns1123SubdomainPrefix().validate('mysubdomain.prefix.-')",
            "format.dns1035LabelPrefix().validate('my-label-prefix-')",
            "format.labelValue().validate('my-cool-label-Value')",
            "format.uri().validate('http://example.com')",
            "format.uuid().validate('123e4567-e89b-12d3-a456-426614174000')",
            "format.byte().validate('aGVsbG8=')",
            "format.date().validate('2021-01-01')",
            "format.datetime().validate('2021-01-01T00:00:00Z')",
        ] {
            assert_eq!(
                eval(&format!("{expr}.hasValue()")),
                Value::Bool(false),
                "{expr}"
            );
        }
    }

    #[test]
    fn every_format_reports_what_is_wrong_in_upstreams_words() {
        for (expr, first) in [
            (
                "format.dns1123Label().validate('My_Label')",
                "a lowercase RFC 1123 label must consist of",
            ),
            (
                "format.dns1123Subdomain().validate('-a.b')",
                "a lowercase RFC 1123 subdomain must consist of",
            ),
            (
                "format.dns1035Label().validate('1abc')",
                "a DNS-1035 label must consist of",
            ),
            (
                "format.qualifiedName().validate('a/b/c')",
                "name part must consist of",
            ),
            (
                "format.portName().validate('1234')",
                "must contain at least one letter (a-z)",
            ),
            (
                "format.dns1123LabelPrefix().validate('-x-')",
                "a lowercase RFC 1123 label must consist of",
            ),
            (
                "format.dns1123SubdomainPrefix().validate('a..b-')",
                "a lowercase RFC 1123 subdomain must consist of",
            ),
            (
                "format.dns1035LabelPrefix().validate('9a-')",
                "a DNS-1035 label must consist of",
            ),
            (
                "format.labelValue().validate('-x')",
                "a valid label must be an empty string or consist of",
            ),
            (
                "format.uri().validate('example.com')",
                "parse \"example.com\": invalid URI for request",
            ),
            (
                "format.uuid().validate('123e4567')",
                "does not match the UUID format",
            ),
            ("format.byte().validate('not base64!')", "invalid base64"),
            ("format.date().validate('2021-13-01')", "invalid date"),
            (
                "format.datetime().validate('2021-01-01 00:00')",
                "invalid datetime",
            ),
        ] {
            let Value::String(got) = eval(&format!("{expr}.value()[0]")) else {
                panic!("{expr}: not a string");
            };
            assert!(got.starts_with(first), "{expr}: {got}");
        }
        let long = "a".repeat(64);
        assert_eq!(
            eval(&format!("format.dns1123Label().validate('{long}').value()")),
            eval("['must be no more than 63 characters']")
        );
    }

    #[test]
    fn named_finds_formats_by_name_and_is_empty_for_others() {
        assert_eq!(
            eval("format.named('dns1123Label').value().validate('UPPER').hasValue()"),
            Value::Bool(true)
        );
        assert_eq!(
            eval("format.named('uuid').hasValue() && !format.named('nonsense').hasValue()"),
            Value::Bool(true)
        );
    }
}
