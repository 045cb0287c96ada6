// The person is about to call a tool: the chat box took the focus, or the pointer reached a tool of the
// server list. The host then boots again the views it had booted ahead that lapsed unused, so a page
// left open costs nothing while nobody uses it and is as quick as ever once someone does.

const QUIET_MS = 5000; // one intent per few seconds is enough: booting takes well under that

export function initIntent(send) {
  let last = -Infinity;
  const intent = () => {
    const now = performance.now();
    if (now - last < QUIET_MS) return;
    last = now;
    send({ type: "intent" });
  };
  document.querySelector("[data-testid=chat-input]").addEventListener("focus", intent);
  document.addEventListener("pointerover", (e) => {
    if (e.target instanceof Element && e.target.closest("[data-testid=tool]")) intent();
  });
}
