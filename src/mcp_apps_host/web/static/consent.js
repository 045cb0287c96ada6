// Questions for the person (`consent`): from views, and before a model calls a tool.
// The host asks, the person answers, the page relays the answer; it decides nothing.
// One dialog at a time from a queue; it floats over the page without a blocking backdrop,
// so other views keep running and the chat stays usable while a question waits.

import { el, trapTab } from "./dom.js";

const KIND_TEXT = {
  "tool-call": "wants to call a tool",
  "app-tool-call": "view tool",
  elicit: "asks you",
  message: "wants to send a message",
  "open-link": "wants to open a link",
  download: "wants to save a file",
  sampling: "wants to ask the model",
  "open-view": "wants to open another view",
};
// Buttons stay inert briefly after a dialog appears, so a click aimed at a view that
// asked at just the right moment cannot land on "Allow".
const ARM_DELAY_MS = 400;

/** @type {import("./socket.js").SendFrame} */
let send = () => false;
let layer;
const queue = []; // questions: {key, kind, server, byModel, title, detail, extra, canRemember, subject, labels, reply}
/** @type {{q: any, node: HTMLElement, returnFocus: HTMLElement | null, waiting: HTMLElement, remember: HTMLInputElement | null} | null} */
let showing = null; // the question on screen

/** @param {import("./socket.js").SendFrame} sendFn */
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

/**
 * Host → page `consent`.
 * @param {import("./frames").ConsentFrame} msg
 */
export function consent(msg) {
  if (msg.id === undefined || msg.id === null) return;
  const kind = Object.hasOwn(KIND_TEXT, msg.kind) ? msg.kind : "tool-call";
  ask({
    key: `consent:${msg.id}`, kind, server: msg.server, title: msg.title, detail: msg.detail,
    // No view: the model asks, to use one of this server's tools.
    byModel: msg.view === null || msg.view === undefined,
    extra: kind === "open-link" ? linkFacts(msg) : [],
    canRemember: msg.canRemember === true, subject: msg.subject,
    labels: ["Deny", "Allow"],
    reply: (allow, remember) => send({ type: "consent-reply", id: msg.id, allow, ...(remember ? { remember: true } : {}) }),
  });
}

/** What an open-link dialog adds: where the link really goes, and the host's warnings. */
function linkFacts(msg) {
  const facts = [];
  if (msg.differs === true && typeof msg.href === "string") {
    facts.push(el("div", { class: "consent-fact" }, "Opens as ", el("code", {}, msg.href)));
  }
  for (const w of Array.isArray(msg.warnings) ? msg.warnings : []) {
    facts.push(el("div", { class: "consent-warning", "data-testid": "consent-warning" }, String(w)));
  }
  return facts;
}

/** Queue a question. Besides the consent fields, `q.buttons` ([{label, testid, primary, act}], the first
 *  being the safe default) replaces Deny/Allow: `act()` returns whether the dialog closes; `q.onEscape`
 *  answers an Escape. Used by the other dialogs that must not pile up on top of these (elicit.js). */
export function ask(q) {
  if ((showing && showing.q.key === q.key) || queue.some((x) => x.key === q.key)) return;
  queue.push(q);
  if (!showing) showNext();
  else updateWaiting();
}

function updateWaiting() {
  if (showing) showing.waiting.textContent = queue.length ? `${queue.length} more waiting` : "";
}

/**
 * Host → page `consent-dismiss`: the question was withdrawn (its view went away); no reply.
 * @param {import("./frames").ConsentDismissFrame} msg
 */
export function consentDismiss(msg) {
  withdraw(`consent:${msg.id}`);
}

export function withdraw(key) {
  const i = queue.findIndex((x) => x.key === key);
  if (i >= 0) queue.splice(i, 1);
  if (showing && showing.q.key === key) close();
  else updateWaiting();
}

/**
 * The connection closed or another conversation opened: the host forgot the questions (all of them, or
 * those `keep` does not hold on to: a server's own questions outlive a change of conversation).
 * @param {(q: {kind: string}) => boolean} [keep]
 */
export function consentsLost(keep = () => false) {
  const kept = queue.filter(keep);
  queue.length = 0;
  queue.push(...kept);
  if (showing && !keep(showing.q)) close();
  else updateWaiting();
}

