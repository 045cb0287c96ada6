// The tool picker: a dialog with a form generated from the tool's inputSchema, a "JSON"
// toggle to edit the raw arguments, and submit → `call` to the host.

import { el, element, prettyJSON, trapTab } from "./dom.js";
import { buildObjectFields, FieldError } from "./fields.js";

/** @type {import("./socket.js").SendFrame} */
let send = () => false;
/** @type {HTMLElement | null} */
let overlay = null; // backdrop + dialog, built once
/** @type {HTMLElement} */
let panel; // built with the overlay, and read only once it is
/** @type {HTMLElement | null} */
let returnFocus = null;
/** @type {{server: string, tool: string, schema: Record<string, any>, fields: any, json: boolean, submitArgs: SubmitArgs | null} | null} */
let state = null; // the tool shown, while the picker is open

/** @typedef {(args: Record<string, any>) => boolean} SubmitArgs */

/** @param {import("./socket.js").SendFrame} sendFn */
export function initForm(sendFn) {
  send = sendFn;
}

// A plain overlay rather than a native modal <dialog>: a modal dialog makes the rest of
// the page inert, and a consent question arriving meanwhile must stay answerable.
/** @returns {HTMLElement} the backdrop */
function ensureOverlay() {
  if (overlay) return overlay;
  panel = el("div", { class: "picker", "data-testid": "picker", role: "dialog", "aria-modal": "true", "aria-labelledby": "picker-title" });
  const backdrop = el("div", { class: "picker-backdrop", hidden: true }, panel);
  backdrop.addEventListener("mousedown", (e) => { if (e.target === backdrop) closePicker(); });
  panel.addEventListener("keydown", (e) => {
    if (e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation();
      closePicker();
    } else if (e.key === "Tab") trapTab(e, panel);
  });
  document.body.append(backdrop);
  overlay = backdrop;
  return backdrop;
}

export function pickerOpen() {
  return !!overlay && !overlay.hidden;
}

export function closePicker() {
  if (!overlay || overlay.hidden) return; // not open
  overlay.hidden = true;
  panel.replaceChildren();
  state = null;
  if (returnFocus && returnFocus.isConnected) returnFocus.focus();
}

/** Open the picker for one tool: {server, tool: {name, title, description, inputSchema}}. `submit`, when
 *  given, sends the arguments instead of a `call` frame (a view's own tool); it returns whether it was sent.
 *  @param {SubmitArgs | null} [submitArgs]
 */
export function openToolForm(server, tool, submitArgs = null) {
  const backdrop = ensureOverlay();
  if (!pickerOpen()) returnFocus = /** @type {HTMLElement | null} */ (document.activeElement);
  const schema = tool.inputSchema && typeof tool.inputSchema === "object" ? tool.inputSchema : { type: "object" };
  state = { server, tool: tool.name, schema, fields: null, json: false, submitArgs };

  const body = el("div", { class: "picker-body" });
  const error = el("div", { class: "form-error", "data-testid": "picker-error", role: "alert", hidden: true });
  const toggle = el("button", {
    type: "button", class: "btn btn-ghost btn-small", "data-testid": "picker-json-toggle", "aria-pressed": "false",
    onclick: () => toggleJSON(body, toggle, error),
  }, "{ } JSON");
  const form = el("form", { class: "picker-form", "data-testid": "picker-form" },
    el("header", { class: "picker-head" },
      el("div", {},
        el("h2", { id: "picker-title" }, tool.title || tool.name),
        el("div", { class: "picker-sub" }, el("span", { class: "server-chip" }, server), " · ", el("code", {}, tool.name)),
      ),
      el("button", { type: "button", class: "icon-btn", "aria-label": "Close", title: "Close (Esc)", onclick: closePicker }, "×"),
    ),
    tool.description ? el("p", { class: "picker-desc" }, tool.description) : null,
    body,
    error,
    el("footer", { class: "picker-foot" },
      toggle,
      el("span", { class: "spacer" }),
      el("button", { type: "button", class: "btn btn-ghost", onclick: closePicker }, "Cancel"),
      el("button", { type: "submit", class: "btn btn-primary", "data-testid": "picker-submit" }, "Run tool"),
    ),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    submit(form, error);
  });

  showFields(body, undefined);
  panel.replaceChildren(form);
  backdrop.hidden = false;
  const first = /** @type {HTMLElement | null} */ (body.querySelector("input, select, textarea"));
  (first || element("[data-testid=picker-submit]", panel)).focus();
}

function showFields(body, values) {
  if (!state) return; // the picker is open: it has a tool
  state.fields = buildObjectFields(state.schema, values);
  body.replaceChildren(
    state.fields.names.length ? state.fields.node : el("p", { class: "muted" }, "This tool takes no arguments."),
  );
}

function showJSON(body, value) {
  const area = el("textarea", { class: "input code json-args", "data-testid": "picker-json", rows: 10, spellcheck: "false", "aria-label": "Arguments as JSON" });
  area.value = prettyJSON(value);
  body.replaceChildren(area);
  area.focus();
}

function toggleJSON(body, toggle, error) {
  if (!state) return; // the picker is open: it has a tool
  hideError(error);
  try {
    if (!state.json) {
      showJSON(body, state.fields.read());
      state.json = true;
    } else {
      const value = parseJSONArgs(body);
      const { names } = state.fields;
      const unknown = Object.keys(value).filter((k) => !names.includes(k));
      if (unknown.length) {
        // The form can only show schema properties; switching would silently drop these.
        showError(error, `Not in the schema, so the form can't show them: ${unknown.join(", ")}. Stay in JSON to keep them.`);
        return;
      }
      showFields(body, value);
      state.json = false;
    }
  } catch (err) {
    reportFieldError(err, error);
    return;
  }
  toggle.setAttribute("aria-pressed", String(state.json));
  toggle.classList.toggle("active", state.json);
}

function parseJSONArgs(body) {
  const area = body.querySelector("[data-testid=picker-json]");
  let value;
  try {
    value = area.value.trim() === "" ? {} : JSON.parse(area.value);
  } catch (err) {
    throw new FieldError(`Arguments are not valid JSON: ${/** @type {SyntaxError} */ (err).message}`, area);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new FieldError("Arguments must be a JSON object, like {\"name\": \"value\"}.", area);
  }
  return value;
}

function submit(form, error) {
  if (!state) return; // the picker is open: it has a tool
  hideError(error);
  let args;
  try {
    if (state.json) args = parseJSONArgs(form);
    else {
      if (!form.reportValidity()) return;
      args = state.fields.read();
    }
  } catch (err) {
    reportFieldError(err, error);
    return;
  }
  const ok = state.submitArgs ? state.submitArgs(args) : send({ type: "call", server: state.server, tool: state.tool, arguments: args });
  if (!ok) {
    showError(error, "Not connected to the host. The call was not sent; try again when the connection is back.");
    return;
  }
  closePicker();
}

function reportFieldError(err, error) {
  if (!(err instanceof FieldError)) throw err;
  showError(error, err.message);
  if (err.input) {
    err.input.setCustomValidity(err.message);
    err.input.reportValidity();
    err.input.focus();
    err.input.addEventListener("input", () => err.input.setCustomValidity(""), { once: true });
  }
}

function showError(error, text) {
  error.textContent = text;
  error.hidden = false;
}

function hideError(error) {
  error.hidden = true;
  error.textContent = "";
}
