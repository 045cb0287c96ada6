// The page protocol's frames, printed by frames_typescript() in src/mcp_apps_host/host/tab/frames.py:
// do not edit; print it again when a frame changes (tests/code/test_page_protocol.py compares).
// The page's JavaScript names these in JSDoc, and tsc --checkJs holds it to them.

// ---- page → host (a field with `?` may be left out)

/** The first frame on every connection: what the page knows of its person and screen. */
export interface HelloFrame {
  type: "hello";
  conversation?: string | null;
  theme?: "light" | "dark" | null;
  locale?: string | null;
  timeZone?: string | null;
  userAgent?: string | null;
  touch?: boolean;
  hover?: boolean;
  viewportWidth?: number | null;
  reducedMotion?: boolean;
  contrast?: "no-preference" | "more" | "less" | "custom";
  forcedColors?: boolean;
}

/** A line from the chat box: `/call SERVER TOOL [JSON]`, `/servers`, `/help`, or a message to the model. */
export interface ChatFrame {
  type: "chat";
  text: string;
}

/** The tool picker's form was submitted. */
export interface CallFrame {
  type: "call";
  server: string;
  tool: string;
  arguments?: Record<string, any>;
}

/** Stop: cancel the model's turn and the tools it is running. */
export interface StopFrame {
  type: "stop";
}

/** The person cancelled a running call. */
export interface CancelFrame {
  type: "cancel";
  callId: number;
}

/**
 * The person is about to call a tool (the chat box took the focus, or the pointer reached a tool): the views
 * booted ahead that lapsed unused boot again. When the page knows which tool (the chat box reads `/call SERVER
 * TOOL`, or the pointer is on that tool), the tool's template goes to the page now (`template-ahead`), so its
 * view's mount does not carry it, and its view boots ahead when a call would render it without asking (accepted,
 * or never seen).
 */
export interface IntentFrame {
  type: "intent";
  server?: string | null;
  tool?: string | null;
}

/**
 * The person declined to sign in to a server (or closed the authorization window): the calls that waited for it
 * end with an error. ``state`` names the sign-in, so a late answer ends no newer one.
 */
export interface SignInDeclineFrame {
  type: "signin-decline";
  server: string;
  state: string;
}

/** Sign out of a server: the person's tokens for it are revoked and deleted. */
export interface SignOutFrame {
  type: "signout";
  server: string;
}

/**
 * A message the page received from that view's proxy frame (already checked: `event.source` is that proxy's
 * window and `event.origin` its sandbox origin). The host validates `message`.
 */
export interface ViewMessageFrame {
  type: "view-message";
  view: string;
  message: any;
}

/**
 * The person switched the view's mode (its header, Escape, the fullscreen close control): a request, answered by
 * `view-display-mode` when the view declared the mode.
 */
export interface ViewDisplayModeRequestFrame {
  type: "view-display-mode";
  view: string;
  mode: "inline" | "fullscreen" | "pip";
}

/**
 * The page placed the view in `mode` (after `view-display-mode`, or the person resized its pip window) and
 * measured the space its frame has: the view is told in `host-context-changed`.
 */
export interface ViewContainerFrame {
  type: "view-container";
  view: string;
  mode: "inline" | "fullscreen" | "pip";
  width: number;
  height: number;
}

/**
 * A view's container came into (or near) sight, or left it. Far out of sight, beyond `max_live_views`, the host
 * puts the view away (`view-parked`); a placeholder in sight is mounted again.
 */
export interface ViewVisibleFrame {
  type: "view-visible";
  view: string;
  visible: boolean;
}

/** The person pinned the view to the side panel (or unpinned it): answered by `view-pinned`. */
export interface ViewPinFrame {
  type: "view-pin";
  view: string;
  pinned: boolean;
}

/** The person closed the view: the host runs its teardown, then sends `view-remove`. */
export interface ViewCloseFrame {
  type: "view-close";
  view: string;
}

