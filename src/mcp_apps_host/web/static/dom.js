// Small DOM helpers shared by the renderers. Text always goes in as text nodes:
// nothing a server or view sends is ever parsed as HTML.

/**
 * el("div", {class: "x", dataset: {state: "a"}, onclick: fn}, "text", childNode)
 * Attributes are set with setAttribute; `on*` keys add listeners; strings become text nodes.
 */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      node.addEventListener(key.slice(2), value);
    } else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/**
 * One of the page's own elements, which its HTML (or the page's own drawing under `root`) always has.
 * A missing one means a broken page, so it throws, naming the selector, rather than return null.
 * As with querySelector, the element type is the caller's to state (a typed variable it is assigned to);
 * HTMLElement otherwise.
 * @template {Element} [T=HTMLElement]
 * @param {string} selector
 * @param {ParentNode} [root]
 * @returns {T}
 */
export function element(selector, root = document) {
  const node = root.querySelector(selector);
  if (!node) throw new Error(`The page has no element ${selector}`);
  return /** @type {T} */ (node);
}

/** Pretty JSON for display; never throws. */
export function prettyJSON(value) {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * A collapsible JSON block: <details><summary>label</summary><pre>json</pre></details>.
 * @param {string} label
 * @param {unknown} value
 * @param {{open?: boolean, testid?: string}} [options]
 */
export function jsonDetails(label, value, { open = false, testid } = {}) {
  return el(
    "details",
    { class: "json", open, "data-testid": testid },
    el("summary", {}, label),
    el("pre", { class: "code" }, prettyJSON(value)),
  );
}

export function formatDuration(ms) {
  if (typeof ms !== "number" || !Number.isFinite(ms)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  const minutes = Math.floor(ms / 60000);
  return `${minutes} min ${Math.round((ms % 60000) / 1000)} s`;
}

/** Keep a scroll container pinned to the bottom if it already was. */
export function nearBottom(scroller, slack = 80) {
  return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < slack;
}

const FOCUSABLE = "button:not([disabled]), input, select, textarea, summary, [tabindex]:not([tabindex='-1'])";

/**
 * Keep Tab inside a dialog: from its last control to its first, and Shift+Tab from the first (or the
 * dialog itself) to the last.
 * @param {KeyboardEvent} e
 * @param {Element} node
 */
export function trapTab(e, node) {
  const items = /** @type {HTMLElement[]} */ ([...node.querySelectorAll(FOCUSABLE)])
    .filter((n) => n.offsetParent !== null);
  if (!items.length) return;
  const first = items[0];
  const last = items[items.length - 1];
  if (e.shiftKey && (document.activeElement === first || document.activeElement === node)) {
    e.preventDefault();
    last.focus();
  } else if (!e.shiftKey && document.activeElement === last) {
    e.preventDefault();
    first.focus();
  }
}
