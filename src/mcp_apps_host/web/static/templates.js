// Templates this page was given, by sha256. The host sends a template's HTML to the page once per
// connection; a later view of the same template gets its sandbox-resource-ready without it, and
// the copy from here goes in. The host still decides each mount (trust, pinning, audit).

const RESOURCE_READY = "ui/notifications/sandbox-resource-ready";
const held = new Map(); // sha256 -> html, for as long as the page lives (the host's side does the same)

/**
 * Host → page `template-ahead`: a view the person may open soon; kept until a view of it mounts.
 * @param {import("./frames").TemplateAheadFrame} msg
 */
export function templateAhead(msg) {
  if (typeof msg.sha256 === "string" && typeof msg.html === "string") held.set(msg.sha256, msg.html);
}

/** `message` for the proxy of a view of template `sha`: the HTML kept or put back in. */
export function withTemplate(sha, message) {
  if (!message || message.method !== RESOURCE_READY || !sha) return message;
  const params = message.params && typeof message.params === "object" ? message.params : {};
  if (typeof params.html === "string") {
    held.set(sha, params.html);
    return message;
  }
  const html = held.get(sha);
  return typeof html === "string" ? { ...message, params: { ...params, html } } : message;
}
