//! Kubernetes' CEL `semver` library: `isSemver(s)`, `semver(s)` (both with an optional
//! `normalize` flag), `major()`, `minor()`, `patch()`, and `compareTo`,
//! `isGreaterThan`, `isLessThan` (shared with quantities, see `library.rs`).

use std::cmp::Ordering;
use std::sync::Arc;

use cel::extractors::{Arguments, This};
use cel::objects::Opaque;
use cel::{Context, ExecutionError, Value};

/// A semantic version value.
#[derive(Debug, PartialEq, Eq)]
struct Semver(::semver::Version);

impl Opaque for Semver {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Semver"
    }
}

/// Adds the library's functions to a root context.
pub fn install(ctx: &mut Context) {
    let _ = ctx.add_function("isSemver", |Arguments(args): Arguments| {
        Ok::<_, ExecutionError>(Value::Bool(parse_args("isSemver", &args)?.is_ok()))
    });
    let _ = ctx.add_function("semver", |Arguments(args): Arguments| {
        let v = parse_args("semver", &args)?
            .map_err(|e| ExecutionError::function_error("semver", e))?;
        Ok::<_, ExecutionError>(Value::Opaque(Arc::new(Semver(v))))
    });
    let _ = ctx.add_function("major", |This(v): This<Arc<dyn Opaque>>| {
        part("major", &v, |v| v.major)
    });
    let _ = ctx.add_function("minor", |This(v): This<Arc<dyn Opaque>>| {
        part("minor", &v, |v| v.minor)
    });
    let _ = ctx.add_function("patch", |This(v): This<Arc<dyn Opaque>>| {
        part("patch", &v, |v| v.patch)
    });
}

/// The order of two versions by semver precedence (build metadata ignored), or `None`
/// when either is not a version.
pub fn compare(a: &Arc<dyn Opaque>, b: &Arc<dyn Opaque>) -> Option<Ordering> {
    let (a, b) = (a.downcast_ref::<Semver>()?, b.downcast_ref::<Semver>()?);
    Some(a.0.cmp_precedence(&b.0))
}

/// Parses `(s)` or `(s, normalize)`: the version, or why `s` is not one.
fn parse_args(
    function: &str,
    args: &[Value],
) -> Result<Result<::semver::Version, String>, ExecutionError> {
    let (s, normalize) = match args {
        [Value::String(s)] => (s, false),
        [Value::String(s), Value::Bool(n)] => (s, *n),
        _ => {
            return Err(ExecutionError::function_error(
                function,
                "expects a string and an optional bool",
            ))
        }
    };
    Ok(if normalize {
        parse_normalized(s)
    } else {
        ::semver::Version::parse(s).map_err(|e| e.to_string())
    })
}

/// A tolerant parse: a leading `v` dropped, leading zeros of the numbers dropped, and a
/// missing minor or patch taken as 0 (`v1.02` is `1.2.0`), as upstream normalizes.
fn parse_normalized(s: &str) -> Result<::semver::Version, String> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s.splitn(3, '.').map(str::to_string).collect();
    for p in parts.iter_mut() {
        if p.len() > 1 {
            let trimmed = p.trim_start_matches('0');
            *p = if trimmed.starts_with(|c: char| c.is_ascii_digit()) {
                trimmed.to_string()
            } else {
                format!("0{trimmed}")
            };
        }
    }
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".into());
        }
        parts.resize(3, "0".into());
    }
    ::semver::Version::parse(&parts.join(".")).map_err(|e| e.to_string())
}

fn part(
    function: &str,
    v: &Arc<dyn Opaque>,
    get: fn(&::semver::Version) -> u64,
) -> Result<Value, ExecutionError> {
    let v = v
        .downcast_ref::<Semver>()
        .ok_or_else(|| ExecutionError::function_error(function, "expects a semver"))?;
    i64::try_from(get(&v.0))
        .map(Value::Int)
        .map_err(|_| ExecutionError::function_error(function, "integer overflow"))
}

#[cfg(test)]
mod tests {
    use super::super::library::tests::eval;
    use cel::Value;

    #[test]
    fn semver_functions_answer_as_on_a_cluster() {
        for expr in [
            "isSemver('1.2.3') && isSemver('1.0.0-alpha.1+build.5')",
            "!isSemver('v1.2.3') && !isSemver('1.2') && !isSemver('01.2.3')",
            "isSemver('v1.2', true) && isSemver('v01.02.03', true) && !isSemver('1-rc', true)",
            "semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2 && semver('1.2.3').patch() == 3",
            "semver('v1.02', true).minor() == 2 && semver('v1.02', true).patch() == 0",
            "semver('1.10.0').isGreaterThan(semver('1.9.9'))",
            "semver('1.0.0-alpha').isLessThan(semver('1.0.0'))",
            "semver('1.0.0+build1').compareTo(semver('1.0.0+build2')) == 0",
            "semver('2.0.0').compareTo(semver('10.0.0')) == -1",
            // quantities keep their own comparisons
            "quantity('2').isGreaterThan(quantity('1'))",
        ] {
            assert_eq!(eval(expr), Value::Bool(true), "{expr}");
        }
    }

    #[test]
    fn a_string_that_is_no_version_is_an_evaluation_error() {
        let program = super::super::env()
            .compile("semver('one')")
            .expect("compiles");
        let err = program
            .execute(super::super::root())
            .expect_err("not a version");
        assert!(err.to_string().contains("semver"), "{err}");
    }
}
