// The one WebSocket between this tab and the Python host: JSON frames with a `type`,
// a handler table, and reconnection with capped, jittered exponential backoff.

/** @typedef {import("./frames").PageFrame} PageFrame */
/** @typedef {import("./frames").HostFrame} HostFrame */
/** @typedef {import("./frames").HelloFrame} HelloFrame */
/**
 * The host → page frame of that `type`.
 * @template {HostFrame["type"]} T
 * @typedef {Extract<HostFrame, {type: T}>} HostFrameOf
 */
/**
 * Sends one frame to the host; false when it could not be sent. Every module that talks to the host
 * is given one, so the frames it builds are checked against the protocol.
 * @typedef {(frame: PageFrame) => boolean} SendFrame
 */
/** @typedef {{state: "connecting" | "open"} | {state: "closed", code: number, retryAt: number}} SocketStatus */

const MIN_DELAY_MS = 500;
const MAX_DELAY_MS = 15000;
const MOVE_DELAY_MS = 50;

export class HostSocket {
  /**
   * @param {string | URL} url  ws(s)://…/ws
   * @param {{onOpen?: () => HelloFrame, onStatus?: (s: SocketStatus) => void}} hooks
   *   onOpen returns the `hello` frame, which must be the first frame on every connection.
   */
  constructor(url, hooks = {}) {
    this.url = url;
    this.hooks = hooks;
    /** @type {Map<string, ((msg: any) => void)[]>} */
    this.handlers = new Map();
    /** @type {WebSocket | null} */
    this.ws = null;
    this.delay = MIN_DELAY_MS;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.timer = undefined;
    this.retryAt = 0;
  }

  /**
   * Run `fn` for every host frame of that `type`.
   * @template {HostFrame["type"]} T
   * @param {T} type
   * @param {(msg: HostFrameOf<T>) => void} fn
   */
  on(type, fn) {
    const fns = this.handlers.get(type);
    if (fns) fns.push(fn);
    else this.handlers.set(type, [fn]);
    return this;
  }

  get open() {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN;
  }

  /** Send one frame. Returns false when it could not be sent; nothing is queued, because
   *  the host's state for this tab starts afresh on each connection. */
  /** @param {PageFrame} obj */
  send(obj) {
    if (!this.ws || !this.open) return false;
    let text;
    try {
      text = JSON.stringify(obj);
    } catch (err) {
      // A view can post values JSON cannot carry (cycles, BigInt); drop just that frame.
      console.warn("frame not serialisable, dropped", err);
      return false;
    }
    this.ws.send(text);
    return true;
  }

  connect() {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.ws) return;
    this.status({ state: "connecting" });
    const ws = new WebSocket(this.url);
    this.ws = ws;
    ws.addEventListener("open", () => {
      this.delay = MIN_DELAY_MS;
      if (this.hooks.onOpen) this.send(this.hooks.onOpen());
      this.status({ state: "open" });
    });
    ws.addEventListener("message", (event) => this.dispatch(event.data));
    ws.addEventListener("close", (event) => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.scheduleRetry(event.code);
    });
    // "error" is always followed by "close"; retrying is handled there.
  }

  /** The host is stopping and closes this connection soon: once it has, reconnect at once (the next
   *  process behind the address takes the tab), backing off again only if that fails. */
  reconnectSoon() {
    this.delay = MOVE_DELAY_MS;
  }

  /** Skip the wait and try again now (the banner's button). */
  retryNow() {
    if (this.ws) return;
    this.delay = MIN_DELAY_MS;
    this.connect();
  }

  /** @param {number} code */
  scheduleRetry(code) {
    const wait = this.delay * (0.8 + Math.random() * 0.4);
    this.delay = Math.min(this.delay * 2, MAX_DELAY_MS);
    this.retryAt = Date.now() + wait;
    this.status({ state: "closed", code, retryAt: this.retryAt });
    this.timer = setTimeout(() => this.connect(), wait);
  }

  /** @param {string} raw */
  dispatch(raw) {
    let msg;
    try {
      msg = JSON.parse(raw);
    } catch {
      console.warn("non-JSON frame from host ignored");
      return;
    }
    if (msg === null || typeof msg !== "object" || typeof msg.type !== "string") return;
    const fns = this.handlers.get(msg.type);
    if (!fns) {
      console.debug("unhandled host frame", msg.type);
      return;
    }
    for (const fn of fns) {
      // One renderer failing must not stop the others or the socket.
      try {
        fn(msg);
      } catch (err) {
        console.error(`handler for ${msg.type} failed`, err);
      }
    }
  }

  /** @param {SocketStatus} s */
  status(s) {
    if (this.hooks.onStatus) this.hooks.onStatus(s);
  }
}
