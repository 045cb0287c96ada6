// Sandbox proxies loaded ahead (host → page `view-prestart`): hidden, one per server origin and
// policy, so the next view there starts on a proxy that is up instead of loading one. A
// `view-mount` naming one in `prestarted` takes it; the frame is moved into the view with
// moveBefore, which keeps its document (a plain move would reload it).

const FRAME_SANDBOX = "allow-scripts allow-same-origin allow-forms";
const PROXY_READY = "ui/notifications/sandbox-proxy-ready";

const pool = new Map(); // key -> {iframe, origin, url, ready}
/** @type {HTMLElement | null} */
let holder = null;

export function initPrestart() {
  window.addEventListener("message", (event) => {
    for (const p of pool.values()) {
      if (event.source === null || p.iframe.contentWindow !== event.source) continue;
      // The same checks as for a view's proxy: its window, its origin, the ready and nothing else.
      if (event.origin === p.origin && event.data && event.data.method === PROXY_READY) p.ready = true;
      return;
    }
  });
}

/**
 * Host → page `view-prestart`.
 * @param {import("./frames").ViewPrestartFrame} msg
 */
export function viewPrestart(msg) {
  const keep = new Set(Array.isArray(msg.keep) ? msg.keep.map(String) : []);
  for (const [key, p] of pool) {
    if (!keep.has(key)) {
      p.iframe.remove();
      pool.delete(key);
    }
  }
  const key = String(msg.key ?? "");
  if (!key || pool.has(key) || !canMove()) return;
  const origin = String(msg.sandboxOrigin ?? "");
  let url;
  try {
    url = new URL(String(msg.proxyUrl ?? ""));
  } catch {
    return;
  }
  // Never the page's own origin: a proxy there could reach into this page.
  if (url.origin !== origin || url.origin === location.origin || !/^https?:$/.test(url.protocol)) return;
  if (!holder) {
    holder = document.createElement("div");
    holder.className = "view-prestart";
    holder.setAttribute("aria-hidden", "true");
    // Off screen but laid out: a hidden frame would still load, this one also gets to render.
    holder.style.cssText = "position:fixed;left:-10000px;top:0;width:640px;height:120px;overflow:hidden;pointer-events:none";
    document.body.append(holder);
  }
  const iframe = document.createElement("iframe");
  iframe.className = "proxy";
  iframe.setAttribute("sandbox", FRAME_SANDBOX);
  if (typeof msg.permissions === "string" && msg.permissions.trim()) iframe.setAttribute("allow", msg.permissions);
  iframe.setAttribute("referrerpolicy", "no-referrer");
  iframe.setAttribute("tabindex", "-1");
  iframe.src = url.href;
  pool.set(key, { iframe, origin, url: url.href, ready: false });
  holder.append(iframe);
}

/** The prestarted proxy `key` at `proxyUrl`, moved into `parent` first: {iframe, ready}, or null. */
export function takePrestarted(key, proxyUrl, parent) {
  const p = pool.get(String(key ?? ""));
  if (!p || p.url !== normalised(proxyUrl) || !canMove() || !parent.isConnected) return null;
  pool.delete(String(key));
  p.iframe.removeAttribute("tabindex"); // the view's own frame is reachable from the keyboard
  try {
    parent.moveBefore(p.iframe, parent.firstChild);
  } catch {
    p.iframe.remove();
    return null;
  }
  return { iframe: p.iframe, ready: p.ready };
}

function normalised(href) {
  try {
    return new URL(String(href ?? "")).href;
  } catch {
    return "";
  }
}

function canMove() {
  return typeof Element.prototype.moveBefore === "function";
}
