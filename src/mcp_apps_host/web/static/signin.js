// Signing in to servers (MCP authorization). The host says in the server list which servers need the
// person to sign in, with the authorization page's address while it asks them, and how many calls wait.
// The page opens that address in a window of its own on the person's click (never in this page or a
// view), cut off from this page; the redirect comes back to the host, which goes on with the calls.
// Declining, or closing the window before the sign-in ends, tells the host (`signin-decline`).

import { el } from "./dom.js";

/** @type {import("./socket.js").SendFrame} */
let send = () => false;
let layer;
const asking = new Map(); // server -> {url, state}: sign-ins the host asks for now
const CLOSED_POLL_MS = 500;

/** @param {import("./socket.js").SendFrame} sendFn */
export function initSignIn(sendFn) {
  send = sendFn;
  layer = document.querySelector("[data-testid=signin-layer]");
}

/** The authorization page in a new window, on the person's click. */
export function openSignIn(server) {
  const signin = asking.get(server);
  if (!signin) return;
  const win = window.open("about:blank", "_blank", "popup,width=520,height=720");
  if (!win) {
    decline(server, signin.state); // a blocked window must not leave the call waiting unseen
    return;
  }
  win.opener = null; // the authorization page must not reach back into the console
  win.location.href = signin.url;
  const timer = setInterval(() => {
    if (!win.closed) return;
    clearInterval(timer);
    // Closed while the host still asks for this same sign-in: the person gave up.
    if (asking.get(server)?.state === signin.state) decline(server, signin.state);
  }, CLOSED_POLL_MS);
}

function decline(server, state) {
  send({ type: "signin-decline", server, state });
}

/** Sign out of a server: the host revokes and deletes the person's tokens for it. */
export function signOut(server) {
  send({ type: "signout", server });
}

/** What the server list says about sign-ins: the prompts for calls that wait, kept in step. */
export function renderSignIns(servers) {
  asking.clear();
  const wanted = new Set();
  for (const s of servers) {
    const signin = s.signin && typeof s.signin.url === "string" && typeof s.signin.state === "string" ? s.signin : null;
    if (!signin) continue;
    const name = String(s.name ?? "");
    asking.set(name, signin);
    if (Number(s.waiting) > 0) wanted.add(name);
  }
  for (const node of /** @type {NodeListOf<HTMLElement>} */ (layer.querySelectorAll("[data-testid=signin]"))) {
    if (!wanted.has(node.dataset.server)) node.remove();
    else wanted.delete(node.dataset.server);
  }
  for (const name of wanted) layer.append(prompt(name));
}

function prompt(server) {
  const titleId = `signin-title-${server.replace(/[^A-Za-z0-9_-]/g, "-")}`;
  return el("div", { class: "consent signin", "data-testid": "signin", "data-server": server, role: "dialog",
    "aria-labelledby": titleId },
  el("div", { class: "consent-head" },
    el("span", { class: "consent-icon consent-icon-signin", "aria-hidden": "true" }),
    el("div", {},
      el("div", { class: "consent-who" }, el("span", { class: "server-chip" }, server), " needs you to sign in"),
      el("h2", { id: titleId, class: "consent-title" }, `Sign in to ${server}`),
    ),
  ),
  el("p", { class: "muted" }, "A call waits for it and goes on by itself once you have signed in. " +
    "The server's sign-in page opens in a window of its own."),
  el("div", { class: "consent-actions" }, el("span", { class: "spacer" }),
    el("button", { type: "button", class: "btn btn-ghost", "data-testid": "signin-decline",
      onclick: () => { const s = asking.get(server); if (s) decline(server, s.state); } }, "Not now"),
    el("button", { type: "button", class: "btn btn-primary", "data-testid": "signin-start",
      onclick: () => openSignIn(server) }, "Sign in…"),
  ));
}
