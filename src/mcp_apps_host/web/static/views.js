// Views: the page side of the double-iframe sandbox. For each `view-mount` this draws a
// container under the call's card and a proxy iframe on the sandbox origin, then relays:
// proxy → host only after checking who sent it; host → proxy only to that proxy's origin.
// It never answers a view itself; the host does.

import { el } from "./dom.js";
import { callSlot, viewReplaced } from "./chat.js";
import { attachInspector, inspectorsReset } from "./inspector.js";
import { initModes, modeControls, showModes, placeView, dropModes } from "./modes.js";
import { initLazy, observeView, drawPlaceholder, parkView, lazyReset } from "./lazy.js";
import { initPins, pinControl, pinnedSlot, setPinned, dropPin } from "./pins.js";
import { withTemplate } from "./templates.js";
import { takePrestarted } from "./prestart.js";
import * as record from "./viewrecord.js";

/** @typedef {import("./viewrecord.js").View} View */

const FRAME_SANDBOX = "allow-scripts allow-same-origin allow-forms";
const PROXY_READY = "ui/notifications/sandbox-proxy-ready";
const INITIAL_HEIGHT = 120;
const MAX_LOG_LINES = 500;
const MODES = new Set(["inline", "fullscreen", "pip"]);
const STATE_TEXT = { loading: "Loading view…", ready: "", error: "", closed: "View closed." };
// What the host's template check said, as the marker in the view's source line shows it.
const TRUST = {
  new: ["New", "First time this template is seen; its hash is now pinned, and a change will be shown to you before it renders."],
  trusted: ["Pinned", "The same template as the one pinned when you first used it."],
  allowed: ["Allowed", "This template (or its server) is on the host's allow-list."],
  changed: ["Changed", "The template changed since it was pinned, and you accepted the new version."],
  unchecked: ["Unchecked", "Not checked against a pinned hash: template checks are off, or this view was restored from the conversation's saved copy."],
};

/** @type {import("./socket.js").SendFrame} */
let send = () => false;

/** @param {import("./socket.js").SendFrame} sendFn */
export function initViews(sendFn) {
  send = sendFn;
  initModes(sendFn);
  initLazy(sendFn);
  initPins(sendFn);
  // One listener for every view. The proxy is on another origin, so the only things we
  // can trust about a message are which window sent it and that window's origin.
  window.addEventListener("message", onMessage);
  document.addEventListener("keydown", (e) => {
    // Escape asks to leave fullscreen; the host decides and answers with view-display-mode.
    if (e.key !== "Escape" || e.defaultPrevented) return;
    for (const v of record.allViews()) {
      if (v.mode === "fullscreen") {
        send({ type: "view-display-mode", view: v.handle, mode: "inline" });
        e.preventDefault();
        return;
      }
    }
  });
}

function onMessage(event) {
  // Which of our proxy frames sent this? Anything else (the page itself, a view posting
  // straight to window.top, another tab) is not ours to relay.
  /** @type {View | null} */
  let view = null;
  for (const v of record.allViews()) {
    if (v.iframe && event.source !== null && v.iframe.contentWindow === event.source) {
      view = v;
      break;
    }
  }
  if (!view) return;
  // The right window at the wrong origin means the proxy frame was navigated away from
  // the sandbox (a same-origin view can do that to its proxy): no longer the proxy.
  if (event.origin !== view.sandboxOrigin) return;
  // The protocol is JSON-RPC objects; strings, arrays, blobs and ports are not it.
  if (!isPlainObject(event.data)) return;
  if (!view.proxyReady && event.data.method === PROXY_READY) {
    // The host sent the template with the mount; the proxy can take it now.
    for (const message of record.markProxyReady(view)) deliver(view, message);
  }
  send({ type: "view-message", view: view.handle, message: event.data });
}

