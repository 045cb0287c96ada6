"""The view policy as Chromium enforces it, on loopback origins started by the test.

Origin A serves a page with ``build_view_csp`` as its HTTP header, declaring only
origin B in ``connectDomains``. The page (standing in for the sandbox proxy)
fetches B and an undeclared origin C, creates a ``srcdoc`` inner frame (standing
in for the view) that does the same, then has the inner frame navigate itself to C.
The same page served without the header is the control: there every probe of C
gets through, so the assertions on the CSP page can only pass because of the policy.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from harness import CHROMIUM, CHROMIUM_ARGS

from mcp_apps_host.policy.csp import ViewCsp, build_view_csp

pytestmark = pytest.mark.browser

INNER_SCRIPT = """
const B = %(b)s, C = %(c)s;
const violations = [];
document.addEventListener('securitypolicyviolation',
  (e) => violations.push(e.effectiveDirective + ' ' + e.blockedURI));
async function probe(url) {
  try { const r = await fetch(url); return 'ok:' + (await r.text()); }
  catch (e) { return 'error:' + e.name; }
}
addEventListener('message', (e) => {
  if (e.data === 'navigate-yourself') location.href = C + '/nav';
});
(async () => {
  const b = await probe(B + '/inner');
  const c = await probe(C + '/inner');
  let evalWorks;
  try { evalWorks = new Function('return 41 + 1')() === 42; } catch (e) { evalWorks = false; }
  // Violation events are queued as tasks; give them a moment to arrive.
  await new Promise((resolve) => setTimeout(resolve, 200));
  parent.postMessage({kind: 'inner', b, c, evalWorks, violations: violations.slice()}, '*');
})();
"""

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>proxy stand-in</title></head>
<body>
<script>
const B = %(b)s, C = %(c)s;
window.violations = [];
document.addEventListener('securitypolicyviolation',
  (e) => window.violations.push(e.effectiveDirective + ' ' + e.blockedURI));
window.messages = [];
addEventListener('message', (e) => window.messages.push(e.data));
async function probe(url) {
  try { const r = await fetch(url); return 'ok:' + (await r.text()); }
  catch (e) { return 'error:' + e.name; }
}
window.result = (async () => {
  const outer = {b: await probe(B + '/outer'), c: await probe(C + '/outer')};
  const innerDone = new Promise((resolve) => addEventListener('message', (e) => {
    if (e.data && e.data.kind === 'inner') resolve(e.data);
  }));
  const frame = document.createElement('iframe');
  frame.id = 'view';
  frame.setAttribute('sandbox', 'allow-scripts allow-same-origin');
  frame.srcdoc = '<!doctype html><script>' + %(inner)s + '<\\/script>';
  document.body.appendChild(frame);
  const inner = await innerDone;
  return {outer, inner, violations: window.violations.slice()};
})();
</script>
</body></html>
"""

NAV_PAGE = b"""<!doctype html><script>parent.postMessage('nav-arrived', '*');</script>"""


class _Server:
    def __init__(self, name: str, routes: dict[str, tuple[bytes, dict[str, str]]] | None = None) -> None:
        self.name = name
        self.hits: list[str] = []
        self.routes = routes if routes is not None else {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.hits.append(self.path)
                if self.path in server.routes:
                    body, headers = server.routes[self.path]
                    ctype = "text/html; charset=utf-8"
                elif self.path == "/nav":
                    body, headers, ctype = NAV_PAGE, {}, "text/html; charset=utf-8"
                else:
                    body, headers, ctype = server.name.encode(), {}, "text/plain"
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                # CORS open on B and C alike: only the policy can make C fail.
                self.send_header("Access-Control-Allow-Origin", "*")
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def origins() -> Iterator[dict[str, Any]]:
    b = _Server("B")
    c = _Server("C")
    a = _Server("A")
    inner = INNER_SCRIPT % {"b": json.dumps(b.origin), "c": json.dumps(c.origin)}
    page = (
        PAGE % {"b": json.dumps(b.origin), "c": json.dumps(c.origin), "inner": json.dumps(inner)}
    ).encode()
    policy = build_view_csp(ViewCsp(connect_domains=(b.origin,)))
    a.routes["/"] = (page, {"Content-Security-Policy": policy})
    a.routes["/control"] = (page, {})
    try:
        yield {"a": a, "b": b, "c": c, "policy": policy}
    finally:
        for server in (a, b, c):
            server.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        instance = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


def _run(browser: Any, origins: dict[str, Any], path: str) -> dict[str, Any]:
    a, c = origins["a"], origins["c"]
    c.hits.clear()
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(a.origin + path)
        result: dict[str, Any] = page.evaluate("() => window.result")
        c_hits_before_nav = list(c.hits)

        inner_frame = next(f for f in page.frames if f.parent_frame is page.main_frame)
        page.evaluate(
            "() => document.getElementById('view').contentWindow.postMessage('navigate-yourself', '*')"
        )
        # Either arrives at once, unless the machine is busy: the loop ends as soon as one is seen.
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline:
            messages = page.evaluate("() => window.messages")
            violations = page.evaluate("() => window.violations")
            if "nav-arrived" in messages or any(v.startswith("frame-src") for v in violations):
                break
            page.wait_for_timeout(50)
        page.wait_for_timeout(300)  # let a late navigation land, if one is coming
        result["after_nav"] = {
            "messages": page.evaluate("() => window.messages"),
            "violations": page.evaluate("() => window.violations"),
            "frame_url": inner_frame.url,
            "c_hits": list(c.hits),
        }
        result["c_hits_before_nav"] = c_hits_before_nav
        return result
    finally:
        context.close()


def test_control_without_policy_reaches_everything(browser: Any, origins: dict[str, Any]) -> None:
    result = _run(browser, origins, "/control")
    assert result["outer"] == {"b": "ok:B", "c": "ok:C"}
    assert (result["inner"]["b"], result["inner"]["c"]) == ("ok:B", "ok:C")
    assert "nav-arrived" in result["after_nav"]["messages"]
    assert result["after_nav"]["frame_url"] == origins["c"].origin + "/nav"
    assert "/nav" in result["after_nav"]["c_hits"]


def test_view_policy_is_enforced_in_chromium(browser: Any, origins: dict[str, Any]) -> None:
    c_origin = origins["c"].origin
    result = _run(browser, origins, "/")

    # The proxy document: the declared origin is reachable, the undeclared one is not,
    # and the request never leaves the browser.
    assert result["outer"]["b"] == "ok:B"
    assert result["outer"]["c"] == "error:TypeError"
    assert f"connect-src {c_origin}/outer" in result["violations"]

    # The srcdoc view inherits the proxy's header policy: same widening, same blocking.
    assert result["inner"]["b"] == "ok:B"
    assert result["inner"]["c"] == "error:TypeError"
    assert f"connect-src {c_origin}/inner" in result["inner"]["violations"]
    assert result["c_hits_before_nav"] == []
    # 'unsafe-eval' is in script-src on purpose (bundles that compile code at run time).
    assert result["inner"]["evalWorks"] is True

    # The view navigating itself is checked against the proxy's frame-src 'none': C is
    # never asked for the page and nothing from C runs. Chromium does not leave the view
    # in place, though: the frame commits its own error page (the view is gone), and
    # the violation is reported to the proxy document, with the origin only.
    after = result["after_nav"]
    assert "nav-arrived" not in after["messages"]
    assert after["c_hits"] == []
    assert after["frame_url"] in ("about:srcdoc", "chrome-error://chromewebdata/"), after
    assert f"frame-src {c_origin}" in after["violations"], after
