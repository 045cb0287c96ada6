// Host → page `download`: the person allowed a view to save a file. The bytes become a
// Blob saved under the host's sanitised name; the page never opens or renders it.

import { el } from "./dom.js";

/** @param {import("./frames").DownloadFrame} msg */
export function download(msg) {
  if (typeof msg.url === "string") {
    // A link the view named: the browser fetches it in a new tab, as if the person had opened it.
    let url;
    try {
      url = new URL(msg.url);
    } catch {
      return;
    }
    if (url.protocol === "http:" || url.protocol === "https:") window.open(url.href, "_blank", "noopener,noreferrer");
    return;
  }
  let bytes;
  if (typeof msg.text === "string") {
    bytes = new TextEncoder().encode(msg.text);
  } else if (typeof msg.blob === "string") {
    try {
      bytes = Uint8Array.from(atob(msg.blob), (c) => c.charCodeAt(0));
    } catch {
      console.warn("download: blob is not base64; nothing saved");
      return;
    }
  } else {
    return;
  }
  // Always octet-stream: the declared type is the server's word, and a file the browser
  // thinks it can show might be opened instead of saved.
  const url = URL.createObjectURL(new Blob([bytes], { type: "application/octet-stream" }));
  const link = el("a", { href: url, download: String(msg.filename || "download"), hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
