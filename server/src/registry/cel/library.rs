//! The Kubernetes CEL libraries rules commonly use, beyond the standard library and
//! cel-rust's extensions: regex `find`/`findAll`, list `isSorted`/`sum`/`min`/`max`,
//! `quantity`, `url`, `ip` and `cidr` here; `format` and `semver` in their own files.

use std::net::IpAddr;
use std::sync::Arc;

use cel::extractors::{Arguments, This};
use cel::objects::Opaque;
use cel::{Context, ExecutionError, Value};

type Result<T> = std::result::Result<T, ExecutionError>;

/// Adds the library's functions to a root context.
pub fn install(ctx: &mut Context) {
    super::format::install(ctx);
    super::semver::install(ctx);
    // A name the environment already declares keeps its own meaning.
    let _ = ctx.add_function("find", find);
    let _ = ctx.add_function("findAll", find_all);
    let _ = ctx.add_function("isSorted", is_sorted);
    let _ = ctx.add_function("sum", sum);
    let _ = ctx.add_function("min", min);
    let _ = ctx.add_function("max", max);
    let _ = ctx.add_function("quantity", quantity);
    let _ = ctx.add_function("isQuantity", is_quantity);
    let _ = ctx.add_function("isInteger", is_integer);
    let _ = ctx.add_function("asInteger", as_integer);
    let _ = ctx.add_function("asApproximateFloat", as_approximate_float);
    let _ = ctx.add_function("sign", sign);
    let _ = ctx.add_function("compareTo", compare_to);
    let _ = ctx.add_function("isGreaterThan", is_greater_than);
    let _ = ctx.add_function("isLessThan", is_less_than);
    let _ = ctx.add_function("url", url);
    let _ = ctx.add_function("isURL", is_url);
    let _ = ctx.add_function("getScheme", |This(u): This<Arc<dyn Opaque>>| {
        part(&u, |u| u.scheme.clone())
    });
    let _ = ctx.add_function("getHost", |This(u): This<Arc<dyn Opaque>>| {
        part(&u, |u| u.host.clone())
    });
    let _ = ctx.add_function("getHostname", |This(u): This<Arc<dyn Opaque>>| {
        part(&u, |u| u.hostname().to_string())
    });
    let _ = ctx.add_function("getPort", |This(u): This<Arc<dyn Opaque>>| {
        part(&u, |u| u.port().to_string())
    });
    let _ = ctx.add_function("getEscapedPath", |This(u): This<Arc<dyn Opaque>>| {
        part(&u, |u| u.path.clone())
    });
    let _ = ctx.add_function("ip", ip);
    let _ = ctx.add_function("isIP", |s: Arc<String>| s.parse::<IpAddr>().is_ok());
    let _ = ctx.add_function("cidr", cidr);
    let _ = ctx.add_function("isCIDR", |s: Arc<String>| Cidr::parse(&s).is_some());
    let _ = ctx.add_function("family", |This(v): This<Arc<dyn Opaque>>| {
        Ok::<_, ExecutionError>(Value::Int(if ip_of("family", &v)?.is_ipv4() {
            4
        } else {
            6
        }))
    });
    let _ = ctx.add_function("isLoopback", |This(v): This<Arc<dyn Opaque>>| {
        Ok::<_, ExecutionError>(Value::Bool(ip_of("isLoopback", &v)?.is_loopback()))
    });
    let _ = ctx.add_function("isUnspecified", |This(v): This<Arc<dyn Opaque>>| {
        Ok::<_, ExecutionError>(Value::Bool(ip_of("isUnspecified", &v)?.is_unspecified()))
    });
    let _ = ctx.add_function("containsIP", contains_ip);
    let _ = ctx.add_function("containsCIDR", contains_cidr);
    let _ = ctx.add_function("prefixLength", |This(v): This<Arc<dyn Opaque>>| {
        Ok::<_, ExecutionError>(Value::Int(i64::from(cidr_of("prefixLength", &v)?.bits)))
    });
}

/// An IP address value (`ip('10.0.0.1')`).
#[derive(Debug, PartialEq, Eq)]
struct Ip(IpAddr);

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        "net.IP"
    }
}

/// A CIDR value (`cidr('10.0.0.0/8')`): an address and a prefix length.
#[derive(Debug, PartialEq, Eq)]
struct Cidr {
    ip: IpAddr,
    bits: u8,
}

impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        "net.CIDR"
    }
}

impl Cidr {
    fn parse(s: &str) -> Option<Cidr> {
        let (ip, bits) = s.split_once('/')?;
        let ip: IpAddr = ip.parse().ok()?;
        let bits: u8 = bits.parse().ok()?;
        let max = if ip.is_ipv4() { 32 } else { 128 };
        (bits <= max).then_some(Cidr { ip, bits })
    }