/**
 * The inspector's controls: change this view's host context live (each field set is sent to the view in
 * `ui/notifications/host-context-changed`; a display mode only if the view declared it).
 */
export interface ViewHostContextFrame {
  type: "view-host-context";
  view: string;
  theme?: "light" | "dark" | null;
  locale?: string | null;
  timeZone?: string | null;
  displayMode?: "inline" | "fullscreen" | "pip" | null;
  containerWidth?: number | null;
  containerHeight?: number | null;
  platform?: "web" | "desktop" | "mobile" | null;
  touch?: boolean | null;
  hover?: boolean | null;
}

/** The person opened a view's inspector: send its records so far, then each new one, and its host context. */
export interface InspectorOpenFrame {
  type: "inspector-open";
  view: string;
}

/** The inspector was closed: stop sending its records. */
export interface InspectorCloseFrame {
  type: "inspector-close";
  view: string;
}

/** The person toggled light/dark. */
export interface ThemeFrame {
  type: "theme";
  theme: "light" | "dark";
}

/** The person's display preferences changed while the page was open (CSS media features). */
export interface PreferencesFrame {
  type: "preferences";
  reducedMotion: boolean;
  contrast: "no-preference" | "more" | "less" | "custom";
  forcedColors: boolean;
}

/** The answer to a `consent` dialog; `remember` when "always allow" was ticked. */
export interface ConsentReplyFrame {
  type: "consent-reply";
  id: number;
  allow: boolean;
  remember?: boolean;
}

/** The answer to a `view-held` notice. */
export interface TrustReplyFrame {
  type: "trust-reply";
  callId: number;
  accept: boolean;
}

/** The person called one of a view's own tools from the list on the view. */
export interface AppToolCallFrame {
  type: "app-tool-call";
  view: string;
  tool: string;
  arguments?: Record<string, any>;
}

/** The answer to an `elicit` dialog: `content` holds the form's values when `action` is `accept`. */
export interface ElicitReplyFrame {
  type: "elicit-reply";
  id: number;
  action: "accept" | "decline" | "cancel";
  content?: Record<string, any> | null;
}

/** Start an empty conversation. */
export interface ConversationNewFrame {
  type: "conversation-new";
}

/** Show another conversation (it is replayed). */
export interface ConversationOpenFrame {
  type: "conversation-open";
  id: string;
}

/** Rename a conversation. */
export interface ConversationRenameFrame {
  type: "conversation-rename";
  id: string;
  title: string;
}

/** Delete a conversation (the newest other one opens if it was shown). */
export interface ConversationDeleteFrame {
  type: "conversation-delete";
  id: string;
}

// ---- host → page (every field is always sent; null where it does not apply)

/** The first frame of a connection: which host, and which of its worker processes, the tab talks to. */
export interface WelcomeFrame {
  type: "welcome";
  version: string;
  worker: number;
  admin: boolean;
}

/**
 * This host process is stopping (a deploy, a restart): the calls in flight finish, then the host closes the
 * connection and the page reconnects at once (to another process behind the same address) and opens the same
 * conversation again.
 */
export interface ReconnectFrame {
  type: "reconnect";
  reason: "stopping";
}

/**
 * The whole server list, sent on connect and on every change. Tools whose visibility lacks "model" are never
 * listed.
 */
export interface ServersFrame {
  type: "servers";
  servers: (Record<string, any>)[];
}

/** A line for the conversation (a command's answer, an error). */
export interface NoticeFrame {
  type: "notice";
  level: "info" | "error";
  text: string;
}

/** A message a view sent into the conversation (after the person allowed it), attributed to its server. */
export interface ChatMessageFrame {
  type: "chat-message";
  role: string;
  source: string;
  text: string;
  view: string | null;
}

/** A person's message, sent when a conversation is replayed. */
export interface UserMessageFrame {
  type: "user-message";
  text: string;
}

/** A model turn started or ended: show Stop while it runs. */
export interface TurnStateFrame {
  type: "turn-state";
  running: boolean;
}

