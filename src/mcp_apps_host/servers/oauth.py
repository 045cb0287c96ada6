"""Signing a person in to a server protected by MCP authorization, on the SDK's OAuth client.

The SDK's `OAuthClientProvider` does discovery (protected resource and authorization server
metadata), registration (a configured client, a client ID metadata document, else dynamic
registration), PKCE S256, the `resource` parameter, the `iss` check and scope step-up. Two things
are added here: the access token's expiry is kept with it (the SDK forgets it across restarts, so a
stored token would be sent until refused), and a token refused before its time is refreshed before
the person is asked to sign in again. The person's part — opening the authorization page and the
redirect coming back — is a `SignIn`: the authorization URL waits for their click, and the redirect
reaches it through the `SignInBoard`, on whichever worker it lands.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.auth.exceptions import OAuthFlowError, OAuthRegistrationError, OAuthTokenError
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    handle_auth_metadata_response,
    handle_protected_resource_response,
)
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from opentelemetry.trace import Span

from ..config.serverhosts import SERVE_HOSTS, ServerHosts
from ..config.servers import AuthSpec
from ..errors import SignInRequired
from ..settings import SIGNIN_FLOW_MAX_AGE
from ..telemetry import spans
from ..values.identity import Identity
from ..version import __version__
from .guard import server_http_client

log = logging.getLogger("mcp_apps_host.signin")


class _NotAnError(logging.Filter):
    """The SDK logs every end of its flow as an error with a traceback; a person who declined is not one
    (the connection logs it in a line of its own)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], SignInRequired))


logging.getLogger("mcp.client.auth.oauth2").addFilter(_NotAnError())

Failure = Callable[[SignInRequired], None]
# False around requests the person is not waiting for (health checks): a 401 the refresh cannot mend fails
# them instead of asking the person to sign in. The SDK's transport sends a request in its caller's context.
ASK_PERSON: ContextVar[bool] = ContextVar("ask_person", default=True)
CALLBACK_PATH = "/oauth/callback"
CLIENT_METADATA_PATH = "/oauth/client.json"
EXPIRY_MARGIN = 30.0  # refresh this long before the access token runs out, not after a refused call


class PersonTokens(TokenStorage, Protocol):
    """The SDK's token storage for one (person, server), which also knows when the access token runs out."""

    @property
    def expires_at(self) -> float | None: ...

    async def forget_tokens(self) -> None: ...


class Credentials(Protocol):
    """Where people's sign-ins are kept (`store/credentials.py`)."""

    def storage(self, identity: Identity, server: str) -> PersonTokens: ...


class SignInBoard(Protocol):
    """The sign-ins under way in this process, found by the OAuth `state` the redirect brings back."""

    async def begin(self, signin: SignIn) -> None: ...

    def end(self, signin: SignIn) -> None: ...


class PersonNeeded(SignInRequired):
    """Met on the shared connection: the server wants each person signed in, so the call is made again on
    the person's own connection."""


@dataclass(frozen=True)
class Person:
    """Whose connection it is, and under which path the host page is mounted (its callback is there too)."""

    identity: Identity
    base_path: str = ""


# Whom a deployment's own sign-in (client_credentials) is filed under.
SERVICE = Identity("~service")


@dataclass(frozen=True)
class Redirect:
    """What came back to the callback: a code (with its state and issuer), or the authorization server's error."""

    state: str
    code: str | None = None
    iss: str | None = None
    error: str | None = None


