//! `/docs`: a browsable API reference. One self-contained HTML page whose inline script
//! reads the server's own OpenAPI v3 documents (`/openapi/v3` and the documents it lists)
//! and renders every kind: its description, fields (nested objects expand), and the
//! operations that serve it. Nothing is fetched from anywhere but this server.

use actix_web::http::header;
use actix_web::{web, HttpResponse};

/// Mounts `/docs`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/docs", web::get().to(page))
        .route("/docs/", web::get().to(page));
}

async fn page() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-cache, private"))
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'none'",
        ))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(PAGE)
}

/// The page. Data is only ever inserted with `textContent`, never as HTML, so
/// descriptions cannot inject markup.
const PAGE: &str = r##"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference</title>
<style>
  :root { --fg: #1d2330; --muted: #5b6475; --line: #dde1e8; --accent: #326ce5; --bg2: #f5f7fa; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); }
  header { padding: 12px 20px; background: var(--accent); color: #fff; display: flex; gap: 16px; align-items: center; }
  header h1 { font-size: 18px; margin: 0; font-weight: 600; }
  header input { margin-left: auto; padding: 6px 10px; border-radius: 4px; border: 0; width: 260px; }
  #layout { display: flex; min-height: calc(100vh - 52px); }
  nav { width: 280px; border-right: 1px solid var(--line); padding: 12px; background: var(--bg2); overflow-y: auto; }
  nav h2 { font-size: 12px; text-transform: uppercase; letter-spacing: .05em; color: var(--muted); margin: 14px 0 4px; }
  nav a { display: block; padding: 3px 8px; border-radius: 4px; color: var(--fg); text-decoration: none; }
  nav a:hover, nav a.current { background: #e3eafc; }
  main { flex: 1; padding: 20px 28px; overflow-x: auto; }
  main h2 { margin: 0 0 4px; font-size: 22px; }
  .gv { color: var(--muted); font-family: ui-monospace, monospace; }
  .desc { white-space: pre-wrap; margin: 8px 0 16px; max-width: 900px; }
  table { border-collapse: collapse; width: 100%; max-width: 1100px; }
  th, td { text-align: left; vertical-align: top; padding: 6px 8px; border-bottom: 1px solid var(--line); }
  th { font-size: 12px; color: var(--muted); text-transform: uppercase; }
  td.name { font-family: ui-monospace, monospace; white-space: nowrap; }
  td.type { font-family: ui-monospace, monospace; color: #7a3e9d; white-space: nowrap; }
  .req { color: #c0392b; font-size: 11px; margin-left: 6px; }
  .ext { color: var(--muted); font-size: 12px; font-family: ui-monospace, monospace; }
  details > summary { cursor: pointer; color: var(--accent); }
  details table { margin-top: 6px; }
  .ops td { font-family: ui-monospace, monospace; }
  .verb { font-weight: 600; text-transform: uppercase; }
  #status { color: rgba(255, 255, 255, .85); }
</style>
</head>
<body>
<header><h1>API reference</h1><span id="status">Loading the OpenAPI documents…</span>
<input id="filter" type="search" placeholder="Filter kinds" aria-label="Filter kinds"></header>
<div id="layout"><nav id="nav" aria-label="Kinds"></nav><main id="main"></main></div>
<script>
"use strict";
const kinds = [];          // { group, version, kind, name, schema, doc, ops }
const el = (tag, attrs, ...children) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return e;
};
const apiVersion = k => k.group ? k.group + "/" + k.version : k.version;
const anchor = k => apiVersion(k) + "." + k.kind;

function resolve(schema, doc) {
  let s = schema || {};
  const seen = new Set();
  while (true) {
    if (s.$ref) {
      if (seen.has(s.$ref)) return {};
      seen.add(s.$ref);
      const name = s.$ref.split("/").pop();
      const target = (doc.components && doc.components.schemas || {})[name] || {};
      s = Object.assign({}, target, { description: s.description || target.description, _ref: name });
    } else if (s.allOf && s.allOf.length === 1 && !s.properties) {
      const inner = resolve(s.allOf[0], doc);
      s = Object.assign({}, inner, { description: s.description || inner.description });
    } else {
      return s;
    }
  }
}

function typeName(schema, doc) {
  const s = resolve(schema, doc);
  if (s["x-kubernetes-int-or-string"]) return "int-or-string";
  if (s.type === "array") return "[]" + typeName(s.items, doc);
  if (s.type === "object" && s.additionalProperties && typeof s.additionalProperties === "object") {
    return "map[string]" + typeName(s.additionalProperties, doc);
  }
  if (s._ref && (s.type === "object" || !s.type)) return s._ref.split(".").pop();
  if (s.type === "object" || !s.type) return "Object";
  return s.type + (s.format ? " (" + s.format + ")" : "");
}

function extensions(s) {
  const out = [];
  if (s.enum) out.push("enum: " + s.enum.map(v => JSON.stringify(v)).join(", "));
  if (s.default !== undefined && !(typeof s.default === "object" && Object.keys(s.default).length === 0)) {
    out.push("default: " + JSON.stringify(s.default));
  }
  if (s.minimum !== undefined) out.push("minimum: " + s.minimum);
  if (s.maximum !== undefined) out.push("maximum: " + s.maximum);
  if (s.pattern) out.push("pattern: " + s.pattern);
  for (const k of ["x-kubernetes-list-type", "x-kubernetes-map-type", "x-kubernetes-patch-strategy"]) {
    if (s[k]) out.push(k.replace("x-kubernetes-", "") + ": " + s[k]);
  }
  if (s["x-kubernetes-list-map-keys"]) out.push("list-map-keys: " + s["x-kubernetes-list-map-keys"].join(", "));
  if (s["x-kubernetes-preserve-unknown-fields"]) out.push("preserves unknown fields");
  return out.join("; ");
}

function fieldsTable(schema, doc, depth, path) {
  const s = resolve(schema, doc);
  let target = s;
  if (s.type === "array") target = resolve(s.items, doc);
  else if (s.additionalProperties && typeof s.additionalProperties === "object") target = resolve(s.additionalProperties, doc);
  const props = target.properties || {};
  const names = Object.keys(props).sort();
  if (!names.length) return null;
  const required = new Set(target.required || []);
  const body = el("tbody");
  for (const name of names) {
    const sub = resolve(props[name], doc);
    const nested = depth < 8 && !path.includes(sub._ref || "\u0000") ? fieldsTable(props[name], doc, depth + 1, path.concat(sub._ref ? [sub._ref] : [])) : null;
    const desc = el("td", {}, el("div", { class: "desc" }, sub.description || ""));
    const ext = extensions(sub);
    if (ext) desc.append(el("div", { class: "ext" }, ext));
    if (nested) desc.append(el("details", {}, el("summary", {}, "fields of " + name), nested));
    body.append(el("tr", {},
      el("td", { class: "name" }, name, required.has(name) ? el("span", { class: "req" }, "required") : null),
      el("td", { class: "type" }, typeName(props[name], doc)),
      desc));
  }
  return el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "Field"), el("th", {}, "Type"), el("th", {}, "Description"))), body);
}

