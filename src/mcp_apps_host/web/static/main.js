// Boot: connect to the host, say hello, and route each host frame to its renderer.

import { HostSocket } from "./socket.js";
import { initThemeToggle, currentTheme, applyHostTheme } from "./theme.js";
import { renderServers } from "./servers.js";
import { initLauncher, launcherServers, launcherOpen } from "./launcher.js";
import { initForm, pickerOpen, closePicker } from "./form.js";
import { initChat, initChatBox, notice, chatMessage, callStarted, callProgress, callFinished, callFailed, callDelivered, callsLost, resetConversation } from "./chat.js";
import { initPrestart, viewPrestart } from "./prestart.js";
import { initIntent } from "./intent.js";
import { templateAhead } from "./templates.js";
import { initViews, viewMount, viewAdopt, viewPost, viewState, viewSize, viewLog, viewRemove, viewContext, viewDisplayMode, viewParked, viewPinned, viewsLost, viewsReset } from "./views.js";
import { initConsent, consent, consentDismiss, consentsLost, openLink } from "./consent.js";
import { initAssistant, turnState, assistantDelta, assistantDone, userMessage, assistantReset } from "./assistant.js";
import { initTrust, viewHeld, trustLost, trustReset } from "./trust.js";
import { download } from "./download.js";
import { initInspector, inspectorRecords, inspectorContext } from "./inspector.js";
import { initViewTools, viewTools } from "./viewtools.js";
import { initElicit, elicit, elicitInvalid, elicitDismiss, elicitsLost } from "./elicit.js";
import { initSignIn } from "./signin.js";
import { showBanner, hideBanner } from "./banner.js";
import { initConversations, currentConversation, conversationOpened, renderConversations } from "./conversations.js";

// Relative to the page, so the host works mounted under a path of another app.
const wsUrl = new URL("ws", location.href);
wsUrl.protocol = location.protocol === "https:" ? "wss:" : "ws:";

/** @returns {import("./frames").HelloFrame} */
function hello() {
  const conversation = currentConversation();
  return {
    type: "hello",
    ...(conversation ? { conversation } : {}),
    theme: currentTheme(),
    locale: navigator.language,
    timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
    userAgent: navigator.userAgent,
    touch: matchMedia("(pointer: coarse)").matches,
    hover: matchMedia("(hover: hover)").matches,
    viewportWidth: window.innerWidth,
    ...preferences(),
  };
}

/**
 * The person's display preferences, for the views' host context.
 * @returns {Omit<import("./frames").PreferencesFrame, "type">}
 */
function preferences() {
  /** @type {import("./frames").PreferencesFrame["contrast"][]} */
  const contrasts = ["more", "less", "custom"];
  return {
    reducedMotion: matchMedia("(prefers-reduced-motion: reduce)").matches,
    contrast: contrasts.find((c) => matchMedia(`(prefers-contrast: ${c})`).matches) ?? "no-preference",
    forcedColors: matchMedia("(forced-colors: active)").matches,
  };
}

let connected = false;
/** @param {import("./socket.js").SocketStatus} s */
function onStatus(s) {
  if (s.state === "open") {
    connected = true;
    hideBanner();
  } else if (s.state === "closed") {
    if (connected) {
      // The host's state for a tab lives and dies with its connection (a new one starts afresh).
      connected = false;
      viewsLost();
      callsLost();
      consentsLost();
      elicitsLost();
      trustLost();
      assistantReset();
    }
    showBanner(s, () => socket.retryNow());
  }
}

const socket = new HostSocket(wsUrl, { onOpen: hello, onStatus });
/** @type {import("./socket.js").SendFrame} */
const send = (obj) => socket.send(obj);

initThemeToggle((theme) => send({ type: "theme", theme }));
// A preference changed while the page is open (a system setting): the open views hear it.
for (const query of ["(prefers-reduced-motion: reduce)", "(forced-colors: active)",
  ...["more", "less", "custom"].map((c) => `(prefers-contrast: ${c})`)]) {
  matchMedia(query).addEventListener("change", () => send({ type: "preferences", ...preferences() }));
}
initForm(send);
initChat(send);
initChatBox();
initIntent(send);
initViews(send);
initPrestart();
initConsent(send);
initAssistant(send);
initTrust(send);
initConversations(send);
initInspector(send);
initViewTools(send);
initElicit(send);
initSignIn(send);
initLauncher(send);

/**
 * Host → page `conversation-reset`: clear the column; the host replays the conversation next.
 * @param {import("./frames").ConversationResetFrame} msg
 */
function conversationReset(msg) {
  closePicker();
  consentsLost((q) => q.kind === "elicit"); // a server's question is not the conversation's
  viewsReset();
  trustReset();
  assistantReset();
  resetConversation();
  conversationOpened(msg);
}

// Every host frame has its renderer here, and each renderer takes that frame's type.
/** @type {{[T in import("./frames").HostFrame["type"]]: (msg: import("./socket.js").HostFrameOf<T>) => void}} */
const routes = {
  welcome: (msg) => {
    document.documentElement.dataset.worker = String(msg.worker);
    /** @type {HTMLElement} */ (document.querySelector("[data-testid=admin-link]")).hidden = !msg.admin;
  },
  reconnect: (msg) => {
    // Counted on the page, so a test (or a person in the inspector) can tell a planned move from a lost host.
    const root = document.documentElement;
    root.dataset.reconnects = String(Number(root.dataset.reconnects || "0") + 1);
    root.dataset.reconnectReason = msg.reason;
    socket.reconnectSoon();
  },
  servers: (msg) => {
    renderServers(msg);
    launcherServers(msg);
  },
  notice,
  "chat-message": chatMessage,
  "user-message": userMessage,
  "turn-state": turnState,
  "assistant-delta": assistantDelta,
  "assistant-done": assistantDone,
  "call-started": callStarted,
  "call-progress": callProgress,
  "call-finished": callFinished,
  "call-failed": callFailed,
  "call-delivered": callDelivered,
  "view-mount": viewMount,
  "view-prestart": viewPrestart,
  "view-adopt": viewAdopt,
  "view-post": viewPost,
  "view-state": viewState,
  "view-size": viewSize,
  "view-log": viewLog,
  "view-remove": viewRemove,
  "view-parked": viewParked,
  "view-pinned": viewPinned,
  "view-context": viewContext,
  "view-tools": viewTools,
  "view-display-mode": viewDisplayMode,
  "template-ahead": templateAhead,
  "inspector-records": inspectorRecords,
  "inspector-context": inspectorContext,
  consent,
  "consent-dismiss": consentDismiss,
  "open-link": openLink,
  elicit,
  "elicit-invalid": elicitInvalid,
  "elicit-dismiss": elicitDismiss,
  "view-held": viewHeld,
  download,
  theme: applyHostTheme,
  "conversation-reset": conversationReset,
  conversations: renderConversations,
};
// (Each pair is checked in `routes` above; Object.entries loses which handler goes with which type.)
for (const [type, fn] of Object.entries(routes)) socket.on(/** @type {any} */ (type), /** @type {any} */ (fn));

// "/" focuses the chat box from anywhere that is not itself a text field.
document.addEventListener("keydown", (e) => {
  if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey || pickerOpen() || launcherOpen()) return;
  const t = e.target;
  if (t instanceof HTMLElement && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
  e.preventDefault();
  /** @type {HTMLElement} */ (document.querySelector("[data-testid=chat-input]")).focus();
});

socket.connect();
