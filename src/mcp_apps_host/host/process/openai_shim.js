// window.openai for widgets written for the OpenAI Apps SDK (templates served as text/html+skybridge).
// The host puts this script first in the widget's own document. It is a view like any other:
// everything it does is an MCP Apps message to the host (ui/initialize, tools/call, ui/message,
// ui/open-link, ui/request-display-mode, ui/update-model-context), which the host checks, asks
// about and records exactly as it would for any view. It has no other way out of its frame.
"use strict";
(() => {
  if (window.openai) return;
  const PROTOCOL = "2026-01-26";
  const pending = new Map();
  let nextId = 0;

  const post = (message) => window.parent.postMessage(Object.assign({ jsonrpc: "2.0" }, message), "*");
  function send(method, params) {
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      post({ id, method, params });
    });
  }

  const openai = {
    theme: "light", locale: "en-US", displayMode: "inline", maxHeight: 800,
    userAgent: { device: { type: "desktop" }, capabilities: { hover: true, touch: false } },
    safeArea: { insets: { top: 0, right: 0, bottom: 0, left: 0 } },
    toolInput: {}, toolOutput: null, toolResponseMetadata: null, widgetState: null,
  };

  // The Apps SDK's hooks re-read the globals on this event.
  function setGlobals(changes) {
    Object.assign(openai, changes);
    window.dispatchEvent(new CustomEvent("openai:set_globals", { detail: { globals: changes } }));
  }

  function fromContext(ctx) {
    const out = {};
    if (!ctx || typeof ctx !== "object") return out;
    if (ctx.theme === "light" || ctx.theme === "dark") out.theme = ctx.theme;
    if (typeof ctx.locale === "string") out.locale = ctx.locale;
    if (typeof ctx.displayMode === "string") out.displayMode = ctx.displayMode;
    const dims = ctx.containerDimensions;
    if (dims && typeof dims === "object") {
      const h = typeof dims.height === "number" ? dims.height : dims.maxHeight;
      if (typeof h === "number") out.maxHeight = h;
    }
    const insets = ctx.safeAreaInsets;
    if (insets && typeof insets === "object") out.safeArea = { insets: Object.assign({}, insets) };
    if (typeof ctx.platform === "string" || ctx.deviceCapabilities) {
      const caps = ctx.deviceCapabilities || {};
      out.userAgent = {
        device: { type: ctx.platform === "mobile" ? "mobile" : "desktop" },
        capabilities: { hover: caps.hover !== false, touch: caps.touch === true },
      };
    }
    return out;
  }

  const ready = send("ui/initialize", {
    appInfo: { name: "openai-apps-sdk-widget", version: "1" },
    appCapabilities: { availableDisplayModes: ["inline", "fullscreen", "pip"] },
    protocolVersion: PROTOCOL,
  }).then((result) => {
    const ctx = (result && result.hostContext) || {};
    const state = ctx["openai/widgetState"];
    setGlobals(Object.assign(fromContext(ctx), state && typeof state === "object" ? { widgetState: state } : {}));
    post({ method: "ui/notifications/initialized" });
    watchSize();
  });
  // Nothing but the handshake may go out before the host has answered it.
  const request = (method, params) => ready.then(() => send(method, params));

  function watchSize() {
    let last = -1;
    const report = () => {
      const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
      if (height === last) return;
      last = height;
      post({ method: "ui/notifications/size-changed", params: { height } });
    };
    new ResizeObserver(report).observe(document.documentElement);
    report();
  }

  function textOf(result) {
    const blocks = result && Array.isArray(result.content) ? result.content : [];
    return blocks.filter((b) => b && b.type === "text").map((b) => String(b.text)).join("\n");
  }

  Object.assign(openai, {
    callTool: (name, args) => request("tools/call", { name: String(name), arguments: args || {} })
      .then((result) => Object.assign({}, result, { result: textOf(result) })),
    sendFollowUpMessage: ({ prompt } = {}) =>
      request("ui/message", { role: "user", content: [{ type: "text", text: String(prompt ?? "") }] }).then(() => undefined),
    openExternal: ({ href } = {}) => { request("ui/open-link", { url: String(href ?? "") }).catch(() => {}); },
    requestDisplayMode: ({ mode } = {}) => request("ui/request-display-mode", { mode }),
    setWidgetState: (state) => {
      if (state === null || typeof state !== "object" || Array.isArray(state)) {
        return Promise.reject(new TypeError("widget state must be a JSON object"));
      }
      setGlobals({ widgetState: state });
      return request("ui/update-model-context", { structuredContent: state }).then(() => undefined);
    },
  });
  Object.defineProperty(window, "openai", { value: openai, writable: false, configurable: false });

  window.addEventListener("message", (event) => {
    if (event.source !== window.parent) return;
    const m = event.data;
    if (!m || typeof m !== "object" || m.jsonrpc !== "2.0") return;
    if (m.id !== undefined && !m.method) {
      const waiting = pending.get(m.id);
      if (!waiting) return;
      pending.delete(m.id);
      if (m.error) waiting.reject(new Error(String(m.error.message || "the host refused")));
      else waiting.resolve(m.result);
      return;
    }
    const p = m.params || {};
    if (m.method === "ui/notifications/tool-input") setGlobals({ toolInput: p.arguments || {} });
    else if (m.method === "ui/notifications/tool-result") {
      setGlobals({ toolOutput: p.structuredContent ?? null, toolResponseMetadata: p._meta ?? null });
    } else if (m.method === "ui/notifications/host-context-changed") setGlobals(fromContext(p));
    else if (m.method === "ui/resource-teardown" && m.id !== undefined) post({ id: m.id, result: {} });
  });
})();
