// Tiny view-side MCP Apps client (protocol 2026-01-26): JSON-RPC 2.0 over window.parent.postMessage.
// Usage: mcpApp.onToolResult(cb); ...; mcpApp.connect({ name: "my-view", version: "1.0.0" });
// A view may offer tools of its own: mcpApp.registerTool(name, {description, inputSchema}, handler)
// before connect (the host then lists them with tools/list and calls them with tools/call).
// connect({..., experimental: {"mcp-apps-host/later-results": {}}}) declares experimental capabilities.
(function () {
  "use strict";

  const PROTOCOL_VERSION = "2026-01-26";
  const root = document.documentElement;
  const pending = new Map(); // request id -> { resolve, reject }
  const handlers = {}; // notification method -> [callback]
  const latest = {}; // notification method -> last params, replayed to late subscribers
  let nextId = 0;
  let hostContext = {};
  let appInfo = { name: "mcp-app", version: "0.0.0" };
  const ownTools = new Map(); // name -> { definition, handler }
  let initialized = false;

  function post(message) {
    window.parent.postMessage(Object.assign({ jsonrpc: "2.0" }, message), "*");
  }

  function request(method, params) {
    const id = nextId++;
    return new Promise(function (resolve, reject) {
      pending.set(id, { resolve: resolve, reject: reject });
      post({ id: id, method: method, params: params });
    });
  }

  function notify(method, params) {
    post(params === undefined ? { method: method } : { method: method, params: params });
  }

  function subscribe(method, cb) {
    (handlers[method] = handlers[method] || []).push(cb);
    // Tool input/result may arrive before the view wires its handlers; don't lose them.
    if (method in latest) cb(latest[method]);
  }

  function emit(method, params) {
    latest[method] = params;
    (handlers[method] || []).forEach(function (cb) {
      try {
        cb(params);
      } catch (err) {
        console.error(err);
      }
    });
  }

  function applyHostContext(ctx) {
    const vars = (ctx.styles && ctx.styles.variables) || {};
    Object.keys(vars).forEach(function (name) {
      if (!name.startsWith("--")) return;
      if (vars[name] == null) root.style.removeProperty(name);
      else root.style.setProperty(name, String(vars[name]));
    });
    const fonts = ctx.styles && ctx.styles.css && ctx.styles.css.fonts;
    if (fonts) {
      let el = document.getElementById("mcp-host-fonts");
      if (!el) {
        el = document.createElement("style");
        el.id = "mcp-host-fonts";
        document.head.appendChild(el);
      }
      el.textContent = fonts;
    }
    if (ctx.theme === "light" || ctx.theme === "dark") {
      root.style.colorScheme = ctx.theme;
      root.setAttribute("data-theme", ctx.theme);
    }
  }

  // Report the content size; the html element's max-content height is what the content needs.
  let lastSize = null;
  let sizeTimer = null;
  function reportSize() {
    sizeTimer = null;
    const saved = root.style.height;
    root.style.height = "max-content";
    const height = Math.ceil(root.getBoundingClientRect().height);
    root.style.height = saved;
    const width = Math.ceil(root.getBoundingClientRect().width);
    if (lastSize && lastSize.width === width && lastSize.height === height) return;
    lastSize = { width: width, height: height };
    notify("ui/notifications/size-changed", lastSize);
  }
  function scheduleSize() {
    if (sizeTimer === null) sizeTimer = setTimeout(reportSize, 50);
  }

  function toolsChanged() {
    if (initialized) notify("notifications/tools/list_changed", {});
  }

  function callOwnTool(msg) {
    const params = msg.params || {};
    const tool = ownTools.get(params.name);
    if (!tool) {
      post({ id: msg.id, error: { code: -32602, message: "Unknown tool: " + params.name } });
      return;
    }
    Promise.resolve()
      .then(function () { return tool.handler(params.arguments || {}); })
      .then(function (result) {
        if (typeof result === "string") result = { content: [{ type: "text", text: result }] };
        post({ id: msg.id, result: result });
      }, function (err) {
        post({ id: msg.id, result: { content: [{ type: "text", text: String((err && err.message) || err) }], isError: true } });
      });
  }

  function handleRequest(msg) {
    let result;
    if (msg.method === "tools/call") {
      callOwnTool(msg);
      return;
    } else if (msg.method === "tools/list") {
      result = { tools: Array.from(ownTools.values()).map(function (t) { return t.definition; }) };
    } else if (msg.method === "ping") {
      result = {};
    } else if (msg.method === "ui/resource-teardown") {
      emit("ui/resource-teardown", msg.params || {});
      result = {};
    } else {
      post({ id: msg.id, error: { code: -32601, message: "Method not found: " + msg.method } });
      return;
    }
    post({ id: msg.id, result: result });
  }

  window.addEventListener("message", function (event) {
    if (event.source !== window.parent) return;
    const msg = event.data;
    if (!msg || typeof msg !== "object" || msg.jsonrpc !== "2.0") return;
    const hasId = typeof msg.id === "number" || typeof msg.id === "string";
    if (typeof msg.method === "string") {
      if (hasId) handleRequest(msg);
      else if (msg.method === "ui/notifications/host-context-changed") {
        // Partial update: merge top-level keys, then re-apply styles and theme.
        hostContext = Object.assign({}, hostContext, msg.params || {});
        applyHostContext(hostContext);
        emit(msg.method, hostContext);
      } else emit(msg.method, msg.params || {});
    } else if (hasId && pending.has(msg.id)) {
      const waiter = pending.get(msg.id);
      pending.delete(msg.id);
      if ("error" in msg) {
        const err = new Error((msg.error && msg.error.message) || "Request failed");
        err.code = msg.error && msg.error.code;
        err.data = msg.error && msg.error.data;
        waiter.reject(err);
      } else waiter.resolve(msg.result);
    }
  });

  let connecting = null;

  window.mcpApp = {
    /** Handshake with the host; resolves with the ui/initialize result. Call once, after wiring handlers. */
    connect: function (info) {
      if (connecting) return connecting;
      if (info) appInfo = { name: info.name, version: info.version };
      const capabilities = { availableDisplayModes: ["inline"] };
      if (ownTools.size) capabilities.tools = { listChanged: true };
      if (info && info.experimental && typeof info.experimental === "object") capabilities.experimental = info.experimental;
      connecting = request("ui/initialize", {
        appInfo: appInfo,
        appCapabilities: capabilities,
        protocolVersion: PROTOCOL_VERSION,
      }).then(function (res) {
        hostContext = (res && res.hostContext) || {};
        applyHostContext(hostContext);
        notify("ui/notifications/initialized");
        initialized = true;
        new ResizeObserver(scheduleSize).observe(root);
        reportSize();
        emit("ui/notifications/host-context-changed", hostContext);
        return res;
      });
      return connecting;
    },
    get hostContext() {
      return hostContext;
    },
    onToolInput: function (cb) {
      subscribe("ui/notifications/tool-input", function (p) {
        cb(p.arguments || {});
      });
    },
    onToolInputPartial: function (cb) {
      subscribe("ui/notifications/tool-input-partial", function (p) {
        cb(p.arguments || {});
      });
    },
    onToolResult: function (cb) {
      subscribe("ui/notifications/tool-result", cb);
    },
    onToolCancelled: function (cb) {
      subscribe("ui/notifications/tool-cancelled", cb);
    },
    onHostContextChanged: function (cb) {
      subscribe("ui/notifications/host-context-changed", cb);
    },
    onTeardown: function (cb) {
      subscribe("ui/resource-teardown", cb);
    },
    /** Any other notification from the host, e.g. notifications/resources/updated. */
    onNotification: function (method, cb) {
      subscribe(method, cb);
    },
    /** tools/call on this view's own server; resolves with the CallToolResult (check isError). */
    callTool: function (name, args) {
      return request("tools/call", { name: name, arguments: args || {} });
    },
    log: function (level, data) {
      notify("notifications/message", { level: level, logger: appInfo.name, data: data });
    },
    openLink: function (url) {
      return request("ui/open-link", { url: url });
    },
    /** ui/message: propose a message for the conversation (the host asks the person first). */
    sendMessage: function (text) {
      return request("ui/message", { role: "user", content: [{ type: "text", text: text }] });
    },
    /** ui/update-model-context: what the model should know about this view on its next turn. */
    updateModelContext: function (content, structuredContent) {
      const params = {};
      if (content !== undefined) params.content = content;
      if (structuredContent !== undefined) params.structuredContent = structuredContent;
      return request("ui/update-model-context", params);
    },
    /** Offer a tool of this view's own (before connect): handler(args) returns a CallToolResult or a string. */
    registerTool: function (name, definition, handler) {
      const def = Object.assign({ name: name, inputSchema: { type: "object", properties: {} } }, definition || {});
      ownTools.set(name, { definition: def, handler: handler });
      toolsChanged();
      return {
        remove: function () {
          if (ownTools.delete(name)) toolsChanged();
        },
      };
    },
    /** Any other request to the host. */
    request: request,
  };
})();
