// The inspector: per view, every message both ways as the host's audit trail recorded it (time,
// direction, method, size, decision, reason), filterable, each expandable to its whole JSON and
// copyable; the view's CSP violations and log; its host context; and controls that change that
// context live (the host sends the view ui/notifications/host-context-changed).

import { el, prettyJSON } from "./dom.js";

const MAX_ROWS = 2000;
const ARROWS = { "view->host": "→ host", "host->view": "→ view" };
/** @type {import("./socket.js").SendFrame} */
let send = () => false;
const panels = new Map(); // handle -> panel state

/** @param {import("./socket.js").SendFrame} sendFn */
export function initInspector(sendFn) {
  send = sendFn;
}

/** The "Inspect" toggle for a view's source bar; its panel goes at the end of the container. */
export function attachInspector(handle, containerOf) {
  const toggle = el("button", {
    type: "button", class: "btn btn-ghost btn-small", "data-testid": "view-inspect", "aria-expanded": "false",
    title: "Messages, CSP, log and host context of this view",
    onclick: () => (panels.get(handle).panel.hidden ? open(handle) : close(handle)),
  }, "Inspect");
  const panel = el("section", { class: "inspector", "data-testid": "inspector", hidden: true, "aria-label": "Inspector" });
  queueMicrotask(() => containerOf().append(panel)); // the container is made after its source bar
  panels.set(handle, { handle, toggle, panel, built: null, records: [] });
  return toggle;
}

function open(handle) {
  const p = panels.get(handle);
  if (!p.built) p.built = build(p);
  p.panel.hidden = false;
  p.toggle.setAttribute("aria-expanded", "true");
  send({ type: "inspector-open", view: handle });
}

function close(handle) {
  const p = panels.get(handle);
  p.panel.hidden = true;
  p.toggle.setAttribute("aria-expanded", "false");
  send({ type: "inspector-close", view: handle });
}

function build(p) {
  const filter = el("input", { type: "search", class: "input", "data-testid": "inspector-filter", "aria-label": "Filter the messages", placeholder: "Filter: method, direction, decision, reason…", oninput: () => redraw(p) });
  const kind = el("select", { class: "input", "data-testid": "inspector-kind", "aria-label": "Show", onchange: () => redraw(p) },
    el("option", { value: "all" }, "All messages"), el("option", { value: "csp" }, "CSP violations"),
    el("option", { value: "log" }, "Log (notifications/message)"), el("option", { value: "refused" }, "Refused"));
  const list = el("ol", { class: "inspector-records", "data-testid": "inspector-records" });
  const context = el("pre", { class: "code", "data-testid": "inspector-context" }, "…");
  const b = { filter, kind, list, context, controls: controls(p.handle) };
  p.panel.append(
    b.controls,
    el("details", { class: "inspector-context" }, el("summary", {}, "Host context"), context),
    el("div", { class: "inspector-filters" }, filter, kind),
    list);
  return b;
}

/** Theme, locale, time zone, display mode, container size, platform and device: sent as one change. */
function controls(handle) {
  const field = (label, node) => el("label", { class: "inspector-field" }, el("span", {}, label), node);
  const select = (testid, values) => el("select", { class: "input", "data-testid": testid },
    el("option", { value: "" }, "—"), values.map((v) => el("option", { value: v }, v)));
  const theme = select("inspector-theme", ["light", "dark"]);
  const mode = select("inspector-display-mode", ["inline", "fullscreen", "pip"]);
  const platform = select("inspector-platform", ["web", "desktop", "mobile"]);
  const locale = el("input", { class: "input", "data-testid": "inspector-locale", placeholder: "e.g. fr-FR", size: 8 });
  const zone = el("input", { class: "input", "data-testid": "inspector-time-zone", placeholder: "e.g. Asia/Tokyo", size: 12 });
  const width = el("input", { class: "input", type: "number", min: 1, "data-testid": "inspector-width", placeholder: "flexible", size: 6 });
  const height = el("input", { class: "input", type: "number", min: 1, "data-testid": "inspector-height", placeholder: "flexible", size: 6 });
  const touch = select("inspector-touch", ["true", "false"]);
  const hover = select("inspector-hover", ["true", "false"]);
  const apply = () => {
    /** @type {import("./frames").ViewHostContextFrame} */
    const frame = { type: "view-host-context", view: handle };
    const text = (node, key) => { if (node.value.trim()) frame[key] = node.value.trim(); };
    const num = (node, key) => { const n = parseInt(node.value, 10); if (n > 0) frame[key] = n; };
    const bool = (node, key) => { if (node.value) frame[key] = node.value === "true"; };
    text(theme, "theme"); text(locale, "locale"); text(zone, "timeZone"); text(mode, "displayMode");
    num(width, "containerWidth"); num(height, "containerHeight"); text(platform, "platform");
    bool(touch, "touch"); bool(hover, "hover");
    send(frame);
  };
  return el("div", { class: "inspector-controls" },
    field("Theme", theme), field("Locale", locale), field("Time zone", zone), field("Display mode", mode),
    field("Width", width), field("Height", height), field("Platform", platform), field("Touch", touch), field("Hover", hover),
    el("button", { type: "button", class: "btn btn-small btn-primary", "data-testid": "inspector-apply", onclick: apply }, "Send to view"));
}

