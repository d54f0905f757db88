"""Reading WWW-Authenticate and building the token request (quoted values, bounds, preference)."""

import pytest

from sro.images import challenge

pytestmark = pytest.mark.unit


def test_a_bearer_challenge_gives_realm_service_and_scope() -> None:
    got = challenge.parse(
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",'
        'scope="repository:library/ubuntu:pull"'
    )
    assert got.scheme is challenge.Scheme.BEARER
    assert got.realm == "https://auth.docker.io/token"
    assert got.params["scope"] == "repository:library/ubuntu:pull"
    url = challenge.token_url(got, repository="library/ubuntu")
    assert url == (
        "https://auth.docker.io/token?service=registry.docker.io&scope=repository%3Alibrary%2Fubuntu%3Apull"
    )


def test_a_scope_is_asked_for_the_repository_when_the_registry_names_none() -> None:
    got = challenge.parse('Bearer realm="http://127.0.0.1:1/t?x=1", service=reg')
    assert got.params["service"] == "reg"
    assert (
        challenge.token_url(got, repository="a/b")
        == "http://127.0.0.1:1/t?x=1&service=reg&scope=repository%3Aa%2Fb%3Apull"
    )


def test_quoted_values_keep_commas_and_escapes() -> None:
    got = challenge.parse(r'Basic realm="a, \"b\""')
    assert got.scheme is challenge.Scheme.BASIC
    assert got.realm == 'a, "b"'


def test_bearer_is_preferred_over_basic() -> None:
    got = challenge.pick(['Basic realm="r"', 'Bearer realm="https://t/x"'])
    assert got.scheme is challenge.Scheme.BEARER


@pytest.mark.parametrize(
    "header",
    [
        "Negotiate abc",
        'Bearer realm="file:///etc/passwd"',
        'Bearer realm="https://[::1/t"',
        'Bearer realm="https://h:99999/t"',
        'Bearer realm="https://t/x' + '"' + "," * 3,
        "Bearer " + ",".join(f'k{i}="v"' for i in range(40)),
        'Bearer realm="' + "x" * 20000 + '"',
    ],
)
def test_what_cannot_be_answered_is_refused(header: str) -> None:
    with pytest.raises(challenge.InvalidChallenge):
        challenge.pick([header])


def test_no_header_at_all_is_refused() -> None:
    with pytest.raises(challenge.InvalidChallenge, match="without a WWW-Authenticate"):
        challenge.pick([])


def test_a_scope_remembered_from_another_repository_is_not_reused() -> None:
    got = challenge.parse('Bearer realm="https://t/x",scope="repository:team/a:pull"')
    assert challenge.token_url(got, repository="team/a").endswith("scope=repository%3Ateam%2Fa%3Apull")
    assert challenge.token_url(got, repository="team/b").endswith("scope=repository%3Ateam%2Fb%3Apull")
