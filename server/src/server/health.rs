//! `/healthz`, `/livez`, `/readyz` (with `?verbose`) and `/version`.

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

use crate::endpoints::ApiState;

/// Mounts the health and version endpoints.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz))
        .route("/livez", web::get().to(livez))
        .route("/readyz", web::get().to(readyz))
        .route("/version", web::get().to(version));
}

fn verbose(req: &HttpRequest) -> bool {
    req.query_string()
        .split('&')
        .any(|kv| kv == "verbose" || kv.starts_with("verbose="))
}

fn report(req: &HttpRequest, name: &str, checks: &[(&str, Result<(), String>)]) -> HttpResponse {
    let ok = checks.iter().all(|(_, r)| r.is_ok());
    let mut body = String::new();
    if verbose(req) || !ok {
        for (check, r) in checks {
            match r {
                Ok(()) => body.push_str(&format!("[+]{check} ok\n")),
                Err(why) => body.push_str(&format!("[-]{check} failed: {why}\n")),
            }
        }
        body.push_str(&if ok {
            format!("{name} check passed\n")
        } else {
            format!("{name} check failed\n")
        });
    } else {
        body.push_str("ok");
    }
    let mut resp = if ok {
        HttpResponse::Ok()
    } else {
        HttpResponse::InternalServerError()
    };
    resp.content_type("text/plain; charset=utf-8")
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .body(body)
}

/// The storage check, named `etcd` as in kube-apiserver (whichever backend is in use).
async fn storage_check(state: &ApiState) -> Result<(), String> {
    state.store_health().await
}

async fn healthz(req: HttpRequest, state: web::Data<ApiState>) -> HttpResponse {
    let storage = storage_check(&state).await;
    report(&req, "healthz", &[("ping", Ok(())), ("etcd", storage)])
}

async fn livez(req: HttpRequest) -> HttpResponse {
    report(&req, "livez", &[("ping", Ok(()))])
}

async fn readyz(req: HttpRequest, state: web::Data<ApiState>) -> HttpResponse {
    let storage = storage_check(&state).await;
    // Not ready before the stored CRDs are served, as kube-apiserver waits for its CRD
    // informer: a client that sees ready finds every installed kind.
    let crds = match state.crds_synced.load(std::sync::atomic::Ordering::Acquire) {
        true => Ok(()),
        false => Err("not finished".to_string()),
    };
    report(
        &req,
        "readyz",
        &[
            ("ping", Ok(())),
            ("etcd", storage),
            ("poststarthook/crd-informer-synced", crds),
        ],
    )
}

async fn version() -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(
        json!({
            "major": "1",
            "minor": "32",
            "gitVersion": concat!("v1.32.0+apiserver-rs.", env!("CARGO_PKG_VERSION")),
            "gitCommit": "",
            "gitTreeState": "clean",
            "buildDate": "",
            "goVersion": "",
            "compiler": "rustc",
            "platform": format!("{}/{}", std::env::consts::OS, match std::env::consts::ARCH { "x86_64" => "amd64", "aarch64" => "arm64", a => a }),
        })
        .to_string(),
    )
}
