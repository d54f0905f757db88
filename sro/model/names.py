"""Kubernetes name and label syntax, checked the way the API server checks it.

The SpecialResource, recipes and the hooks all build names and label keys from user
input (an SR name inside a label key, a kernel inside an object name); checking them
here, once, keeps an invalid write from ever reaching the API server.
"""

from __future__ import annotations

import hashlib
import re

DNS_LABEL_MAX = 63
DNS_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_INVALID_LABEL_CHARS = re.compile(r"[^a-z0-9-]+")


def is_dns_label(value: str, *, max_length: int = DNS_LABEL_MAX) -> bool:
    """RFC 1123 label: lowercase alphanumerics and '-', alphanumeric at both ends."""
    return 0 < len(value) <= max_length and _DNS_LABEL.fullmatch(value) is not None


def is_dns_subdomain(value: str) -> bool:
    """RFC 1123 subdomain: dot-separated labels, at most 253 characters."""
    return 0 < len(value) <= DNS_SUBDOMAIN_MAX and _DNS_SUBDOMAIN.fullmatch(value) is not None


def label_key_problem(key: str) -> str | None:
    """Why ``key`` is not a valid label (or annotation) key, or None if it is."""
    prefix, slash, name = key.rpartition("/")
    if slash and not is_dns_subdomain(prefix):
        return f"prefix {prefix!r} is not a DNS subdomain"
    if not name or len(name) > 63 or _LABEL_NAME.fullmatch(name) is None:
        return f"name {name!r} must be 1-63 alphanumerics, '-', '_' or '.', alphanumeric at both ends"
    return None


def label_value_problem(value: str) -> str | None:
    """Why ``value`` is not a valid label value, or None if it is (empty is valid)."""
    if value == "":
        return None
    if len(value) > LABEL_VALUE_MAX or _LABEL_NAME.fullmatch(value) is None:
        return "must be at most 63 alphanumerics, '-', '_' or '.', alphanumeric at both ends"
    return None


def short_hash(text: str, *, length: int = 8) -> str:
    """A stable hex digest prefix: the same text always gives the same suffix."""
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def sanitise(text: str) -> str:
    """``text`` reduced to DNS-label characters: lowercase, runs of anything else -> '-'."""
    return _INVALID_LABEL_CHARS.sub("-", text.lower()).strip("-")


def suffixed(base: str, readable: str, *, identity: str, limit: int = DNS_LABEL_MAX) -> str:
    """``<base>-<readable>-<hash>`` as a valid DNS label of at most ``limit`` characters.

    The hash is of ``identity``, so two different identities never share a name even
    when their readable parts sanitise or truncate to the same text. The readable part
    is cut first, then the base; the hash is always kept whole.
    """
    digest = short_hash(identity)
    part = sanitise(readable)
    room = limit - len(digest) - 1
    base = sanitise(base)[: max(1, room - 1)].rstrip("-") or "x"
    room -= len(base)
    part = part[: max(0, room - 1)].strip("-")
    pieces = [base, part, digest] if part else [base, digest]
    return "-".join(pieces)
