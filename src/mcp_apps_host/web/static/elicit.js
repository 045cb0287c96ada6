// What a server asks the person (host → page `elicit`, for `elicitation/create`): a form built
// from the server's schema, or a link to open. It is shown outside every view, attributed to the
// server, in the same queue as the consent questions. Accept sends the values (`elicit-reply`);
// the host checks them against the schema and either closes the dialog (`elicit-dismiss`) or
// says what is wrong (`elicit-invalid`). Decline and Cancel answer at once.

import { el } from "./dom.js";
import { ask, withdraw } from "./consent.js";
import { buildObjectFields, FieldError } from "./fields.js";

/** @type {import("./socket.js").SendFrame} */
let send = () => false;
const open = new Map(); // id -> {errorBox}

/** @param {import("./socket.js").SendFrame} sendFn */
export function initElicit(sendFn) {
  send = sendFn;
}

/** @param {import("./frames").ElicitFrame} msg */
export function elicit(msg) {
  if (typeof msg.id !== "number" || open.has(msg.id)) return;
  const id = msg.id;
  const url = msg.mode === "url";
  const errorBox = el("div", { class: "form-error", "data-testid": "elicit-error", role: "alert", hidden: true });
  const reply = (action, content) => send({ type: "elicit-reply", id, action, ...(content ? { content } : {}) });
  const done = (action) => () => {
    reply(action);
    open.delete(id);
    return true;
  };
  let extra;
  let accept;
  if (url) {
    extra = [domainLine(msg), ...linkFacts(msg)];
    accept = done("accept");
  } else {
    const schema = msg.requestedSchema && typeof msg.requestedSchema === "object" ? msg.requestedSchema : { type: "object", properties: {} };
    const fields = buildObjectFields(schema, undefined);
    const form = el("form", { class: "elicit-form", "data-testid": "elicit-form", onsubmit: (e) => e.preventDefault() },
      fields.names.length ? fields.node : el("p", { class: "muted" }, "No fields: accept or decline."));
    extra = [form, errorBox];
    accept = () => {
      errorBox.hidden = true;
      let content;
      try {
        if (!form.reportValidity()) return false;
        content = fields.read();
      } catch (err) {
        if (!(err instanceof FieldError)) throw err;
        showError(errorBox, err.message);
        return false;
      }
      reply("accept", content);
      return false; // stays open until the host has checked the values
    };
  }
  open.set(id, { errorBox });
  ask({
    key: `elicit:${id}`, kind: "elicit", server: msg.server, title: String(msg.message ?? ""),
    detail: url ? String(msg.display ?? msg.href ?? "") : "", extra, canRemember: false,
    buttons: [
      { label: "Cancel", testid: "elicit-cancel", act: done("cancel") },
      { label: "Decline", testid: "elicit-decline", act: done("decline") },
      { label: url ? "Open link" : "Submit", testid: url ? "elicit-url-open" : "elicit-accept", primary: true, act: accept },
    ],
    onEscape: () => { reply("cancel"); open.delete(id); },
  });
}

/**
 * Host → page `elicit-invalid`: the values do not fit the server's schema; the form stays.
 * @param {import("./frames").ElicitInvalidFrame} msg
 */
export function elicitInvalid(msg) {
  const q = open.get(msg.id);
  if (q) showError(q.errorBox, String(msg.error ?? "The values were not accepted."));
}

/**
 * Host → page `elicit-dismiss`: answered, timed out or withdrawn.
 * @param {import("./frames").ElicitDismissFrame} msg
 */
export function elicitDismiss(msg) {
  open.delete(msg.id);
  withdraw(`elicit:${msg.id}`);
}

/** The connection closed or the conversation changed: the host forgot every question. */
export function elicitsLost() {
  open.clear();
}

function showError(box, text) {
  box.textContent = text;
  box.hidden = false;
}

/** Where the link goes: its domain as written, and in punycode when that differs (a look-alike shows). */
function domainLine(msg) {
  const ascii = typeof msg.hostAscii === "string" ? msg.hostAscii : "";
  const unicode = typeof msg.hostUnicode === "string" ? msg.hostUnicode : ascii;
  return el("div", { class: "consent-fact", "data-testid": "elicit-url", "data-domain": ascii },
    "Opens a page on ", el("strong", {}, unicode || ascii),
    unicode && ascii && unicode !== ascii ? [" (", el("code", {}, ascii), ")"] : null);
}

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