class SignIn:
    """One person's sign-in to one server: the authorization URL waiting for their click, then the redirect."""

    def __init__(self, identity: Identity, server: str, board: SignInBoard, on_change: Callable[[], None]) -> None:
        self.identity = identity
        self.server = server
        self._board = board
        self._on_change = on_change
        self.url: str | None = None  # the authorization page, while the person is asked
        self.state: str | None = None
        self._answer: asyncio.Future[Redirect] | None = None
        self._answered = False
        self._span: Span | None = None  # from the URL offered to the person until the redirect (no URL in it)

    async def redirect(self, url: str) -> None:
        """The SDK's redirect handler: nothing opens here; the page offers the URL to the person."""
        state = parse_qs(urlsplit(url).query).get("state", [""])[0]
        self.url, self.state = url, state
        self._answer = asyncio.get_running_loop().create_future()
        if self._span is not None:
            spans.finish(self._span, "cancelled")
        self._span = spans.start("sign-in", **{spans.SERVER: self.server})
        await self._board.begin(self)
        self._on_change()

    async def callback(self) -> AuthorizationCodeResult:
        """The SDK's callback handler: the redirect's code, once the person has signed in."""
        assert self._answer is not None
        try:
            answer = await asyncio.wait_for(asyncio.shield(self._answer), SIGNIN_FLOW_MAX_AGE)
        except TimeoutError:
            answer = Redirect(self.state or "", error="the sign-in page was not used in time; it is made afresh")
        finally:
            self._answered = True
            self._board.end(self)
            self.url = self._answer = None
            self._on_change()
            if self._span is not None:
                spans.finish(self._span, "signed-in" if answer.error is None and answer.code else "denied")
                self._span = None
        if answer.error is not None or answer.code is None:
            raise SignInRequired(f"sign-in to server {self.server!r} did not complete: {answer.error or 'no code'}")
        return AuthorizationCodeResult(code=answer.code, state=answer.state, iss=answer.iss)

    def answer(self, redirect: Redirect) -> None:
        if self._answer is not None and not self._answer.done() and redirect.state == self.state:
            self._answer.set_result(redirect)

    def decline(self) -> None:
        """The person said no (or closed the window): the flow ends with an error."""
        if self.state is not None:
            self.answer(Redirect(self.state, error="declined by the person"))

    def take_answered(self) -> bool:
        """Whether the person answered (signed in, declined) since last asked."""
        answered, self._answered = self._answered, False
        return answered

    @property
    def asking(self) -> bool:
        return self.url is not None


