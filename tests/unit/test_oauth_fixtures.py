"""The authorization fixtures, proven with the SDK's own OAuth client, headless: what the host's tests rely on."""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import anyio
import httpx
import pytest
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp.shared.exceptions import MCPError
from mcp.types import TextContent

from tests.fixtures.oauth import OAuthServer, start_oauth_server, start_url_elicit_server

pytestmark = pytest.mark.anyio
REDIRECT = "http://127.0.0.1:9/callback"  # never reached: the handler reads the code from the 302
httpx2_auth = Any  # the SDK's auth providers are httpx2.Auth
HTTP = httpx.Client(timeout=60)  # generous: the suite also runs on a busy two-core machine


class Storage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self, client_info: OAuthClientInformationFull | None = None) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info = client_info

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def approving(user: str) -> tuple[Callable[[str], Awaitable[None]], Callable[[], Awaitable[AuthorizationCodeResult]]]:
    """A redirect handler that has the authorization server approve at once as `user`, and the callback
    handler that hands the client what came back on the redirect."""
    answers: list[dict[str, str]] = []

    async def redirect(url: str) -> None:
        async with httpx.AsyncClient(timeout=60) as http:
            answer = await http.get(f"{url}&approve_as={user}")
        assert answer.status_code == 302, answer.text
        answers.append({k: v[0] for k, v in parse_qs(urlparse(answer.headers["location"]).query).items()})

    async def callback() -> AuthorizationCodeResult:
        found = answers.pop()
        if "code" not in found:
            raise RuntimeError(f"authorization refused: {found}")
        return AuthorizationCodeResult(code=found["code"], state=found.get("state"), iss=found.get("iss"))

    return redirect, callback


def oauth_client(server: OAuthServer, user: str = "bob", storage: Storage | None = None) -> OAuthClientProvider:
    redirect, callback = approving(user)
    return OAuthClientProvider(server.resource_url, OAuthClientMetadata(redirect_uris=[REDIRECT], client_name="t"),
                               storage or Storage(), redirect, callback)


async def call(url: str, auth: httpx2_auth | None, tool: str = "whoami") -> str:
    async with Client(streamable_http_client(url, http_client=create_mcp_http_client(auth=auth)),
                      mode="legacy") as client:
        result = await client.call_tool(tool, {})
    assert not result.is_error, result
    first = result.content[0]
    assert isinstance(first, TextContent)
    return first.text


def messages(exc: BaseException) -> str:
    """Every message in an exception and the groups and causes around it."""
    found = [f"{type(exc).__name__}: {exc}"]
    if isinstance(exc, BaseExceptionGroup):
        found += [messages(e) for e in exc.exceptions]
    if exc.__cause__ is not None:
        found.append(messages(exc.__cause__))
    return "\n".join(found)


@pytest.mark.parametrize("mode", ["embedded", "separate"])
async def test_authorization_code_flow_gives_the_approving_subject(mode: str):
    with start_oauth_server(mode) as server:  # type: ignore[arg-type]
        assert (urlparse(server.issuer).netloc == urlparse(server.resource_url).netloc) == (mode == "embedded")
        auth = oauth_client(server)
        assert await call(server.resource_url, auth) == "subject: bob"
        assert await call(server.resource_url, auth, "secret_chart") == "chart for bob"
        events = server.log()
        assert [e["event"] for e in events] == ["register", "authorize", "token"]
        assert events[1]["user"] == "bob" and events[1]["resource"] == server.resource_url
        assert all(token not in str(events) for kind in server.tokens().values() for token in kind)


async def test_the_chart_tool_is_an_app_tool_with_its_view():
    with start_oauth_server() as server:
        async with Client(streamable_http_client(server.resource_url,
                                                 http_client=create_mcp_http_client(auth=oauth_client(server))),
                          mode="legacy") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            uri = (tools["secret_chart"].meta or {})["ui"]["resourceUri"]
            view = (await client.read_resource(uri)).contents[0]
    assert uri == "ui://oauth/chart.html" and view.mime_type == "text/html;profile=mcp-app"
    assert 'id="out"' in getattr(view, "text", "")


