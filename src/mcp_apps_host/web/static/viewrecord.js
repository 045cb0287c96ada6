// The record the page keeps for each view it draws, and the views it has. views.js makes one per
// `view-mount`; modes.js, lazy.js, pins.js and viewtools.js change it too, but only through the
// functions here: the fields are declared readonly, so tsc refuses a write anywhere else, and each
// change to a view's state can be found in this file.

/** @typedef {import("./modes.js").DisplayMode} DisplayMode */
/** @typedef {import("./modes.js").ModeState} ModeState */

/**
 * One view on the page: the parts drawn for it (made once, by views.js) and where it stands.
 * @typedef {{
 *   readonly handle: string,
 *   readonly server: string,
 *   readonly sandboxOrigin: string,
 *   readonly sha: string,
 *   readonly container: HTMLElement,
 *   readonly frameBox: HTMLElement,
 *   readonly loading: HTMLElement,
 *   readonly errorBox: HTMLElement,
 *   readonly log: HTMLDetailsElement,
 *   readonly logList: HTMLOListElement,
 *   readonly logCount: HTMLElement,
 *   readonly context: HTMLDetailsElement,
 *   readonly contextText: HTMLElement,
 *   readonly modeButton: HTMLButtonElement,
 *   readonly closeButton: HTMLButtonElement,
 *   readonly pinButton: HTMLButtonElement | null,
 *   readonly toolCode: HTMLElement,
 *   readonly originSpan: HTMLElement,
 *   readonly modes: ModeState,
 *   readonly iframe: HTMLIFrameElement | null,
 *   readonly mode: DisplayMode,
 *   readonly pinned: boolean,
 *   readonly prebooted: boolean,
 *   readonly proxyReady: boolean,
 *   readonly held: readonly object[],
 *   readonly toolsBox: HTMLElement | null,
 * }} View
 */
/** @typedef {{-readonly [K in keyof View]: View[K]}} Writable */
/** @typedef {Omit<View, "iframe" | "mode" | "pinned" | "proxyReady" | "held" | "toolsBox">} ViewParts */

/** @type {Map<string, View>} */
const views = new Map(); // handle -> view

/**
 * A new view (not yet one of the page's: see addView): inline, unpinned, no frame yet, and host → view
 * messages held until its proxy is ready.
 * @param {ViewParts} parts
 * @returns {View}
 */
export function newView(parts) {
  return { ...parts, iframe: null, mode: "inline", pinned: false, proxyReady: false, held: [], toolsBox: null };
}

/** @param {View} v */
export function addView(v) {
  views.set(v.handle, v);
}

/** @param {string} handle */
export function viewOf(handle) {
  return views.get(handle);
}

/** @param {string} handle */
export function hasView(handle) {
  return views.has(handle);
}

/** Every view on the page, in the order they were added. */
export function allViews() {
  return views.values();
}

/** @param {string} handle */
export function forgetView(handle) {
  views.delete(handle);
}

/** @param {View} v */
function writable(v) {
  return /** @type {Writable} */ (v);
}

/**
 * The proxy frame the view is in now; null once it is gone (later messages from that window then
 * match no view).
 * @param {View} v
 * @param {HTMLIFrameElement | null} iframe
 */
export function setFrame(v, iframe) {
  writable(v).iframe = iframe;
}

/**
 * A host → view message that must wait for the view's proxy to be ready.
 * @param {View} v
 * @param {object} message
 */
export function holdMessage(v, message) {
  /** @type {object[]} */ (v.held).push(message);
}

/**
 * The view's proxy said it is ready: the messages held for it so far, oldest first, to deliver now.
 * @param {View} v
 * @returns {object[]}
 */
export function markProxyReady(v) {
  writable(v).proxyReady = true;
  return /** @type {object[]} */ (v.held).splice(0);
}

/**
 * A view booted ahead was taken by a call (`view-adopt`).
 * @param {View} v
 */
export function markAdopted(v) {
  writable(v).prebooted = false;
}

/**
 * @param {View} v
 * @param {DisplayMode} mode
 */
export function setMode(v, mode) {
  writable(v).mode = mode;
}

/**
 * @param {View} v
 * @param {boolean} on
 */
export function setPinned(v, on) {
  writable(v).pinned = on;
}

/**
 * The list of the view's own tools drawn on it, or null.
 * @param {View} v
 * @param {HTMLElement | null} box
 */
export function setToolsBox(v, box) {
  writable(v).toolsBox = box;
}
