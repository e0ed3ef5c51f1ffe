//! Resource quantities (`500m`, `1Gi`, `2e3`) read as Go's `resource.ParseQuantity`
//! reads them: the same grammar, the same two error texts, and exact comparisons (a
//! decimal mantissa times a power of ten, binary suffixes folded into the mantissa).

use std::cmp::Ordering;

/// Go's error for text outside the quantity grammar.
pub const FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// Go's error for a suffix the grammar admits but no unit names (`1ii`, `5e`).
pub const BAD_SUFFIX: &str = "unable to parse quantity's suffix";

/// Mantissas longer than this many digits are compared approximately (as `f64`); no
/// resource quantity a user writes comes near.
const EXACT_DIGITS: usize = 30;

/// A parsed quantity: `mantissa × 10^exponent` (sign in the mantissa).
#[derive(Clone, Copy, Debug)]
pub struct Quantity {
    mantissa: i128,
    exponent: i64,
    /// The value as a float, for comparisons the exact form cannot make.
    approx: f64,
}

impl Quantity {
    /// Zero.
    pub const ZERO: Quantity = Quantity {
        mantissa: 0,
        exponent: 0,
        approx: 0.0,
    };

    /// Parses `text` as Go does (surrounding spaces allowed, as its JSON decoder trims).
    pub fn parse(text: &str) -> Result<Quantity, &'static str> {
        let s = text.trim();
        if s.is_empty() {
            return Err(FORMAT_WRONG);
        }
        let (negative, whole, fraction, suffix) = split(s)?;
        let (base, power) = unit(suffix).ok_or(BAD_SUFFIX)?;
        let digits = format!("{whole}{fraction}");
        let digits = digits.trim_start_matches('0');
        let mut exponent = -(fraction.len() as i64);
        let approx_mantissa: f64 = format!("0{whole}.{fraction}0").parse().unwrap_or(0.0);
        let sign = if negative { -1.0 } else { 1.0 };
        let approx = sign * approx_mantissa * (base as f64).powi(power as i32);
        if digits.len() > EXACT_DIGITS {
            return Ok(Quantity {
                mantissa: 0,
                exponent: 0,
                approx,
            }
            .inexact());
        }
        let mut mantissa: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| FORMAT_WRONG)?
        };
        if base == 10 {
            exponent += power;
        } else {
            // 1024^k: fold the binary factor into the mantissa.
            for _ in 0..power {
                match mantissa.checked_mul(1024) {
                    Some(m) => mantissa = m,
                    None => {
                        return Ok(Quantity {
                            mantissa: 0,
                            exponent: 0,
                            approx,
                        }
                        .inexact())
                    }
                }
            }
        }
        if negative {
            mantissa = -mantissa;
        }
        Ok(Quantity {
            mantissa,
            exponent,
            approx,
        })
    }

    /// Marks a quantity too large for the exact form.
    fn inexact(self) -> Quantity {
        Quantity {
            exponent: i64::MIN,
            ..self
        }
    }

    /// Whether the quantity is below zero.
    pub fn is_negative(&self) -> bool {
        if self.exponent == i64::MIN {
            self.approx < 0.0
        } else {
            self.mantissa < 0
        }
    }

    /// The value as a float (for the CEL library and column printing).
    pub fn as_f64(&self) -> f64 {
        self.approx
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.cmp_exact(other) == Ordering::Equal
    }
}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp_exact(other))
    }
}

impl Quantity {
    /// Compares exactly when both mantissas scale to a common exponent within `i128`,
    /// else as floats.
    fn cmp_exact(&self, other: &Self) -> Ordering {
        let approx = || {
            self.approx
                .partial_cmp(&other.approx)
                .unwrap_or(Ordering::Equal)
        };
        if self.exponent == i64::MIN || other.exponent == i64::MIN {
            return approx();
        }
        let low = self.exponent.min(other.exponent);
        let scale = |q: &Quantity| -> Option<i128> {
            let shift = u32::try_from(q.exponent - low).ok()?;
            10i128.checked_pow(shift)?.checked_mul(q.mantissa)
        };
        match (scale(self), scale(other)) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => approx(),
        }
    }
}