async def test_a_refresh_rotates_and_the_old_refresh_token_is_refused():
    with start_oauth_server("separate") as server:
        storage = Storage()
        auth = oauth_client(server, storage=storage)
        assert await call(server.resource_url, auth) == "subject: bob"
        old = storage.tokens
        assert old is not None and old.refresh_token in server.tokens()["refresh"]
        server.admin("expire-all")
        auth.context.token_expiry_time = time.time() - 1  # what the client would conclude once expires_in passed
        assert await call(server.resource_url, auth) == "subject: bob"
        assert [e["event"] for e in server.log()][-1] == "refresh"
        assert storage.tokens is not None and storage.tokens.refresh_token != old.refresh_token
        assert old.refresh_token not in server.tokens()["refresh"]
        client = storage.client_info
        assert client is not None and client.client_secret
        answer = HTTP.post(f"{server.issuer}/token", data={
            "grant_type": "refresh_token", "refresh_token": old.refresh_token, "client_id": client.client_id,
            "client_secret": client.client_secret})
        assert answer.status_code == 400 and answer.json()["error"] == "invalid_grant"


async def test_a_refused_refresh_sends_the_person_back_to_authorize():
    with start_oauth_server() as server:
        auth = oauth_client(server)
        assert await call(server.resource_url, auth) == "subject: bob"
        server.admin("refuse-refresh")
        server.admin("expire-all")
        auth.context.token_expiry_time = time.time() - 1
        assert await call(server.resource_url, auth) == "subject: bob"
        assert [e["event"] for e in server.log()][-3:] == ["refresh-refused", "authorize", "token"]


