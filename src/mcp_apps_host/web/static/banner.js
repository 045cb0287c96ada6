// The "disconnected" banner, with a countdown to the next attempt and a retry button.

import { element } from "./dom.js";

const banner = () => /** @type {HTMLElement} */ (document.querySelector("[data-testid=banner]"));
/** @type {number | undefined} */
let countdown;
let everOpened = false;

// Close codes the host uses to refuse a connection (no session cookie, wrong Origin).
const REFUSED = new Set([1008, 4401, 4403]);

export function showBanner({ code, retryAt }, retryNow) {
  const b = banner();
  const text = element(".banner-text", b);
  const button = /** @type {HTMLButtonElement} */ (b.querySelector(".banner-retry"));
  button.onclick = retryNow;
  const reason = REFUSED.has(code)
    ? "The host refused this page. Open the address printed by the serve command (it carries the access token)."
    : everOpened ? "Disconnected from the host." : "Cannot reach the host.";
  const tick = () => {
    const s = Math.max(0, Math.ceil((retryAt - Date.now()) / 1000));
    text.textContent = `${reason} Retrying in ${s} s…`;
  };
  clearInterval(countdown);
  tick();
  countdown = setInterval(tick, 500);
  b.hidden = false;
  document.documentElement.classList.add("offline");
}

export function hideBanner() {
  everOpened = true;
  clearInterval(countdown);
  countdown = undefined;
  banner().hidden = true;
  document.documentElement.classList.remove("offline");
}