/** Streamed model text: append to the current assistant bubble, as text. */
export interface AssistantDeltaFrame {
  type: "assistant-delta";
  turn: number;
  text: string;
}

/** The finished answer: `html` is sanitised on the server and replaces the bubble's content. */
export interface AssistantDoneFrame {
  type: "assistant-done";
  turn: number | null;
  text: string;
  html: string;
}

/**
 * A tool call began (`source`: person, view or model). `appToolOf` names the view when the tool is one the view
 * offers of its own (an app-provided tool) rather than one of its server's.
 */
export interface CallStartedFrame {
  type: "call-started";
  callId: number;
  server: string | null;
  tool: string | null;
  arguments: Record<string, any>;
  source: "person" | "view" | "model";
  appToolOf: string | null;
}

/** An MCP progress notification for that call. */
export interface CallProgressFrame {
  type: "call-progress";
  callId: number;
  progress: number;
  total: number | null;
  message: string | null;
}

/** The call returned a result (`isError` for a tool-level error). */
export interface CallFinishedFrame {
  type: "call-finished";
  callId: number;
  result: any;
  isError: boolean;
  durationMs: number;
}

/** The call ended without a result: a transport or protocol error, a refusal, or a cancellation. */
export interface CallFailedFrame {
  type: "call-failed";
  callId: number;
  error: string;
  durationMs: number;
  cancelled: boolean;
}

/**
 * The call's input and result went to the view already open, `view` (`mcp-apps-host/later-results`), not to a
 * view of its own: the card says so.
 */
export interface CallDeliveredFrame {
  type: "call-delivered";
  callId: number;
  view: string;
}

/**
 * Draw a view's container under that call and its proxy iframe at `proxyUrl` (null when the template could not
 * be loaded: a container without a frame, and a `view-state` error follows). With `replaces`, it takes that
 * view's place (whose frame is removed). With `parked`, only a placeholder, `height` px tall when given.
 */
export interface ViewMountFrame {
  type: "view-mount";
  view: string;
  callId: number | null;
  server: string;
  tool: string;
  proxyUrl: string | null;
  sandboxOrigin: string;
  prefersBorder: boolean;
  permissions: string;
  templateSha256: string | null;
  trust: string | null;
  warnings: string[];
  replaces: string | null;
  parked: boolean;
  height: number | null;
  pinned: boolean;
  prestarted: string | null;
  prebooted: boolean;
  csp: string | null;
  connectDomains: string[];
}

/**
 * Load a sandbox proxy at `proxyUrl` now, hidden, on `sandboxOrigin` with that `allow` attribute: a later `view-
 * mount` names it by `key` in `prestarted` and takes it (moved, not reloaded). Keys no longer listed in a frame
 * with `keep` go.
 */
export interface ViewPrestartFrame {
  type: "view-prestart";
  key: string;
  proxyUrl: string;
  sandboxOrigin: string;
  permissions: string;
  keep: string[];
}

/** A view booted ahead (`view-mount` with `prebooted`) is now this call's: show it under the call. */
export interface ViewAdoptFrame {
  type: "view-adopt";
  view: string;
  callId: number;
  server: string;
  tool: string;
  trust: string | null;
}

/** Post `message` to that view's proxy window, to its sandbox origin only. */
export interface ViewPostFrame {
  type: "view-post";
  view: string;
  message: Record<string, any>;
}

/** The view's state (`loading`, `ready`, `error`, `closed`); `error` says why it failed. */
export interface ViewStateFrame {
  type: "view-state";
  view: string;
  state: string;
  error: string | null;
}

/**
 * Resize the proxy iframe (already clamped to the host's limits). A width the view reported is the least it
 * needs; a `fixed` one is the host's own (the inspector's container size) and is the width.
 */
export interface ViewSizeFrame {
  type: "view-size";
  view: string;
  width: number | null;
  height: number | null;
  fixed: boolean;
}

