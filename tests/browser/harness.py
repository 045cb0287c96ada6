"""Helpers for the browser tests: host and npm peer processes, page helpers, a sample PDF.

The fixtures that wrap these live in conftest.py; test modules import helpers from here.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from playwright.sync_api import FrameLocator, Locator, Page

REPO = Path(__file__).resolve().parents[2]
PEERS_BIN = REPO / "tests" / "peers" / "node_modules" / ".bin"
CHROMIUM = os.environ.get("MAH_CHROMIUM", "/usr/bin/chromium")
# Playwright cannot download its own browsers here; these flags keep Debian's Chromium
# from reaching for the (closed) network at start.
CHROMIUM_ARGS = [
    # Playwright turns storage partitioning off, and without it Chromium denies third-party
    # frames their storage, which no browser a person uses does: restate Playwright's list of
    # disabled features without ThirdPartyStoragePartitioning, so views keep their localStorage.
    "--disable-features=AvoidUnnecessaryBeforeUnloadCheckSync,DestroyProfileOnBrowserClose,HttpsUpgrades,"
    "HttpsFirstBalancedModeAutoEnable,LensOverlay,MediaRouter,PaintHolding,AvoidCorsURLLoaderRestartOnRedirect,"
    "OptimizationHints,NetworkTimeServiceQuerying",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
HOST_START_TIMEOUT = 120.0
PEER_START_TIMEOUT = 60.0
RUNNING_RE = re.compile(r"is running at (\S+)")

# Live hosts and pages, so a failing test's report can show what they said (conftest hook).
LIVE_HOSTS: list[Host] = []
LIVE_PAGES: list[Page] = []


class HarnessError(RuntimeError):
    """A process the tests need did not start."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tail(text: str, lines: int = 80) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _start_time(pid: int) -> str | None:
    """The process's start time (in clock ticks since boot): with the pid, it names one process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _descendants(pid: int) -> list[tuple[int, str | None]]:
    """Child processes, recursively (Linux /proc), so that children which made their own
    session (the host starts stdio servers that way) are found too."""
    found: list[tuple[int, str | None]] = []
    stack = [pid]
    while stack:
        parent = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children") as f:
                    kids = [int(k) for k in f.read().split()]
            except OSError:
                continue
            found += [(k, _start_time(k)) for k in kids]
            stack += kids
    return found


def kill_group(proc: subprocess.Popen[bytes], grace: float = 8.0) -> None:
    """End the process, its process group and every descendant. SIGTERM first, so the host
    can close its servers itself; whatever is left after ``grace`` seconds is killed."""
    descendants = _descendants(proc.pid) if proc.poll() is None else []
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    # Children may outlive a leader that has exited.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for pid, started in descendants:
        if started is None or _start_time(pid) != started:
            continue  # gone, and the pid may belong to someone else by now
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if proc.poll() is None:
        proc.wait(timeout=30)


# --------------------------------------------------------------------------- host


@dataclass
class Host:
    url: str
    origin: str
    port: int
    sandbox_port: int
    token: str
    log_path: Path
    proc: subprocess.Popen[bytes] = field(repr=False)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def close(self) -> None:
        kill_group(self.proc)
        if self in LIVE_HOSTS:
            LIVE_HOSTS.remove(self)


class PortTaken(Exception):
    """A host or an npm peer could not bind the port it was given."""


class HostLauncher:
    """``launcher(servers=None, config=None, extra_args=())`` starts ``mcp_apps_host serve``
    on free ports with a fresh token and database, and waits for its access URL.

    ``same_as=host`` (a host already closed) starts it again on that host's ports, token and
    database instead: the page and sandbox origins are the same, so a browser context keeps
    its cookies and each view origin's localStorage across the restart."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.hosts: list[Host] = []

    def __call__(
        self,
        servers: dict[str, str] | None = None,
        config: str | os.PathLike[str] | None = None,
        extra_args: Sequence[str] = (),
        same_as: Host | None = None,
    ) -> Host:
        if same_as is not None:
            return self._start_again(same_as, servers, config, extra_args)
        # A free port may be taken by another process (another test worker) before the host binds it:
        # that host says so and exits, and is started again on other ports.
        for _ in range(4):
            try:
                return self._start(servers, config, extra_args)
            except PortTaken:
                continue
        return self._start(servers, config, extra_args)

    def _start_again(
        self,
        earlier: Host,
        servers: dict[str, str] | None,
        config: str | os.PathLike[str] | None,
        extra_args: Sequence[str],
    ) -> Host:
        if earlier.proc.poll() is None:
            raise HarnessError(f"the host on port {earlier.port} still runs: close it before starting it again")
        workdir = earlier.log_path.parent
        try:
            return self._start(servers, config, extra_args, workdir=workdir,
                               ports=(earlier.port, earlier.sandbox_port), token=earlier.token)
        except PortTaken as exc:
            # No other ports will do here: the point is the same origins.
            raise HarnessError(f"cannot start the host again on ports {earlier.port} and "
                               f"{earlier.sandbox_port}: one is taken\n{tail(str(exc))}") from None

    def _start(
        self,
        servers: dict[str, str] | None,
        config: str | os.PathLike[str] | None,
        extra_args: Sequence[str],
        *,
        workdir: Path | None = None,
        ports: tuple[int, int] | None = None,
        token: str | None = None,
    ) -> Host:
        if workdir is None:
            workdir = self.base / f"host{len(self.hosts)}"
            workdir.mkdir(parents=True, exist_ok=True)
        if ports is None:
            port = free_port()
            sandbox_port = free_port()
            while sandbox_port == port:
                sandbox_port = free_port()
        else:
            port, sandbox_port = ports
        token = token or secrets.token_urlsafe(16)
        cmd = [
            sys.executable, "-m", "mcp_apps_host", "serve", "--no-open",
            "--port", str(port), "--sandbox-port", str(sandbox_port),
            f"--token={token}", "--db", f"sqlite:///{workdir}/host.db",  # "=": a token may start with "-"
        ]
        for name, spec in (servers or {}).items():
            cmd += ["--server", f"{name}={spec}"]
        if config is not None:
            cmd += ["--config", os.fspath(config)]
        cmd += [arg.replace("{port}", str(port)) for arg in extra_args]  # "{port}": the console's port

        # A host started again in the same directory writes a log of its own.
        earlier = sum(h.log_path.parent == workdir for h in self.hosts)
        log_path = workdir / (f"host-{earlier}.log" if earlier else "host.log")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=workdir,
                env=dict(os.environ, PYTHONUNBUFFERED="1"), start_new_session=True,
            )
        host = Host(url="", origin="", port=port, sandbox_port=sandbox_port, token=token,
                    log_path=log_path, proc=proc)
        self.hosts.append(host)
        LIVE_HOSTS.append(host)

        deadline = time.monotonic() + HOST_START_TIMEOUT
        while not (m := RUNNING_RE.search(host.log_text())):
            if proc.poll() is not None:
                if "mcp-apps-host: cannot listen on" in host.log_text():
                    raise PortTaken(host.log_text())
                raise HarnessError(
                    f"host exited with code {proc.returncode} before it was running:\n"
                    f"{shlex.join(cmd)}\n{tail(host.log_text())}"
                )
            if time.monotonic() > deadline:
                raise HarnessError(
                    f"host printed no 'is running at' line within {HOST_START_TIMEOUT:.0f} s:\n"
                    f"{tail(host.log_text())}"
                )
            time.sleep(0.1)
        host.url = m.group(1)
        parts = urlsplit(host.url)
        host.origin = f"{parts.scheme}://{parts.netloc}"
        if parts.port != port or f"token={token}" not in host.url:
            raise HarnessError(f"access URL {host.url} is not on port {port} with the given token")
        return host

    def close(self) -> None:
        for host in self.hosts:
            host.close()


