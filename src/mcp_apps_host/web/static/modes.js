// Display modes of a view: inline, fullscreen and pip (picture-in-picture).
//
// A mode only changes where the view's container is drawn (CSS position), never where it is in
// the DOM: moving an iframe element reloads the view inside it. While the container is lifted
// out of the conversation, a slot of its height keeps the conversation from jumping. After every
// change the page measures the space the frame has and tells the host (`view-container`), which
// tells the view in one `host-context-changed`.

import { el } from "./dom.js";
import * as record from "./viewrecord.js";

/** @typedef {import("./frames").ViewContainerFrame["mode"]} DisplayMode */
/** @typedef {import("./viewrecord.js").View} View */
/**
 * What this module keeps for one view (its record's `modes`; only this module changes it).
 * @typedef {object} ModeState
 * @property {HTMLElement} group  the buttons of the modes the view declared
 * @property {Record<DisplayMode, HTMLButtonElement>} buttons
 * @property {HTMLButtonElement} close  the control that leaves fullscreen
 * @property {string[]} available
 * @property {HTMLElement | null} slot  holds the view's place in the conversation while it is lifted out
 * @property {ResizeObserver | null} observer
 * @property {string} measured  the last size reported, as "mode width height"
 * @property {{head: HTMLElement, down: (e: PointerEvent) => void} | null} [drag]  moving a pip window
 */

/** @type {Record<DisplayMode, [string, string]>} */
const LABELS = { inline: ["▭", "Inline"], fullscreen: ["⤢", "Full screen"], pip: ["◳", "Picture-in-picture"] };
const PIP_MARGIN = 8; // px kept between a dragged pip window and the edges of the page

/** @type {import("./socket.js").SendFrame} */
let send = () => false;

/** @param {import("./socket.js").SendFrame} sendFn */
export function initModes(sendFn) {
  send = sendFn;
}

/** The header controls of one view: a button per declared mode, and the control that leaves
 *  fullscreen. They are drawn by the page above the view's frame, so the view can neither cover
 *  nor imitate them. */
/**
 * @param {string} handle
 * @returns {ModeState}
 */
export function modeControls(handle) {
  const buttons = /** @type {Record<DisplayMode, HTMLButtonElement>} */ ({});
  for (const [mode, [glyph, label]] of /** @type {[DisplayMode, [string, string]][]} */ (Object.entries(LABELS))) {
    buttons[mode] = el("button", {
      type: "button", class: "icon-btn icon-btn-small view-mode-btn", "data-testid": `view-mode-${mode}`,
      "data-mode": mode, "aria-label": label, title: label, "aria-pressed": mode === "inline" ? "true" : "false",
      onclick: () => send({ type: "view-display-mode", view: handle, mode }),
    }, glyph);
  }
  const group = el("span", { class: "view-modes", "data-testid": "view-modes", role: "group", "aria-label": "Display mode", hidden: true },
    Object.values(buttons));
  const close = el("button", {
    type: "button", class: "btn fullscreen-close", "data-testid": "fullscreen-close", hidden: true,
    title: "Leave full screen (Esc)", onclick: () => send({ type: "view-display-mode", view: handle, mode: "inline" }),
  }, "Exit full screen ", el("kbd", {}, "Esc"));
  return { group, buttons, close, available: ["inline"], slot: null, observer: null, measured: "" };
}

/**
 * Host → page: the modes the view declared (its header offers those) and the one it is in.
 * @param {View} v
 * @param {DisplayMode} mode
 * @param {string[]} available
 */
export function showModes(v, mode, available) {
  const m = v.modes;
  m.available = Array.isArray(available) ? available.filter((x) => Object.hasOwn(LABELS, x)) : ["inline"];
  for (const [name, button] of Object.entries(m.buttons)) button.hidden = !m.available.includes(name);
  m.group.hidden = m.available.length < 2;
  if (mode !== v.mode) placeView(v, mode);
  for (const [name, button] of Object.entries(m.buttons)) button.setAttribute("aria-pressed", String(name === v.mode));
}

/**
 * Draw the view in `mode` and report the space its frame now has.
 * @param {View} v
 * @param {DisplayMode} mode
 */
