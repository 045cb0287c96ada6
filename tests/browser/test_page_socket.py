"""The page's WebSocket as `serve` runs it: no per-message compression, even when the page offers it (as
Chromium does). Compression runs on the host's event loop: a 224 KB template took 5-60 ms to compress, every
tab waiting meanwhile, and the page's other frames are a few hundred bytes."""

from __future__ import annotations

from websockets.sync.client import connect


def test_the_page_socket_is_not_compressed_though_the_page_offers_it(start_host):
    host = start_host()
    # The client offers permessage-deflate, as a browser does.
    with connect(f"ws://127.0.0.1:{host.port}/ws", open_timeout=30, additional_headers={
            "Cookie": f"mah_session={host.token}", "Origin": host.origin}) as ws:
        assert ws.request is not None and "permessage-deflate" in ws.request.headers.get(
            "Sec-WebSocket-Extensions", "")
        assert ws.response is not None
        assert ws.response.headers.get("Sec-WebSocket-Extensions") is None, ws.response.headers
        ws.send('{"type": "hello"}')
        assert '"type":"welcome"' in str(ws.recv(timeout=30)).replace(" ", "")
