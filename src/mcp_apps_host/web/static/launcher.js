// The app launcher: every tool with a view, across the person's ready servers, in one
// searchable dialog. Choosing one opens the tool picker's form for it (or calls it at once
// when it takes no arguments), so the person opens an app without a model or any JSON.

import { el, trapTab } from "./dom.js";
import { openToolForm } from "./form.js";

/** @type {import("./socket.js").SendFrame} */
let send = () => false;
/** @type {{server: string, tool: Record<string, any>}[]} */
let apps = [];
/** @type {HTMLElement | null} */
let overlay = null; // backdrop + dialog, built once
// Built with the overlay, and read only once it is.
/** @type {HTMLElement} */
let panel;
/** @type {HTMLInputElement} */
let search;
/** @type {HTMLElement} */
let list;
/** @type {HTMLElement} */
let status;
/** @type {HTMLElement | null} */
let returnFocus = null;

/** @param {import("./socket.js").SendFrame} sendFn */
export function initLauncher(sendFn) {
  send = sendFn;
  const opener = document.querySelector("[data-testid=launcher-open]");
  if (opener) opener.addEventListener("click", () => openLauncher());
}

/**
 * Keep the app list in step with the `servers` frame; an open launcher is redrawn in place.
 * @param {import("./frames").ServersFrame} msg
 */
export function launcherServers(msg) {
  apps = appsOf(Array.isArray(msg.servers) ? msg.servers : []);
  if (launcherOpen()) renderList();
}

/** The tools a person may open as an app: a view, callable, on a server that is ready. */
function appsOf(servers) {
  const out = [];
  for (const server of servers) {
    if (!server || server.status !== "ready" || !Array.isArray(server.tools)) continue;
    const name = String(server.name ?? "");
    for (const tool of server.tools) {
      if (tool && tool.hasView && tool.callable !== false && typeof tool.name === "string") out.push({ server: name, tool });
    }
  }
  return out;
}

export function launcherOpen() {
  return !!overlay && !overlay.hidden;
}

// A plain overlay, as the picker's: a consent question arriving meanwhile must stay answerable.
/** @returns {HTMLElement} the backdrop */
function ensureOverlay() {
  if (overlay) return overlay;
  search = el("input", {
    type: "search", class: "input launcher-search", "data-testid": "launcher-search", id: "launcher-search",
    placeholder: "Search apps", autocomplete: "off", spellcheck: "false",
    "aria-controls": "launcher-list", "aria-describedby": "launcher-status",
  });
  search.addEventListener("input", () => renderList());
  search.addEventListener("keydown", (e) => {
    if (e.key === "ArrowDown") {
      e.preventDefault();
      moveFocus(0);
    } else if (e.key === "Enter") {
      // Enter in the search box opens the first match, as a command palette does.
      e.preventDefault();
      const first = entries()[0];
      if (first) first.click();
    }
  });
  list = el("div", { class: "launcher-list", id: "launcher-list", "data-testid": "launcher-list" });
  status = el("p", { class: "launcher-status", id: "launcher-status", role: "status", "aria-live": "polite" });
  panel = el("div", {
    class: "picker launcher", "data-testid": "launcher", role: "dialog", "aria-modal": "true", "aria-labelledby": "launcher-title",
  },
  el("header", { class: "picker-head" },
    el("div", {},
      el("h2", { id: "launcher-title" }, "Apps"),
      el("div", { class: "picker-sub" }, "Open a tool's view: fill in its form, and the view appears in the conversation."),
    ),
    el("button", { type: "button", class: "icon-btn", "aria-label": "Close", title: "Close (Esc)", onclick: () => closeLauncher() }, "×"),
  ),
  el("div", { class: "launcher-search-row" },
    el("label", { class: "visually-hidden", for: "launcher-search" }, "Search apps"),
    search,
  ),
  status,
  list,
  );
  const backdrop = el("div", { class: "picker-backdrop launcher-backdrop", hidden: true }, panel);
  backdrop.addEventListener("mousedown", (e) => { if (e.target === backdrop) closeLauncher(); });
  panel.addEventListener("keydown", onKey);
  document.body.append(backdrop);
  overlay = backdrop;
  return backdrop;
}

