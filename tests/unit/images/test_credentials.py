"""Choosing the pull secret credential the kubelet would send, from untrusted secrets."""

import base64
import json
from typing import Any

import pytest

from sro.images import credentials, reference

pytestmark = pytest.mark.unit


def secret(name: str, auths: dict[str, Any], *, legacy: bool = False) -> credentials.PullSecret:
    document = auths if legacy else {"auths": auths}
    key = credentials.DOCKERCFG if legacy else credentials.DOCKERCONFIGJSON
    return credentials.PullSecret(
        name=name, data={key: base64.b64encode(json.dumps(document).encode()).decode()}
    )


def auth(user: str, password: str) -> dict[str, str]:
    return {"auth": base64.b64encode(f"{user}:{password}".encode()).decode()}


def chosen(secrets: list[credentials.PullSecret], image: str) -> str | None:
    found = credentials.pick(secrets, reference.parse(image))
    return None if found is None else f"{found.secret}:{found.username}"


def test_the_entry_for_the_images_registry_is_chosen() -> None:
    secrets = [secret("a", {"quay.io": auth("q", "1"), "127.0.0.1:5000": auth("l", "2")})]
    assert chosen(secrets, "127.0.0.1:5000/x/y:t") == "a:l"
    assert chosen(secrets, "quay.io/x") == "a:q"
    assert chosen(secrets, "127.0.0.1:5001/x") is None  # another port is another registry
    assert chosen(secrets, "ghcr.io/x") is None


def test_docker_hub_keys_in_every_spelling_match_docker_hub_images() -> None:
    for key in ("https://index.docker.io/v1/", "docker.io", "registry-1.docker.io"):
        assert chosen([secret("s", {key: auth("u", "p")})], "busybox") == "s:u"


def test_the_most_specific_key_wins_then_the_earlier_secret() -> None:
    secrets = [
        secret("wild", {"*.example.com": auth("w", "1")}),
        secret("host", {"reg.example.com": auth("h", "1")}),
        secret("path", {"reg.example.com/team": auth("p", "1")}),
        secret("late", {"reg.example.com/team": auth("l", "1")}),
    ]
    assert chosen(secrets, "reg.example.com/team/img") == "path:p"
    assert chosen(secrets, "reg.example.com/other/img") == "host:h"
    assert chosen(secrets, "other.example.com/img") == "wild:w"
    assert chosen(secrets, "a.b.example.com/img") is None  # a wildcard is one label
    assert chosen(secrets, "reg.example.com/teamster/img") == "host:h"  # a path prefix ends at a '/'


def test_username_and_password_fields_and_legacy_dockercfg_are_read() -> None:
    assert chosen([secret("s", {"q.io": {"username": "u", "password": "p"}})], "q.io/x") == "s:u"
    assert chosen([secret("old", {"https://q.io": auth("o", "p")}, legacy=True)], "q.io/x") == "old:o"


def test_unreadable_secrets_are_skipped_and_said() -> None:
    broken = [
        credentials.PullSecret(name="notjson", data={credentials.DOCKERCONFIGJSON: "bm90IGpzb24="}),
        credentials.PullSecret(name="notb64", data={credentials.DOCKERCONFIGJSON: "%%%"}),
        credentials.PullSecret(name="other", data={"token": "eA=="}),
        secret("badauth", {"q.io": {"auth": "!!!"}, "r.io": 3, "[": auth("x", "y")}),
        secret("good", {"q.io": auth("g", "p")}),
    ]
    assert chosen(broken, "q.io/x") == "good:g"
    lines = credentials.problems(broken)
    assert [line.split(":")[0] for line in lines] == [
        "secret notjson",
        "secret notb64",
        "secret other",
        "secret badauth",
        "secret badauth",
        "secret badauth",
    ]


def test_a_credential_never_shows_its_password() -> None:
    found = credentials.pick([secret("s", {"q.io": auth("u", "hunter2")})], reference.parse("q.io/x"))
    assert found is not None
    assert "hunter2" not in repr(found)
    assert found.fingerprint != credentials.Credential(username="u", password="other", secret="s").fingerprint


def test_a_secret_nested_past_the_recursion_limit_is_skipped_and_said() -> None:
    deep = base64.b64encode(b"[" * 200_000 + b"]" * 200_000).decode()
    nested = credentials.PullSecret(name="deep", data={credentials.DOCKERCONFIGJSON: deep})
    good = secret("good", {"q.io": auth("g", "p")})
    assert chosen([nested, good], "q.io/x") == "good:g"
    assert [line.split(":")[0] for line in credentials.problems([nested])] == ["secret deep"]
