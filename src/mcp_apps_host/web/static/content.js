// A CallToolResult → DOM nodes. Text stays text (textContent, never HTML); images are
// shown only from data: URLs built here from base64, so a result cannot make the page
// fetch anything; everything else is described, not loaded.

import { el, jsonDetails } from "./dom.js";

// A MIME type we are willing to put in a data: URL (no parameters, no odd characters).
const IMAGE_MIME = /^image\/(png|jpeg|gif|webp|avif|bmp|svg\+xml)$/i; // <img> never runs SVG scripts
const BASE64 = /^[A-Za-z0-9+/\s]*={0,2}\s*$/;

export function renderContent(result, isError) {
  const nodes = [];
  const blocks = Array.isArray(result.content) ? result.content : [];
  for (const block of blocks) nodes.push(renderBlock(block, isError));
  if (result.structuredContent !== undefined) {
    nodes.push(jsonDetails("Structured content", result.structuredContent, { testid: "structured-content" }));
  }
  if (!nodes.length) nodes.push(el("div", { class: "muted" }, "No content."));
  return nodes;
}

function renderBlock(block, isError) {
  if (!block || typeof block !== "object") return el("div", { class: "block muted" }, "(unreadable content block)");
  switch (block.type) {
    case "text":
      return text(String(block.text ?? ""), isError);
    case "image":
      return image(block);
    case "audio":
      return el("div", { class: "block block-meta" }, `Audio (${String(block.mimeType ?? "unknown type")}) — not played here.`);
    case "resource_link":
      return el("div", { class: "block block-meta", "data-testid": "content-link" },
        "Resource: ", el("code", {}, String(block.uri ?? "")),
        block.name ? ` — ${String(block.name)}` : "",
        block.description ? el("div", { class: "muted" }, String(block.description)) : null);
    case "resource":
      return embedded(block.resource || {});
    default:
      return jsonDetails(`Unknown content type “${String(block.type)}”`, block);
  }
}

// Long results are folded to a preview so one call cannot push the conversation away.
const FOLD_CHARS = 1500;
const FOLD_LINES = 14;

function text(value, isError) {
  const node = el("div", { class: `block block-text${isError ? " is-error" : ""}`, "data-testid": "content-text" }, value);
  if (value.length <= FOLD_CHARS && value.split("\n").length <= FOLD_LINES) return node;
  node.classList.add("folded");
  const lines = value.split("\n").length;
  const more = lines > 1 ? `Show all (${lines} lines)` : `Show all (${value.length.toLocaleString()} characters)`;
  const toggle = el("button", {
    type: "button", class: "btn btn-small btn-ghost fold-toggle", "aria-expanded": "false",
    onclick: () => {
      const open = node.classList.toggle("folded") === false;
      toggle.setAttribute("aria-expanded", String(open));
      toggle.textContent = open ? "Show less" : more;
    },
  }, more);
  return el("div", { class: "block fold" }, node, toggle);
}

function image(block) {
  const mime = String(block.mimeType ?? "");
  const data = typeof block.data === "string" ? block.data : "";
  if (!IMAGE_MIME.test(mime) || !data || !BASE64.test(data)) {
    return el("div", { class: "block block-meta" }, `Image (${mime || "unknown type"}) — not shown: not a base64 image.`);
  }
  return el("figure", { class: "block block-image" },
    el("img", { src: `data:${mime};base64,${data.replace(/\s+/g, "")}`, alt: "Image from the tool result", "data-testid": "content-image", loading: "lazy", decoding: "async" }));
}

function embedded(resource) {
  const uri = String(resource.uri ?? "");
  if (typeof resource.text === "string") {
    return el("div", { class: "block block-resource" },
      el("div", { class: "block-caption" }, "Resource ", el("code", {}, uri), resource.mimeType ? ` (${String(resource.mimeType)})` : ""),
      el("pre", { class: "code" }, resource.text));
  }
  return el("div", { class: "block block-meta" }, "Resource ", el("code", {}, uri), ` (${String(resource.mimeType ?? "binary")}) — binary, not shown.`);
}