# --------------------------------------------------------------------------- page helpers


def attach_console(page: Page) -> list[str]:
    """Collect console messages (of every frame, views included) and page errors into
    ``page.console_lines``."""
    lines: list[str] = []

    def on_console(msg: Any) -> None:
        where = (msg.location or {}).get("url", "")
        text = msg.text if len(msg.text) <= 600 else msg.text[:600] + "…"
        lines.append(f"[{msg.type}] {text}" + (f"  ({where[:80]})" if where else ""))

    page.on("console", on_console)
    page.on("pageerror", lambda err: lines.append(f"[pageerror] {str(err)[:600]}"))
    page.console_lines = lines  # type: ignore[attr-defined]
    return lines


def server_list(page: Page, host: Host) -> list[dict[str, Any]]:
    resp = page.request.get(f"{host.origin}/api/servers")
    if not resp.ok:
        raise AssertionError(f"GET /api/servers -> {resp.status}: {resp.text()[:500]}")
    data = resp.json()
    return data["servers"] if isinstance(data, dict) else data


def wait_servers(page: Page, host: Host, names: Sequence[str] | None = None,
                 timeout: float = 60.0) -> list[dict[str, Any]]:
    """Wait until the named servers (default: all) report status ``ready``."""
    deadline = time.monotonic() + timeout
    while True:
        servers = server_list(page, host)
        by_name = {s["name"]: s for s in servers}
        wanted = list(names) if names is not None else list(by_name)
        missing = [n for n in wanted if n not in by_name]
        pending = [n for n in wanted if n in by_name and by_name[n].get("status") != "ready"]
        if not missing and not pending:
            return servers
        if time.monotonic() > deadline:
            detail = {n: (by_name[n].get("status"), by_name[n].get("error")) for n in pending}
            raise AssertionError(f"servers not ready after {timeout:.0f} s: missing={missing} pending={detail}")
        time.sleep(0.2)


