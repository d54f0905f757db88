"""The checked types of flag values: each turns a string into a value or refuses it.

``sro.cli_args`` gives every flag one of these as its ``type``, and passes the flag's
environment fallback through it too (argparse checks a string default with ``type`` but
never against ``choices``), so a bad value is refused the same way from either, with one
line and exit 2.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
import urllib.parse
from pathlib import Path
from typing import Any

from sro.render import kinds

_TRUE = frozenset({"true", "1", "yes", "on", "t", "y"})
_FALSE = frozenset({"false", "0", "no", "off", "f", "n"})


def boolean(text: str) -> str:
    """``true`` or ``false`` from any of the usual spellings, in any case; else an error."""
    word = text.strip().lower()
    if word in _TRUE:
        return "true"
    if word in _FALSE:
        return "false"
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean (true/false, 1/0, yes/no, on/off)")


def one_of(*words: str) -> Any:
    def pick(text: str) -> str:
        word = text.strip().lower()
        if word not in words:
            raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(words)}")
        return word

    return pick


def positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return number


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def rate(text: str) -> float:
    """Requests per second: a number, 0 or more (0: no limit)."""
    number = _number(text)
    if not 0 <= number < 1e6:  # nan and inf fail too
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 (no limit) or a positive rate below 1e6")
    return number


def pace(text: str) -> float:
    """A pace: a number from 1 (back to back) to 100."""
    number = _number(text)
    if not 1 <= number <= 100:  # nan fails too
        raise argparse.ArgumentTypeError(f"{text!r} must be a number from 1 (back to back) to 100")
    return number


_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")


def bind_address(text: str) -> tuple[str, int] | None:
    """``host:port``, ``:port`` (every interface) or ``[ipv6]:port`` as (host, port); ``0`` is
    None (not served), as in controller-runtime."""
    if text.strip() == "0":
        return None
    host, colon, port = text.strip().rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        valid = _ip(host)
    else:
        valid = not host or _ip(host) or bool(_HOST.fullmatch(host))
    if not colon or not valid or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not host:port, :port or 0")
    return host, int(port)


def _ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def namespace(text: str) -> str:
    """A namespace name (a DNS label), refused here rather than by the API server later."""
    if not _DNS_LABEL.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a namespace name (a DNS label)")
    return text


def optional_namespace(text: str) -> str:
    return namespace(text) if text else ""


def existing_file(text: str) -> Path:
    """A file that exists (a missing one is a usage error, before anything is read)."""
    if not Path(text).is_file():
        why = "is not a regular file" if Path(text).exists() else "does not exist"
        raise argparse.ArgumentTypeError(f"{text!r} {why}")
    return Path(text)


def optional_file(text: str) -> str:
    return str(existing_file(text)) if text else ""


def existing(text: str) -> Path:
    """A file or a directory that exists."""
    if not Path(text).exists():
        raise argparse.ArgumentTypeError(f"{text!r} does not exist")
    return Path(text)


_PROXY_SCHEMES = frozenset({"http", "https", "socks5", "socks5h"})
_NO_PROXY_ENTRY = re.compile(
    r"\*|\.?[A-Za-z0-9*_-][A-Za-z0-9.*_-]*(:\d+)?"  # a host, a domain (.svc), an address
    r"|[0-9A-Fa-f:.]+/\d{1,3}"  # a CIDR
    r"|\[[0-9A-Fa-f:]+\](:\d+)?"  # an IPv6 address
)


def proxy(text: str) -> str:
    """Empty, or a proxy URL (``http://proxy:3128``; the scheme may be left out, as curl allows)."""
    if not text:
        return ""
    parts = urllib.parse.urlsplit(text if "://" in text else f"http://{text}")
    try:
        port = parts.port
    except ValueError:
        port = -1
    if (
        parts.scheme not in _PROXY_SCHEMES
        or not parts.hostname
        or port == -1
        or parts.path not in ("", "/")
        or any(c.isspace() for c in text)
    ):
        raise argparse.ArgumentTypeError(f"{text!r} is not a proxy URL (scheme://host:port)")
    return text


_REGISTRY_HOST = re.compile(r"[A-Za-z0-9.-]+(:[0-9]{1,5})?|\[[0-9A-Fa-f:]+\](:[0-9]{1,5})?")


def no_proxy(text: str) -> str:
    """Empty, or a comma-separated list of hosts, domains (``.svc``), addresses and CIDRs."""
    entries = [e.strip() for e in text.split(",")]
    if text and not all(_NO_PROXY_ENTRY.fullmatch(e) for e in entries if e):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of hosts, domains or CIDRs")
    return text


def registries(text: str) -> str:
    """Empty, ``*``, or a comma-separated list of registry hosts (with a port, if any)."""
    entries = [e.strip() for e in text.split(",") if e.strip()]
    if any(e != "*" and not _REGISTRY_HOST.fullmatch(e) for e in entries):
        raise argparse.ArgumentTypeError(f"{text!r} is not '*' or a comma-separated list of registry hosts")
    return ",".join(entries)


def api_version(text: str) -> str:
    try:
        kinds.parse_api_version(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text.strip()
