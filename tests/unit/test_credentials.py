"""People's sign-ins at rest: encrypted, rotated keys still read, no key means nothing stored, the
sign-in state found by any worker once; and the config's "auth" entries checked."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from mcp_apps_host.config.servers import parse_config
from mcp_apps_host.errors import ConfigError, SignInRequired
from mcp_apps_host.store.credentials import ServerCredentials, TokenCipher
from mcp_apps_host.store.db import open_database
from mcp_apps_host.values.identity import Identity

ALICE, BOB = Identity("alice", "acme"), Identity("bob", "acme")
ACCESS, REFRESH = "at-secret-access-0123456789", "rt-secret-refresh-0123456789"


def _tokens(expires_in: int = 3600) -> OAuthToken:
    return OAuthToken(access_token=ACCESS, refresh_token=REFRESH, expires_in=expires_in, scope="user")


def _store(tmp_path: Path, keys: str | None) -> ServerCredentials:
    return ServerCredentials(open_database(f"sqlite:///{tmp_path}/host.db"), TokenCipher(keys) if keys else None)


def test_tokens_are_stored_sealed_and_kept_per_person_with_their_expiry(tmp_path: Path):
    store = _store(tmp_path, Fernet.generate_key().decode())
    mine = store.storage(ALICE, "crm")
    before = time.time()
    asyncio.run(mine.set_tokens(_tokens(600)))
    client = OAuthClientInformationFull(client_id="c1", client_secret="client-secret-xyz",
                                        redirect_uris=["http://127.0.0.1/oauth/callback"])
    asyncio.run(mine.set_client_info(client))

    fresh = store.storage(ALICE, "crm")  # as after a restart
    assert asyncio.run(fresh.get_tokens()) == _tokens(600)
    assert fresh.expires_at is not None and before + 600 <= fresh.expires_at <= time.time() + 600
    assert asyncio.run(fresh.get_client_info()) == client
    assert asyncio.run(store.storage(BOB, "crm").get_tokens()) is None  # never another person's
    assert asyncio.run(store.storage(ALICE, "tickets").get_tokens()) is None  # nor another server's
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("host.db*"))
    for secret in (ACCESS, REFRESH, "client-secret-xyz"):
        assert secret.encode() not in raw


def test_a_rotated_key_still_opens_what_the_old_one_sealed_and_a_retired_one_signs_out(tmp_path: Path):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    asyncio.run(_store(tmp_path, old).storage(ALICE, "crm").set_tokens(_tokens()))
    assert asyncio.run(_store(tmp_path, f"{new},{old}").storage(ALICE, "crm").get_tokens()) == _tokens()
    assert asyncio.run(_store(tmp_path, new).storage(ALICE, "crm").get_tokens()) is None


def test_without_a_key_nothing_is_stored_and_saying_so_names_the_setting(tmp_path: Path):
    store = _store(tmp_path, None)
    with pytest.raises(SignInRequired, match="MCP_APPS_HOST_TOKEN_KEY"):
        asyncio.run(store.storage(ALICE, "crm").set_tokens(_tokens()))
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("host.db*"))
    assert ACCESS.encode() not in raw


def test_a_bad_key_is_a_config_error():
    with pytest.raises(ConfigError, match="Fernet key"):
        TokenCipher("not-a-key")


def test_a_sign_in_state_is_taken_once_and_names_its_person(tmp_path: Path):
    store = _store(tmp_path, Fernet.generate_key().decode())
    store.begin_flow("s-123", ALICE, "crm")
    assert store.take_flow("s-123") == (("acme", "alice"), "crm")
    assert store.take_flow("s-123") is None
    assert store.take_flow("never-begun") is None


@pytest.mark.parametrize(("auth", "error"), [
    ({"clientSecret": "x"}, "must be an object with only"),
    ({"clientSecretEnv": "not a name"}, "must name an environment variable"),
    ({"scopes": "read write"}, "list of scope names"),
    ({"grant": "password"}, '"authorization_code" or "client_credentials"'),
    ({"grant": "client_credentials", "clientId": "svc"}, 'needs "clientId" and "clientSecretEnv"'),
])
def test_a_wrong_auth_entry_names_what_is_wrong(auth, error):
    with pytest.raises(ConfigError, match=error):
        parse_config({"mcpServers": {"crm": {"url": "http://127.0.0.1:1/mcp", "auth": auth}}})


def test_an_auth_entry_is_read_and_its_secret_comes_from_the_environment(monkeypatch):
    (spec,) = parse_config({"mcpServers": {"crm": {"url": "http://127.0.0.1:1/mcp", "auth": {
        "clientId": "svc", "clientSecretEnv": "CRM_SECRET", "scopes": ["read"], "grant": "client_credentials"}}}})
    assert spec.auth is not None and spec.auth.scopes == ("read",) and spec.auth.grant == "client_credentials"
    monkeypatch.delenv("CRM_SECRET", raising=False)
    with pytest.raises(ConfigError, match="CRM_SECRET"):
        spec.auth.client_secret()
    monkeypatch.setenv("CRM_SECRET", "s3cret")
    assert spec.auth.client_secret() == "s3cret"
    with pytest.raises(ConfigError, match="HTTP servers"):
        parse_config({"mcpServers": {"x": {"command": "x", "auth": {}}}})