def call_tool(page: Page, server: str, tool: str, args: dict[str, Any] | None = None) -> None:
    """Type ``/call SERVER TOOL {json}`` in the chat box and submit it with Enter."""
    text = f"/call {server} {tool}"
    if args is not None:
        text += " " + json.dumps(args)
    box = page.locator("[data-testid=chat-input]")
    box.fill(text)
    box.press("Enter")


def start_new_conversation(page: Page, timeout: float = 15_000) -> None:
    """Switch the page to a fresh, empty conversation. A new page opens the host's most
    recent conversation and replays it, live views included; tests that share one host
    start from a blank page with this."""
    current = page.locator("[data-testid=conversation-item].current")
    current.wait_for(state="attached", timeout=timeout)
    old = current.get_attribute("data-id")
    page.locator("[data-testid=conversation-new]").click(timeout=timeout)
    page.wait_for_function(
        """old => {
            const c = document.querySelector("[data-testid=conversation-item].current");
            return c !== null && c.dataset.id !== old;
        }""",
        arg=old, timeout=timeout,
    )


def answer_consent(page: Page, kind: str, allow: bool = True, expect_text: str | None = None,
                   timeout: float = 15_000) -> str:
    """Wait for the consent dialog of ``kind``, check it mentions ``expect_text``, answer it
    and wait until it is gone. Returns the dialog's text."""
    dialog = page.locator(f"[data-testid=consent][data-kind={kind}]")
    dialog.wait_for(state="visible", timeout=timeout)
    handle = dialog.element_handle(timeout=timeout)
    text = dialog.inner_text()
    if expect_text is not None and expect_text not in text:
        raise AssertionError(f"the {kind} consent dialog does not mention {expect_text!r}: {text!r}")
    # The buttons are enabled only after a short delay (against click-jacking); click waits.
    button = "[data-testid=consent-allow]" if allow else "[data-testid=consent-deny]"
    dialog.locator(button).click(timeout=timeout)
    handle.wait_for_element_state("hidden", timeout=timeout)
    return text


def view_locator(page: Page, server: str, tool: str) -> Locator:
    """The newest view of SERVER/TOOL."""
    return page.locator(f'[data-testid=view][data-server="{server}"][data-tool="{tool}"]').last


