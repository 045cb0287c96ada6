// First in every view's document. WebRTC is outside every CSP directive Chromium enforces: ICE
// (STUN over UDP, TURN over TCP) would carry a view's data to any address it names. Views get no
// peer connections: the constructors are removed from the view's realm, and from the realm of
// every same-origin frame it creates, before the frame's creator gets it back (an empty frame
// fires its load event while it is being inserted).
(() => {
  "use strict";
  const NAMES = ["RTCPeerConnection", "webkitRTCPeerConnection", "RTCDataChannel", "RTCIceTransport",
    "RTCDtlsTransport", "RTCSctpTransport", "RTCRtpSender", "RTCRtpReceiver", "RTCRtpTransceiver"];
  function guard(win) {
    try {
      for (const name of NAMES) {
        if (Object.getOwnPropertyDescriptor(win, name)?.configurable === false) continue;
        Object.defineProperty(win, name, { value: undefined, writable: false, configurable: false });
      }
      win.addEventListener("load", (event) => {
        const target = event.target;
        if (target && typeof target === "object" && "contentWindow" in target && target.contentWindow) {
          guard(target.contentWindow);
        }
      }, true);
    } catch {
      // A cross-origin frame: it is not the view's realm, and its own document is checked by CSP.
    }
  }
  guard(window);
})();
