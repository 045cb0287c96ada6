"""What a view asked the host to do on its behalf: tool calls and resource reads on its own
server, sampling by the host's model, and files to save. Each runs as a task of the view's
driver and ends with the event that completes the view's request."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from mcp.shared.exceptions import MCPError

from ...chat.sampling import create_message
from ...errors import CallFailed, ServerUnavailable
from ...servers.connection import ProgressFn
from ...servers.watching import Updated
from ...store.outage import cannot_write, why
from ...store.view_host_states import ViewStateTooLarge
from ...values.protocol import RESOURCE_NOT_FOUND_CODES, SAMPLING_CREATE_MESSAGE, VIEW_STATE_GET, VIEW_STATE_SET
from ...views import effects as fx
from ...views import events as ev
from ...views.downloads import read_as_file
from ...views.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, REFUSED
from ..process.core import Host
from . import frames as f
from .audit import Auditor
from .page import Page
from .ports import ToolRunner

log = logging.getLogger("mcp_apps_host.views")


def download_frame(view: str, file: fx.Download) -> f.Download:
    """The page's frame that saves one file the person allowed ``view`` to save."""
    return f.Download(view=view, filename=file.filename, mime_type=file.mime_type, text=file.text, blob=file.blob,
                      url=file.url)


def read_error(server: str, uri: str, exc: Exception) -> tuple[int, str]:
    """The code and words for a failed resources/read (both spellings of "not found" read as one)."""
    code = exc.code if isinstance(exc, MCPError) else INTERNAL_ERROR
    if isinstance(exc, MCPError) and code in RESOURCE_NOT_FOUND_CODES and "not found" in exc.message.lower():
        return code, f"server {server!r} has no resource {uri} (not found, error {code})"
    return code, f"resources/read {uri} on server {server!r} failed: {exc}"


async def tool_call(tools: ToolRunner, server: str, call: fx.ProxyToolCall,
                    on_progress: ProgressFn) -> ev.RequestCompleted:
    try:
        result = await tools.for_view(server, call.name, call.arguments, on_progress)
    except CallFailed as exc:
        return ev.RequestCompleted(call.request_id, error=(exc.code, str(exc)))
    return ev.RequestCompleted(call.request_id, result=result)


async def resource_read(host: Host, server: str, read: fx.ProxyResourceRead) -> ev.RequestCompleted:
    try:
        result = await host.servers.get(server).read_resource(read.uri)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the view hears why
        return ev.RequestCompleted(read.request_id, error=read_error(server, read.uri, exc))
    return ev.RequestCompleted(read.request_id, result=result)


async def resource_list(host: Host, server: str, listing: fx.ProxyResourceList) -> ev.RequestCompleted:
    try:
        result = await host.servers.get(server).list_resources(listing.method, listing.cursor)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the view hears why
        code = exc.code if isinstance(exc, MCPError) else INTERNAL_ERROR
        why = f"{listing.method} on server {server!r} failed: {exc}"
        return ev.RequestCompleted(listing.request_id, error=(code, why))
    return ev.RequestCompleted(listing.request_id, result=result)


async def follow(host: Host, server: str, change: fx.ProxyResourceSubscribe, following: set[str],
                 updated: Updated) -> ev.RequestCompleted:
    """Subscribe the view to a resource of its server (``updated`` hears each update), or unsubscribe it.
    ``following`` is the view's own set of uris: a second subscribe to one uri changes nothing."""
    uri = change.uri
    if not change.subscribe:
        if uri in following:
            following.discard(uri)
            host.servers.get(server).unwatch_resource(uri, updated)
        return ev.RequestCompleted(change.request_id, result={})
    if uri in following:
        return ev.RequestCompleted(change.request_id, result={})
    following.add(uri)
    try:
        await host.servers.get(server).watch_resource(uri, updated)
    except asyncio.CancelledError:
        following.discard(uri)
        raise
    except Exception as exc:  # the view hears why
        following.discard(uri)
        code = exc.code if isinstance(exc, MCPError) else INTERNAL_ERROR
        return ev.RequestCompleted(change.request_id, error=(code, f"resources/subscribe {uri} on server "
                                                                   f"{server!r} failed: {exc}"))
    return ev.RequestCompleted(change.request_id, result={})


async def view_state(host: Host, instance: str | None, conversation: str | None,
                     keep: fx.KeepViewState) -> ev.RequestCompleted:
    """Read or replace the state the host keeps for the view instance ``instance`` of this person."""
    method = VIEW_STATE_SET if keep.write else VIEW_STATE_GET
    states = host.view_states
    if states is None or instance is None:  # a host without a database advertises no VIEW_STATE
        return ev.RequestCompleted(keep.request_id, error=(REFUSED, f"{method}: this view has no instance the "
                                                                    "host keeps state for"))
    try:
        if keep.write:
            await host.write(states.set, instance, keep.state, conversation, urgent=True)
            return ev.RequestCompleted(keep.request_id, result={})
        return ev.RequestCompleted(keep.request_id, result={"state": await asyncio.to_thread(states.get, instance)})
    except ViewStateTooLarge as exc:
        return ev.RequestCompleted(keep.request_id, error=(INVALID_PARAMS, f"{method}: {exc}"))
    except Exception as exc:  # the view hears why, in words that carry nothing of the database's own
        if not cannot_write(exc):
            log.exception("%s failed", method)
            return ev.RequestCompleted(keep.request_id, error=(INTERNAL_ERROR, f"{method}: the host failed"))
        return ev.RequestCompleted(keep.request_id, error=(INTERNAL_ERROR, f"{method}: the host's database "
                                                                           f"{why(exc)}; try again later"))


def unfollow_all(host: Host, server: str, following: set[str], updated: Updated) -> None:
    """The view is gone: it follows nothing any more."""
    for uri in sorted(following):
        with contextlib.suppress(ServerUnavailable):  # the server itself was removed: nothing to tell it
            host.servers.get(server).unwatch_resource(uri, updated)
    following.clear()


async def sample(host: Host, audit: Auditor, server: str, view: str, sample: fx.Sample) -> ev.RequestCompleted:
    assert host.agent is not None  # the session only asks when a model is configured
    try:
        result = await create_message(host.agent.adapter, sample.params)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the view hears why
        return ev.RequestCompleted(sample.request_id, error=(INTERNAL_ERROR, f"the model failed: {exc}"))
    audit("model->host", SAMPLING_CREATE_MESSAGE, server=server, view=view, msg_id=sample.request_id,
          payload=result)
    return ev.RequestCompleted(sample.request_id, result=result)


async def save_files(host: Host, page: Page, server: str, view: str, save: fx.SaveFiles) -> ev.RequestCompleted:
    """Read what must be read from the view's server, then save every file, or none."""
    files: list[fx.Download] = []
    for file in save.files:
        if file.resource_uri is None:
            files.append(file)
            continue
        try:
            result = await host.servers.get(server).read_resource(file.resource_uri)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the view hears which file failed
            code, text = read_error(server, file.resource_uri, exc)
            return ev.RequestCompleted(save.request_id, error=(code, f"ui/download-file: {text}"))
        read = read_as_file(file, result, host.limits.max_download_bytes)
        if isinstance(read, str):
            return ev.RequestCompleted(save.request_id, error=(INTERNAL_ERROR, f"ui/download-file: {read}"))
        files.append(read)
    for file in files:
        page.send(download_frame(view, file))
    return ev.RequestCompleted(save.request_id, result={})