function answer(allow) {
  if (!showing) return;
  if (showing.q.buttons) {
    if (showing.q.onEscape) showing.q.onEscape();
    close();
    return;
  }
  const remember = allow && showing.remember !== null && showing.remember.checked;
  showing.q.reply(allow, remember);
  close();
}

function close() {
  if (!showing) return; // every caller checked that a question is showing
  const { node, returnFocus } = showing;
  node.remove();
  showing = null;
  if (queue.length) showNext(returnFocus);
  else if (returnFocus && returnFocus.isConnected) returnFocus.focus({ preventScroll: true });
}

function showNext(returnFocus = /** @type {HTMLElement | null} */ (document.activeElement)) {
  const q = queue.shift();
  const server = String(q.server ?? "");
  const titleId = `question-${q.key.replace(/[^A-Za-z0-9_-]/g, "-")}`;

  const buttons = q.buttons
    ? q.buttons.map((b) => el("button", {
      type: "button", class: `btn ${b.primary ? "btn-primary" : "btn-ghost"}`, "data-testid": b.testid, disabled: true,
      onclick: () => { if (showing && showing.q === q && b.act()) close(); },
    }, b.label))
    : [
      el("button", { type: "button", class: "btn btn-ghost", "data-testid": "consent-deny", disabled: true, onclick: () => answer(false) }, q.labels[0]),
      el("button", { type: "button", class: "btn btn-primary", "data-testid": "consent-allow", disabled: true, onclick: () => answer(true) }, q.labels[1]),
    ];
  const remember = q.canRemember
    ? /** @type {HTMLInputElement} */ (el("input", { type: "checkbox", class: "checkbox", "data-testid": "consent-remember" }))
    : null;
  const waiting = el("span", { class: "consent-queue" });
  const node = el("div", {
    class: "consent", "data-testid": "consent", "data-kind": q.kind, role: "dialog", "aria-modal": "true", "aria-labelledby": titleId, tabindex: "-1",
  },
  el("div", { class: "consent-head" },
    el("span", { class: `consent-icon consent-icon-${q.kind}`, "aria-hidden": "true" }),
    el("div", {},
      el("div", { class: "consent-who" }, ...who(q, server)),
      el("h2", { id: titleId, class: "consent-title" }, String(q.title ?? "")),
    ),
  ),
  // Shown exactly as the host wrote it: the person must see what they are agreeing to.
  q.detail ? el("pre", { class: "consent-detail", "data-testid": "consent-detail" }, String(q.detail)) : null,
  q.extra,
  remember ? el("label", { class: "consent-remember" }, remember,
    ` Always allow ${q.subject ? String(q.subject) : "this"} from ${server}`) : null,
  el("div", { class: "consent-actions" }, waiting, el("span", { class: "spacer" }), ...buttons),
  );
  node.addEventListener("keydown", (e) => {
    if (e.key === "Tab") trapTab(e, node);
  });

  showing = { q, node, returnFocus, waiting, remember };
  updateWaiting();
  layer.append(node);
  // Someone typing keeps their caret (the question must not swallow their next keys);
  // otherwise the dialog takes focus so keyboard and screen-reader users meet it at once.
  if (!isTextEntry(document.activeElement)) node.focus({ preventScroll: true });
  setTimeout(() => {
    if (!node.isConnected) return;
    for (const b of buttons) b.disabled = false;
    // Deny (the first button) is the default: a stray Enter must not grant anything. A dialog with a
    // form keeps the focus in its first field.
    const field = node.querySelector("input, select, textarea");
    if (node.contains(document.activeElement) || document.activeElement === document.body) {
      (q.buttons && field ? field : buttons[0]).focus({ preventScroll: true });
    }
  }, ARM_DELAY_MS);
}

/** The line above the title: who is asking. */
function who(q, server) {
  const chip = el("span", { class: "server-chip" }, server);
  if (q.byModel && q.kind === "tool-call") return ["Model tool call · ", chip];
  if (q.kind === "app-tool-call") return ["Model tool call · ", chip, " ", KIND_TEXT[q.kind]];
  return [chip, " ", KIND_TEXT[q.kind]];
}

function isTextEntry(node) {
  return node instanceof HTMLElement && (node.isContentEditable || node.tagName === "TEXTAREA" ||
    (node.tagName === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(/** @type {HTMLInputElement} */ (node).type)));
}

/**
 * Host → page `open-link`: the person already allowed it.
 * @param {import("./frames").OpenLinkFrame} msg
 */
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