/** A line for the view's log (its `notifications/message`, refusals, CSP violations). */
export interface ViewLogFrame {
  type: "view-log";
  view: string;
  level: string;
  text: string;
}

/** The teardown finished: remove the iframe, keep the container as closed. */
export interface ViewRemoveFrame {
  type: "view-remove";
  view: string;
}

/**
 * The view was torn down because it is far out of sight: remove its frame and keep a placeholder of the same
 * size. When the placeholder comes into sight (`view-visible`) a `view-mount` replaces it.
 */
export interface ViewParkedFrame {
  type: "view-parked";
  view: string;
}

/**
 * The view is pinned to the side panel (kept live across turns and conversations, and after a reload) or no
 * longer. The page draws it over its slot in the panel without moving its frame in the DOM.
 */
export interface ViewPinnedFrame {
  type: "view-pinned";
  view: string;
  pinned: boolean;
}

/** The view's latest model context (JSON text, truncated), shown as a chip on the view. */
export interface ViewContextFrame {
  type: "view-context";
  view: string;
  text: string;
}

/**
 * The tools a view offers of its own, as last listed (empty when none or the view is gone): drawn on the view,
 * each callable with `app-tool-call`. `modelName` is the name the model knows it by.
 */
export interface ViewToolsFrame {
  type: "view-tools";
  view: string;
  tools: (Record<string, any>)[];
}

/**
 * Show the view inline, fullscreen or pip; `available`: the modes the view declared (inline always), which its
 * header offers. Sent when the view is ready and on every change; the page answers a change with `view-
 * container`.
 */
export interface ViewDisplayModeFrame {
  type: "view-display-mode";
  view: string;
  mode: string;
  available: string[];
}

/**
 * The document of a view the person may open soon (see `intent`), kept by the page under its sha256: a view of
 * it then gets its `sandbox-resource-ready` without the HTML, and the page puts this in. Nothing runs it until a
 * call mounts its view.
 */
export interface TemplateAheadFrame {
  type: "template-ahead";
  sha256: string;
  html: string;
}

/**
 * New audit records of an inspected view, oldest first: the same rows as `GET /api/audit` (`seq`, `ts`,
 * `direction`, `method`, `id`, `decision`, `reason`, `payload` preview, `payload_sha256`, `payload_size`).
 */
export interface InspectorRecordsFrame {
  type: "inspector-records";
  view: string;
  records: (Record<string, any>)[];
}

/** The host context an inspected view has now (as its `ui/initialize` result would carry it). */
export interface InspectorContextFrame {
  type: "inspector-context";
  view: string;
  context: Record<string, any>;
}

/**
 * Ask the person; reply with `consent-reply`. `view` is the view asking (for `app-tool-call`: the view whose own
 * tool the model wants to call); null for the model's calls of server tools and for what a server asks itself.
 * The link fields are set for `open-link` only.
 */
export interface ConsentFrame {
  type: "consent";
  id: number;
  kind: "tool-call" | "app-tool-call" | "message" | "open-link" | "download" | "sampling" | "open-view";
  server: string;
  view: string | null;
  title: string;
  detail: string;
  subject: string;
  canRemember: boolean;
  display: string | null;
  href: string | null;
  differs: boolean | null;
  hostAscii: string | null;
  hostUnicode: string | null;
  warnings: string[] | null;
}

/** Withdraw an unanswered `consent` (its view closed): no reply is sent. */
export interface ConsentDismissFrame {
  type: "consent-dismiss";
  id: number;
}

/** The person allowed a link: open it in a new tab (`noopener,noreferrer`). */
export interface OpenLinkFrame {
  type: "open-link";
  url: string;
}

/**
 * The server now serves a different template for this URI: show both hashes in the call's place and reply with
 * `trust-reply`; nothing renders until accepted.
 */
export interface ViewHeldFrame {
  type: "view-held";
  callId: number;
  server: string;
  tool: string;
  uri: string | null;
  oldSha256: string | null;
  newSha256: string;
  oldSize: number | null;
  newSize: number;
  reason: string;
}

