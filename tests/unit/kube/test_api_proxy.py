"""The API server's proxy comes from the environment once; no request reads ``~/.netrc``."""

from __future__ import annotations

import pytest

from sro.kube import config, credentials, http


def test_env_proxy_names_the_scheme_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert config.env_proxy("https://api.example:6443") == "http://proxy.example:3128"


def test_no_proxy_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "api.example")
    assert config.env_proxy("https://api.example:6443") is None


def test_no_proxy_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert config.env_proxy("https://127.0.0.1:6443") is None


async def test_session_does_not_trust_the_environment() -> None:
    endpoint = config.Endpoint(
        host="http://127.0.0.1:1",
        tls=None,
        server_hostname=None,
        proxy=None,
        credentials=credentials.NoToken(),
    )
    session = http._session(endpoint, pool_size=3)
    try:
        assert session.trust_env is False
        assert session.connector is not None and session.connector.limit == 3
    finally:
        await session.close()


pytestmark = pytest.mark.unit
