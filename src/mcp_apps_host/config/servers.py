"""Where MCP servers come from: `--server NAME=SPEC` and `--config FILE`.

The config file uses the `{"mcpServers": {...}}` shape other MCP clients
already read, so an existing file works unchanged.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from ..errors import ConfigError
from .entrypolicy import check_header_values, entry_policy
from .policies import Decision
from .roots import parse_roots, root_uri
from .serverpolicy import LimitOverrides, ToolRules, ViewRules

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


Grant = Literal["authorization_code", "client_credentials"]


@dataclass(frozen=True)
class AuthSpec:
    """An entry's `"auth"`: how the host signs in to an HTTP server protected by MCP authorization.
    Everything is optional: a server answering 401 with resource metadata needs none of it."""

    client_id: str | None = None  # a client registered with the authorization server beforehand
    client_secret_env: str | None = None  # the environment variable holding its secret (never the secret itself)
    scopes: tuple[str, ...] = ()
    grant: Grant = "authorization_code"  # client_credentials: the deployment calls as itself
    issuer: str | None = None  # the only authorization server the client's secret is ever sent to

    def client_secret(self) -> str | None:
        """The secret from the environment; ConfigError when the variable named is not set."""
        if self.client_secret_env is None:
            return None
        value = os.environ.get(self.client_secret_env)
        if not value:
            raise ConfigError(f"the environment variable {self.client_secret_env} (auth.clientSecretEnv) is not set")
        return value


@dataclass(frozen=True)
class ServerSpec:
    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    apps: bool | None = None  # "apps": true/false in its entry: may its views render (None: not said)
    watch: tuple[str, ...] = ()  # `serve --watch`: paths whose changes restart this (stdio) server
    roots: tuple[str, ...] = ()  # file:// URIs the server may work in (roots/list)
    auth: AuthSpec | None = None  # "auth" in its entry (HTTP only)
    # What an admin governs (config/entrypolicy.py): its tools, what its views may do, its own limits,
    # its consent rules.
    tools: ToolRules = field(default_factory=ToolRules)
    views: ViewRules = field(default_factory=ViewRules)
    limits: LimitOverrides = field(default_factory=LimitOverrides)
    consent: dict[str, Decision] = field(default_factory=dict)

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "http" if self.url else "stdio"

    def describe(self) -> str:
        """What the person typed, minus secrets (headers and env values are not shown)."""
        if self.url:
            return self.url
        return shlex.join([self.command or "", *self.args])


def _check_name(name: str, where: str) -> str:
    if not _NAME.match(name):
        raise ConfigError(
            f"{where}: server name {name!r} must be 1-64 letters, digits, '_', '-' or '.', "
            "starting with a letter or digit"
        )
    return name


def _check_url(url: str, where: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{where}: {url!r} is not an http(s) URL")
    return url


def parse_server_arg(text: str) -> ServerSpec:
    """`NAME=SPEC`: a URL means Streamable HTTP, anything else a command line."""
    name, sep, spec = text.partition("=")
    where = f"--server {text!r}"
    if not sep or not spec.strip():
        raise ConfigError(
            f"{where}: expected NAME=SPEC, e.g. debug='npx -y @modelcontextprotocol/server-debug --stdio'")
    _check_name(name.strip(), where)
    spec = spec.strip()
    if re.match(r"^https?://", spec, re.IGNORECASE):
        return ServerSpec(name=name.strip(), url=_check_url(spec, where))
    try:
        argv = shlex.split(spec)
    except ValueError as exc:
        raise ConfigError(f"{where}: cannot split the command line: {exc}") from exc
    return ServerSpec(name=name.strip(), command=argv[0], args=tuple(argv[1:]))


def _str_map(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ConfigError(f"{where} must be an object of strings")
    return dict(value)


_AUTH_KEYS = {"clientId", "clientSecretEnv", "scopes", "grant", "issuer"}


def _auth(value: Any, where: str) -> AuthSpec | None:
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - _AUTH_KEYS:
        raise ConfigError(f"{where} must be an object with only {', '.join(sorted(_AUTH_KEYS))}")
    for key in ("clientId", "clientSecretEnv"):
        if value.get(key) is not None and (not isinstance(value[key], str) or not value[key].strip()):
            raise ConfigError(f"{where}.{key} must be a non-empty string")
    env = value.get("clientSecretEnv")
    if env is not None and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", env):
        raise ConfigError(f"{where}.clientSecretEnv must name an environment variable (the secret itself is "
                          "never written in the config file)")
    scopes = value.get("scopes", [])
    if not isinstance(scopes, list) or not all(isinstance(x, str) and x and " " not in x for x in scopes):
        raise ConfigError(f"{where}.scopes must be a list of scope names")
    grant = value.get("grant", "authorization_code")
    if grant not in ("authorization_code", "client_credentials"):
        raise ConfigError(f'{where}.grant must be "authorization_code" or "client_credentials", not {grant!r}')
    if grant == "client_credentials" and not (value.get("clientId") and env):
        raise ConfigError(f'{where}: "grant": "client_credentials" needs "clientId" and "clientSecretEnv"')
    issuer = value.get("issuer")
    if issuer is not None:
        _check_url(issuer if isinstance(issuer, str) else repr(issuer), f"{where}.issuer")
    return AuthSpec(client_id=value.get("clientId"), client_secret_env=env, scopes=tuple(scopes), grant=grant,
                    issuer=issuer)


def _watch_paths(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    paths = [value] if isinstance(value, str) else value
    if not isinstance(paths, list) or not all(isinstance(p, str) and p.strip() for p in paths):
        raise ConfigError(f"{where} must be a path or a list of paths")
    return tuple(paths)


def default_watch_paths(spec: ServerSpec) -> tuple[str, ...]:
    """What `serve --watch` watches for a stdio server that names no paths: the folder of the first file
    on its command line (the server's script), else its working directory. Nothing for an HTTP server."""
    if spec.watch or spec.url:
        return spec.watch
    base = Path(spec.cwd).expanduser() if spec.cwd else Path.cwd()
    for arg in (*spec.args, spec.command or ""):
        candidate = base / arg if not Path(arg).is_absolute() else Path(arg)
        if arg and not arg.startswith("-") and candidate.is_file():
            return (str(candidate.resolve().parent),)
    return (str(base),) if spec.cwd else ()


def parse_config(data: Any, source: str = "config", base: Path | None = None) -> list[ServerSpec]:
    """The servers of a config document; relative roots are read from ``base`` (the file's folder)."""
    base = base if base is not None else Path.cwd()
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
        raise ConfigError(f'{source}: expected an object with "mcpServers": {{NAME: {{...}}}}')
    specs: list[ServerSpec] = []
    for name, entry in data["mcpServers"].items():
        where = f"{source}: mcpServers.{name}"
        _check_name(name, where)
        if not isinstance(entry, dict):
            raise ConfigError(f"{where} must be an object")
        url, command = entry.get("url"), entry.get("command")
        if bool(url) == bool(command):
            raise ConfigError(f'{where} needs exactly one of "command" (stdio) or "url" (Streamable HTTP)')
        apps = entry.get("apps")
        if apps is not None and not isinstance(apps, bool):
            raise ConfigError(f"{where}.apps must be true or false, not {apps!r}")
        roots = parse_roots(entry.get("roots"), base, where)
        governed = entry_policy(entry, where)
        if url:
            if not isinstance(url, str):
                raise ConfigError(f"{where}.url must be a string")
            headers = _str_map(entry.get("headers"), f"{where}.headers")
            check_header_values(headers, f"{where}.headers")
            specs.append(
                ServerSpec(name=name, url=_check_url(url, where), headers=headers, apps=apps, roots=roots,
                           auth=_auth(entry.get("auth"), f"{where}.auth"), **governed)
            )
            continue
        if entry.get("auth") is not None:
            raise ConfigError(f'{where}.auth: sign-in is for HTTP servers ("url"), not stdio ones')
        args = entry.get("args", [])
        if not isinstance(command, str) or not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ConfigError(f'{where}: "command" must be a string and "args" a list of strings')
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ConfigError(f"{where}.cwd must be a string")
        specs.append(
            ServerSpec(name=name, command=command, args=tuple(args), env=_str_map(entry.get("env"), f"{where}.env"),
                       cwd=cwd, apps=apps, roots=roots, watch=_watch_paths(entry.get("watch"), f"{where}.watch"),
                       **governed)
        )
    return specs


def load_config_document(path: str | Path) -> dict[str, Any]:
    """The whole config file: `mcpServers`, and the host's own sections (consent, sampling, trust)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--config {path}: cannot read: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"--config {path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"--config {path}: expected a JSON object")
    return data


def merge_specs(*groups: list[ServerSpec]) -> list[ServerSpec]:
    """All specs in order; a name given twice is an error rather than a silent override."""
    seen: dict[str, ServerSpec] = {}
    for group in groups:
        for spec in group:
            if spec.name in seen:
                raise ConfigError(f"server name {spec.name!r} is given more than once")
            seen[spec.name] = spec
    return list(seen.values())


def apply_root_flags(specs: Sequence[ServerSpec], flags: Sequence[str], cwd: Path) -> list[ServerSpec]:
    """`--root PATH` (every server) and `--root SERVER=PATH` (one), added to each server's own roots."""
    names = {s.name for s in specs}
    extra: dict[str | None, list[str]] = {}
    for flag in flags:
        name, sep, rest = flag.partition("=")
        server = name if sep and name in names else None
        target = rest if server is not None else flag
        extra.setdefault(server, []).append(root_uri(target, cwd, f"--root {flag!r}"))
    out = []
    for spec in specs:
        added = [*extra.get(None, []), *extra.get(spec.name, [])]
        out.append(replace(spec, roots=tuple(dict.fromkeys([*spec.roots, *added]))) if added else spec)
    return out