function show(k) {
  const main = document.getElementById("main");
  main.replaceChildren();
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("current", a.dataset.anchor === anchor(k));
  main.append(el("h2", {}, k.kind), el("div", { class: "gv" }, "apiVersion: " + apiVersion(k) + "  ·  " + k.name));
  main.append(el("div", { class: "desc" }, k.schema.description || ""));
  main.append(el("h3", {}, "Fields"));
  main.append(fieldsTable(k.schema, k.doc, 0, [k.name]) || el("p", {}, "No fields."));
  if (k.ops.length) {
    const body = el("tbody");
    for (const op of k.ops) {
      body.append(el("tr", {}, el("td", { class: "verb" }, op.method), el("td", {}, op.path), el("td", {}, op.description || "")));
    }
    main.append(el("h3", {}, "Operations"), el("table", { class: "ops" }, body));
  }
}

function renderNav() {
  const filter = document.getElementById("filter").value.trim().toLowerCase();
  const nav = document.getElementById("nav");
  nav.replaceChildren();
  let last = null;
  for (const k of kinds) {
    if (filter && !k.kind.toLowerCase().includes(filter) && !apiVersion(k).toLowerCase().includes(filter)) continue;
    if (apiVersion(k) !== last) { last = apiVersion(k); nav.append(el("h2", {}, last)); }
    const a = el("a", { href: "#" + anchor(k) }, k.kind);
    a.dataset.anchor = anchor(k);
    nav.append(a);
  }
}

function fromHash() {
  const want = decodeURIComponent(location.hash.slice(1));
  const k = kinds.find(k => anchor(k) === want) || kinds.find(k => !k.kind.endsWith("List")) || kinds[0];
  if (k) show(k);
}

async function load() {
  const status = document.getElementById("status");
  try {
    const index = await (await fetch("/openapi/v3", { headers: { Accept: "application/json" } })).json();
    const entries = Object.entries(index.paths || {});
    const docs = await Promise.all(entries.map(async ([, v]) =>
      (await fetch(v.serverRelativeURL, { headers: { Accept: "application/json" } })).json()));
    for (const doc of docs) {
      const ops = [];
      for (const [path, item] of Object.entries(doc.paths || {})) {
        for (const method of ["get", "put", "post", "patch", "delete"]) {
          const op = item[method];
          if (op) ops.push({ path, method, description: op.description, gvk: op["x-kubernetes-group-version-kind"] || {} });
        }
      }
      for (const [name, schema] of Object.entries((doc.components || {}).schemas || {})) {
        for (const gvk of schema["x-kubernetes-group-version-kind"] || []) {
          if (kinds.some(k => k.group === gvk.group && k.version === gvk.version && k.kind === gvk.kind)) continue;
          kinds.push({ group: gvk.group, version: gvk.version, kind: gvk.kind, name, schema, doc,
            ops: ops.filter(o => o.gvk.group === gvk.group && o.gvk.version === gvk.version && o.gvk.kind === gvk.kind) });
        }
      }
    }
    // The core group first, then by group-version; in each, served kinds (those with
    // operations) before the rest (lists, options, events), then by name.
    kinds.sort((a, b) => (a.group === "" ? -1 : 0) - (b.group === "" ? -1 : 0) ||
      apiVersion(a).localeCompare(apiVersion(b)) ||
      (b.ops.length > 0) - (a.ops.length > 0) || a.kind.localeCompare(b.kind));
    status.textContent = kinds.length + " kinds from " + docs.length + " OpenAPI documents";
    renderNav();
    fromHash();
  } catch (e) {
    status.textContent = "Could not load the OpenAPI documents: " + e;
  }
}
document.getElementById("filter").addEventListener("input", renderNav);
window.addEventListener("hashchange", fromHash);
load();
</script>
</body>
</html>
"##;