function isPlainObject(value) {
  if (value === null || typeof value !== "object") return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** @param {import("./frames").ViewMountFrame} msg */
export function viewMount(msg) {
  const handle = String(msg.view ?? "");
  if (!handle || record.hasView(handle)) return;
  const server = String(msg.server ?? "");
  const tool = String(msg.tool ?? "");

  const errorBox = el("div", { class: "view-error", "data-testid": "view-error", role: "alert", hidden: true });
  const loading = el("div", { class: "view-loading", "data-testid": "view-loading" },
    el("span", { class: "spinner", "aria-hidden": "true" }), el("span", {}, STATE_TEXT.loading));
  const logList = el("ol", { class: "view-log-lines" });
  const logCount = el("span", { class: "count" });
  const log = el("details", { class: "view-log", "data-testid": "view-log", hidden: true },
    el("summary", {}, "Log ", logCount), logList);
  const contextText = el("pre", { class: "code" });
  const context = el("details", { class: "view-context", "data-testid": "view-context", hidden: true },
    el("summary", { title: "What this view last told the model" }, "Model context"), contextText);
  const modeButton = el("button", {
    type: "button", class: "icon-btn icon-btn-small view-mode", "data-testid": "view-exit-mode", hidden: true,
    "aria-label": "Back to inline", title: "Back to inline (Esc)",
    onclick: () => send({ type: "view-display-mode", view: handle, mode: "inline" }),
  }, "⤡");
  const closeButton = el("button", {
    type: "button", class: "icon-btn icon-btn-small", "data-testid": "view-close", "aria-label": `Close view ${server} · ${tool}`, title: "Close view",
    onclick: () => {
      // The host runs the teardown and then tells us to remove the frame. A view in state
      // error is already over on the host's side, so closing it only tidies the page.
      const sent = send({ type: "view-close", view: handle });
      if (container.dataset.state === "error") viewRemove({ view: handle });
      else if (sent) closeButton.disabled = true;
    },
  }, "×");
  const modes = modeControls(handle);
  const pinButton = handle.startsWith("failed-") ? null : pinControl(handle);
  const sha = typeof msg.templateSha256 === "string" ? msg.templateSha256 : "";
  const toolCode = el("code", {}, tool);
  const originSpan = el("span", { class: "view-origin" }, el("span", { class: "server-chip" }, server), el("span", { class: "sep" }, "·"), toolCode);
  const sourceBar = el("div", { class: "view-source", "data-testid": "view-source", title: sha ? `template sha256 ${sha}` : null },
    el("span", { class: "view-glyph", "aria-hidden": "true" }),
    originSpan,
    trustMarker(msg.trust, sha),
    el("span", { class: "spacer" }),
    handle.startsWith("failed-") ? null : attachInspector(handle, () => container),
    pinButton,
    modes.group,
    modeButton,
    modes.close,
    closeButton,
  );
  const frameBox = el("div", { class: "view-frame" }, loading);
  const container = el("div", {
    // A view booted ahead is not one of the conversation's views until a call takes it.
    class: `view ${msg.prefersBorder === false ? "borderless" : "bordered"}`, "data-testid": msg.prebooted === true ? "view-preboot" : "view",
    "data-server": server, "data-tool": tool, "data-state": "loading", "data-view": handle, "data-display-mode": "inline",
  }, sourceBar, connectWarning(msg.connectDomains), warningsBox(msg.warnings), errorBox, frameBox,
  el("div", { class: "view-foot" }, context, log));
  // Where an app's author looks first: the policy the view runs under (what it blocks is logged as it happens).
  if (typeof msg.csp === "string" && msg.prebooted !== true) console.info(`[mcp-apps-host] ${server} · ${tool} runs under Content-Security-Policy: ${msg.csp}`);

  const view = record.newView({
    handle, server, sandboxOrigin: String(msg.sandboxOrigin ?? ""), container, frameBox, loading, errorBox,
    log, logList, logCount, context, contextText, modeButton, closeButton, modes, pinButton,
    sha, prebooted: msg.prebooted === true, toolCode, originSpan,
  });
  record.addView(view);
  const old = typeof msg.replaces === "string" ? record.viewOf(msg.replaces) : null;
  if (view.prebooted) {
    // Booted ahead for no call yet: laid out off screen until a call takes it (`view-adopt`).
    prebootHolder().append(container);
  } else if (old) {
    // A new version of the same view (its template changed): it takes the old one's place.
    if (old.iframe) old.iframe.remove();
    dropModes(old);
    old.container.replaceWith(container);
    record.forgetView(old.handle);
    viewReplaced(msg.replaces, handle); // a card naming the old view (`call-delivered`) names this one
  } else if (msg.pinned === true) {
    pinnedSlot(handle).append(container); // a pinned view brought back: it has no card here
  } else {
    // callId is null only for a view booted ahead, placed above.
    callSlot(/** @type {number} */ (msg.callId), { server, tool }).append(container);
  }
  if (msg.pinned === true) setPinned(view, true);
  observeView(container, handle);
  if (msg.parked === true) {
    // Of the height the view's frame last had, when the host knows it; mounted when it comes into sight.
    drawPlaceholder(view, typeof msg.height === "number" && Number.isFinite(msg.height) ? msg.height : undefined);
    return;
  }

  if (msg.proxyUrl === null || msg.proxyUrl === undefined) {
    // The host could not load the template; its view-state error follows.
    frameBox.hidden = true;
    return;
  }

  const problem = checkOrigins(msg.proxyUrl, view.sandboxOrigin);
  if (problem) {
    // Without a separate origin the view could reach into this page; refuse to load it.
    frameBox.hidden = true;
    viewState({ view: handle, state: "error", error: `This view was not loaded: ${problem}` });
    return;
  }

  const prestarted = takePrestarted(msg.prestarted, msg.proxyUrl, frameBox);
  if (prestarted) {
    // A proxy loaded ahead for this view's origin and policy: already up, perhaps ready.
    prestarted.iframe.setAttribute("title", `${server} · ${tool}`);
    prestarted.iframe.style.height = `${INITIAL_HEIGHT}px`;
    record.setFrame(view, prestarted.iframe);
    if (prestarted.ready) {
      record.markProxyReady(view); // nothing is held yet: the view was made just now
      send({ type: "view-message", view: handle, message: { jsonrpc: "2.0", method: PROXY_READY, params: {} } });
    }
    return;
  }
  const iframe = document.createElement("iframe");
  iframe.className = "proxy";
  // sandbox and allow are read when the frame navigates, so set them before src and insertion.
  iframe.setAttribute("sandbox", FRAME_SANDBOX);
  if (typeof msg.permissions === "string" && msg.permissions.trim()) iframe.setAttribute("allow", msg.permissions);
  iframe.setAttribute("referrerpolicy", "no-referrer");
  iframe.setAttribute("title", `${server} · ${tool}`);
  iframe.style.height = `${INITIAL_HEIGHT}px`;
  iframe.src = msg.proxyUrl;
  record.setFrame(view, iframe);
  frameBox.prepend(iframe);
}

/** @type {HTMLElement | null} */
let holder = null;
function prebootHolder() {
  if (!holder) {
    /** @type {HTMLElement} */
    const box = el("div", { class: "view-preboot", "aria-hidden": "true" });
    holder = box;
    holder.inert = true;
    holder.style.cssText = "position:fixed;left:-10000px;top:0;width:720px;overflow:hidden;pointer-events:none";
    document.body.append(holder);
  }
  // As wide as the conversation's views: the view's first size must fit where a call will show it
  // (its frame is in another process, so a width change after the move reaches it late).
  const shown = /** @type {HTMLElement[]} */ ([...document.querySelectorAll("[data-testid=conversation] [data-testid=view]")]).pop();
  if (shown && shown.offsetWidth) holder.style.width = `${shown.offsetWidth}px`;
  return holder;
}

/**
 * Host → page `view-adopt`: a view booted ahead is now this call's; it moves under the call, its
 * frames kept (moveBefore), and shows what the host's check of the template said.
 * @param {import("./frames").ViewAdoptFrame} msg
 */
export function viewAdopt(msg) {
  const v = record.viewOf(msg.view);
  if (!v || !v.prebooted) return;
  const tool = String(msg.tool ?? "");
  const slot = callSlot(msg.callId, { server: String(msg.server ?? v.server), tool });
  try {
    slot.moveBefore(v.container, null);
  } catch {
    slot.append(v.container); // the frames reload; the view boots again
  }
  record.markAdopted(v);
  v.container.dataset.testid = "view";
  v.container.dataset.tool = tool;
  v.toolCode.textContent = tool;
  v.iframe?.setAttribute("title", `${v.server} · ${tool}`);
  const marker = trustMarker(msg.trust, v.sha);
  if (marker) v.originSpan.after(marker);
}

/** The small marker after "server · tool" saying how the template was checked. */
function trustMarker(trust, sha) {
  if (typeof trust !== "string" || !trust) return null; // a failed mount: nothing was checked
  const [label, text] = Object.hasOwn(TRUST, trust) ? TRUST[trust] : [trust, `Template check: ${trust}.`];
  const tip = sha ? `${text}\nsha256 ${sha}` : text;
  return el("span", { class: "view-trust", "data-testid": "view-trust", "data-trust": trust, title: tip, "aria-label": `Template: ${label}. ${text}` },
    el("span", { class: "view-trust-icon", "aria-hidden": "true" }), label);
}

/** What the host's static review of the template found, folded under one line. */
/** The origins a view declared it sends data to (connectDomains): the person sees where their data may go. */
function connectWarning(domains) {
  const list = (Array.isArray(domains) ? domains : []).map((d) => String(d)).filter(Boolean);
  if (!list.length) return null;
  return el("div", { class: "view-csp-warning", "data-testid": "view-csp-warning", role: "note" },
    el("span", { class: "view-warnings-icon", "aria-hidden": "true" }, "!"),
    el("span", {}, `This app can send data to ${list.length === 1 ? "an outside address" : "outside addresses"}: `,
      el("span", { class: "view-csp-domains" }, list.join(", "))));
}

function warningsBox(warnings) {
  const list = (Array.isArray(warnings) ? warnings : []).map((w) => String(w)).filter(Boolean);
  if (!list.length) return null;
  // Folded: the first finding on one line. Open: the full list, so the line gives way to a count.
  return el("details", { class: "view-warnings", "data-testid": "view-warnings" },
    el("summary", { title: "Found by the host's review of the template's HTML before it loaded" },
      el("span", { class: "view-warnings-icon", "aria-hidden": "true" }, "!"),
      el("span", { class: "view-warnings-text" }, "Static review found",
        el("span", { class: "view-warnings-first" }, `: ${list[0]}`),
        el("span", { class: "view-warnings-count" }, list.length === 1 ? " 1 warning" : ` ${list.length} warnings`)),
      list.length > 1 ? el("span", { class: "view-warnings-more" }, `+${list.length - 1} more`) : null),
    el("ul", {}, list.map((w) => el("li", {}, w))));
}

/** Why the proxy URL must not be loaded, or "" when it is fine. */
function checkOrigins(proxyUrl, sandboxOrigin) {
  let url;
  try {
    url = new URL(String(proxyUrl ?? ""));
  } catch {
    return "the proxy URL is not a URL.";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "the proxy URL is not http(s).";
  if (url.origin !== sandboxOrigin) return "the proxy URL is not on the sandbox origin.";
  if (url.origin === location.origin) return "the sandbox origin is the host page's own origin.";
  return "";
}

/** @param {import("./frames").ViewPostFrame} msg */
export function viewPost(msg) {
  const v = record.viewOf(msg.view);
  if (!v || !v.iframe) return; // removed, or not mounted: nothing to deliver to
  const message = named(v, withTemplate(v.sha, msg.message));
  if (v.proxyReady) deliver(v, message);
  else record.holdMessage(v, message);
}

/**
 * The resource with the name the proxy gives the view's own frame: its server and tool, as the
 * proxy frame's title says, so a screen reader names both frames alike.
 * @param {View} v
 * @param {any} message
 */
function named(v, message) {
  if (!message || message.method !== "ui/notifications/sandbox-resource-ready") return message;
  const params = message.params && typeof message.params === "object" ? message.params : {};
  return { ...message, params: { ...params, title: v.iframe?.getAttribute("title") ?? "" } };
}

/**
 * @param {View} v
 * @param {object} message
 */
function deliver(v, message) {
  const target = v.iframe && v.iframe.contentWindow;
  if (!target) return;
  try {
    // targetOrigin pins delivery to the sandbox: if the frame was navigated elsewhere the
    // browser drops the message instead of handing host data to a stranger.
    target.postMessage(message, v.sandboxOrigin);
  } catch (err) {
    console.warn("view-post not delivered", err);
  }
}

/**
 * Host → page `view-state`; also the page's own verdicts (a refused proxy URL, a removed view).
 * @param {Pick<import("./frames").ViewStateFrame, "view" | "state">
 *   & Partial<Pick<import("./frames").ViewStateFrame, "error">>} msg
 */
export function viewState(msg) {
  const v = record.viewOf(msg.view);
  if (!v) return;
  const state = ["loading", "ready", "error", "closed"].includes(msg.state) ? msg.state : "error";
  v.container.dataset.state = state;
  v.loading.hidden = state !== "loading";
  if (state === "error") {
    v.errorBox.textContent = String(msg.error ?? "The view failed.");
    v.errorBox.hidden = false;
  } else if (state !== "closed") {
    // A closed view keeps the error that closed it on screen.
    v.errorBox.hidden = true;
    v.errorBox.textContent = "";
  }
  if (state === "closed") v.closeButton.disabled = true;
}

/** @param {import("./frames").ViewSizeFrame} msg */
export function viewSize(msg) {
  const v = record.viewOf(msg.view);
  if (!v || !v.iframe) return;
  const s = v.iframe.style;
  const px = (n) => (typeof n === "number" && Number.isFinite(n) && n >= 0 ? `${Math.round(n)}px` : null);
  const height = px(msg.height);
  const width = px(msg.width);
  if (height) s.height = height; // applied the frame it arrives, both ways: an eased size lags the content
  if (msg.fixed === true) {
    // The host's own width (the inspector's container size), or none any more.
    s.width = width ?? "";
    s.minWidth = "";
  } else if (width) {
    // What the view needs at least; the frame still fills its place. A view measures the frame it was
    // given: a width taken as the frame's would hold it there for good, and one measured before the
    // frame was laid out (0, in a frame of another process that learns its size late) would hide it.
    s.width = "";
    s.minWidth = `min(${width}, 100%)`;
  }
}

/** @param {import("./frames").ViewLogFrame} msg */
export function viewLog(msg) {
  const v = record.viewOf(msg.view);
  if (!v) return;
  const level = String(msg.level ?? "info");
  v.logList.append(el("li", { class: `log-line log-${level.replace(/[^a-z]/gi, "")}`, "data-level": level },
    el("span", { class: "log-level" }, level), el("span", { class: "log-text" }, String(msg.text ?? ""))));
  while (v.logList.childElementCount > MAX_LOG_LINES) v.logList.firstElementChild?.remove();
  v.log.hidden = false;
  v.logCount.textContent = String(v.logList.childElementCount);
}

/**
 * Host → page `view-remove`; also a view the page closes itself (a failed one, or one lost with the connection).
 * @param {Pick<import("./frames").ViewRemoveFrame, "view">} msg
 */
export function viewRemove(msg) {
  const v = record.viewOf(msg.view);
  if (!v) return;
  if (v.prebooted) {
    // Never shown: nothing to leave in its place.
    v.container.remove();
    record.forgetView(v.handle);
    return;
  }
  if (v.iframe) v.iframe.remove();
  record.setFrame(v, null); // later messages from that window no longer match any view
  setMode(v, "inline");
  dropModes(v);
  dropPin(v);
  viewState({ view: v.handle, state: "closed" });
  v.frameBox.replaceChildren(el("div", { class: "view-closed" }, STATE_TEXT.closed));
}

/** The WebSocket closed: the host ends a tab's views with its connection, so these frames
 *  are talking to nobody. Remove them and say why, rather than leave dead views running. */
export function viewsLost() {
  for (const v of record.allViews()) {
    if (!v.iframe) continue;
    viewRemove({ view: v.handle });
    v.errorBox.textContent = "The connection to the host was lost, so this view was closed. Run the tool again to reopen it.";
    v.errorBox.hidden = false;
  }
}

/** Host → page `conversation-reset`: the host dropped every view; their containers go with
 *  the conversation column, and their frames must stop talking to us now. */
export function viewsReset() {
  const kept = new Set();
  for (const v of [...record.allViews()]) {
    if (v.pinned) { // pinned views stay live across conversations
      kept.add(v.handle);
      continue;
    }
    if (v.iframe) v.iframe.remove();
    if (v.prebooted) v.container.remove();
    dropModes(v);
    record.forgetView(v.handle);
  }
  lazyReset();
  inspectorsReset(kept);
  document.documentElement.classList.remove("has-fullscreen-view");
}

/**
 * Host → page `view-parked`: the view was torn down far out of sight; a placeholder keeps its place.
 * @param {import("./frames").ViewParkedFrame} msg
 */
export function viewParked(msg) {
  const v = record.viewOf(msg.view);
  if (!v) return;
  setMode(v, "inline");
  parkView(v);
}

/**
 * Host → page `view-pinned`: into the side panel, or back.
 * @param {import("./frames").ViewPinnedFrame} msg
 */
export function viewPinned(msg) {
  const v = record.viewOf(msg.view);
  if (!v || !v.pinButton) return;
  setPinned(v, msg.pinned === true);
}

/**
 * Host → page `view-context`: the view's latest model context, as an expandable chip.
 * @param {import("./frames").ViewContextFrame} msg
 */
export function viewContext(msg) {
  const v = record.viewOf(msg.view);
  if (!v) return;
  v.contextText.textContent = String(msg.text ?? "");
  v.context.hidden = false;
}

/**
 * Host → page `view-display-mode`: show the view inline, fullscreen or as picture-in-picture.
 * @param {import("./frames").ViewDisplayModeFrame} msg
 */
export function viewDisplayMode(msg) {
  const v = record.viewOf(msg.view);
  if (!v || !MODES.has(msg.mode)) return;
  showModes(v, /** @type {import("./modes.js").DisplayMode} */ (msg.mode), msg.available); // one of MODES
  v.modeButton.hidden = v.mode === "inline";
  fullscreenClass();
}

/**
 * @param {View} v
 * @param {import("./modes.js").DisplayMode} mode
 */
function setMode(v, mode) {
  if (v.mode !== mode) placeView(v, mode);
  v.modeButton.hidden = mode === "inline";
  fullscreenClass();
}

function fullscreenClass() {
  document.documentElement.classList.toggle("has-fullscreen-view", [...record.allViews()].some((x) => x.mode === "fullscreen"));
}
