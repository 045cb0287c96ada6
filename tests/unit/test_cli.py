"""`mcp-apps-host serve`: what it refuses before anything starts, and what the flags mean."""

from __future__ import annotations

import asyncio
import gc
import json
import socket
from pathlib import Path

import pytest

from mcp_apps_host.cli import YOUNG_COLLECTION_EVERY, _build, _console, _parser, config_from_args, main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["serve", "--no-open", *argv])
    return code, capsys.readouterr().err


def test_flags_win_over_the_config_file(tmp_path: Path):
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"mcpServers": {"a": {"command": "x", "apps": False}, "b": {"url": "http://h/mcp"}},
                                  "model": {"spec": "openai:from-file", "maxSteps": 3}}))
    args = _parser().parse_args(["serve", "--config", str(config), "--server", "c=y --stdio", "--model", "none",
                                 "--db", "sqlite:///x.db", "--sandbox-origin", "http://{label}.sb.localhost:9"])
    got = config_from_args(args)
    assert [s.name for s in got.servers] == ["c", "a", "b"]
    assert got.model.spec == "none" and got.model.max_steps == 3 and got.database_url == "sqlite:///x.db"
    assert got.sandbox_origin == "http://{label}.sb.localhost:9"
    # A console shows every server's views unless its entry says no.
    assert [got.apps.for_server(s) for s in got.servers] == [True, False, True]


@pytest.mark.parametrize("argv, words", [
    (["--port", "9100", "--sandbox-port", "9100"], "--port and --sandbox-port must differ"),
    (["--workers", "2", "--db", "sqlite:///{tmp}/h.db"], "--workers 2 needs a PostgreSQL --db"),
    (["--workers", "0"], "--workers must be at least 1"),
    (["--sandbox-origin", "http://sandbox.localhost:9"], "must be an origin whose host starts with '{label}.'"),
    (["--origin", "console.example.com"], "--origin: 'console.example.com' is not an origin"),
    (["--db", "postgresql+psycopg://u:hunter2@127.0.0.1:1/x"], "cannot open the database"),
    (["--model", "gpt"], "--model must be none, openai:MODEL or anthropic:MODEL"),
    (["--server", "bad name=x"], "server name 'bad name'"),
])
def test_a_wrong_flag_is_named_and_nothing_starts(capsys, tmp_path: Path, argv: list[str], words: str):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code, err = run(capsys, "--db", f"sqlite:///{tmp_path}/h.db", *argv)
    assert code == 2 and words in err and "hunter2" not in err


def test_a_port_in_use_is_reported(capsys, tmp_path: Path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = run(capsys, "--port", str(port), "--db", f"sqlite:///{tmp_path}/h.db")
    assert code == 1 and f"cannot listen on 127.0.0.1:{port}" in err


def test_a_started_console_freezes_what_it_loaded_out_of_the_collectors_full_passes(tmp_path: Path):
    """Under load a full collection walked every object loaded at start-up, the event loop stopped for
    100 ms and more, and freed none of them."""
    args = _parser().parse_args(["serve", "--no-open", "--db", f"sqlite:///{tmp_path}/h.db"])
    console = _console(args, config_from_args(args), "t")
    ready: list[tuple[int, int]] = []
    _host, app = _build(console, lambda: ready.append((gc.get_freeze_count(), gc.get_threshold()[0])))

    async def start_and_stop() -> None:  # the ASGI lifespan, as uvicorn runs it
        asked = asyncio.Queue[dict[str, str]]()
        asked.put_nowait({"type": "lifespan.startup"})

        async def send(message: dict[str, str]) -> None:
            assert not message["type"].endswith(".failed"), message
            if message["type"] == "lifespan.startup.complete":
                asked.put_nowait({"type": "lifespan.shutdown"})

        await app({"type": "lifespan", "asgi": {"version": "3.0"}}, asked.get, send)  # type: ignore[arg-type]

    gc.unfreeze()
    thresholds = gc.get_threshold()
    try:
        asyncio.run(start_and_stop())
        assert len(ready) == 1 and ready[0][0] > 0, "nothing was frozen when the console was ready"
        # Most of what a view's call makes is gone by the next young collection: they run less often.
        assert ready[0][1] == YOUNG_COLLECTION_EVERY > thresholds[0], ready
    finally:
        gc.unfreeze()  # the test process goes on as it was
        gc.set_threshold(*thresholds)