export function placeView(v, mode) {
  const m = v.modes;
  const from = v.mode;
  if (mode !== "inline" && from === "inline" && v.container.isConnected) {
    // The slot holds the container's place and height in the conversation while it is lifted out.
    const slot = el("div", { class: "view-mode-slot", "data-testid": "view-mode-slot", "aria-hidden": "true" });
    slot.style.height = `${v.container.getBoundingClientRect().height}px`;
    v.container.before(slot);
    m.slot = slot;
  }
  if (mode === "inline" && m.slot) {
    m.slot.remove();
    m.slot = null;
  }
  record.setMode(v, mode);
  v.container.dataset.displayMode = mode;
  v.container.style.left = v.container.style.top = v.container.style.width = v.container.style.height = "";
  m.close.hidden = mode !== "fullscreen";
  for (const [name, button] of Object.entries(m.buttons)) button.setAttribute("aria-pressed", String(name === mode));
  if (mode === "pip") startPip(v);
  else stopPip(v);
  if (!m.observer && typeof ResizeObserver === "function") {
    // The person resizes a pip window, or the page's window changes size under a fullscreen view.
    m.observer = new ResizeObserver(() => { if (v.mode !== "inline") report(v); });
    m.observer.observe(v.frameBox);
  }
  if (from !== mode) report(v, true);
}

/**
 * Tell the host what the frame measures now (once per distinct size).
 * @param {View} v
 */
function report(v, force = false) {
  if (!v.iframe) return;
  const box = v.frameBox.getBoundingClientRect();
  const height = v.mode === "inline" ? v.iframe.getBoundingClientRect().height : box.height;
  const key = `${v.mode} ${Math.round(box.width)} ${Math.round(height)}`;
  if (!force && key === v.modes.measured) return;
  v.modes.measured = key;
  send({ type: "view-container", view: v.handle, mode: v.mode, width: Math.round(box.width), height: Math.round(height) });
}

/**
 * The view is gone from the page: no more measuring.
 * @param {View} v
 */
export function dropModes(v) {
  const m = v.modes;
  if (m.observer) m.observer.disconnect();
  m.observer = null;
  if (m.slot) m.slot.remove();
  m.slot = null;
  stopPip(v);
}

// ---- pip: a window the person moves by its header and resizes by its corner (CSS resize) ----

/** @param {View} v */
function startPip(v) {
  if (v.modes.drag) return;
  const head = /** @type {HTMLElement} */ (v.container.querySelector(".view-source"));
  const down = (e) => {
    if (e.button !== 0 || e.target.closest("button, a, summary, select, input")) return;
    const start = v.container.getBoundingClientRect();
    const dx = e.clientX - start.left;
    const dy = e.clientY - start.top;
    head.setPointerCapture(e.pointerId);
    const move = (ev) => {
      const w = v.container.offsetWidth;
      const h = v.container.offsetHeight;
      const left = Math.min(Math.max(PIP_MARGIN, ev.clientX - dx), window.innerWidth - w - PIP_MARGIN);
      const top = Math.min(Math.max(PIP_MARGIN, ev.clientY - dy), window.innerHeight - h - PIP_MARGIN);
      Object.assign(v.container.style, { left: `${left}px`, top: `${top}px`, right: "auto", bottom: "auto" });
    };
    const end = () => {
      head.removeEventListener("pointermove", move);
      head.removeEventListener("pointerup", up);
      head.removeEventListener("pointercancel", end);
    };
    // The release is where the window lands: a busy browser may coalesce the last moves away.
    const up = (ev) => {
      move(ev);
      end();
    };
    head.addEventListener("pointermove", move);
    head.addEventListener("pointerup", up);
    head.addEventListener("pointercancel", end);
    e.preventDefault();
  };
  head.addEventListener("pointerdown", down);
  v.modes.drag = { head, down };
}

/** @param {View} v */
function stopPip(v) {
  const drag = v.modes.drag;
  if (!drag) return;
  drag.head.removeEventListener("pointerdown", drag.down);
  v.modes.drag = null;
  v.container.style.right = v.container.style.bottom = "";
}
