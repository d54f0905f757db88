"""What a resolver remembers between checks: tokens until they age, and each registry's way in."""

import pytest

from sro.images import challenge, credentials, reference, tokens

pytestmark = pytest.mark.unit

REF = reference.parse("reg.example/team/driver:1")
CRED = credentials.Credential(username="u", password="p", secret="s")
BEARER = challenge.parse('Bearer realm="https://auth.example/token",service="reg"')


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_token_is_used_for_most_of_its_life_for_its_scope_and_credential_only() -> None:
    clock = Clock()
    book = tokens.Book(clock=clock)
    book.keep(tokens.key(REF, CRED), "t1", expires_in=100)
    assert book.header(REF, CRED) == "Bearer t1"
    assert book.header(REF, None) == ""  # another credential
    assert book.header(reference.parse("reg.example/team/other:1"), CRED) == ""  # another repository
    clock.now = 89.9
    assert book.header(REF, CRED) == "Bearer t1"
    clock.now = 90.0
    assert book.header(REF, CRED) == ""


@pytest.mark.parametrize(("given", "used"), [(None, 54.0), (-5, 54.0), ("x", 54.0), (3600, 270.0), (10, 9.0)])
def test_a_tokens_lifetime_is_bounded(given: object, used: float) -> None:
    assert tokens.lifetime(given) == pytest.approx(used)


def test_a_registry_that_asked_for_basic_gets_the_credential_up_front() -> None:
    book = tokens.Book()
    book.learned("reg.example", challenge.parse('Basic realm="r"'))
    assert book.header(REF, CRED) == credentials.basic_header(CRED)
    assert book.header(REF, None) == ""
    book.learned("reg.example", BEARER)  # it changed its mind
    assert book.header(REF, CRED) == "" and book.bearer("reg.example") == BEARER


def test_what_is_remembered_is_bounded() -> None:
    book = tokens.Book(kept=2)
    for host in ("a.io", "b.io", "c.io"):
        book.learned(host, BEARER)
    assert book.bearer("a.io") is None and book.bearer("c.io") == BEARER
    for name in ("x", "y", "z"):
        book.keep(tokens.key(reference.parse(f"a.io/{name}"), None), name, expires_in=60)
    assert book.header(reference.parse("a.io/x"), None) == ""
    assert book.header(reference.parse("a.io/z"), None) == "Bearer z"