def wait_view(page: Page, server: str, tool: str, state: str = "ready",
              timeout: float = 30_000) -> Locator:
    """Wait (``timeout`` in ms) for the newest view of SERVER/TOOL to reach ``state``.
    A view that settles in another final state fails at once, with its text."""
    view = view_locator(page, server, tool)
    view.wait_for(state="attached", timeout=timeout)
    deadline = time.monotonic() + timeout / 1000
    while True:
        seen = view.get_attribute("data-state")
        if seen == state:
            return view
        # error and closed are final; ready may still turn into error or closed.
        if seen in ("error", "closed") or (seen == "ready" and state not in ("error", "closed")):
            raise AssertionError(
                f"view {server}/{tool} is {seen!r}, expected {state!r}: {view.inner_text()[:1000]!r}"
            )
        if time.monotonic() > deadline:
            raise AssertionError(
                f"view {server}/{tool} still {seen!r} after {timeout / 1000:.0f} s, expected {state!r}: "
                f"{view.inner_text()[:1000]!r}"
            )
        time.sleep(0.1)


# A click whose point has another process's frame under it when the events are delivered (the layout moved after
# Playwright's checks: a view taking its size, the conversation following its end) goes to that frame; Playwright
# watches for the events in the page's document only, and when none comes there it reports the click done.
_HEAR_NEXT_CLICK = """target => {
  window.__testClickHeard = false;
  document.addEventListener("click", (e) => { window.__testClickHeard = target.contains(e.target); },
                            {capture: true, once: true});
}"""


def click_in_page(target: Locator, tries: int = 5) -> None:
    """Click ``target`` and make sure the page heard the click on it, clicking again when it went elsewhere."""
    for _ in range(tries):
        target.evaluate(_HEAR_NEXT_CLICK)
        target.click()
        if target.page.evaluate("() => window.__testClickHeard === true"):
            return
    raise AssertionError(f"{tries} clicks on {target} never reached it in the page")


def open_inspector(view: Locator) -> Locator:
    """Open the view's inspector; its panel."""
    toggle = view.locator("[data-testid=view-inspect]")
    click_in_page(toggle)
    if toggle.get_attribute("aria-expanded") != "true":  # set by the click's handler, within the click
        raise AssertionError(f"the inspector did not open: {view.inner_text()[:500]!r}")
    return view.locator("[data-testid=inspector]")


def view_frame(view: Locator) -> FrameLocator:
    """The app: view container -> sandbox proxy iframe -> inner app iframe."""
    return view.frame_locator("iframe.proxy").frame_locator("iframe")


# --------------------------------------------------------------------------- npm peers


def peer_bin(bin_name: str) -> str:
    path = PEERS_BIN / bin_name
    if not path.exists():
        raise HarnessError(f"{path} is missing: run scripts/test (npm ci in tests/peers)")
    return str(path)


