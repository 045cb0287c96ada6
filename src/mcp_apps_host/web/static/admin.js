// The admin page: the tenant's servers (the registry behind /api/admin/servers) with who may use each,
// its tool mode and what its views may do, editable; and a search of the audit trail.
// Everything shown goes in as text (dom.js): names and values come from admins and servers.

import { el, element } from "./dom.js";
import { initialTheme, setTheme } from "./theme.js";

/** The view rules of an entry (`views` key), in the order the editor shows them. */
const VIEW_RULES = [
  ["message", "Send messages to the conversation"],
  ["modelContext", "Update the model's context"],
  ["openLink", "Open links"],
  ["download", "Download files"],
  ["sampling", "Ask the model (sampling)"],
];
const RULE_VALUES = ["allow", "ask", "deny"];
// Keys the editor has fields for; the rest of an entry is edited as JSON.
const FIELD_KEYS = new Set(["grants", "enabled", "tools", "views"]);

/**
 * @typedef {{users?: string[], groups?: string[]}} Grants
 * @typedef {{mode?: string, allow?: string[], deny?: string[]}} ToolRules
 * @typedef {{name: string, source: string, readOnly: boolean, entry: Record<string, any>, grants: Grants,
 *            enabled: boolean, status: string, updated?: number, updatedBy?: string}} ServerRow
 */

const api = (path) => new URL(path, location.href).toString();
const rows = /** @type {HTMLElement} */ (document.querySelector("[data-testid=admin-servers]"));
const status = /** @type {HTMLElement} */ (document.querySelector("[data-testid=admin-status]"));
const dialog = /** @type {HTMLDialogElement} */ (document.querySelector("[data-testid=admin-editor]"));
const form = /** @type {HTMLFormElement} */ (dialog.querySelector("form"));
const error = /** @type {HTMLElement} */ (document.querySelector("[data-testid=admin-error]"));
let editing = /** @type {ServerRow | null} */ (null);

/** "a, b ,c" → ["a", "b", "c"] */
const names = (text) => String(text).split(",").map((s) => s.trim()).filter(Boolean);

/** Who may use a server, in words. */
function who(grants) {
  const users = grants?.users || [];
  const groups = grants?.groups || [];
  if (!users.length && !groups.length) return "everyone";
  return [users.length ? `users ${users.join(", ")}` : "", groups.length ? `groups ${groups.join(", ")}` : ""]
    .filter(Boolean).join("; ");
}

/** @param {ToolRules | undefined} tools */
function toolsText(tools) {
  if (!tools) return "all";
  const parts = [tools.mode || "all"];
  if (tools.allow?.length) parts.push(`allow ${tools.allow.join(", ")}`);
  if (tools.deny?.length) parts.push(`deny ${tools.deny.join(", ")}`);
  return parts.join("; ");
}

function viewsText(views) {
  const set = Object.entries(views || {});
  return set.length ? set.map(([key, value]) => `${key} ${value}`).join(", ") : "ask the person";
}

/** @param {ServerRow} server */
function row(server) {
  const actions = server.readOnly
    ? el("span", { class: "help" }, "from the command line or config file")
    : el("span", { class: "admin-actions" },
        el("button", { type: "button", class: "btn btn-small", "data-testid": "admin-edit",
                       "aria-label": `Edit ${server.name}`, onclick: () => openEditor(server) }, "Edit"),
        removeButton(server));
  return el("tr", { "data-testid": "admin-server", "data-server": server.name, "data-source": server.source,
                    "data-enabled": String(server.enabled) },
    el("th", { scope: "row" }, server.name, " ",
       el("span", { class: "badge badge-muted" }, server.readOnly ? "read-only" : "registry")),
    el("td", { "data-testid": "admin-server-status" }, server.enabled ? server.status : "disabled"),
    el("td", { "data-testid": "admin-server-grants" }, who(server.grants)),
    el("td", { "data-testid": "admin-server-tools" }, toolsText(server.entry?.tools)),
    el("td", { "data-testid": "admin-server-views" }, viewsText(server.entry?.views)),
    el("td", {}, actions));
}

/** Remove asks once more on the button itself (no browser dialog). */
function removeButton(server) {
  const button = el("button", { type: "button", class: "btn btn-small btn-ghost", "data-testid": "admin-remove",
                                "aria-label": `Remove ${server.name}` }, "Remove");
  button.addEventListener("click", async () => {
    if (button.dataset.confirm !== "1") {
      button.dataset.confirm = "1";
      button.textContent = `Remove ${server.name}?`;
      return;
    }
    const response = await fetch(api(`api/admin/servers/${encodeURIComponent(server.name)}`),
                                 { method: "DELETE", credentials: "same-origin" });
    say(response.ok ? `${server.name} removed` : await response.text());
    await load();
  });
  return button;
}

function say(text) {
  status.textContent = text;
}

async function load() {
  const response = await fetch(api("api/admin/servers"), { credentials: "same-origin" });
  if (!response.ok) {
    say(await response.text());
    return;
  }
  /** @type {{servers: ServerRow[]}} */
  const body = await response.json();
  rows.replaceChildren(...body.servers.map(row));
  document.body.dataset.loaded = "1";
}

