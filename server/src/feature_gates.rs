//! `--feature-gates`: kube-apiserver's `key=value` list, checked against the gates this
//! server knows. Each known gate has the value this server's behaviour implements;
//! asking for that value is accepted (manifests written for kube-apiserver often
//! repeat defaults), asking for the other is refused with what this server does
//! instead, and an unknown name is refused in upstream's words.

/// A feature gate this server knows.
pub struct Gate {
    pub name: &'static str,
    /// Upstream's stage at the version this server reports (`ALPHA`, `BETA`, `GA`).
    pub stage: &'static str,
    /// The value this server behaves as (its default; the other value is refused).
    pub value: bool,
    /// What this server does, said when the other value is asked for.
    pub behaviour: &'static str,
}

/// The gates this server knows, sorted by name as upstream lists them.
pub const GATES: &[Gate] = &[
    Gate {
        name: "APIResponseCompression",
        stage: "BETA",
        value: true,
        behaviour: "large answers are gzip-compressed when the client accepts it",
    },
    Gate {
        name: "AllAlpha",
        stage: "ALPHA",
        value: false,
        behaviour: "no alpha gate is known to this server",
    },
    Gate {
        name: "AllBeta",
        stage: "BETA",
        value: false,
        behaviour: "every beta gate known to this server is on",
    },
    Gate {
        name: "ConsistentListFromCache",
        stage: "BETA",
        value: true,
        behaviour: "consistent lists are served from the watch cache once it has caught up",
    },
    Gate {
        name: "MultiCIDRServiceAllocator",
        stage: "BETA",
        value: true,
        behaviour: "service cluster IPs are always allocated as IPAddress objects",
    },
];

/// Gates whose both values this server honours: `AllAlpha` turns on alpha gates (it
/// knows none) and `AllBeta` beta gates (all of which are on).
const EITHER_VALUE: &[&str] = &["AllAlpha", "AllBeta"];

/// The flag's help: what it takes, then each gate in upstream's list format.
pub fn help() -> String {
    let mut text = String::from(
        "Feature gates to set, as NAME=true|false pairs (comma-separated). The gates this server knows, each with the value it behaves as (the other is refused):",
    );
    for g in GATES {
        text.push_str(&format!(
            "\n{}=true|false ({} - default={})",
            g.name, g.stage, g.value
        ));
    }
    text
}

/// Checks a `--feature-gates` value (`A=true,B=false`): every problem, in order.
pub fn check(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    for pair in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((name, raw)) = pair.split_once('=') else {
            errors.push(format!(
                "--feature-gates: missing bool value for {pair:?} (expected NAME=true|false)"
            ));
            continue;
        };
        let (name, raw) = (name.trim(), raw.trim());
        let Ok(wanted) = parse_bool(raw) else {
            errors.push(format!(
                "--feature-gates: invalid value of {name}={raw}, err: strconv.ParseBool: parsing {raw:?}: invalid syntax"
            ));
            continue;
        };
        let Some(gate) = GATES.iter().find(|g| g.name == name) else {
            let known: Vec<&str> = GATES.iter().map(|g| g.name).collect();
            errors.push(format!(
                "--feature-gates: unrecognized feature gate: {name} (this server knows {})",
                known.join(", ")
            ));
            continue;
        };
        if wanted != gate.value && !EITHER_VALUE.contains(&name) {
            errors.push(format!(
                "--feature-gates: {name}={wanted} is not supported by this server: it always behaves as {name}={} ({})",
                gate.value, gate.behaviour
            ));
        }
    }
    errors
}

/// Go's `strconv.ParseBool`.
fn parse_bool(s: &str) -> Result<bool, ()> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_gates_at_this_server_s_value_pass_and_everything_else_is_named() {
        assert!(
            check("APIResponseCompression=true,AllAlpha=true, MultiCIDRServiceAllocator=true")
                .is_empty()
        );
        let errors = check("ConsistentListFromCache=false,NoSuchGate=true,AllBeta=maybe,Bare");
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(errors[0].contains("ConsistentListFromCache=false is not supported by this server: it always behaves as ConsistentListFromCache=true"), "{errors:?}");
        assert!(
            errors[1].starts_with("--feature-gates: unrecognized feature gate: NoSuchGate"),
            "{errors:?}"
        );
        assert!(
            errors[2].contains("invalid value of AllBeta=maybe"),
            "{errors:?}"
        );
        assert!(errors[3].contains("missing bool value"), "{errors:?}");
        assert!(help().contains("\nAPIResponseCompression=true|false (BETA - default=true)"));
    }
}