def _wait_port(port: int, proc: subprocess.Popen[bytes], log_path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise HarnessError(
                f"peer exited with code {proc.returncode}:\n{tail(log_path.read_text(errors='replace'))}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise HarnessError(f"peer did not listen on {port} within {timeout:.0f} s")
        time.sleep(0.1)


class PeerLauncher:
    """``launcher(bin_name, *args)`` starts an npm peer over Streamable HTTP and returns its
    MCP URL. The peers take only ``PORT`` (no host setting or flag) and listen on every
    interface; the tests always reach them at 127.0.0.1."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.procs: list[subprocess.Popen[bytes]] = []

    def __call__(self, bin_name: str, *args: str) -> str:
        # A free port may be taken by another process (another test worker) before the peer binds it:
        # that peer exits saying so, and another is started on another port.
        for _ in range(4):
            try:
                return self._start(bin_name, args)
            except PortTaken:
                continue
        return self._start(bin_name, args)

    def _start(self, bin_name: str, args: Sequence[str]) -> str:
        exe = peer_bin(bin_name)
        port = free_port()
        log_path = self.base / f"{bin_name}-{port}.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [exe, *args], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=dict(os.environ, PORT=str(port)), cwd=self.base, start_new_session=True,
            )
        self.procs.append(proc)
        try:
            _wait_port(port, proc, log_path, PEER_START_TIMEOUT)
        except HarnessError as exc:
            if "EADDRINUSE" in log_path.read_text(errors="replace"):
                raise PortTaken(str(exc)) from exc
            raise
        return f"http://127.0.0.1:{port}/mcp"

    def close(self) -> None:
        for proc in self.procs:
            kill_group(proc, grace=3.0)


def peer_stdio_command(bin_name: str, *args: str) -> str:
    """The command line for ``--server NAME=...`` that runs an npm peer over stdio."""
    return shlex.join([peer_bin(bin_name), "--stdio", *args])


# --------------------------------------------------------------------------- sample PDF

SAMPLE_PDF_PAGES = 3


def sample_pdf_page_text(n: int) -> str:
    return f"mcp-apps-host sample page {n}"


def write_sample_pdf(path: Path, pages: int = SAMPLE_PDF_PAGES) -> Path:
    """A small valid PDF: PAGES pages of A5, each with two lines of Helvetica text, and a
    cross-reference table whose byte offsets are computed as the file is written."""
    page_ids = [4 + 2 * i for i in range(pages)]  # each page is followed by its content stream
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{' '.join(f'{p} 0 R' for p in page_ids)}] /Count {pages} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    for i, page_id in enumerate(page_ids):
        stream = (
            f"BT /F1 18 Tf 40 500 Td ({sample_pdf_page_text(i + 1)}) Tj ET\n"
            f"BT /F1 12 Tf 40 470 Td (Page {i + 1} of {pages}) Tj ET\n"
        ).encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 420 595] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {page_id + 1} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"endstream")

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")  # binary comment: marks the file as binary
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref_at = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref_at)
    path.write_bytes(bytes(out))
    return path


def write_form_pdf(path: Path) -> Path:
    """A one-page PDF with a form: a text field "name" (labelled "Your name") and a checkbox "agree"
    ("I agree"), the kind of file server-pdf asks the person to fill in (elicitation) when it opens it."""
    check = b"q 0 g BT /ZaDb 14 Tf 3 4 Td (4) Tj ET Q"
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R /AcroForm << /Fields [5 0 R 6 0 R] /NeedAppearances true "
        b"/DA (/Helv 0 Tf 0 g) /DR << /Font << /Helv 3 0 R /ZaDb 10 0 R >> >> >> >>",
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 420 595] /Resources << /Font << /F1 3 0 R >> >> "
        b"/Contents 7 0 R /Annots [5 0 R 6 0 R] >>",
        b"<< /Type /Annot /Subtype /Widget /FT /Tx /T (name) /TU (Your name) /Rect [40 480 300 500] /P 4 0 R "
        b"/F 4 /DA (/Helv 12 Tf 0 g) /V () >>",
        b"<< /Type /Annot /Subtype /Widget /FT /Btn /T (agree) /TU (I agree) /Rect [40 440 60 460] /P 4 0 R "
        b"/F 4 /V /Off /AS /Off /MK << /CA (4) >> /AP << /N << /Yes 8 0 R /Off 9 0 R >> >> >>",
        b"<< /Length 44 >>\nstream\nBT /F1 18 Tf 40 540 Td (A form to fill) Tj ET\nendstream",
        b"<< /Type /XObject /Subtype /Form /BBox [0 0 20 20] /Resources << /Font << /ZaDb 10 0 R >> >> "
        b"/Length %d >>\nstream\n" % len(check) + check + b"\nendstream",
        b"<< /Type /XObject /Subtype /Form /BBox [0 0 20 20] /Length 0 >>\nstream\n\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /ZapfDingbats >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref_at = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref_at)
    path.write_bytes(bytes(out))
    return path


def burst_answered(page: Page, least: int = 0) -> int:
    """The most pings a burst view of the recorder counts as answered (its title), or ``least``: each
    frame's title read once, as it may change between two reads."""
    titles = [frame.title() for frame in page.frames]
    return max([int(t) for t in titles if t.isdigit()] or [least])
