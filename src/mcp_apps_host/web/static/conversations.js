// Conversations kept on record by the host: the sidebar list (open, new, rename, delete)
// and the id this tab is showing, so a reload or reconnect asks for the same one again.

import { el, element } from "./dom.js";

const STORAGE_KEY = "mcp-apps-host.conversation"; // per tab: sessionStorage
const CONFIRM_MS = 3000;

/** @type {import("./socket.js").SendFrame} */
let send = () => false;
/** @type {string | null} */
let currentId = null;

/** @param {import("./socket.js").SendFrame} sendFn */
export function initConversations(sendFn) {
  send = sendFn;
  try {
    currentId = sessionStorage.getItem(STORAGE_KEY);
  } catch {
    currentId = null; // storage disabled: the host opens the most recent one
  }
  element("[data-testid=conversation-new]").addEventListener("click", () => send({ type: "conversation-new" }));
}

/** For `hello`: the conversation this tab was showing, if any. */
export function currentConversation() {
  return currentId;
}

/**
 * Host → page `conversation-reset`: this tab now shows that conversation (a replay follows).
 * @param {import("./frames").ConversationResetFrame} msg
 */
export function conversationOpened(msg) {
  currentId = typeof msg.id === "string" ? msg.id : null;
  try {
    if (currentId) sessionStorage.setItem(STORAGE_KEY, currentId);
  } catch {
    // Not remembered across reloads; the host then opens the most recent one.
  }
  document.title = msg.title ? `${msg.title} — MCP Apps Host` : "MCP Apps Host";
}

/**
 * Host → page `conversations`: the whole list, newest first.
 * @param {import("./frames").ConversationsFrame} msg
 */
export function renderConversations(msg) {
  const section = /** @type {HTMLElement} */ (document.querySelector("[data-testid=conversations]"));
  const list = element(".conversation-list", section);
  const items = Array.isArray(msg.items) ? msg.items : [];
  if (typeof msg.current === "string") currentId = msg.current;
  section.hidden = false;
  list.replaceChildren(...items.map(renderItem));
}

function renderItem(item) {
  const id = String(item.id ?? "");
  const title = String(item.title ?? "") || "Untitled";
  const current = id === currentId;
  const open = el("button", {
    type: "button", class: "conversation-open", "aria-current": current ? "true" : null, title,
    onclick: () => { if (!current) send({ type: "conversation-open", id }); },
  }, el("span", { class: "conversation-title" }, title), el("span", { class: "conversation-when" }, when(item.updated)));
  const rename = el("button", { type: "button", class: "icon-btn icon-btn-small", "aria-label": `Rename “${title}”`, title: "Rename", onclick: () => startRename(row, id, title) }, "✎");
  const remove = el("button", {
    type: "button", class: "icon-btn icon-btn-small conversation-delete", "aria-label": `Delete “${title}”`, title: "Delete",
    onclick: () => {
      // Two clicks: deleting a conversation cannot be undone.
      if (remove.dataset.armed) {
        send({ type: "conversation-delete", id });
        return;
      }
      remove.dataset.armed = "1";
      remove.textContent = "Delete?";
      setTimeout(() => { delete remove.dataset.armed; remove.textContent = "×"; }, CONFIRM_MS);
    },
  }, "×");
  const row = el("li", { class: `conversation-item${current ? " current" : ""}`, "data-testid": "conversation-item", "data-id": id },
    open, el("span", { class: "conversation-actions" }, rename, remove));
  return row;
}

function startRename(row, id, title) {
  const input = el("input", { class: "input conversation-rename", value: title, "aria-label": "Conversation title", maxlength: "200" });
  const original = [...row.childNodes];
  let done = false;
  const finish = (save) => {
    if (done) return;
    done = true;
    const value = input.value.trim();
    if (save && value && value !== title) send({ type: "conversation-rename", id, title: value });
    row.replaceChildren(...original);
    row.querySelector(".conversation-open").focus();
  };
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); finish(true); }
    if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); finish(false); }
  });
  input.addEventListener("blur", () => finish(true));
  row.replaceChildren(input);
  input.focus();
  input.select();
}

/** "just now", "5 min", "3 h", else a date. */
function when(seconds) {
  if (typeof seconds !== "number" || !Number.isFinite(seconds)) return "";
  const ago = Date.now() / 1000 - seconds;
  if (ago < 60) return "just now";
  if (ago < 3600) return `${Math.floor(ago / 60)} min`;
  if (ago < 86400) return `${Math.floor(ago / 3600)} h`;
  return new Date(seconds * 1000).toLocaleDateString(undefined, { month: "short", day: "numeric" });
}