class HostOAuth(OAuthClientProvider):
    """The SDK's provider with the token's expiry kept across restarts and a refresh tried after a 401."""

    def __init__(self, server_url: str, metadata: OAuthClientMetadata, storage: PersonTokens, signin: SignIn,
                 client_metadata_url: str | None, on_failure: Failure, hosts: ServerHosts = SERVE_HOSTS) -> None:
        super().__init__(server_url, metadata, storage, signin.redirect, signin.callback, client_metadata_url)
        self.tokens = storage
        self._hosts = hosts  # the authorization server is reached only where a server may live
        self._on_failure = on_failure

    async def _initialize(self) -> None:
        await super()._initialize()
        self._expiry_from_storage()

    def _expiry_from_storage(self) -> None:
        """The SDK's clock for the token, from the expiry stored with it, a margin early (so it is refreshed
        before it runs out rather than after a refused call)."""
        expires = self.tokens.expires_at
        self.context.token_expiry_time = expires - EXPIRY_MARGIN if expires is not None else None

    async def sign_in(self, challenge: str) -> None:
        """Sign the person in because a tool said so (a tool error carrying `_meta["mcp/www_authenticate"]`,
        the lazy sign-in of MCP Apps): the SDK's flow, answered as if the server had sent that challenge."""
        probe = httpx2.Request("POST", self.context.server_url)
        status = 403 if 'insufficient_scope' in challenge else 401
        flow = super()._auth_flow(probe)
        challenged = False
        try:
            async with server_http_client(self._hosts, timeout=30) as http:
                outgoing = await flow.__anext__()
                while True:
                    if outgoing is probe:  # never sent: the tool's challenge first, then "it worked"
                        response = httpx2.Response(200 if challenged else status, request=probe,
                                                   headers={"WWW-Authenticate": challenge})
                        challenged = True
                    else:
                        response = await http.send(outgoing)
                    outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except SignInRequired:
            raise
        except Exception as exc:
            raise SignInRequired(failure_text(exc)) from None
        finally:
            await flow.aclose()

    async def sign_out(self) -> None:
        """Forget the person's tokens, revoking them first where the authorization server offers it (RFC 7009)."""
        if not self._initialized:
            await self._initialize()
        tokens = self.context.current_tokens
        self.context.clear_tokens()
        await self.tokens.forget_tokens()
        if tokens is None:
            return
        try:
            async with server_http_client(self._hosts, timeout=10) as http:
                endpoint = await self._revocation_endpoint(http)
                if endpoint is None:
                    return
                for token, hint in ((tokens.refresh_token, "refresh_token"), (tokens.access_token, "access_token")):
                    if token:
                        data, headers = self.context.prepare_token_auth(
                            {"token": token, "token_type_hint": hint, "client_id": self._client_id()},
                            {"Content-Type": "application/x-www-form-urlencoded"})
                        await http.post(endpoint, data=data, headers=headers)
        except (httpx2.HTTPError, OSError) as exc:  # the tokens are forgotten here whatever the server says
            log.warning("server %s: could not revoke the tokens at sign-out: %s", self.context.server_url,
                        type(exc).__name__)

    def _client_id(self) -> str:
        return self.context.client_info.client_id if self.context.client_info is not None else ""

    async def _revocation_endpoint(self, http: httpx2.AsyncClient) -> str | None:
        """The authorization server's revocation endpoint, discovering its metadata if this process has not."""
        metadata = self.context.oauth_metadata
        if metadata is None:
            issuer = None
            for url in build_protected_resource_metadata_discovery_urls(None, self.context.server_url):
                prm = await handle_protected_resource_response(await http.get(url))
                if prm is not None and prm.authorization_servers:
                    issuer = str(prm.authorization_servers[0])
                    break
            for url in build_oauth_authorization_server_metadata_discovery_urls(issuer, self.context.server_url):
                ok, metadata = await handle_auth_metadata_response(await http.get(url))
                if not ok or metadata is not None:
                    break
        return str(metadata.revocation_endpoint) if metadata is not None and metadata.revocation_endpoint else None

    def _expire(self) -> None:
        self.context.token_expiry_time = 1.0  # long past (0 would read as "never expires")

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        refreshed = await super()._handle_refresh_response(response)
        if refreshed:
            self._expiry_from_storage()
        else:  # refused (e.g. invalid_grant): only now is the person asked again
            await self.tokens.forget_tokens()
        return refreshed

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        await super()._handle_token_response(response)
        self._expiry_from_storage()

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super()._auth_flow(request)
        refreshed = False
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                if outgoing is request and response.status_code == 401:
                    if not refreshed and self.context.can_refresh_token():
                        # Refused before its time (revoked, the server's keys changed): the SDK would start a
                        # whole new sign-in; a refresh first asks nothing of the person.
                        refreshed = True
                        await flow.aclose()
                        self._expire()
                        flow = super()._auth_flow(request)
                        outgoing = await flow.__anext__()
                        continue
                    if not ASK_PERSON.get():
                        return  # a request nobody waits on (a health check) fails; it never asks the person
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except Exception as exc:
            self._on_failure(exc if isinstance(exc, SignInRequired) else SignInRequired(failure_text(exc)))
        finally:
            await flow.aclose()
        # The transport would only log a failure raised here and leave the request waiting: answer it with
        # the server's own 401 instead, so it fails now and the connection reads why from `on_failure`.
        request.headers.pop("Authorization", None)
        yield request


def www_authenticate(result: dict[str, object]) -> str | None:
    """The challenge of a tool error that asks for a sign-in (`_meta["mcp/www_authenticate"]`), if it is one."""
    meta = result.get("_meta")
    if result.get("isError") is not True or not isinstance(meta, dict):
        return None
    challenges = meta.get("mcp/www_authenticate")
    if isinstance(challenges, str):
        challenges = [challenges]
    if not isinstance(challenges, list):
        return None
    bearer = [c for c in challenges if isinstance(c, str) and c.lower().startswith("bearer")]
    return bearer[0] if bearer else None