async def test_an_expired_token_is_refused_by_the_resource_server():
    with start_oauth_server("separate") as server:
        auth = oauth_client(server)
        assert await call(server.resource_url, auth) == "subject: bob"
        token = server.tokens()["access"][0]
        server.admin("expire-all")
        answer = HTTP.post(server.resource_url, json={}, headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 401


@pytest.mark.parametrize("mode", ["embedded", "separate"])
async def test_the_client_refuses_a_wrong_iss(mode: str):
    with start_oauth_server(mode) as server:  # type: ignore[arg-type]
        server.admin("wrong-iss")
        with pytest.raises(BaseException) as refused:
            await call(server.resource_url, oauth_client(server))
        assert "iss mismatch" in messages(refused.value)
        assert "token" not in [e["event"] for e in server.log()]


async def test_the_client_refuses_metadata_naming_another_resource():
    with start_oauth_server(prm_resource="http://127.0.0.1:9/elsewhere") as server:
        with pytest.raises(BaseException) as refused:
            await call(server.resource_url, oauth_client(server))
        assert "does not match" in messages(refused.value)
        assert server.log() == []


@pytest.mark.parametrize("mode", ["embedded", "separate"])
async def test_client_credentials_give_a_service_subject(mode: str):
    with start_oauth_server(mode, client_id="svc-1", client_secret="s3cret", registration=False) as server:  # type: ignore[arg-type]
        metadata = HTTP.get(f"{server.issuer}/.well-known/oauth-authorization-server").json()
        assert "registration_endpoint" not in metadata and "client_credentials" in metadata["grant_types_supported"]
        auth = ClientCredentialsOAuthProvider(server.resource_url, Storage(), "svc-1", "s3cret", issuer=server.issuer)
        assert await call(server.resource_url, auth) == "subject: service:svc-1"
        wrong = ClientCredentialsOAuthProvider(server.resource_url, Storage(), "svc-1", "nope", issuer=server.issuer)
        with pytest.raises(BaseException) as refused:
            await call(server.resource_url, wrong)
        assert "401" in messages(refused.value)


async def test_the_pre_registered_client_can_use_the_authorization_code_flow():
    with start_oauth_server(client_id="host-app", client_secret="s3cret", registration=False) as server:
        client = OAuthClientInformationFull(client_id="host-app", client_secret="s3cret", redirect_uris=[REDIRECT],
                                            token_endpoint_auth_method="client_secret_post", issuer=server.issuer)
        auth = oauth_client(server, "carol", Storage(client))
        assert await call(server.resource_url, auth) == "subject: carol"
        assert [e["event"] for e in server.log()] == ["authorize", "token"]


async def test_a_client_id_metadata_document_url_is_accepted_without_registering():
    with start_oauth_server(cimd=True) as server:
        redirect, callback = approving("bob")
        auth = OAuthClientProvider(server.resource_url, OAuthClientMetadata(redirect_uris=[REDIRECT]), Storage(),
                                   redirect, callback, client_metadata_url="https://client.example/mcp-client.json")
        assert await call(server.resource_url, auth) == "subject: bob"
        assert [(e["event"], e["client_id"]) for e in server.log()] == [
            ("authorize", "https://client.example/mcp-client.json"), ("token", "https://client.example/mcp-client.json")]


async def test_needs_admin_steps_up_to_the_admin_scope():
    with start_oauth_server() as server:
        auth = oauth_client(server)
        assert await call(server.resource_url, auth) == "subject: bob"
        assert await call(server.resource_url, auth, "needs_admin") == "admin work done for bob"
        scopes = [e["scope"] for e in server.events("authorize")]
        assert scopes[0] == "user" and "admin" in scopes[1].split()


def registered(server: OAuthServer) -> dict[str, Any]:
    answer = HTTP.post(f"{server.issuer}/register", json={"redirect_uris": [REDIRECT], "client_name": "raw"})
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


VERIFIER = "v" * 43


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


def authorize_url(server: OAuthServer, client: dict[str, Any], **extra: str) -> str:
    query = {"response_type": "code", "client_id": client["client_id"], "redirect_uri": REDIRECT, "state": "st",
             "code_challenge": s256(VERIFIER), "code_challenge_method": "S256",
             "resource": server.resource_url, **extra}
    return f"{server.issuer}/authorize?{urlencode(query)}"


def redirected(answer: httpx.Response) -> dict[str, str]:
    assert answer.status_code == 302, answer.text
    return {k: v[0] for k, v in parse_qs(urlparse(answer.headers["location"]).query).items()}


async def test_the_login_page_approves_as_the_typed_user_or_denies():
    with start_oauth_server("separate") as server:
        client = registered(server)
        for decision, user in (("deny", "alice"), ("approve", "dora")):
            page = HTTP.get(authorize_url(server, client), follow_redirects=True)
            assert 'id="user"' in page.text and 'value="alice"' in page.text and 'id="approve"' in page.text
            request = parse_qs(urlparse(str(page.url)).query)["request"][0]
            back = redirected(HTTP.post(f"{server.issuer}/login",
                                         data={"request": request, "user": user, "decision": decision}))
            assert back["state"] == "st" and back["iss"] == server.issuer
            if decision == "deny":
                assert back["error"] == "access_denied" and "code" not in back
        assert server.events("authorize")[-1]["user"] == "dora"


async def test_pkce_is_verified_and_revocation_ends_a_token():
    with start_oauth_server() as server:
        client = registered(server)
        form = {"grant_type": "authorization_code", "redirect_uri": REDIRECT, "client_id": client["client_id"],
                "client_secret": client["client_secret"]}
        code = redirected(HTTP.get(authorize_url(server, client, approve_as="erin")))["code"]
        wrong = HTTP.post(f"{server.issuer}/token", data={**form, "code": code, "code_verifier": "w" * 43})
        assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
        code = redirected(HTTP.get(authorize_url(server, client, approve_as="erin")))["code"]
        tokens = HTTP.post(f"{server.issuer}/token", data={**form, "code": code, "code_verifier": VERIFIER}).json()
        assert tokens["access_token"] in server.tokens()["access"]
        revoked = HTTP.post(f"{server.issuer}/revoke", data={**form, "token": tokens["refresh_token"]})
        assert revoked.status_code == 200
        assert server.tokens() == {"access": [], "refresh": []}
        assert server.events("revoke")[0]["user"] == "erin"


async def test_url_elicitation_is_required_then_completed_on_the_page():
    with start_url_elicit_server() as url:
        completed = anyio.Event()

        async def on_message(message: Any) -> None:
            if getattr(message, "method", None) == "notifications/elicitation/complete":
                completed.set()

        async def elicit(*_: Any) -> Any:
            raise AssertionError("the server asks by error -32042, not by request")

        async with Client(url, mode="legacy", message_handler=on_message, elicitation_callback=elicit) as client:
            with pytest.raises(MCPError) as required:
                await client.call_tool("connect_account", {})
            assert required.value.code == -32042
            target = required.value.error.data["elicitations"][0]["url"]
            page = HTTP.get(target)
            assert 'id="done"' in page.text
            elicitation = parse_qs(urlparse(target).query)["elicitation"][0]
            assert HTTP.post(url.replace("/mcp", "/connect"), data={"elicitation": elicitation}).status_code == 200
            with anyio.fail_after(30):
                await completed.wait()
            result = await client.call_tool("connect_account", {})
            assert isinstance(result.content[0], TextContent) and result.content[0].text == "connected"
