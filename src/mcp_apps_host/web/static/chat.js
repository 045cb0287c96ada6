// The conversation column: notices, the person's lines, and one card per tool call
// (arguments, status, progress + Cancel, duration, result); the cards of a view's own calls
// are kept together in one collapsed line (`ViewCalls`). Server data is only ever
// rendered as text; images only from data: URLs built here.

import { el, jsonDetails, formatDuration, nearBottom } from "./dom.js";
import { renderContent } from "./content.js";

/** @type {import("./socket.js").SendFrame} */
let send = () => false;
let scroller, inner, emptyState;
let pinned = true; // follow new content while the person is at the bottom
let lastTop = 0;
/** @type {Element | null} */
let trailer = null; // a node kept below everything else (the model's "thinking" indicator)
const cards = new Map(); // callId -> {card, started, ...parts}
/** @type {number | undefined} */
let ticker;

/** @param {import("./socket.js").SendFrame} sendFn */
export function initChat(sendFn) {
  send = sendFn;
  scroller = document.querySelector("[data-testid=conversation]");
  inner = scroller.querySelector(".conversation-inner");
  emptyState = inner.querySelector(".empty-state").cloneNode(true);
  scroller.addEventListener("scroll", () => {
    // Only a scroll *up* unpins. Content growing below does not move scrollTop, and a scroll
    // event that fires after such growth must not be read as the person leaving the bottom.
    const top = scroller.scrollTop;
    if (top < lastTop - 2) pinned = nearBottom(scroller);
    else if (nearBottom(scroller)) pinned = true;
    lastTop = top;
  }, { passive: true });
  // Views resize after they load; stay at the bottom if the person was there.
  new ResizeObserver(follow).observe(inner);
}

function add(node) {
  put(node);
  follow();
  return node;
}

function put(node) {
  inner.querySelector(".empty-state")?.remove();
  // New items go above the trailer, which stays last.
  if (trailer && trailer.parentNode === inner) inner.insertBefore(node, trailer);
  else inner.append(node);
}

function follow() {
  if (pinned) scroller.scrollTop = scroller.scrollHeight;
}

/**
 * A view's own calls (a filter, a page of results, a poll: they can come by the hundred a second) are kept
 * in one collapsed line per stretch of the conversation rather than a card each in the column: the
 * conversation stays readable, the view the person is using is not scrolled away under its own calls,
 * and cards out of sight cost the page no layout while the view waits for its answers.
 */
class ViewCalls {
  /** @param {string} server */
  constructor(server) {
    this.server = server;
    this.calls = 0;
    this.running = 0;
    /** @type {HTMLElement | null} */
    this.last = null;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.timer = null;
    this.count = el("span", { "data-testid": "view-calls-count" });
    this.latest = el("span", { class: "view-calls-latest", "data-testid": "view-calls-latest" });
    this.list = el("div", { class: "view-calls-list" });
    // Its count changes with every call: not read out each time (the cards inside are, once opened).
    this.node = el("details", { class: "view-calls", "data-testid": "view-calls", "data-server": server },
      el("summary", { "aria-live": "off" }, el("span", { class: "server-chip" }, server), this.count, this.latest),
      this.list);
  }

  /** @param {HTMLElement} card */
  add(card) {
    this.calls++;
    this.running++;
    this.list.append(card);
    this.showSoon(card);
  }

  /** @param {HTMLElement} card */
  ended(card) {
    this.running--;
    this.showSoon(card);
  }

  /**
   * The line is written again at most every SHOW_EVERY_MS: a view polling its server changes it with every
   * call, and drawing each change would take the page's time from the answers the view waits for.
   * @param {HTMLElement} card the call last started or ended
   */
  showSoon(card) {
    const first = this.last === null;
    this.last = card;
    if (first) this.show();
    else this.timer ??= setTimeout(() => this.show(), SHOW_EVERY_MS);
  }

  show() {
    this.timer = null;
    const card = /** @type {HTMLElement} */ (this.last);
    this.count.textContent = `${this.calls} call${this.calls === 1 ? "" : "s"} from its view`;
    const status = card.querySelector("[data-testid=call-status]")?.textContent ?? "";
    this.latest.textContent = this.running > 0 ? `${this.running} running` : `last: ${card.dataset.tool ?? ""} — ${status}`;
    this.node.dataset.state = this.running > 0 ? "running" : card.dataset.state ?? "";
  }
}
const SHOW_EVERY_MS = 250;