    /// The address as a 128-bit number and the prefix length in that space.
    fn key(ip: IpAddr) -> (u128, bool) {
        match ip {
            IpAddr::V4(v4) => (u128::from(u32::from(v4)), true),
            IpAddr::V6(v6) => (u128::from(v6), false),
        }
    }

    fn contains(&self, ip: IpAddr) -> bool {
        let (net, v4) = Self::key(self.ip);
        let (addr, addr_v4) = Self::key(ip);
        if v4 != addr_v4 {
            return false;
        }
        let width = if v4 { 32 } else { 128 };
        let shift = width - u32::from(self.bits);
        shift >= width || (net >> shift) == (addr >> shift)
    }
}

fn ip(s: Arc<String>) -> Result<Value> {
    let ip = s
        .parse::<IpAddr>()
        .map_err(|_| error("ip", format!("IP Address {s:?} parse error")))?;
    Ok(Value::Opaque(Arc::new(Ip(ip))))
}

fn cidr(s: Arc<String>) -> Result<Value> {
    let c = Cidr::parse(&s)
        .ok_or_else(|| error("cidr", format!("network address {s:?} parse error")))?;
    Ok(Value::Opaque(Arc::new(c)))
}

fn ip_of(function: &str, v: &Arc<dyn Opaque>) -> Result<IpAddr> {
    v.downcast_ref::<Ip>()
        .map(|i| i.0)
        .ok_or_else(|| error(function, "expects an IP address"))
}

fn cidr_of<'a>(function: &str, v: &'a Arc<dyn Opaque>) -> Result<&'a Cidr> {
    v.downcast_ref::<Cidr>()
        .ok_or_else(|| error(function, "expects a CIDR"))
}

/// `cidr.containsIP(ip)`, the IP given as an `ip` value or a string.
fn contains_ip(This(c): This<Arc<dyn Opaque>>, other: Value) -> Result<Value> {
    let c = cidr_of("containsIP", &c)?;
    let ip = match &other {
        Value::String(s) => s
            .parse::<IpAddr>()
            .map_err(|_| error("containsIP", format!("IP Address {s:?} parse error")))?,
        Value::Opaque(o) => ip_of("containsIP", o)?,
        _ => return Err(error("containsIP", "expects an IP address")),
    };
    Ok(Value::Bool(c.contains(ip)))
}

/// `cidr.containsCIDR(other)`: every address of `other` is in `cidr`.
fn contains_cidr(This(c): This<Arc<dyn Opaque>>, other: Value) -> Result<Value> {
    let c = cidr_of("containsCIDR", &c)?;
    let inner = match &other {
        Value::String(s) => Cidr::parse(s)
            .ok_or_else(|| error("containsCIDR", format!("network address {s:?} parse error")))?,
        Value::Opaque(o) => {
            let inner = cidr_of("containsCIDR", o)?;
            Cidr {
                ip: inner.ip,
                bits: inner.bits,
            }
        }
        _ => return Err(error("containsCIDR", "expects a CIDR")),
    };
    Ok(Value::Bool(inner.bits >= c.bits && c.contains(inner.ip)))
}

fn error(function: &str, message: impl ToString) -> ExecutionError {
    ExecutionError::function_error(function, message)
}

fn regex(function: &str, pattern: &str) -> Result<regex::Regex> {
    regex::Regex::new(pattern).map_err(|e| error(function, e))
}

/// `s.find(re)`: the first match, or the empty string.
fn find(This(s): This<Arc<String>>, re: Arc<String>) -> Result<Value> {
    let re = regex("find", &re)?;
    let found = re.find(&s).map(|m| m.as_str()).unwrap_or_default();
    Ok(Value::String(Arc::new(found.to_string())))
}

/// `s.findAll(re)` and `s.findAll(re, n)`: every match (at most `n`, when n ≥ 0).
fn find_all(This(s): This<Arc<String>>, Arguments(args): Arguments) -> Result<Value> {
    let re = match args.first() {
        Some(Value::String(p)) => regex("findAll", p)?,
        _ => return Err(error("findAll", "expects a regular expression")),
    };
    let limit = match args.get(1) {
        Some(Value::Int(n)) if *n >= 0 => usize::try_from(*n).unwrap_or(usize::MAX),
        _ => usize::MAX,
    };
    let found = re
        .find_iter(&s)
        .take(limit)
        .map(|m| Value::String(Arc::new(m.as_str().to_string())))
        .collect();
    Ok(Value::List(Arc::new(found)))
}

fn is_sorted(This(list): This<Arc<Vec<Value>>>) -> bool {
    list.windows(2).all(|w| w[0] <= w[1])
}

