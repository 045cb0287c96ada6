// Long conversations: the page tells the host which views are in (or near) sight, so that the host
// can put views far out of sight away (`view-parked`: the frame goes, a placeholder of the same size
// stays) and mount them again when their placeholder is scrolled to.

import { el } from "./dom.js";
import * as record from "./viewrecord.js";

/** @typedef {import("./viewrecord.js").View} View */

// "Near sight": a screen above and below the visible part of the conversation, so a view is back
// before the person reaches it.
const NEAR = "100% 0px";
const PLACEHOLDER_HEIGHT = 120; // a view replayed as a placeholder, never measured on this page

/** @type {import("./socket.js").SendFrame} */
let send = () => false;
/** @type {IntersectionObserver | null} */
let observer = null;
const handles = new WeakMap(); // container -> handle
const seen = new Map(); // handle -> last visibility sent

/** @param {import("./socket.js").SendFrame} sendFn */
export function initLazy(sendFn) {
  send = sendFn;
  const root = document.querySelector("[data-testid=conversation]");
  observer = new IntersectionObserver(onEntries, { root, rootMargin: NEAR });
}

/** @param {IntersectionObserver} io the observer reporting them (initLazy's) */
function onEntries(entries, io) {
  for (const entry of entries) {
    const target = entry.target;
    const handle = handles.get(target);
    if (!target.isConnected || handle === undefined) {
      // Replaced (mounted again) or removed with its conversation.
      io.unobserve(target);
      continue;
    }
    if (target.dataset.displayMode && target.dataset.displayMode !== "inline") continue; // pip, fullscreen: in sight
    const visible = entry.isIntersecting;
    if (seen.get(handle) === visible) continue;
    seen.set(handle, visible);
    send({ type: "view-visible", view: handle, visible });
  }
}

/** Watch a view's container (a live view or a placeholder). */
export function observeView(container, handle) {
  if (!observer) return;
  handles.set(container, handle);
  seen.delete(handle);
  observer.observe(container);
}

/**
 * Draw the placeholder in a view's frame box: the frame's size, and what the view is.
 * @param {View} v
 * @param {number} [height]
 */
export function drawPlaceholder(v, height) {
  const h = Math.max(48, Math.round(height || PLACEHOLDER_HEIGHT));
  v.container.dataset.state = "parked";
  const box = el("div", {
    class: "view-placeholder", "data-testid": "view-placeholder",
    title: "This view is paused while out of sight; it comes back when scrolled to.",
  }, "Paused while out of sight");
  box.style.height = `${h}px`; // CSSOM: the page's CSP forbids style attributes
  v.frameBox.replaceChildren(box);
  v.frameBox.hidden = false;
  v.loading.hidden = true;
}

/**
 * Host → page `view-parked`: the view was torn down out of sight; keep its place and size.
 * @param {View} v
 */
export function parkView(v) {
  const height = v.iframe ? v.iframe.getBoundingClientRect().height : PLACEHOLDER_HEIGHT;
  if (v.iframe) v.iframe.remove();
  record.setFrame(v, null); // later messages from that window no longer match any view
  drawPlaceholder(v, height);
  // The host mounts it again as soon as it is in sight, which may be at once.
  seen.delete(v.handle);
  if (observer) {
    observer.unobserve(v.container);
    observer.observe(v.container);
  }
}

export function lazyReset() {
  seen.clear();
  if (observer) observer.disconnect();
}