/** @type {ViewCalls | null} */
let viewCalls = null; // the group a view's next call of its server joins while it is the newest item

/** @param {string} server */
function viewCallsOf(server) {
  if (!viewCalls || viewCalls.server !== server || !isNewest(viewCalls.node)) {
    viewCalls = new ViewCalls(server);
    add(viewCalls.node);
  }
  return viewCalls;
}

/** Append a node to the conversation (following it if the person is at the bottom). */
export const appendToConversation = add;

/** Keep `node` (or nothing) as the last thing in the conversation. */
export function setTrailer(node) {
  if (trailer && trailer !== node) trailer.remove();
  trailer = node;
  if (node) add(node);
}

/** Whether `node` is still the newest item (the trailer does not count). */
export function isNewest(node) {
  let last = inner.lastElementChild;
  if (last && last === trailer) last = last.previousElementSibling;
  return last === node;
}

/**
 * Host → page `notice`; also the page's own notices, with the fields it reads.
 * @param {Pick<import("./frames").NoticeFrame, "level" | "text">} msg
 */
export function notice(msg) {
  const level = msg.level === "error" ? "error" : "info";
  add(el("div", { class: `notice notice-${level}`, "data-testid": "notice", "data-level": level, role: level === "error" ? "alert" : null },
    el("span", { class: "notice-icon", "aria-hidden": "true" }, level === "error" ? "!" : "i"),
    // Multi-line notices (help, usage) are usually laid out in columns: keep them aligned.
    el("span", { class: `notice-text${String(msg.text ?? "").includes("\n") ? " multiline" : ""}` }, String(msg.text ?? "")),
  ));
}

/** The person's own line, shown as sent. */
export function personLine(text) {
  add(el("div", { class: "person-line", "data-testid": "chat-line" }, el("div", { class: "bubble" }, text)));
}

/**
 * Host → page `chat-message`: a message a view put into the conversation (already allowed).
 * @param {import("./frames").ChatMessageFrame} msg
 */
export function chatMessage(msg) {
  const role = msg.role === "user" ? "user" : "assistant";
  add(el("div", { class: `view-said view-said-${role}`, "data-testid": "chat-message", "data-role": role, "data-view": msg.view },
    el("div", { class: "view-said-caption" }, el("span", { class: "server-chip" }, String(msg.source ?? "")), " sent from its view"),
    el("div", { class: "bubble" }, String(msg.text ?? ""))));
}

/** @param {import("./frames").CallStartedFrame} msg */
export function callStarted(msg) {
  const known = cards.get(msg.callId);
  if (known) {
    // The card was drawn early for its view (see callSlot); now the call itself started.
    known.args.replaceWith((known.args = jsonDetails("Arguments", msg.arguments ?? {}, { testid: "call-arguments" })));
    known.card.dataset.source = msg.source === "view" ? "view" : "person";
    known.started = performance.now();
    return;
  }
  const status = el("span", { class: "status status-running", "data-testid": "call-status" }, "Running");
  const duration = el("span", { class: "duration", "data-testid": "call-duration" });
  const cancel = el("button", {
    type: "button", class: "btn btn-small btn-ghost call-cancel", "data-testid": "call-cancel",
    onclick: () => {
      if (send({ type: "cancel", callId: msg.callId })) {
        cancel.disabled = true;
        cancel.textContent = "Cancelling…";
      }
    },
  }, "Cancel");
  const fill = el("div", { class: "progress-fill" });
  const progressText = el("span", { class: "progress-text" });
  const progress = el("div", { class: "progress", "data-testid": "call-progress", hidden: true },
    el("div", { class: "progress-track", role: "progressbar", "aria-label": "Progress" }, fill), progressText);
  const result = el("div", { class: "call-result", "data-testid": "call-result" });
  const views = el("div", { class: "call-views" });
  const source = msg.source === "view" ? "view" : "person";
  const args = jsonDetails("Arguments", msg.arguments ?? {}, { testid: "call-arguments" });

  const card = el("article", {
    class: "call", "data-testid": "call", "data-call-id": msg.callId, "data-state": "running", "data-source": source,
    "data-app-tool-of": typeof msg.appToolOf === "string" ? msg.appToolOf : null,
    "data-server": msg.server, "data-tool": msg.tool,
  },
  el("header", { class: "call-head" },
    el("span", { class: "call-icon", "aria-hidden": "true" }),
    el("span", { class: "call-title" },
      el("span", { class: "server-chip" }, String(msg.server ?? "")), el("span", { class: "sep" }, "·"), el("code", {}, String(msg.tool ?? ""))),
    source === "view" ? el("span", { class: "badge badge-muted", title: "Called by a view" }, "from view") : null,
    typeof msg.appToolOf === "string"
      ? el("span", { class: "badge badge-muted", "data-testid": "call-app-tool", title: "A tool the view offers of its own, run inside that view" }, `tool of ${msg.appToolOf}`)
      : null,
    el("span", { class: "spacer" }),
    duration,
    status,
    cancel,
  ),
  args,
  progress,
  result,
  views,
  );
  const group = source === "view" ? viewCallsOf(String(msg.server ?? "")) : null;
  cards.set(msg.callId, { card, status, duration, cancel, progress, fill, progressText, result, views, args, group, started: performance.now() });
  if (group) group.add(card);
  else add(card);
  startTicker();
}