/**
 * Host → page `inspector-records`: rows from the audit trail, oldest first.
 * @param {import("./frames").InspectorRecordsFrame} msg
 */
export function inspectorRecords(msg) {
  const p = panels.get(msg.view);
  if (!p || !p.built || !Array.isArray(msg.records)) return;
  for (const r of msg.records) {
    p.records.push(r);
    const row = recordRow(r);
    p.built.list.append(row);
    row.hidden = !matches(p, r);
  }
  while (p.records.length > MAX_ROWS) {
    p.records.shift();
    p.built.list.firstElementChild.remove();
  }
}

/**
 * Host → page `inspector-context`: what the view's host context is now.
 * @param {import("./frames").InspectorContextFrame} msg
 */
export function inspectorContext(msg) {
  const p = panels.get(msg.view);
  if (p && p.built) p.built.context.textContent = prettyJSON(msg.context);
}

function matches(p, r) {
  const kind = p.built.kind.value;
  if (kind === "csp" && r.method !== "csp-violation") return false;
  if (kind === "log" && r.method !== "notifications/message") return false;
  if (kind === "refused" && r.decision !== "refused") return false;
  const words = p.built.filter.value.trim().toLowerCase();
  if (!words) return true;
  const text = [r.method, r.direction, r.decision, r.reason, r.payload].map((v) => String(v ?? "")).join(" ").toLowerCase();
  return words.split(/\s+/).every((w) => text.includes(w));
}

function redraw(p) {
  [...p.built.list.children].forEach((row, i) => { row.hidden = !matches(p, p.records[i]); });
}

function recordRow(r) {
  const time = new Date(r.ts * 1000).toISOString().slice(11, 23);
  const json = el("pre", { class: "code inspector-json", "data-testid": "inspector-json", hidden: true });
  const copy = el("button", { type: "button", class: "btn btn-ghost btn-small", "data-testid": "inspector-copy", title: "Copy as JSON", onclick: (e) => { e.stopPropagation(); copyRecord(r); } }, "Copy");
  // The row's facts are one button (expand) beside Copy, not a button row holding another button.
  const toggle = el("button", { type: "button", class: "inspector-toggle", "aria-expanded": "false", onclick: () => expand(r, json, toggle) },
    el("time", {}, time),
    el("span", { class: "inspector-dir" }, ARROWS[r.direction] || r.direction),
    el("code", { class: "inspector-method" }, r.method || (r.id !== null && r.id !== undefined ? `reply ${r.id}` : "—")),
    el("span", { class: "inspector-size" }, r.payload_size ? `${r.payload_size} B` : ""),
    el("span", { class: `inspector-decision decision-${r.decision || "none"}` }, r.decision || ""),
    el("span", { class: "inspector-reason" }, r.reason || ""));
  const head = el("div", { class: "inspector-row" }, toggle, copy);
  return el("li", { "data-testid": "inspector-record", "data-direction": r.direction, "data-method": r.method || "", "data-decision": r.decision || "" }, head, json);
}

async function fullRecord(r) {
  let payload = r.payload;
  if (r.payload_sha256) {
    const resp = await fetch(`/api/audit/payload/${r.payload_sha256}`, { credentials: "same-origin" });
    if (resp.ok) payload = (await resp.json()).payload;
  }
  return { ...r, payload, payload_truncated: false };
}

async function expand(r, json, toggle) {
  if (!json.hidden) { json.hidden = true; toggle.setAttribute("aria-expanded", "false"); return; }
  json.textContent = prettyJSON((await fullRecord(r)).payload);
  json.hidden = false;
  toggle.setAttribute("aria-expanded", "true");
}

async function copyRecord(r) {
  const text = JSON.stringify(await fullRecord(r), null, 2);
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // Without clipboard access, select the JSON so the person can copy it.
    console.warn("clipboard not available");
  }
}

/**
 * The conversation was reset or the connection lost: the panels went with their views, but for the views
 * that stay (pinned ones), whose Inspect toggle still needs its panel.
 * @param {Set<string>} [kept] the handles of the views that stay
 */
export function inspectorsReset(kept = new Set()) {
  for (const handle of [...panels.keys()]) if (!kept.has(handle)) panels.delete(handle);
}
