//! Kubernetes naming rules for definitions: inferred plurals, name syntax.

/// The plural kube-apiserver's CRD tooling would infer: lower-case kind, English plural.
pub fn infer_plural(kind: &str) -> String {
    let lower = kind.to_lowercase();
    if lower.ends_with('s')
        || lower.ends_with('x')
        || lower.ends_with('z')
        || lower.ends_with("ch")
        || lower.ends_with("sh")
    {
        format!("{lower}es")
    } else if lower.ends_with('y')
        && !lower.ends_with("ay")
        && !lower.ends_with("ey")
        && !lower.ends_with("oy")
        && !lower.ends_with("uy")
    {
        format!("{}ies", &lower[..lower.len() - 1])
    } else {
        format!("{lower}s")
    }
}

/// A DNS-1123 label: lower-case alphanumerics and '-', alphanumeric at both ends, ≤ 63.
pub fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// A DNS-1123 subdomain: dot-separated labels, ≤ 253 characters.
pub fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// A Kubernetes API version: `v1`, `v2beta1`, `v1alpha3`.
pub fn is_api_version(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('v') else {
        return false;
    };
    let digits = rest.chars().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 || rest.starts_with('0') {
        return false;
    }
    let tail = &rest[digits..];
    if tail.is_empty() {
        return true;
    }
    let level = tail
        .strip_prefix("alpha")
        .or_else(|| tail.strip_prefix("beta"));
    matches!(level, Some(n) if !n.is_empty() && !n.starts_with('0') && n.chars().all(|c| c.is_ascii_digit()))
}

/// A kind: UpperCamelCase ASCII identifier.
pub fn is_kind(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_alphanumeric())
}

/// `lowerCamelCase` of a snake_case Rust field name, as serde's `rename_all = "camelCase"`.
pub fn camel_case(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `UpperCamelCase` of a property name, for generated struct names.
pub fn upper_camel(s: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in s.chars() {
        if !c.is_ascii_alphanumeric() {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_follow_english_rules() {
        assert_eq!(infer_plural("ConfigMap"), "configmaps");
        assert_eq!(infer_plural("Ingress"), "ingresses");
        assert_eq!(infer_plural("NetworkPolicy"), "networkpolicies");
        assert_eq!(infer_plural("Gateway"), "gateways");
    }

    #[test]
    fn versions() {
        assert!(is_api_version("v1"));
        assert!(is_api_version("v2beta1"));
        assert!(!is_api_version("v1beta"));
        assert!(!is_api_version("1"));
        assert!(!is_api_version("v0"));
    }
}
