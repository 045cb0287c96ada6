// Consent dialogs: the host asks, the person answers, the page relays the answer.
// One dialog at a time from a queue; it floats over the page without a blocking backdrop,
// so other views keep running and the chat stays usable while a question waits.

import { el } from "./dom.js";

const KINDS = new Set(["tool-call", "message", "open-link", "download", "sampling"]);
const KIND_TEXT = {
  "tool-call": "wants to call a tool",
  message: "wants to send a message",
  "open-link": "wants to open a link",
  download: "wants to download a file",
  sampling: "wants to ask the model",
};
// Buttons stay inert briefly after a dialog appears, so a click aimed at a view that
// asked at just the right moment cannot land on "Allow".
const ARM_DELAY_MS = 400;

let send = () => false;
let layer;
const queue = [];
let showing = null; // {msg, node, returnFocus, waiting}

export function initConsent(sendFn) {
  send = sendFn;
  layer = document.querySelector("[data-testid=consent-layer]");
  // Escape anywhere on the page answers the question on top with "deny"; capture phase so
  // it is not also taken as "close the picker" underneath.
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Escape" || !showing) return;
    e.preventDefault();
    e.stopPropagation();
    answer(false);
  }, true);
}

export function consent(msg) {
  if (msg.id === undefined || msg.id === null) return;
  if (showing && showing.msg.id === msg.id) return;
  if (queue.some((m) => m.id === msg.id)) return;
  queue.push(msg);
  if (!showing) showNext();
  else updateWaiting();
}

function updateWaiting() {
  if (showing) showing.waiting.textContent = queue.length ? `${queue.length} more waiting` : "";
}

/** The host withdrew a question (its view went away, or it timed out): forget it unanswered. */
export function consentDismiss(msg) {
  const i = queue.findIndex((m) => m.id === msg.id);
  if (i >= 0) queue.splice(i, 1);
  if (showing && showing.msg.id === msg.id) close();
  else updateWaiting();
}

function answer(allow) {
  if (!showing) return;
  send({ type: "consent-reply", id: showing.msg.id, allow });
  close();
}

function close() {
  const { node, returnFocus } = showing;
  node.remove();
  showing = null;
  if (queue.length) showNext(returnFocus);
  else if (returnFocus && returnFocus.isConnected) returnFocus.focus({ preventScroll: true });
}

function showNext(returnFocus = document.activeElement) {
  const msg = queue.shift();
  const kind = KINDS.has(msg.kind) ? msg.kind : "tool-call";
  const server = String(msg.server ?? "");
  const titleId = `consent-title-${String(msg.id).replace(/[^A-Za-z0-9_-]/g, "")}`;

  const deny = el("button", { type: "button", class: "btn btn-ghost", "data-testid": "consent-deny", disabled: true, onclick: () => answer(false) }, "Deny");
  const allow = el("button", { type: "button", class: "btn btn-primary", "data-testid": "consent-allow", disabled: true, onclick: () => answer(true) }, "Allow");
  const pending = el("span", { class: "consent-queue" });
  const node = el("div", {
    class: "consent", "data-testid": "consent", "data-kind": kind, role: "dialog", "aria-modal": "true", "aria-labelledby": titleId, tabindex: "-1",
  },
  el("div", { class: "consent-head" },
    el("span", { class: `consent-icon consent-icon-${kind}`, "aria-hidden": "true" }),
    el("div", {},
      el("div", { class: "consent-who" }, el("span", { class: "server-chip" }, server), " ", KIND_TEXT[kind]),
      el("h2", { id: titleId, class: "consent-title" }, String(msg.title ?? "")),
    ),
  ),
  // Shown exactly as the host wrote it: the person must see what they are agreeing to.
  el("pre", { class: "consent-detail", "data-testid": "consent-detail" }, String(msg.detail ?? "")),
  el("div", { class: "consent-actions" }, pending, el("span", { class: "spacer" }), deny, allow),
  );
  node.addEventListener("keydown", (e) => {
    if (e.key === "Tab") trapTab(e, node);
  });

  showing = { msg, node, returnFocus, waiting: pending };
  updateWaiting();
  layer.append(node);
  // Someone typing keeps their caret (the question must not swallow their next keys);
  // otherwise the dialog takes focus so keyboard and screen-reader users meet it at once.
  const typing = isTextEntry(document.activeElement);
  if (!typing) node.focus({ preventScroll: true });
  setTimeout(() => {
    if (!node.isConnected) return;
    deny.disabled = false;
    allow.disabled = false;
    // Deny is the default: a stray Enter must not grant anything.
    if (node.contains(document.activeElement) || document.activeElement === document.body) deny.focus({ preventScroll: true });
  }, ARM_DELAY_MS);
}

function isTextEntry(node) {
  return node instanceof HTMLElement && (node.isContentEditable || node.tagName === "TEXTAREA" ||
    (node.tagName === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(node.type)));
}

/** Keep Tab inside the dialog while it has focus. */
function trapTab(e, node) {
  const items = [...node.querySelectorAll("button:not([disabled])")];
  if (!items.length) return;
  const first = items[0];
  const last = items[items.length - 1];
  if (e.shiftKey && (document.activeElement === first || document.activeElement === node)) {
    e.preventDefault();
    last.focus();
  } else if (!e.shiftKey && document.activeElement === last) {
    e.preventDefault();
    first.focus();
  }
}

/** The WebSocket closed: the host forgets unanswered questions with the connection. */
export function consentsLost() {
  queue.length = 0;
  if (showing) close();
}

/** Host → page `open-link`: the person already allowed it. */
export function openLink(msg) {
  let url;
  try {
    url = new URL(String(msg.url ?? ""));
  } catch {
    return;
  }
  // Defence in depth: a javascript: or data: URL must never run with this page as opener.
  if (!["http:", "https:", "mailto:"].includes(url.protocol)) return;
  window.open(url.href, "_blank", "noopener,noreferrer");
}