fn sum(This(list): This<Arc<Vec<Value>>>) -> Result<Value> {
    let overflow = || error("sum", "integer overflow");
    let mut ints: i64 = 0;
    let mut floats: Option<f64> = None;
    for v in list.iter() {
        match v {
            Value::Int(i) => ints = ints.checked_add(*i).ok_or_else(overflow)?,
            Value::UInt(u) => {
                let u = i64::try_from(*u).map_err(|_| overflow())?;
                ints = ints.checked_add(u).ok_or_else(overflow)?
            }
            Value::Float(f) => *floats.get_or_insert(0.0) += f,
            _ => return Err(error("sum", "expects a list of numbers")),
        }
    }
    Ok(match floats {
        Some(f) => Value::Float(f + ints as f64),
        None => Value::Int(ints),
    })
}

/// The element `better` prefers over every other.
fn extreme(function: &str, list: &[Value], better: fn(&Value, &Value) -> bool) -> Result<Value> {
    let mut best = list
        .first()
        .ok_or_else(|| error(function, "called on an empty list"))?;
    for v in &list[1..] {
        if better(v, best) {
            best = v;
        }
    }
    Ok(best.clone())
}

fn min(This(list): This<Arc<Vec<Value>>>) -> Result<Value> {
    extreme("min", &list, |a, b| a < b)
}

fn max(This(list): This<Arc<Vec<Value>>>) -> Result<Value> {
    extreme("max", &list, |a, b| a > b)
}

/// A resource quantity (`500m`, `1Gi`, `2e3`), held as its value in units.
#[derive(Debug, PartialEq)]
struct Quantity(f64);

impl Eq for Quantity {}

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

/// Parses Kubernetes' quantity syntax: a decimal number and an optional binary
/// (`Ki`…`Ei`), decimal (`n`, `u`, `m`, `k`, `M`…`E`) or exponent (`e3`) suffix.
pub(crate) fn parse_quantity(s: &str) -> Option<f64> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '+' | '-')))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    if !number.contains(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let n: f64 = number.parse().ok()?;
    let scale = match suffix {
        "" => 1.0,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        e if e.starts_with(['e', 'E']) => 10f64.powi(e[1..].parse().ok()?),
        _ => return None,
    };
    Some(n * scale)
}

fn quantity(s: Arc<String>) -> Result<Value> {
    let q =
        parse_quantity(&s).ok_or_else(|| error("quantity", format!("invalid quantity {s:?}")))?;
    Ok(Value::Opaque(Arc::new(Quantity(q))))
}

fn is_quantity(s: Arc<String>) -> bool {
    parse_quantity(&s).is_some()
}

fn quantity_of(function: &str, v: &Arc<dyn Opaque>) -> Result<f64> {
    v.downcast_ref::<Quantity>()
        .map(|q| q.0)
        .ok_or_else(|| error(function, "expects a quantity"))
}

fn fits_i64(q: f64) -> bool {
    q.fract() == 0.0 && q.abs() <= i64::MAX as f64
}

fn is_integer(This(q): This<Arc<dyn Opaque>>) -> Result<Value> {
    Ok(Value::Bool(fits_i64(quantity_of("isInteger", &q)?)))
}

fn as_integer(This(q): This<Arc<dyn Opaque>>) -> Result<Value> {
    let q = quantity_of("asInteger", &q)?;
    if !fits_i64(q) {
        return Err(error(
            "asInteger",
            "quantity is not an integer, or too large",
        ));
    }
    Ok(Value::Int(q as i64))
}

fn as_approximate_float(This(q): This<Arc<dyn Opaque>>) -> Result<Value> {
    Ok(Value::Float(quantity_of("asApproximateFloat", &q)?))
}

fn sign(This(q): This<Arc<dyn Opaque>>) -> Result<Value> {
    let q = quantity_of("sign", &q)?;
    Ok(Value::Int(if q > 0.0 {
        1
    } else if q < 0.0 {
        -1
    } else {
        0
    }))
}

/// Orders two quantities, or two semantic versions (the functions are shared).
fn compare(function: &str, a: &Arc<dyn Opaque>, b: &Arc<dyn Opaque>) -> Result<std::cmp::Ordering> {
    if let Some(order) = super::semver::compare(a, b) {
        return Ok(order);
    }
    let (a, b) = (quantity_of(function, a)?, quantity_of(function, b)?);
    a.partial_cmp(&b)
        .ok_or_else(|| error(function, "quantities do not compare"))
}

fn compare_to(This(a): This<Arc<dyn Opaque>>, b: Arc<dyn Opaque>) -> Result<Value> {
    Ok(Value::Int(compare("compareTo", &a, &b)? as i64))
}

fn is_greater_than(This(a): This<Arc<dyn Opaque>>, b: Arc<dyn Opaque>) -> Result<Value> {
    Ok(Value::Bool(compare("isGreaterThan", &a, &b)?.is_gt()))
}