/** @param {import("./frames").CallProgressFrame} msg */
export function callProgress(msg) {
  const c = cards.get(msg.callId);
  if (!c || c.card.dataset.state !== "running") return;
  c.progress.hidden = false;
  const track = c.fill.parentElement;
  const total = typeof msg.total === "number" && msg.total > 0 ? msg.total : null;
  if (total !== null && typeof msg.progress === "number") {
    const pct = Math.max(0, Math.min(100, (msg.progress / total) * 100));
    c.progress.classList.remove("indeterminate");
    c.fill.style.width = `${pct}%`;
    track.setAttribute("aria-valuenow", String(Math.round(pct)));
    track.setAttribute("aria-valuemin", "0");
    track.setAttribute("aria-valuemax", "100");
  } else {
    // No total: the server only says it is still working.
    c.progress.classList.add("indeterminate");
    c.fill.style.width = "";
    track.removeAttribute("aria-valuenow");
  }
  const parts = [];
  if (msg.message) parts.push(String(msg.message));
  if (typeof msg.progress === "number") parts.push(total !== null ? `${msg.progress} / ${total}` : String(msg.progress));
  c.progressText.textContent = parts.join(" — ");
}

function finish(c, state, label, durationMs) {
  c.card.dataset.state = state;
  c.status.className = `status status-${state}`;
  c.status.textContent = label;
  c.cancel.remove();
  c.progress.hidden = true;
  c.duration.textContent = formatDuration(durationMs);
  c.group?.ended(c.card);
}

/** @param {import("./frames").CallFinishedFrame} msg */
export function callFinished(msg) {
  const c = cards.get(msg.callId);
  if (!c) return;
  const isError = msg.isError === true || (msg.result && msg.result.isError === true);
  finish(c, isError ? "error" : "done", isError ? "Error" : "Done", msg.durationMs);
  c.result.replaceChildren(...renderContent(msg.result || {}, isError));
}

/**
 * Host → page `call-delivered`: the call's input and result went to the view already open (its app takes
 * later calls of its tool), not to a view of its own. The card names that view and says where to look.
 * @param {import("./frames").CallDeliveredFrame} msg
 */
export function callDelivered(msg) {
  const c = cards.get(msg.callId);
  if (!c) return;
  c.card.dataset.deliveredTo = String(msg.view);
  c.views.replaceChildren(el("div", { class: "call-delivered", "data-testid": "call-delivered" }, "Shown in the open view above."));
}

/** A view was mounted again in another's place (a new template, or brought back into sight): cards that
 * name the old one name the new one. */
export function viewReplaced(oldHandle, newHandle) {
  for (const c of cards.values()) {
    if (c.card.dataset.deliveredTo === oldHandle) c.card.dataset.deliveredTo = newHandle;
  }
}

/**
 * Host → page `call-failed`; also calls lost with the connection, which have no duration.
 * @param {Pick<import("./frames").CallFailedFrame, "callId" | "error" | "cancelled">
 *   & Partial<Pick<import("./frames").CallFailedFrame, "durationMs">>} msg
 */
export function callFailed(msg) {
  const c = cards.get(msg.callId);
  if (!c) return;
  const cancelled = msg.cancelled === true;
  finish(c, cancelled ? "cancelled" : "failed", cancelled ? "Cancelled" : "Failed", msg.durationMs);
  c.result.replaceChildren(el("div", { class: cancelled ? "call-cancelled" : "call-error", "data-testid": "call-error" }, String(msg.error ?? (cancelled ? "Cancelled." : "Failed."))));
}