// ---- the editor ------------------------------------------------------------------------------

const field = (name) => /** @type {HTMLInputElement} */ (form.elements.namedItem(name));

function buildViewRules() {
  const box = /** @type {HTMLElement} */ (form.querySelector(".admin-view-rules"));
  for (const [key, label] of VIEW_RULES) {
    const select = el("select", { class: "input", name: `view-${key}`, "data-testid": `admin-view-${key}` },
      el("option", { value: "" }, "ask the person (default)"),
      ...RULE_VALUES.map((v) => el("option", { value: v }, v)));
    box.append(el("label", { class: "field" }, label, select));
  }
}

/** @param {ServerRow | null} server */
function openEditor(server) {
  editing = server;
  const entry = server?.entry || {};
  const tools = /** @type {ToolRules} */ (entry.tools || {});
  field("name").value = server?.name || "";
  field("name").readOnly = server !== null;
  const rest = Object.fromEntries(Object.entries(entry).filter(([key]) => !FIELD_KEYS.has(key)));
  field("entry").value = server ? JSON.stringify(rest, null, 2) : '{\n  "url": "https://",\n  "apps": true\n}';
  field("enabled").checked = server ? server.enabled : true;
  field("users").value = (server?.grants?.users || []).join(", ");
  field("groups").value = (server?.grants?.groups || []).join(", ");
  field("mode").value = tools.mode || "all";
  field("allow").value = (tools.allow || []).join(", ");
  field("deny").value = (tools.deny || []).join(", ");
  for (const [key] of VIEW_RULES) field(`view-${key}`).value = entry.views?.[key] || "";
  error.hidden = true;
  dialog.showModal();
  (server ? field("entry") : field("name")).focus();
}

/** The PUT body from the editor; throws with what is wrong in the JSON. */
function body() {
  let entry;
  try {
    entry = JSON.parse(field("entry").value || "{}");
  } catch (e) {
    throw new Error(`The entry is not JSON: ${e instanceof Error ? e.message : e}`, { cause: e });
  }
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) throw new Error("The entry must be a JSON object");
  const out = { ...entry, enabled: field("enabled").checked,
                grants: { users: names(field("users").value), groups: names(field("groups").value) } };
  const tools = { mode: field("mode").value, allow: names(field("allow").value), deny: names(field("deny").value) };
  if (tools.mode !== "all" || tools.allow.length || tools.deny.length) out.tools = tools;
  const views = Object.fromEntries(VIEW_RULES.map(([key]) => [key, field(`view-${key}`).value]).filter(([, v]) => v));
  if (Object.keys(views).length) out.views = views;
  return out;
}

async function save(event) {
  event.preventDefault();
  const name = field("name").value.trim();
  let payload;
  try {
    if (!name) throw new Error("A server needs a name");
    payload = body();
  } catch (e) {
    error.textContent = e instanceof Error ? e.message : String(e);
    error.hidden = false;
    return;
  }
  const response = await fetch(api(`api/admin/servers/${encodeURIComponent(name)}`), {
    method: "PUT", credentials: "same-origin", headers: { "Content-Type": "application/json" },
    body: JSON.stringify(payload),
  });
  if (!response.ok) {
    error.textContent = await response.text();  // the host names the key that is wrong
    error.hidden = false;
    return;
  }
  dialog.close();
  say(`${name} ${editing ? "changed" : "added"}`);
  await load();
}

// ---- the audit search -------------------------------------------------------------------------

async function search(event) {
  event?.preventDefault();
  const audit = /** @type {HTMLFormElement} */ (document.querySelector("[data-testid=admin-audit-form]"));
  const query = new URLSearchParams({ format: "json", order: "newest", limit: "200" });
  for (const [key, value] of new FormData(audit)) if (String(value).trim()) query.set(key, String(value).trim());
  const response = await fetch(api(`api/audit?${query}`), { credentials: "same-origin" });
  const out = /** @type {HTMLElement} */ (document.querySelector("[data-testid=admin-audit]"));
  if (!response.ok) {
    out.replaceChildren(el("tr", {}, el("td", { colspan: "7" }, await response.text())));
    return;
  }
  const { events } = await response.json();
  out.replaceChildren(...events.map((e) => el("tr", { "data-testid": "admin-audit-row" },
    el("td", {}, new Date(e.ts * 1000).toLocaleString()), el("td", {}, e.user || ""), el("td", {}, e.direction),
    el("td", {}, e.method || ""), el("td", {}, e.server || ""), el("td", {}, e.decision || ""),
    el("td", { class: "admin-reason" }, e.reason || ""))));
}

setTheme(initialTheme());
buildViewRules();
form.addEventListener("submit", save);
element("[data-testid=admin-cancel]").addEventListener("click", () => dialog.close());
element("[data-testid=admin-add]").addEventListener("click", () => openEditor(null));
element("[data-testid=admin-audit-form]").addEventListener("submit", search);
await load();
await search();
// Servers connect and fail while the page is open: their status follows (not while the admin is in the
// middle of something: the editor open, or a removal waiting for its second click).
setInterval(() => {
  if (!dialog.open && document.visibilityState === "visible" && !rows.querySelector("[data-confirm='1']")) load();
}, 5000);