fn is_less_than(This(a): This<Arc<dyn Opaque>>, b: Arc<dyn Opaque>) -> Result<Value> {
    Ok(Value::Bool(compare("isLessThan", &a, &b)?.is_lt()))
}

/// An absolute URL, split into the parts rules ask for.
#[derive(Debug, PartialEq, Eq)]
struct Url {
    scheme: String,
    /// `host[:port]`, as written.
    host: String,
    path: String,
}

impl Url {
    fn parse(s: &str) -> Option<Url> {
        let (scheme, rest) = s.split_once("://")?;
        let valid_scheme = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if !valid_scheme || s.contains(char::is_whitespace) {
            return None;
        }
        let rest = rest.split(['?', '#']).next().unwrap_or_default();
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let host = authority.rsplit('@').next().unwrap_or_default();
        Some(Url {
            scheme: scheme.to_string(),
            host: host.to_string(),
            path: path.to_string(),
        })
    }

    /// The host without port (and an IPv6 address without brackets).
    fn hostname(&self) -> &str {
        match self.host.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or_default(),
            None => self.host.split(':').next().unwrap_or_default(),
        }
    }

    /// The port when the URL names one, else the empty string.
    fn port(&self) -> &str {
        let after_host = match self.host.strip_prefix('[') {
            Some(v6) => v6.split_once(']').map(|(_, rest)| rest).unwrap_or_default(),
            None => self.host.find(':').map_or("", |i| &self.host[i..]),
        };
        after_host.strip_prefix(':').unwrap_or_default()
    }
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.URL"
    }
}

fn url(s: Arc<String>) -> Result<Value> {
    let u =
        Url::parse(&s).ok_or_else(|| error("url", format!("URL {s:?} is not an absolute URL")))?;
    Ok(Value::Opaque(Arc::new(u)))
}

fn is_url(s: Arc<String>) -> bool {
    Url::parse(&s).is_some()
}

fn part(u: &Arc<dyn Opaque>, get: impl Fn(&Url) -> String) -> Result<Value> {
    let u = u
        .downcast_ref::<Url>()
        .ok_or_else(|| error("url", "expects a URL"))?;
    Ok(Value::String(Arc::new(get(u))))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Evaluates `expr` with the whole library installed; panics on an error.
    pub(in crate::registry::cel) fn eval(expr: &str) -> Value {
        let program = super::super::env().compile(expr).expect("compiles");
        program
            .execute(super::super::root())
            .unwrap_or_else(|e| panic!("{expr}: {e}"))
    }

    #[test]
    fn the_kubernetes_libraries_answer_as_on_a_cluster() {
        for expr in [
            "'abc 123 def 456'.find('[0-9]+') == '123'",
            "'abc 123 def 456'.findAll('[0-9]+') == ['123', '456']",
            "'a1b2c3'.findAll('[0-9]', 2) == ['1', '2']",
            "[1, 2, 3].isSorted() && ![2, 1].isSorted()",
            "[1, 2, 3].sum() == 6 && [1.5, 2.5].sum() == 4.0",
            "[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3",
            "quantity('1Gi').isGreaterThan(quantity('1000Mi'))",
            "quantity('500m').isLessThan(quantity('1'))",
            "quantity('2k').asInteger() == 2000 && !quantity('1.5').isInteger()",
            "quantity('1Ki').compareTo(quantity('1024')) == 0 && quantity('-1').sign() == -1",
            "isQuantity('10Mi') && !isQuantity('ten')",
            "url('https://user@example.com:8443/a/b?q=1').getHost() == 'example.com:8443'",
            "url('https://example.com:8443/a/b').getHostname() == 'example.com'",
            "url('https://example.com:8443/a/b').getPort() == '8443'",
            "url('https://[::1]:80/x').getHostname() == '::1'",
            "url('https://[::1]:80/x').getPort() == '80'",
            "url('https://example.com/a/b').getEscapedPath() == '/a/b'",
            "url('http://example.com').getScheme() == 'http' && !isURL('not a url')",
            "isIP('10.0.0.1') && isIP('::1') && !isIP('10.0.0.300')",
            "ip('10.0.0.1').family() == 4 && ip('::1').family() == 6 && ip('127.0.0.1').isLoopback()",
            "cidr('10.0.0.0/8').containsIP('10.1.2.3') && !cidr('10.0.0.0/8').containsIP(ip('11.0.0.1'))",
            "cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16') && !cidr('10.1.0.0/16').containsCIDR('10.0.0.0/8')",
            "cidr('fd00::/8').containsIP('fd12::1') && cidr('0.0.0.0/0').containsIP('1.2.3.4')",
            "cidr('192.168.0.0/24').prefixLength() == 24 && isCIDR('10.0.0.0/8') && !isCIDR('10.0.0.0/33')",
        ] {
            assert_eq!(eval(expr), Value::Bool(true), "{expr}");
        }
    }
}
