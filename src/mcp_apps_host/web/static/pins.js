// The side panel of pinned views. A view pinned from the conversation keeps its place in the DOM
// (moving an iframe reloads the view): its container is drawn over a slot in the panel with fixed
// positioning, and its call card is kept, collapsed, when another conversation is shown. A pinned
// view brought back after a reload is drawn straight into its slot.

import { el } from "./dom.js";
import * as record from "./viewrecord.js";

/** @typedef {import("./viewrecord.js").View} View */

/** @type {import("./socket.js").SendFrame} */
let send = () => false;
// Built by initPins, before anything reads them.
/** @type {HTMLElement} */
let panel;
/** @type {HTMLElement} */
let list;
/** @type {Map<string, {v: View, slot: HTMLElement, note: HTMLElement | null, observer: ResizeObserver | null}>} */
const pinned = new Map(); // handle -> {v, slot, note, observer}

/** @param {import("./socket.js").SendFrame} sendFn */
export function initPins(sendFn) {
  send = sendFn;
  list = el("div", { class: "pinned-list" });
  panel = el("aside", { class: "pinned-panel", "data-testid": "pinned-panel", "aria-label": "Pinned views", hidden: true },
    el("div", { class: "pinned-head" }, "Pinned"), list);
  document.body.append(panel);
  list.addEventListener("scroll", layout, { passive: true });
  window.addEventListener("resize", layout);
}

/** The header control of one view. */
export function pinControl(handle) {
  const button = el("button", {
    type: "button", class: "icon-btn icon-btn-small view-pin", "data-testid": "view-pin", "aria-pressed": "false",
    "aria-label": "Pin to the side panel", title: "Pin to the side panel (stays live across turns and conversations)",
    onclick: () => send({ type: "view-pin", view: handle, pinned: button.getAttribute("aria-pressed") !== "true" }),
  }, pinGlyph());
  return button;
}

/** A pushpin drawn with SVG: an emoji needs a font the machine may not have. */
function pinGlyph() {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 16 16");
  svg.setAttribute("width", "14");
  svg.setAttribute("height", "14");
  svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS(ns, "path");
  path.setAttribute("d", "M5 1.5h6l-1 4 2.5 3h-9L6 5.5zM8 8.5V15");
  path.setAttribute("fill", "none");
  path.setAttribute("stroke", "currentColor");
  path.setAttribute("stroke-width", "1.4");
  path.setAttribute("stroke-linejoin", "round");
  svg.append(path);
  return svg;
}

/** Where a pinned view brought back after a reload goes: a slot of its own in the panel. */
export function pinnedSlot(handle) {
  const slot = el("div", { class: "pin-slot", "data-view": handle });
  list.append(slot);
  panel.hidden = false;
  return slot;
}

/**
 * Host → page `view-pinned` (or a view mounted pinned): into the panel, or back.
 * @param {View} v
 * @param {boolean} on
 */
export function setPinned(v, on) {
  // Only a failed view has no pin button, and it is never pinned.
  if (v.pinButton) {
    v.pinButton.setAttribute("aria-pressed", String(on));
    v.pinButton.setAttribute("aria-label", on ? "Unpin from the side panel" : "Pin to the side panel");
  }
  record.setPinned(v, on);
  const entry = pinned.get(v.handle);
  if (on && !entry) {
    if (v.container.parentElement?.classList.contains("pin-slot")) {
      // Mounted in the panel: nothing to lift.
      v.container.dataset.pinned = "in";
      pinned.set(v.handle, { v, slot: v.container.parentElement, note: null, observer: null });
    } else {
      const slot = pinnedSlot(v.handle);
      const note = el("div", { class: "view-pinned-note", "data-testid": "view-pinned-note" }, "Pinned to the side panel");
      v.container.before(note);
      v.container.dataset.pinned = "over";
      const observer = new ResizeObserver(() => { slot.style.height = `${v.container.offsetHeight}px`; layout(); });
      observer.observe(v.container);
      pinned.set(v.handle, { v, slot, note, observer });
    }
  } else if (!on && entry) {
    unpinned(entry);
  }
  panel.hidden = pinned.size === 0;
  layout();
}

function unpinned(entry) {
  const { v, slot, note, observer } = entry;
  pinned.delete(v.handle);
  if (observer) observer.disconnect();
  if (note) note.remove();
  if (v.container.dataset.pinned === "over") {
    delete v.container.dataset.pinned;
    Object.assign(v.container.style, { left: "", top: "", width: "" });
    slot.remove();
    // Its card was kept out of sight while another conversation was shown: nothing to go back to.
    const kept = v.container.closest(".call-kept");
    if (kept) kept.remove();
  } else if (slot.contains(v.container)) {
    slot.remove(); // a view drawn in the panel has no card: the host closes it
  }
}

/**
 * The view is gone (closed, or its page state dropped).
 * @param {View} v
 */
export function dropPin(v) {
  const entry = pinned.get(v.handle);
  if (entry) unpinned(entry);
  panel.hidden = pinned.size === 0;
}

/** Put every view pinned from the conversation over its slot. */
function layout() {
  for (const { v, slot } of pinned.values()) {
    if (v.container.dataset.pinned !== "over") continue;
    const r = slot.getBoundingClientRect();
    Object.assign(v.container.style, { left: `${r.left}px`, top: `${r.top}px`, width: `${r.width}px` });
  }
}

/** Handles of the views pinned now. */
export function pinnedHandles() {
  return new Set(pinned.keys());
}
