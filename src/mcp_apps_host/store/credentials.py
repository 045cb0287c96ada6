"""What people got by signing in to servers: tokens and client registrations per (tenant, user, server),
Fernet-encrypted at rest. Each person's record is the SDK's `TokenStorage` for their connection.

No key configured: nothing is stored, and saving says so (tokens are never kept in clear text).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from typing import TypeVar

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import ValidationError
from sqlalchemy import ColumnElement, delete, insert, select, update
from sqlalchemy.engine import Engine

from ..errors import ConfigError, SignInRequired
from ..settings import SIGNIN_FLOW_MAX_AGE
from ..values.identity import Identity
from .owners import mine, owner_columns
from .schema import server_credentials, signin_flows

log = logging.getLogger("mcp_apps_host.signin")

TOKEN_KEY_ENV = "MCP_APPS_HOST_TOKEN_KEY"
NO_KEY = (f"no token key is configured, so a sign-in cannot be kept: set {TOKEN_KEY_ENV} (or \"tokenKey\" in the "
          "config file) to a Fernet key, e.g. the output of python -c \"from cryptography.fernet import Fernet; "
          "print(Fernet.generate_key().decode())\"")
M = TypeVar("M", OAuthToken, OAuthClientInformationFull)


class TokenCipher:
    """Fernet keys, comma-separated: the first encrypts, every one decrypts (so a key can be rotated)."""

    def __init__(self, keys: str) -> None:
        try:
            self._fernet = MultiFernet([Fernet(k.strip().encode()) for k in keys.split(",") if k.strip()])
        except (ValueError, TypeError) as exc:
            raise ConfigError("tokenKey: each key must be a Fernet key (32 url-safe base64-encoded bytes)") from exc

    @classmethod
    def configured(cls, value: str | None) -> TokenCipher | None:
        keys = value if value is not None else os.environ.get(TOKEN_KEY_ENV)
        return cls(keys) if keys and keys.strip() else None

    def seal(self, text: str) -> str:
        return self._fernet.encrypt(text.encode()).decode()

    def open(self, sealed: str) -> str | None:
        """The text, or None when no key of today's opens it (its key was retired)."""
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken:
            return None


@dataclass(frozen=True)
class Owner:
    identity: Identity
    server: str


class ServerCredentials:
    def __init__(self, engine: Engine, cipher: TokenCipher | None) -> None:
        self.engine = engine
        self.cipher = cipher

    def storage(self, identity: Identity, server: str) -> PersonTokens:
        return PersonTokens(self, Owner(identity, server))

    def _key(self, owner: Owner) -> ColumnElement[bool]:
        return mine(server_credentials, owner.identity) & (server_credentials.c.server == owner.server)

    def read(self, owner: Owner) -> tuple[OAuthToken | None, OAuthClientInformationFull | None, float | None]:
        with self.engine.connect() as conn:
            row = conn.execute(select(server_credentials).where(self._key(owner))).first()
        if row is None or self.cipher is None:
            return None, None, None
        tokens = self._open(row.tokens, OAuthToken, owner)
        client = self._open(row.client, OAuthClientInformationFull, owner)
        return tokens, client, row.expires_at if tokens is not None else None

    def _open(self, sealed: str | None, model: type[M], owner: Owner) -> M | None:
        assert self.cipher is not None
        text = self.cipher.open(sealed) if sealed else None
        if sealed and text is None:
            log.warning("server %s: the stored sign-in of %s/%s is sealed with a key no longer configured; "
                        "they will be asked to sign in again", owner.server, *owner.identity.key)
        try:
            return model.model_validate_json(text) if text else None
        except ValidationError:
            return None

    def write(self, owner: Owner, **values: str | float | None) -> None:
        if self.cipher is None:
            raise SignInRequired(f"cannot sign in to server {owner.server!r}: {NO_KEY}")
        sealed = {k: self.cipher.seal(v) if k in ("tokens", "client") and isinstance(v, str) else v
                  for k, v in values.items()}
        with self.engine.begin() as conn:
            if conn.execute(update(server_credentials).where(self._key(owner))
                            .values(updated=time.time(), **sealed)).rowcount == 0:
                conn.execute(insert(server_credentials).values(server=owner.server, updated=time.time(),
                                                               **owner_columns(owner.identity), **sealed))

    # ---- sign-ins under way ----------------------------------------------------------------------

    def begin_flow(self, state: str, identity: Identity, server: str) -> None:
        now = time.time()
        with self.engine.begin() as conn:
            conn.execute(delete(signin_flows).where(signin_flows.c.created < now - SIGNIN_FLOW_MAX_AGE))
            conn.execute(insert(signin_flows).values(state=state, server=server, created=now,
                                                     **owner_columns(identity)))

    def take_flow(self, state: str) -> tuple[tuple[str, str], str] | None:
        """Whose sign-in ``state`` is ((tenant, user), server), once: the row is gone after."""
        with self.engine.begin() as conn:
            row = conn.execute(select(signin_flows).where(signin_flows.c.state == state)).first()
            if row is None:
                return None
            conn.execute(delete(signin_flows).where(signin_flows.c.state == state))
        if row.created < time.time() - SIGNIN_FLOW_MAX_AGE:
            return None
        return (row.tenant, row.user_id), row.server


class PersonTokens:
    """One person's sign-in to one server, as the SDK's `TokenStorage`; it also keeps the access token's
    expiry, which the SDK's provider forgets across restarts."""

    def __init__(self, store: ServerCredentials, owner: Owner) -> None:
        self.store = store
        self.owner = owner
        self.expires_at: float | None = None

    async def get_tokens(self) -> OAuthToken | None:
        tokens, _client, self.expires_at = await asyncio.to_thread(self.store.read, self.owner)
        return tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.expires_at = time.time() + tokens.expires_in if tokens.expires_in else None
        await asyncio.to_thread(self.store.write, self.owner, tokens=tokens.model_dump_json(),
                                expires_at=self.expires_at)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return (await asyncio.to_thread(self.store.read, self.owner))[1]

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await asyncio.to_thread(self.store.write, self.owner, client=client_info.model_dump_json())

    async def forget_tokens(self) -> None:
        """The tokens dropped (a refresh was refused), the client registration kept."""
        await asyncio.to_thread(self.store.write, self.owner, tokens=None, expires_at=None)
