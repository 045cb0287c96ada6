// The tools a view offers of its own (host → page `view-tools`), listed on the view. The host
// offers them to the model under `modelName`; a person calls one with the tool picker's form,
// sent as `app-tool-call`. Everything shown is the view's own word, so it is rendered as text.

import { el, element } from "./dom.js";
import { openToolForm } from "./form.js";
import * as record from "./viewrecord.js";

/** @type {import("./socket.js").SendFrame} */
let send = () => false;

/** @param {import("./socket.js").SendFrame} sendFn */
export function initViewTools(sendFn) {
  send = sendFn;
}

/** @param {import("./frames").ViewToolsFrame} msg */
export function viewTools(msg) {
  const v = record.viewOf(msg.view);
  if (!v) return;
  const tools = (Array.isArray(msg.tools) ? msg.tools : []).filter((t) => t && typeof t.name === "string");
  if (v.toolsBox) v.toolsBox.remove();
  record.setToolsBox(v, null);
  if (!tools.length) return;
  const list = el("ul", { class: "view-tool-list" }, tools.map((tool) => el("li", {},
    el("button", {
      type: "button", class: "tool view-tool", "data-testid": "view-tool", "data-tool": tool.name,
      title: tool.description ? String(tool.description) : tool.name,
      onclick: () => openToolForm(v.server, tool, (args) => send({ type: "app-tool-call", view: v.handle, tool: tool.name, arguments: args })),
    },
    el("span", { class: "tool-name" }, tool.title ? String(tool.title) : tool.name),
    tool.readOnly ? el("span", { class: "badge badge-muted", title: "Annotated read-only (readOnlyHint)" }, "read-only") : null,
    ),
    tool.modelName ? el("code", { class: "view-tool-model-name", title: "The name the model knows this tool by" }, String(tool.modelName)) : null,
  )));
  const box = el("details", { class: "view-tools", "data-testid": "view-tools" },
    el("summary", { title: "Tools this view offers of its own: the model may call them while the view is open" },
      "Tools of this view ", el("span", { class: "count" }, String(tools.length))),
    list);
  record.setToolsBox(v, box);
  element(".view-foot", v.container).prepend(box);
}
