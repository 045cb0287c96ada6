// The model's side of the conversation: its answers as they stream (plain text), then as
// the host's rendered markdown; the person's lines of a replayed conversation; and, while a
// turn runs, a "thinking" indicator and Stop (button, or Escape in the chat box).

import { el, element } from "./dom.js";
import { appendToConversation, setTrailer, isNewest, personLine } from "./chat.js";

// The indicator comes back only after a pause, so it does not blink between an answer's end
// and the turn's end.
const THINKING_DELAY_MS = 300;

/** @type {import("./socket.js").SendFrame} */
let send = () => false;
let running = false;
/** @type {{turn: number, bubble: HTMLElement, text: Text} | null} */
let streaming = null; // while deltas arrive for one bubble
let thinking = null;
/** @type {number | undefined} */
let thinkingTimer;
let stopButton;

/** @param {import("./socket.js").SendFrame} sendFn */
export function initAssistant(sendFn) {
  send = sendFn;
  stopButton = /** @type {HTMLButtonElement} */ (document.querySelector("[data-testid=stop]"));
  stopButton.addEventListener("click", stop);
  // Capture phase, so it runs before the chat box's own Escape (which would blur it).
  /** @type {HTMLElement} */ (document.querySelector("[data-testid=chat-input]")).addEventListener("keydown", (e) => {
    if (e.key !== "Escape" || e.isComposing || !running) return;
    e.preventDefault();
    stop();
  }, true);
  thinking = el("div", { class: "assistant-thinking", "data-testid": "thinking", role: "status", "aria-label": "The model is working" },
    el("span", { class: "dot-pulse", "aria-hidden": "true" }, el("span"), el("span"), el("span")));
}

function stop() {
  if (!running || stopButton.disabled) return;
  if (send({ type: "stop" })) {
    stopButton.disabled = true;
    stopButton.querySelector(".stop-label").textContent = "Stopping…";
  }
}

/**
 * Host → page `turn-state`: a model turn started or ended. (Also called here, with the one field it reads.)
 * @param {Pick<import("./frames").TurnStateFrame, "running">} msg
 */
export function turnState(msg) {
  running = msg.running === true;
  stopButton.hidden = !running;
  stopButton.disabled = false;
  stopButton.querySelector(".stop-label").textContent = "Stop";
  element("[data-testid=composer]").classList.toggle("turn-running", running);
  if (running) showThinking(0);
  else {
    hideThinking();
    closeStreaming();
  }
}

/**
 * Host → page `assistant-delta`: more of the model's answer, shown as text.
 * @param {import("./frames").AssistantDeltaFrame} msg
 */
export function assistantDelta(msg) {
  let text = String(msg.text ?? "");
  // A bubble that something else (a tool call, a notice) has since been drawn below is over:
  // the model speaking again after it starts a new one.
  if (streaming && (streaming.turn !== msg.turn || !isNewest(streaming.bubble))) closeStreaming();
  if (!streaming) {
    text = text.replace(/^\s+/, ""); // the finished answer is trimmed too
    if (!text) return;
    const content = document.createTextNode("");
    const bubble = bubbleFor(msg.turn, "streaming");
    bubble.append(content);
    streaming = { turn: msg.turn, bubble, text: content };
    appendToConversation(bubble);
  }
  hideThinking();
  // One growing text node: no re-layout of earlier text, no flicker while it streams.
  streaming.text.appendData(text);
}

/**
 * Host → page `assistant-done`: the finished answer, rendered; `turn` null in a replay.
 * @param {import("./frames").AssistantDoneFrame} msg
 */
export function assistantDone(msg) {
  let bubble;
  if (msg.turn !== null && msg.turn !== undefined && streaming && streaming.turn === msg.turn) {
    bubble = streaming.bubble;
    streaming = null;
  } else {
    closeStreaming();
    bubble = appendToConversation(bubbleFor(msg.turn, "done"));
  }
  bubble.dataset.state = "done";
  if (typeof msg.html === "string") setSanitisedHtml(bubble, msg.html);
  else bubble.textContent = String(msg.text ?? "");
  // Still running: the model goes on (a tool call); show it is working once that shows.
  if (running) showThinking(THINKING_DELAY_MS);
}

/**
 * Host → page `user-message`: the person's line, in a replayed conversation.
 * @param {import("./frames").UserMessageFrame} msg
 */
export function userMessage(msg) {
  personLine(String(msg.text ?? ""));
}

/** The WebSocket closed (the host ended the turn with it) or another conversation opened. */
export function assistantReset() {
  streaming = null;
  turnState({ running: false });
}

function bubbleFor(turn, state) {
  return el("div", {
    class: "assistant", "data-testid": "assistant", "data-turn": turn ?? null, "data-state": state,
  });
}

/** The only place this page turns a string into markup. `html` is the host's rendering of the
 *  model's markdown, already sanitised on the server (an allow-list of formatting tags and
 *  attributes, http(s)/mailto links only, no raw HTML from the model), so it carries no
 *  script, handler, style or frame. Never pass anything else here. */
function setSanitisedHtml(node, html) {
  node.innerHTML = html;
}

/** A streamed bubble that got no `assistant-done` (a turn cut short) keeps its plain text. */
function closeStreaming() {
  if (!streaming) return;
  streaming.bubble.dataset.state = "done";
  streaming = null;
}

function showThinking(delay) {
  clearTimeout(thinkingTimer);
  thinkingTimer = setTimeout(() => {
    if (running && !streaming) setTrailer(thinking);
  }, delay);
}

function hideThinking() {
  clearTimeout(thinkingTimer);
  setTrailer(null);
}
