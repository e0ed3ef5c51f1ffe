//! Serving limits, as kube-apiserver's max-in-flight and timeout filters: at most
//! `--max-requests-inflight` reads and `--max-mutating-requests-inflight` writes at once
//! (429 with `Retry-After` beyond), and no request longer than `--request-timeout` (504).
//! Long-running requests (watches) and health probes count against neither.

use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage};

use crate::api::ApiError;
use crate::endpoints::request_info::RequestInfo;

/// The limits every worker shares.
#[derive(Debug)]
pub struct ServingLimits {
    read_only: Slots,
    mutating: Slots,
    request_timeout: Duration,
}

impl ServingLimits {
    /// Limits of `read_only` and `mutating` requests in flight (0: unlimited), and the
    /// longest a request may take.
    pub fn new(read_only: usize, mutating: usize, request_timeout: Duration) -> Self {
        ServingLimits {
            read_only: Slots::new(read_only),
            mutating: Slots::new(mutating),
            request_timeout,
        }
    }

    /// Requests in flight now: `(read-only, mutating)`.
    pub fn in_flight(&self) -> (usize, usize) {
        (
            self.read_only.used.load(Ordering::Relaxed),
            self.mutating.used.load(Ordering::Relaxed),
        )
    }
}

/// A bounded count of requests in flight.
#[derive(Debug)]
struct Slots {
    /// 0: no limit.
    limit: usize,
    used: AtomicUsize,
}

impl Slots {
    fn new(limit: usize) -> Self {
        Slots {
            limit,
            used: AtomicUsize::new(0),
        }
    }

    /// A slot, held until the guard drops; `None` when all are taken.
    fn take(&self) -> Option<Held<'_>> {
        let taken = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (self.limit == 0 || n < self.limit).then_some(n + 1)
            });
        taken.ok().map(|_| Held(self))
    }
}

struct Held<'a>(&'a Slots);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.used.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Watches run as long as the client wants, and health probes must answer under load:
/// limits and timeouts do not apply to them.
fn is_exempt(info: &RequestInfo) -> bool {
    info.verb == "watch"
        || ["/healthz", "/livez", "/readyz"].iter().any(|p| {
            info.path
                .strip_prefix(p)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
}

fn is_mutating(info: &RequestInfo) -> bool {
    matches!(
        info.verb.as_str(),
        "create" | "update" | "patch" | "delete" | "deletecollection"
    ) || (!info.is_resource_request && !matches!(info.verb.as_str(), "get" | "head" | "options"))
}

/// The max-in-flight and timeout filter (after request info, before the chain).
pub async fn serving_limits(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let limits = req.app_data::<web::Data<ServingLimits>>().cloned();
    let info = req.extensions().get::<Rc<RequestInfo>>().cloned();
    let (Some(limits), Some(info)) = (limits, info) else {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    };
    if is_exempt(&info) {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    }
    let slots = if is_mutating(&info) {
        &limits.mutating
    } else {
        &limits.read_only
    };
    let Some(_held) = slots.take() else {
        return Err(ApiError::too_many_requests().into());
    };
    match tokio::time::timeout(limits.request_timeout, next.call(req)).await {
        Ok(resp) => resp.map(ServiceResponse::map_into_boxed_body),
        Err(_) => Err(ApiError::request_timeout().into()),
    }
}

/// Reads a Go-style duration (`1m0s`, `30s`, `1h`, `500ms`), as kube-apiserver's
/// duration flags are written.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {s:?}: use a number and a unit, e.g. 1m0s, 30s, 500ms");
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let mut total = 0f64;
    let mut rest = s;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let (number, tail) = rest.split_at(digits);
        let n: f64 = number.parse().map_err(|_| bad())?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        let scale = match unit {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return Err(bad()),
        };
        total += n * scale;
        rest = tail;
    }
    Ok(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_kube_apiserver_writes_them() {
        assert_eq!(parse_duration("1m0s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        for bad in ["", "10", "1x", "m", "1.2.3s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn slots_are_bounded_and_given_back() {
        let slots = Slots::new(1);
        let held = slots.take().expect("one is free");
        assert!(slots.take().is_none(), "the only one is taken");
        drop(held);
        assert!(slots.take().is_some(), "and given back");
        let unlimited = Slots::new(0);
        let all: Vec<_> = (0..1000).map(|_| unlimited.take()).collect();
        assert!(all.iter().all(Option::is_some));
    }
}
