// The sandbox proxy. It runs on the SANDBOX origin (never the host page's origin) inside
// /proxy/{handle}, whose Content-Security-Policy header the host built from the view's
// declared csp. It does three things and nothing else:
//   1. tells its parent it is ready,
//   2. renders the view's HTML, once, in an inner sandboxed iframe,
//   3. relays messages between the parent (host page) and the view without reading them,
//      except to keep the reserved ui/notifications/sandbox-* methods to itself.
// It originates no other message: it has no request ids of its own to invent.
"use strict";

(() => {
  const PROXY_READY = "ui/notifications/sandbox-proxy-ready";
  const RESOURCE_READY = "ui/notifications/sandbox-resource-ready";
  const RESERVED = "ui/notifications/sandbox-";

  // The only sandbox tokens a view may get. Top navigation, popups, modals and downloads
  // would let untrusted HTML act outside its frame, so they are never granted even if asked.
  const SANDBOX_TOKENS = new Set(["allow-scripts", "allow-same-origin", "allow-forms"]);
  const DEFAULT_SANDBOX = "allow-scripts allow-same-origin allow-forms";
  // Permission Policy features a view may be granted (the outer frame must grant them too).
  const FEATURES = new Set(["camera", "microphone", "geolocation", "clipboard-write"]);
  const PERMISSION_FEATURE = { camera: "camera", microphone: "microphone", geolocation: "geolocation", clipboardWrite: "clipboard-write" };

  // All four are set together when the view is rendered, and null until then.
  /** @type {string | null} */
  let parentOrigin = null; // learned from the resource-ready message
  /** @type {HTMLIFrameElement | null} */
  let inner = null; // the view's iframe
  /** @type {string | null} */
  let innerOrigin = null; // the origin the view's document must have
  /** @type {string | null} */
  let innerTarget = null; // targetOrigin for posting to the view

  function methodOf(data) {
    return data !== null && typeof data === "object" && typeof data.method === "string" ? data.method : "";
  }

  function sandboxFor(requested) {
    if (typeof requested !== "string") return DEFAULT_SANDBOX;
    const tokens = requested.trim().split(/\s+/).filter(Boolean);
    // All or nothing: a string with any token outside the set is not trusted in part.
    if (!tokens.length || !tokens.every((t) => SANDBOX_TOKENS.has(t))) return DEFAULT_SANDBOX;
    return [...new Set(tokens)].join(" ");
  }

  function allowFor(params) {
    const granted = [];
    if (typeof params.allow === "string") {
      // The host's own allow string: keep only bare names of features we know.
      for (const entry of params.allow.split(";")) {
        const name = entry.trim();
        if (FEATURES.has(name)) granted.push(name);
      }
    } else if (params.permissions && typeof params.permissions === "object") {
      // The spec's form: {camera: {}, clipboardWrite: {}, …}.
      for (const key of Object.keys(params.permissions)) {
        if (Object.hasOwn(PERMISSION_FEATURE, key)) granted.push(PERMISSION_FEATURE[key]);
      }
    }
    return [...new Set(granted)].join("; ");
  }

  function render(params, origin) {
    const sandbox = sandboxFor(params.sandbox);
    inner = document.createElement("iframe");
    // sandbox and allow take effect when the frame navigates, so set them before srcdoc.
    inner.setAttribute("sandbox", sandbox);
    const allow = allowFor(params);
    if (allow) inner.setAttribute("allow", allow);
    inner.setAttribute("title", typeof params.title === "string" && params.title ? params.title : "view");
    // A srcdoc document inherits this document's CSP header, so the view gets the policy
    // the host built; it also inherits this origin when allow-same-origin is granted,
    // and is an opaque "null" origin otherwise.
    if (sandbox.split(" ").includes("allow-same-origin")) {
      innerOrigin = location.origin;
      innerTarget = location.origin;
    } else {
      innerOrigin = "null";
      innerTarget = "*"; // an opaque origin cannot be named as a target
    }
    inner.srcdoc = typeof params.html === "string" ? params.html : "";
    parentOrigin = origin;
    document.body.append(inner);
    keepInPlace(inner.contentWindow);
  }

  // The view must stay the HTML the host vetted. The CSP's frame-src already stops it from
  // loading another page, but a blocked navigation still replaces the view with an error
  // page; cancelling the navigation keeps it working. Where the Navigation API is missing,
  // or the view has an opaque origin we cannot reach, the CSP alone still holds.
  function keepInPlace(win) {
    try {
      if (!win || !win.navigation) return;
      win.navigation.addEventListener("navigate", (event) => {
        // Our own srcdoc load is the one navigation this frame may make.
        if (event.destination.url === "about:srcdoc") return;
        if (event.cancelable) event.preventDefault();
      });
    } catch {
      // Cross-origin (no allow-same-origin): nothing to attach to.
    }
  }

  window.addEventListener("message", (event) => {
    const data = event.data;
    const method = methodOf(data);

    if (event.source === window.parent && event.source !== window) {
      if (parentOrigin === null) {
        // Before the view exists the only thing the parent can usefully send is the HTML.
        if (method !== RESOURCE_READY) return;
        // An opaque origin cannot be named as a targetOrigin, so we could never reply safely.
        if (event.origin === "null") return;
        const params = data.params && typeof data.params === "object" ? data.params : {};
        render(params, event.origin);
        return;
      }
      // From now on only the parent that gave us the HTML may talk to the view. Checking the
      // origin as well as the window matters because the parent window can be navigated.
      if (event.origin !== parentOrigin) return;
      // Reserved methods are for the proxy: a second resource-ready is ignored, not relayed.
      if (method.startsWith(RESERVED)) return;
      if (inner && inner.contentWindow && innerTarget !== null) inner.contentWindow.postMessage(data, innerTarget);
      return;
    }

    if (inner && parentOrigin !== null && event.source === inner.contentWindow && event.source !== null) {
      // The view's document is our srcdoc; a different origin means the inner frame was
      // navigated away from the HTML the host vetted, so it no longer speaks for the view.
      if (event.origin !== innerOrigin) return;
      // A view must not impersonate the proxy (e.g. claim to be ready again).
      if (method.startsWith(RESERVED)) return;
      // Only to the origin that sent the HTML: if the parent navigated, nothing leaks.
      window.parent.postMessage(data, parentOrigin);
    }
    // Anything else (other windows, other frames) is not part of this conversation.
  });

  // The proxy itself never navigates; a same-origin view could try to navigate it away.
  keepInPlace(window);

  // The proxy does not yet know the host's origin for sure, so "*" here; the message
  // carries nothing but readiness. Every later message to the parent names its origin.
  if (window.parent !== window) {
    window.parent.postMessage({ jsonrpc: "2.0", method: PROXY_READY, params: {} }, "*");
  }
})();
