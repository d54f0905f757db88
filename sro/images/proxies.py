"""Which proxy a registry request goes through: the operator's ``--https-proxy``,
``--http-proxy`` and ``--no-proxy``, read the way Go's ``httpproxy`` (and so the
kubelet's and containerd's pulls) reads them.

The operator is configured once for the cluster's egress; its own registry requests
must take the same road the nodes' pulls take, or a check would succeed where a pull
fails (or the reverse). ``NO_PROXY`` entries are comma-separated: ``*`` (no proxy at
all), an IP address or CIDR, a domain (``example.com`` and ``.example.com`` both match it
and its subdomains), each optionally with ``:port``. Loopback is never proxied.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from sro.images import reference
from sro.render import values


def _matches(entry: str, host: str, port: str) -> bool:
    entry = entry.strip().lower()
    if not entry:
        return False
    if entry == "*":
        return True
    try:
        network = ipaddress.ip_network(entry, strict=False)
    except ValueError:
        network = None
    if network is not None:
        try:
            return ipaddress.ip_address(host) in network
        except ValueError:
            return False
    name, _, entry_port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
    if entry_port and entry_port != port:
        return False
    name = name.lstrip(".").lstrip("*").lstrip(".")
    return host == name or host.endswith("." + name)


def for_url(url: str, settings: values.ProxySettings) -> str | None:
    """The proxy URL for a request to ``url``, or None to go direct."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if not host or reference.is_loopback(host):
        return None
    port = str(parts.port or (443 if parts.scheme == "https" else 80))
    if any(_matches(entry, host, port) for entry in settings.no_proxy.split(",")):
        return None
    chosen = settings.https if parts.scheme == "https" else settings.http
    return chosen or None