/// Go's `parseQuantityString`: sign, whole digits, fraction digits and suffix.
fn split(s: &str) -> Result<(bool, &str, &str, &str), &'static str> {
    let b = s.as_bytes();
    let mut pos = 0;
    let mut negative = false;
    match b.first() {
        Some(b'-') => {
            negative = true;
            pos = 1;
        }
        Some(b'+') => pos = 1,
        _ => {}
    }
    let digits_from = |start: usize| {
        b[start..]
            .iter()
            .position(|c| !c.is_ascii_digit())
            .map_or(b.len(), |n| start + n)
    };
    let whole_end = digits_from(pos);
    let whole = &s[pos..whole_end];
    pos = whole_end;
    let mut fraction = "";
    if b.get(pos) == Some(&b'.') {
        let end = digits_from(pos + 1);
        fraction = &s[pos + 1..end];
        pos = end;
    }
    let suffix_start = pos;
    while pos < b.len() && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < b.len() && matches!(b[pos], b'-' | b'+') {
        pos += 1;
    }
    if digits_from(pos) != b.len() {
        return Err(FORMAT_WRONG);
    }
    Ok((negative, whole, fraction, &s[suffix_start..]))
}

/// A suffix's base and power (`Ki` → 1024¹, `m` → 10⁻³, `e6` → 10⁶).
fn unit(suffix: &str) -> Option<(i64, i64)> {
    Some(match suffix {
        "" => (10, 0),
        "n" => (10, -9),
        "u" => (10, -6),
        "m" => (10, -3),
        "k" => (10, 3),
        "M" => (10, 6),
        "G" => (10, 9),
        "T" => (10, 12),
        "P" => (10, 15),
        "E" => (10, 18),
        "Ki" => (1024, 1),
        "Mi" => (1024, 2),
        "Gi" => (1024, 3),
        "Ti" => (1024, 4),
        "Pi" => (1024, 5),
        "Ei" => (1024, 6),
        e if e.len() > 1 && e.starts_with(['e', 'E']) => {
            let power: i64 = e[1..].parse().ok()?;
            // Go keeps the exponent in an int32.
            i32::try_from(power).ok()?;
            (10, power)
        }
        _ => return None,
    })
}

/// The first `format: quantity` value of `obj` that does not parse, as Go's decoder
/// reports it (a decoding error: 400, as kube-apiserver answers for built-in kinds).
pub fn first_unparsable(
    obj: &serde_json::Value,
    schema: &serde_json::Value,
) -> Option<&'static str> {
    use serde_json::Value;
    if schema.is_null() {
        return None;
    }
    if schema.get("format").and_then(Value::as_str) == Some("quantity") {
        return match obj {
            Value::String(s) => Quantity::parse(s).err(),
            Value::Number(n) => Quantity::parse(&n.to_string()).err(),
            _ => None,
        };
    }
    match obj {
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            first_unparsable(v, crate::registry::schema::child_schema(schema, k))
        }),
        Value::Array(items) => {
            let item = schema.get("items").unwrap_or(&Value::Null);
            items.iter().find_map(|v| first_unparsable(v, item))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[test]
    fn go_grammar_and_errors() {
        assert_eq!(Quantity::parse("abc").unwrap_err(), FORMAT_WRONG);
        assert_eq!(Quantity::parse("").unwrap_err(), FORMAT_WRONG);
        assert_eq!(Quantity::parse("1x").unwrap_err(), FORMAT_WRONG);
        assert_eq!(Quantity::parse("1.2.3").unwrap_err(), FORMAT_WRONG);
        assert_eq!(Quantity::parse("1ii").unwrap_err(), BAD_SUFFIX);
        assert_eq!(Quantity::parse("5e").unwrap_err(), BAD_SUFFIX);
        for ok in [
            "0", "500m", "1Gi", "+1", "-1", "1.5", "1.", ".5", "2e3", "1E", " 1 ",
        ] {
            assert!(Quantity::parse(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn exact_comparisons() {
        assert!(q("100m") == q("0.1"));
        assert!(q("1") == q("1000m"));
        assert!(q("1Ki") == q("1024"));
        assert!(q("1Gi") > q("1G"));
        assert!(q("2") > q("1999m"));
        assert!(q("1e3") == q("1k"));
        assert!(q("-1").is_negative());
        assert!(!q("0").is_negative());
        assert!(q("1Ei") > q("1E"));
    }
}