function onKey(e) {
  if (e.key === "Escape") {
    e.preventDefault();
    e.stopPropagation();
    closeLauncher();
  } else if (e.key === "Tab") trapTab(e, panel);
  else if ((e.key === "ArrowDown" || e.key === "ArrowUp") && e.target instanceof HTMLElement && e.target.matches("[data-testid=launcher-app]")) {
    e.preventDefault();
    const all = entries();
    const at = all.indexOf(e.target);
    if (e.key === "ArrowUp" && at === 0) search.focus();
    else moveFocus(at + (e.key === "ArrowDown" ? 1 : -1));
  }
}

function entries() {
  return /** @type {HTMLElement[]} */ ([...list.querySelectorAll("[data-testid=launcher-app]")]);
}

function moveFocus(index) {
  const all = entries();
  if (all.length) all[Math.max(0, Math.min(index, all.length - 1))].focus();
}

export function openLauncher() {
  const backdrop = ensureOverlay();
  if (!launcherOpen()) returnFocus = /** @type {HTMLElement | null} */ (document.activeElement);
  search.value = "";
  backdrop.hidden = false;
  renderList();
  search.focus();
}

/** @param {{restoreFocus?: boolean}} [options] */
export function closeLauncher({ restoreFocus = true } = {}) {
  if (!overlay || overlay.hidden) return; // not open
  overlay.hidden = true;
  list.replaceChildren();
  if (restoreFocus && returnFocus && returnFocus.isConnected) returnFocus.focus();
}

function matches(app, words) {
  const t = app.tool;
  const text = [app.server, t.name, t.title, t.description].filter((s) => typeof s === "string").join(" ").toLowerCase();
  return words.every((w) => text.includes(w));
}

function renderList() {
  const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
  const shown = apps.filter((a) => matches(a, words));
  // Keep keyboard focus on the same entry across a redraw (a servers frame may arrive while open).
  const focused = /** @type {HTMLElement | null} */ (document.activeElement && document.activeElement.closest("[data-testid=launcher-app]"));
  const focusKey = focused && list.contains(focused) ? `${focused.dataset.server}\u0000${focused.dataset.tool}` : null;

  const groups = new Map();
  for (const app of shown) {
    if (!groups.has(app.server)) groups.set(app.server, []);
    groups.get(app.server).push(app);
  }
  list.replaceChildren(...[...groups].map(([server, group], i) => el("section", { class: "launcher-group", "data-server": server, "aria-labelledby": `launcher-group-${i}` },
    el("h3", { class: "launcher-group-name", id: `launcher-group-${i}` }, server),
    el("ul", { class: "launcher-apps" }, group.map((app) => el("li", {}, entry(app)))),
  )));
  if (!apps.length) status.textContent = "No apps yet: none of the ready servers has a tool with a view.";
  else if (!shown.length) status.textContent = `No app matches “${search.value.trim()}”.`;
  else status.textContent = shown.length === 1 ? "1 app" : `${shown.length} apps`;

  if (focusKey) {
    const same = entries().find((b) => `${b.dataset.server}\u0000${b.dataset.tool}` === focusKey);
    (same || search).focus();
  }
}

function entry(app) {
  const t = app.tool;
  const title = t.title ? String(t.title) : String(t.name);
  const description = t.description ? String(t.description) : "";
  return el("button", {
    type: "button", class: "launcher-app", "data-testid": "launcher-app", "data-server": app.server, "data-tool": t.name,
    "aria-label": `${title}, from ${app.server}${takesArguments(t) ? "" : ", opens at once"}`,
    title: description || title,
    onclick: () => launch(app),
  },
  el("span", { class: "launcher-app-title" }, title),
  el("code", { class: "launcher-app-name" }, t.name),
  description ? el("span", { class: "launcher-app-desc" }, description) : null,
  );
}

/** Whether the tool's input schema names any argument (the form would be empty otherwise). */
function takesArguments(tool) {
  const schema = tool.inputSchema;
  if (!schema || typeof schema !== "object") return false;
  const props = schema.properties;
  if (props && typeof props === "object" && Object.keys(props).length) return true;
  // No properties the form can show, but extra keys allowed or some required: let the person see it.
  return Array.isArray(schema.required) && schema.required.length > 0;
}

function launch(app) {
  if (takesArguments(app.tool)) {
    // Focus goes back to the launcher's opener first, so the picker gives it back there too.
    closeLauncher();
    openToolForm(app.server, app.tool);
    return;
  }
  if (!send({ type: "call", server: app.server, tool: app.tool.name, arguments: {} })) {
    status.textContent = "Not connected to the host. The app was not opened; try again when the connection is back.";
    return;
  }
  closeLauncher();
}
