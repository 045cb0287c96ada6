// A changed template (`view-held`): the server now serves different HTML for a view the
// person used before. Nothing renders until they answer, so the question sits where the
// view would be, under its call, with both hashes and the size change.

import { el } from "./dom.js";
import { callSlot } from "./chat.js";

const SHORT_HASH = 12;

/** @type {import("./socket.js").SendFrame} */
let send = () => false;
const notices = new Map(); // callId -> notice node

/** @param {import("./socket.js").SendFrame} sendFn */
export function initTrust(sendFn) {
  send = sendFn;
}

/**
 * Host → page `view-held`.
 * @param {import("./frames").ViewHeldFrame} msg
 */
export function viewHeld(msg) {
  const callId = msg.callId;
  if (callId === undefined || callId === null || notices.has(callId)) return;
  const server = String(msg.server ?? "");
  const tool = String(msg.tool ?? "");
  const uri = String(msg.uri ?? "");

  const reply = (accept) => {
    if (!send({ type: "trust-reply", callId, accept })) return;
    notice.remove();
    notices.delete(callId);
  };
  const reject = el("button", { type: "button", class: "btn btn-small btn-ghost", "data-testid": "trust-reject", onclick: () => reply(false) }, "Don't render");
  const accept = el("button", { type: "button", class: "btn btn-small btn-primary", "data-testid": "trust-accept", onclick: () => reply(true) }, "Render the new version");
  const notice = el("div", { class: "trust-notice", "data-testid": "trust-notice", "data-call-id": callId, role: "group", "aria-label": `The view of ${tool} changed` },
    el("div", { class: "trust-head" },
      el("span", { class: "trust-notice-icon", "aria-hidden": "true" }),
      el("div", {},
        el("div", { class: "trust-title" }, "This view changed since you last used it"),
        el("div", { class: "trust-sub" },
          el("span", { class: "server-chip" }, server), " now serves a different template for ", el("code", {}, uri || tool), "."),
      ),
    ),
    el("dl", { class: "trust-facts" },
      el("dt", {}, "Before"), el("dd", {}, hash(msg.oldSha256), el("span", { class: "trust-size" }, bytes(msg.oldSize))),
      el("dt", {}, "Now"), el("dd", {}, hash(msg.newSha256), el("span", { class: "trust-size" }, bytes(msg.newSize)),
        el("span", { class: "trust-diff", "data-testid": "trust-size-diff", "data-same": msg.oldSize === msg.newSize }, sizeDiff(msg.oldSize, msg.newSize))),
    ),
    msg.reason ? el("div", { class: "trust-reason" }, String(msg.reason)) : null,
    el("div", { class: "trust-actions" },
      el("span", { class: "trust-hint" }, "It will not load until you decide."), el("span", { class: "spacer" }), reject, accept),
  );
  notices.set(callId, notice);
  callSlot(callId, { server, tool }).append(notice);
}

/** The connection closed: the host forgot the question, so the buttons would answer nobody. */
export function trustLost() {
  for (const notice of notices.values()) {
    notice.querySelector(".trust-actions").replaceChildren(
      el("span", { class: "trust-hint" }, "The connection to the host was lost; run the tool again to decide."));
    notice.dataset.state = "lost";
  }
  notices.clear();
}

/** Another conversation opened: its column (and these notices) went with it. */
export function trustReset() {
  notices.clear();
}

/** A short hash that shows the full value on hover, and in place when clicked. */
function hash(value) {
  const full = typeof value === "string" ? value : "";
  if (!full) return el("code", { class: "trust-hash" }, "unknown");
  const short = full.length > SHORT_HASH ? `${full.slice(0, SHORT_HASH)}…` : full;
  const button = el("button", {
    type: "button", class: "trust-hash", title: `sha256 ${full}`, "aria-expanded": "false", "aria-label": `sha256 ${full}`,
    onclick: () => {
      const open = button.getAttribute("aria-expanded") !== "true";
      button.setAttribute("aria-expanded", String(open));
      button.textContent = open ? full : short;
    },
  }, short);
  return button;
}

function bytes(n) {
  if (typeof n !== "number" || !Number.isFinite(n)) return "unknown size";
  const a = Math.abs(n);
  if (a < 1024) return `${a} B`;
  if (a < 1024 * 1024) return `${(a / 1024).toFixed(1)} KB`;
  return `${(a / (1024 * 1024)).toFixed(1)} MB`;
}

function sizeDiff(before, after) {
  if (typeof before !== "number" || typeof after !== "number") return "";
  const d = after - before;
  if (d === 0) return "same size";
  return `${d > 0 ? "+" : "−"}${bytes(d)}`;
}