/**
 * The person allowed a download: save `text` or `blob` under `filename` (never opened); with `url` (a link the
 * view named), let the browser download it in a new tab.
 */
export interface DownloadFrame {
  type: "download";
  view: string;
  filename: string;
  mimeType: string;
  text: string | null;
  blob: string | null;
  url: string | null;
}

/**
 * A server asks the person for input (`elicitation/create`): a form built from `requestedSchema` (mode `form`)
 * or a link to open (mode `url`, with the link fields of `consent`). Reply with `elicit-reply`.
 */
export interface ElicitFrame {
  type: "elicit";
  id: number;
  server: string;
  mode: "form" | "url";
  message: string;
  requestedSchema: Record<string, any> | null;
  display: string | null;
  href: string | null;
  differs: boolean | null;
  hostAscii: string | null;
  hostUnicode: string | null;
  warnings: string[] | null;
}

/** The values of an `elicit` form do not fit the server's schema: show `error`; the dialog stays open. */
export interface ElicitInvalidFrame {
  type: "elicit-invalid";
  id: number;
  error: string;
}

/** Withdraw an unanswered `elicit` (the server gave up, or it timed out): no reply is sent. */
export interface ElicitDismissFrame {
  type: "elicit-dismiss";
  id: number;
}

/** The host's style variables for the page itself. */
export interface HostThemeFrame {
  type: "theme";
  theme: string;
  variables: Record<string, any>;
}

/** Clear the conversation column and every frame and dialog: a replay of that conversation follows. */
export interface ConversationResetFrame {
  type: "conversation-reset";
  id: string;
  title: string;
}

/** The conversation list (`updated` in Unix seconds). */
export interface ConversationsFrame {
  type: "conversations";
  current: string | null;
  items: (Record<string, any>)[];
}

export type PageFrame =
  | HelloFrame
  | ChatFrame
  | CallFrame
  | StopFrame
  | CancelFrame
  | IntentFrame
  | SignInDeclineFrame
  | SignOutFrame
  | ViewMessageFrame
  | ViewDisplayModeRequestFrame
  | ViewContainerFrame
  | ViewVisibleFrame
  | ViewPinFrame
  | ViewCloseFrame
  | ViewHostContextFrame
  | InspectorOpenFrame
  | InspectorCloseFrame
  | ThemeFrame
  | PreferencesFrame
  | ConsentReplyFrame
  | TrustReplyFrame
  | AppToolCallFrame
  | ElicitReplyFrame
  | ConversationNewFrame
  | ConversationOpenFrame
  | ConversationRenameFrame
  | ConversationDeleteFrame;

export type HostFrame =
  | WelcomeFrame
  | ReconnectFrame
  | ServersFrame
  | NoticeFrame
  | ChatMessageFrame
  | UserMessageFrame
  | TurnStateFrame
  | AssistantDeltaFrame
  | AssistantDoneFrame
  | CallStartedFrame
  | CallProgressFrame
  | CallFinishedFrame
  | CallFailedFrame
  | CallDeliveredFrame
  | ViewMountFrame
  | ViewPrestartFrame
  | ViewAdoptFrame
  | ViewPostFrame
  | ViewStateFrame
  | ViewSizeFrame
  | ViewLogFrame
  | ViewRemoveFrame
  | ViewParkedFrame
  | ViewPinnedFrame
  | ViewContextFrame
  | ViewToolsFrame
  | ViewDisplayModeFrame
  | TemplateAheadFrame
  | InspectorRecordsFrame
  | InspectorContextFrame
  | ConsentFrame
  | ConsentDismissFrame
  | OpenLinkFrame
  | ViewHeldFrame
  | DownloadFrame
  | ElicitFrame
  | ElicitInvalidFrame
  | ElicitDismissFrame
  | HostThemeFrame
  | ConversationResetFrame
  | ConversationsFrame;
