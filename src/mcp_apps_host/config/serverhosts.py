"""Where HTTP servers may live (``"allowedServerHosts"``): host names, addresses and networks an admin
lists, and the addresses refused unless listed: loopback (allowed by `serve`), private, link-local and
cloud metadata. Judged on the address a name resolves to when the host connects, not on the name."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Final, Literal

from ..errors import ConfigError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
AddressKind = Literal["loopback", "private", "link-local", "metadata", "public"]

# Cloud instance metadata services: a server "living" there reads the deployment's credentials.
METADATA: Final = frozenset({ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")})
_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT: internal, though not "private"


def address_kind(address: IPAddress) -> AddressKind:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    if address in METADATA:
        return "metadata"
    if address.is_loopback or address.is_unspecified:  # 0.0.0.0 reaches this machine too
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_private or address.is_reserved or address.is_multicast or address in _SHARED:
        return "private"
    return "public"


@dataclass(frozen=True)
class ServerHosts:
    """The allow-list: with no entries, any public address (and loopback when ``loopback``); with
    entries, only what they name (and loopback when ``loopback``). Metadata addresses only when an
    entry names the address itself."""

    names: frozenset[str] = frozenset()  # "crm.internal", or "*.corp.example" for any name under it
    networks: tuple[IPNetwork, ...] = ()
    loopback: bool = False  # `serve`: servers on this machine are the normal case

    @classmethod
    def parse(cls, value: object, where: str, loopback: bool = False) -> ServerHosts:
        if value is None:
            return cls(loopback=loopback)
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list of host names, addresses or networks, not {value!r}")
        names: set[str] = set()
        networks: list[IPNetwork] = []
        for item in value:
            if not isinstance(item, str) or not item.strip():
                raise ConfigError(f"{where}: {item!r} is not a host name, address or network")
            try:
                networks.append(ipaddress.ip_network(item.strip(), strict=False))
                continue
            except ValueError:
                pass
            name = item.strip().lower().rstrip(".")
            bare = name.removeprefix("*.")
            if not bare or any(not part or not all(c.isalnum() or c == "-" for c in part) for part in bare.split(".")):
                raise ConfigError(f"{where}: {item!r} is not a host name (like crm.internal or *.corp.example), "
                                  "an address or a network (like 10.1.2.0/24)")
            names.add(name)
        return cls(frozenset(names), tuple(networks), loopback)

    def _names(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        return host in self.names or any(n.startswith("*.") and host.endswith(n[1:]) for n in self.names)

    def refusal(self, host: str, address: IPAddress) -> str | None:
        """Why a connection to ``host`` at ``address`` is refused (naming the rule), or None."""
        kind = address_kind(address)
        listed_address = any(address in net for net in self.networks)
        if kind == "metadata" and not listed_address:
            return self._say(host, address, "a cloud metadata address")
        if listed_address or self._names(host) or (kind == "loopback" and self.loopback):
            return None
        if self.names or self.networks:
            return self._say(host, address, "not in the list")
        if kind == "public":
            return None
        return self._say(host, address, f"a {kind} address")

    @staticmethod
    def _say(host: str, address: IPAddress, why: str) -> str:
        at = f"{host} resolves to {address}" if host != str(address) else f"{host} is"
        return f"policy: allowedServerHosts: {at}, {why}, not allowed"


SERVE_HOSTS: Final = ServerHosts(loopback=True)  # `serve`'s default: public addresses and this machine
