// The person is about to call a tool: the chat box took the focus, or the pointer reached a tool of the
// server list or the launcher. The host then boots again the views it had booted ahead that lapsed
// unused, so a page left open costs nothing while nobody uses it and is as quick as ever once someone
// does. When the page knows which tool (the pointer is on it, or the chat box reads `/call SERVER TOOL`)
// it says so, once per tool: the host sends that tool's template ahead, and its view mounts without it.

const QUIET_MS = 5000; // one intent per few seconds is enough: booting takes well under that
const CALL_LINE = /^\s*\/call\s+(\S+)\s+(\S+)/;

/** @param {import("./socket.js").SendFrame} send */
export function initIntent(send) {
  let last = -Infinity;
  const named = new Set(); // "server tool" already said by this page
  const intent = (server, tool) => {
    const now = performance.now();
    const key = server && tool ? `${server} ${tool}` : "";
    if (now - last < QUIET_MS && (!key || named.has(key))) return;
    last = now;
    if (key) named.add(key);
    send(key ? { type: "intent", server, tool } : { type: "intent" });
  };
  const input = /** @type {HTMLTextAreaElement} */ (document.querySelector("[data-testid=chat-input]"));
  input.addEventListener("focus", () => intent());
  input.addEventListener("input", () => {
    const line = CALL_LINE.exec(input.value);
    if (line) intent(line[1], line[2]);
  });
  document.addEventListener("pointerover", (e) => {
    const tool = e.target instanceof Element ? e.target.closest("[data-testid=tool], [data-testid=launcher-app]") : null;
    if (tool instanceof HTMLElement) intent(tool.dataset.server, tool.dataset.tool);
  });
}