/** Host → page `conversation-reset`: start an empty column; the host replays what follows. */
export function resetConversation() {
  cards.clear();
  viewCalls = null;
  trailer = null;
  // A card holding a view pinned to the side panel stays, collapsed: removing it would end the view.
  for (const node of [...inner.children]) {
    if (node.querySelector(".view[data-pinned=over]")) node.classList.add("call-kept");
    else node.remove();
  }
  inner.append(emptyState.cloneNode(true));
  pinned = true;
}

/** The WebSocket closed: the host cancels a tab's calls with its connection. */
export function callsLost() {
  for (const [callId, c] of cards) {
    if (c.card.dataset.state === "running") {
      callFailed({ callId, error: "The connection to the host was lost; this call was cancelled.", cancelled: false });
    }
  }
}

/**
 * Where a view for this call goes (after the card's result). The host may mount a view
 * before it reports the call started; then the card is drawn now and filled in later,
 * because moving an iframe to another parent afterwards would reload it.
 * @param {number} callId
 * @param {{server?: string, tool?: string}} [call]
 * @returns {HTMLElement}
 */
export function callSlot(callId, { server, tool } = {}) {
  if (!cards.has(callId)) callStarted({ type: "call-started", callId, server: server ?? null, tool: tool ?? null, arguments: {}, source: "person", appToolOf: null });
  return cards.get(callId).views;
}

/** Live "elapsed" on running cards, so a slow call visibly is still running. */
function startTicker() {
  if (ticker) return;
  ticker = setInterval(() => {
    let running = 0;
    for (const c of cards.values()) {
      if (c.card.dataset.state !== "running") continue;
      running++;
      const ms = performance.now() - c.started;
      if (ms > 1000) c.duration.textContent = `${Math.floor(ms / 1000)} s`;
    }
    if (!running) {
      clearInterval(ticker);
      ticker = undefined;
    }
  }, 500);
}

// ---- the chat box ----

const HISTORY_KEY = "mcp-apps-host.history";
const HISTORY_MAX = 50;

export function initChatBox() {
  const form = /** @type {HTMLFormElement} */ (document.querySelector("[data-testid=composer]"));
  const input = /** @type {HTMLTextAreaElement} */ (document.querySelector("[data-testid=chat-input]"));
  let history = loadHistory();
  let cursor = history.length; // == length: editing a new line
  let draft = "";

  const autosize = () => {
    input.style.height = "auto";
    input.style.height = `${Math.min(input.scrollHeight, 200)}px`;
  };
  const setText = (text) => {
    input.value = text;
    autosize();
    input.setSelectionRange(text.length, text.length);
  };

  const submit = () => {
    const text = input.value;
    if (!text.trim()) return;
    if (!send({ type: "chat", text })) {
      notice({ level: "error", text: "Not connected to the host; your line was kept in the box." });
      return;
    }
    personLine(text);
    if (history[history.length - 1] !== text) history.push(text);
    history = history.slice(-HISTORY_MAX);
    saveHistory(history);
    cursor = history.length;
    draft = "";
    setText("");
    pinned = true;
    scroller.scrollTop = scroller.scrollHeight;
  };

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    submit();
  });
  input.addEventListener("input", autosize);
  input.addEventListener("keydown", (e) => {
    if (e.isComposing) return; // an IME is composing; Enter picks the candidate
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      submit();
    } else if (e.key === "ArrowUp" && input.selectionStart === 0 && input.selectionEnd === 0 && cursor > 0) {
      // Only at the very start, so ArrowUp still moves between lines of a multi-line text.
      e.preventDefault();
      if (cursor === history.length) draft = input.value;
      cursor--;
      setText(history[cursor]);
      input.setSelectionRange(0, 0);
    } else if (e.key === "ArrowDown" && cursor < history.length && input.selectionStart === input.value.length) {
      e.preventDefault();
      cursor++;
      setText(cursor === history.length ? draft : history[cursor]);
    } else if (e.key === "Escape" && !e.defaultPrevented) {
      // (A running model turn takes Escape first, as Stop.)
      input.blur();
    }
  });
}

function loadHistory() {
  try {
    const h = JSON.parse(localStorage.getItem(HISTORY_KEY) || "[]");
    return Array.isArray(h) ? h.filter((x) => typeof x === "string") : [];
  } catch {
    return [];
  }
}

function saveHistory(h) {
  try {
    localStorage.setItem(HISTORY_KEY, JSON.stringify(h));
  } catch {
    // History is a convenience; without storage it lasts for this page only.
  }
}
