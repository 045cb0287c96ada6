// Light/dark: the person's choice (remembered), the toggle button, and the host's
// style variables for the page itself (the same names views receive, so both match).

import { element } from "./dom.js";

const STORAGE_KEY = "mcp-apps-host.theme";
const root = document.documentElement;
// Only custom properties with plain names are applied; anything else is not a variable.
const VARIABLE_NAME = /^--[A-Za-z0-9-]+$/;

/** @type {"light" | "dark"} */
let current = "light";
let applied = new Set();

/** The theme to start with: remembered choice, else the system preference. */
export function initialTheme() {
  /** @type {string | null} */
  let saved = null;
  try {
    saved = localStorage.getItem(STORAGE_KEY);
  } catch {
    // Storage can be disabled; fall back to the system preference.
  }
  if (saved === "light" || saved === "dark") return saved;
  return matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

export function currentTheme() {
  return current;
}

/** Show `theme` now; light-dark() values in the variables resolve through color-scheme. */
export function setTheme(theme) {
  current = theme === "dark" ? "dark" : "light";
  root.dataset.theme = current;
  root.style.colorScheme = current;
  const button = /** @type {HTMLButtonElement | null} */ (document.querySelector("[data-testid=theme-toggle]"));
  if (button) {
    const other = current === "dark" ? "light" : "dark";
    button.setAttribute("aria-label", `Switch to ${other} theme`);
    button.title = `Switch to ${other} theme`;
  }
}

/**
 * Host → page `theme`: apply the host's variables and theme.
 * @param {import("./frames").HostThemeFrame} msg
 */
export function applyHostTheme(msg) {
  if (msg.theme === "light" || msg.theme === "dark") setTheme(msg.theme);
  const vars = msg.variables && typeof msg.variables === "object" ? msg.variables : {};
  const next = new Set();
  for (const [name, value] of Object.entries(vars)) {
    if (!VARIABLE_NAME.test(name) || typeof value !== "string") continue;
    root.style.setProperty(name, value);
    next.add(name);
  }
  // Variables the host stopped sending fall back to the stylesheet defaults.
  for (const name of applied) if (!next.has(name)) root.style.removeProperty(name);
  applied = next;
}

/**
 * Wire the toggle button; `onToggle(theme)` tells the host.
 * @param {(theme: "light" | "dark") => void} onToggle
 */
export function initThemeToggle(onToggle) {
  setTheme(initialTheme());
  element("[data-testid=theme-toggle]").addEventListener("click", () => {
    const next = current === "dark" ? "light" : "dark";
    setTheme(next);
    try {
      localStorage.setItem(STORAGE_KEY, next);
    } catch {
      // Not remembered across reloads; still applied for this session.
    }
    onToggle(next);
  });
}