def failure_text(exc: Exception) -> str:
    """A failed sign-in in words (the SDK's errors name the step; none carries a token)."""
    if isinstance(exc, OAuthFlowError | OAuthTokenError | OAuthRegistrationError):
        return f"sign-in failed: {exc}"
    return f"sign-in failed: {type(exc).__name__}: {exc}"


class _Configured:
    """A person's storage, with the client registered beforehand (the config's clientId) used first."""

    def __init__(self, inner: PersonTokens, client: OAuthClientInformationFull) -> None:
        self._inner = inner
        self._client = client

    @property
    def expires_at(self) -> float | None:
        return self._inner.expires_at

    async def get_tokens(self) -> OAuthToken | None:
        return await self._inner.get_tokens()

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self._inner.set_tokens(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        return None  # the configured client is the one

    async def forget_tokens(self) -> None:
        await self._inner.forget_tokens()


@dataclass(frozen=True)
class AuthSetup:
    """What every connection's sign-in needs: where credentials are kept, the board, the host's origin."""

    credentials: Credentials
    board: SignInBoard
    origin: str  # the host page's origin as the person's browser reaches it
    hosts: ServerHosts = SERVE_HOSTS  # where its own requests (sign-in, revocation) may go (allowedServerHosts)

    def redirect_uri(self, base_path: str) -> str:
        return f"{self.origin}{base_path}{CALLBACK_PATH}"

    def client_metadata_url(self, base_path: str) -> str | None:
        # A client ID metadata document must be on HTTPS; on plain HTTP the client registers instead.
        return f"{self.origin}{base_path}{CLIENT_METADATA_PATH}" if self.origin.startswith("https://") else None

    def client_metadata(self, base_path: str, spec: AuthSpec | None) -> OAuthClientMetadata:
        secret = spec is not None and spec.client_secret_env is not None
        return OAuthClientMetadata.model_validate({
            "client_name": "mcp-apps-host", "software_id": "mcp-apps-host", "software_version": __version__,
            "redirect_uris": [self.redirect_uri(base_path)],
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "token_endpoint_auth_method": "client_secret_post" if secret else "none",
            "scope": " ".join(spec.scopes) if spec is not None and spec.scopes else None,
        })

    def for_person(self, url: str, spec: AuthSpec | None, person: Person, signin: SignIn,
                   on_failure: Failure) -> httpx2.Auth:
        identity, server, base_path = person.identity, signin.server, person.base_path
        storage = self.credentials.storage(identity, server)
        metadata = self.client_metadata(base_path, spec)
        if spec is not None and spec.client_id is not None:
            client = OAuthClientInformationFull.model_validate({
                **metadata.model_dump(mode="json", exclude_none=True),
                "client_id": spec.client_id, "client_secret": spec.client_secret(),
            })
            storage = _Configured(storage, client)
        return HostOAuth(url, metadata, storage, signin, self.client_metadata_url(base_path), on_failure,
                         self.hosts)

    def as_service(self, url: str, spec: AuthSpec, server: str) -> httpx2.Auth:
        """The deployment calling as itself (client_credentials): no person is ever asked."""
        assert spec.client_id is not None
        return ClientCredentialsOAuthProvider(url, self.credentials.storage(SERVICE, server), spec.client_id,
                                              spec.client_secret() or "", "client_secret_post",
                                              " ".join(spec.scopes) or None, spec.issuer)


class NeedsPerson(httpx2.Auth):
    """The shared connection's auth: nobody is behind it to sign in, so a 401 means the server is reached
    per person, each with their own sign-in (nothing is registered or asked for here)."""

    def __init__(self, on_failure: Failure) -> None:
        self._on_failure = on_failure

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        response = yield request
        if response.status_code == 401:
            self._on_failure(SignInRequired("each person signs in to this server"))
