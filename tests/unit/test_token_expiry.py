"""The SDK's provider forgets a token's expiry across restarts; the host's keeps it, so a stored token that
ran out (or is about to) is refreshed first instead of being sent and refused."""

from __future__ import annotations

import asyncio
import time

from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from mcp_apps_host.servers.oauth import EXPIRY_MARGIN, HostOAuth, SignIn
from mcp_apps_host.values.identity import Identity


class Stored:
    def __init__(self, expires_at: float | None) -> None:
        self.expires_at = expires_at

    async def get_tokens(self) -> OAuthToken:
        return OAuthToken(access_token="a", refresh_token="r", expires_in=3600)

    async def get_client_info(self) -> OAuthClientInformationFull:
        return OAuthClientInformationFull(client_id="c", redirect_uris=["http://127.0.0.1/oauth/callback"])

    async def set_tokens(self, tokens: OAuthToken) -> None: ...

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None: ...

    async def forget_tokens(self) -> None: ...


class Board:
    async def begin(self, signin: SignIn) -> None: ...

    def end(self, signin: SignIn) -> None: ...


def _valid_after_restart(expires_at: float | None) -> bool:
    async def run() -> bool:
        signin = SignIn(Identity("ann"), "crm", Board(), lambda: None)
        metadata = {"redirect_uris": ["http://127.0.0.1/oauth/callback"]}
        provider = HostOAuth("http://127.0.0.1:1/mcp", OAuthClientMetadata.model_validate(metadata),
                             Stored(expires_at), signin, None, lambda _exc: None)
        await provider._initialize()
        assert provider.context.can_refresh_token()
        return provider.context.is_token_valid()

    return asyncio.run(run())


def test_a_stored_token_past_or_near_its_expiry_is_not_sent_as_valid():
    assert not _valid_after_restart(time.time() - 60)
    assert not _valid_after_restart(time.time() + EXPIRY_MARGIN / 2)  # refreshed a margin early
    assert _valid_after_restart(time.time() + 3600)
