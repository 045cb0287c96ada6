// The sidebar: every server with a status dot and its error, and its callable tools.
// Clicking a tool opens the picker. Redrawn whole on each `servers` frame.

import { el, element } from "./dom.js";
import { openToolForm } from "./form.js";
import { openSignIn, renderSignIns, signOut } from "./signin.js";

const STATUS_TEXT = { connecting: "Connecting", ready: "Ready", error: "Error", retrying: "Retrying" };
const AUTH = ["none", "needed", "signed-in"];
const collapsed = new Set(); // server names the person folded; survives redraws

/** @param {import("./frames").ServersFrame} msg */
export function renderServers(msg) {
  const nav = element("[data-testid=servers]");
  const servers = Array.isArray(msg.servers) ? msg.servers : [];
  renderSignIns(servers);
  // Keep keyboard focus on the same tool across a redraw.
  const focused = /** @type {HTMLElement | null} */ (document.activeElement && document.activeElement.closest("[data-testid=tool]"));
  const focusKey = focused ? `${focused.dataset.server}\u0000${focused.dataset.tool}` : null;

  if (!servers.length) {
    nav.replaceChildren(el("p", { class: "servers-empty" }, "No servers configured."));
    return;
  }
  nav.replaceChildren(...servers.map(renderServer));

  if (focusKey) {
    for (const b of /** @type {NodeListOf<HTMLElement>} */ (nav.querySelectorAll("[data-testid=tool]"))) {
      if (`${b.dataset.server}\u0000${b.dataset.tool}` === focusKey) b.focus();
    }
  }
}

function renderServer(server) {
  const name = String(server.name ?? "");
  const status = STATUS_TEXT[server.status] ? server.status : "error";
  const tools = (Array.isArray(server.tools) ? server.tools : []).filter((t) => t && t.callable !== false);
  const open = !collapsed.has(name);

  const head = el("button", {
    type: "button", class: "server-head", "aria-expanded": String(open),
    onclick: () => {
      if (collapsed.has(name)) collapsed.delete(name);
      else collapsed.add(name);
      const isOpen = !collapsed.has(name);
      head.setAttribute("aria-expanded", String(isOpen));
      list.hidden = !isOpen;
    },
  },
  el("span", { class: `dot dot-${status}`, "data-testid": "server-status", title: STATUS_TEXT[status], "aria-label": STATUS_TEXT[status] }),
  el("span", { class: "server-name" }, name),
  server.transport ? el("span", { class: "server-transport" }, String(server.transport)) : null,
  server.protocolVersion ? el("span", {
    class: "server-transport", "data-testid": "server-protocol",
    title: "The MCP protocol version this server speaks" }, `MCP ${server.protocolVersion}`) : null,
  el("span", { class: "chev", "aria-hidden": "true" }),
  );

  const list = el("ul", { class: "tools", hidden: !open },
    tools.length
      ? tools.map((tool) => el("li", {}, renderTool(name, tool)))
      : server.error ? null : el("li", { class: "tools-empty" }, status === "ready" ? "No tools" : STATUS_TEXT[status] + "…"),
  );

  const roots = Array.isArray(server.roots) ? server.roots.map(String) : [];
  const auth = AUTH.includes(server.auth) ? server.auth : "none";
  return el("section", { class: "server", "data-testid": "server", "data-server": name, "data-status": status,
    "data-protocol": server.protocolVersion ? String(server.protocolVersion) : null, "data-auth": auth },
    head,
    authLine(name, auth, Boolean(server.signin)),
    roots.length ? el("div", { class: "server-roots", "data-testid": "server-roots", title: "Roots: where this server may work" },
      roots.map((r) => el("code", {}, r))) : null,
    server.error ? el("div", { class: "server-error", "data-testid": "server-error", role: "note" }, String(server.error)) : null,
    list,
  );
}

/** Sign in (the host has the authorization page ready) or sign out, for a server that needs a sign-in. */
function authLine(name, auth, ready) {
  if (auth === "needed") {
    return el("div", { class: "server-auth" }, el("button", {
      type: "button", class: "btn btn-ghost btn-small", "data-testid": "server-signin", disabled: !ready,
      title: ready ? "Opens the server's sign-in page in a new window" : "Getting the sign-in ready…",
      onclick: () => openSignIn(name),
    }, "Sign in…"));
  }
  if (auth === "signed-in") {
    return el("div", { class: "server-auth" }, el("span", { class: "muted" }, "Signed in"), el("button", {
      type: "button", class: "btn btn-ghost btn-small", "data-testid": "server-signout", onclick: () => signOut(name),
    }, "Sign out"));
  }
  return null;
}

function renderTool(serverName, tool) {
  const name = String(tool.name ?? "");
  const title = tool.title ? String(tool.title) : name;
  return el("button", {
    type: "button", class: "tool", "data-testid": "tool", "data-server": serverName, "data-tool": name,
    title: tool.description ? String(tool.description) : name,
    onclick: () => openToolForm(serverName, tool),
  },
  el("span", { class: "tool-name" }, title),
  tool.hasView ? el("span", { class: "badge", title: "Shows an interactive view" }, "view") : null,
  );
}
