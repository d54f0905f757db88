"""What registry answers mean, how long they are kept, and which proxy a request takes."""

import pytest

from sro import settings
from sro.images import answers, cache, client, proxies
from sro.render import values

pytestmark = pytest.mark.unit

DIGEST = "sha256:" + "b" * 64


def test_a_200_with_a_digest_exists() -> None:
    got = answers.classify(image="i", status=200, digest=DIGEST)
    assert got.exists and got.digest == DIGEST
    assert got.describe() == f"exists {DIGEST}"


def test_a_200_without_a_valid_digest_is_not_trusted() -> None:
    assert answers.classify(image="i", status=200, digest="md5:x").outcome is answers.Outcome.UNREACHABLE


@pytest.mark.parametrize(
    ("status", "body", "outcome", "detail"),
    [
        (404, b'{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}', "missing",
         "MANIFEST_UNKNOWN: manifest unknown"),
        (404, b'{"errors":[{"code":"NAME_UNKNOWN","message":"repository name not known"}]}', "missing",
         "NAME_UNKNOWN: repository name not known"),
        (404, b"", "missing", "HTTP 404"),
        (401, b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}', "unauthorized",
         "UNAUTHORIZED: authentication required"),
        (403, b"", "unauthorized", "HTTP 403"),
        (500, b"internal error\n\n", "unreachable", "HTTP 500: internal error"),
        (503, b'{"errors":[{"code":"UNAVAILABLE","message":"down"}]}', "unreachable", "UNAVAILABLE: down"),
        (429, b'{"errors":[{"code":"TOOMANYREQUESTS"}]}', "unreachable", "TOOMANYREQUESTS"),
        (400, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}', "missing", "MANIFEST_UNKNOWN"),
        (502, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}', "unreachable", "MANIFEST_UNKNOWN"),
    ],
)  # fmt: skip
def test_error_answers_keep_the_registrys_words(status: int, body: bytes, outcome: str, detail: str) -> None:
    got = answers.classify(image="i", status=status, digest="", body=body)
    assert (got.outcome, got.detail, got.status) == (outcome, detail, status)


def test_a_peers_words_are_cut_short_on_one_line() -> None:
    got = answers.classify(image="i", status=500, digest="", body=b"x\n" * 10_000)
    assert len(got.detail) <= answers.DETAIL_LIMIT and "\n" not in got.detail


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_answers_age_by_what_they_say() -> None:
    clock = Clock()
    kept = cache.AnswerCache(cache.Policy(exists_ttl=300, missing_ttl=30, unreachable_ttl=10), clock=clock)
    kept.put(("a", ""), answers.Answer(image="a", outcome=answers.Outcome.EXISTS, digest=DIGEST))
    kept.put(("m", ""), answers.Answer(image="m", outcome=answers.Outcome.MISSING))
    kept.put(("u", ""), answers.unreachable(image="u", detail="refused"))
    clock.now = 9.9
    assert all(kept.get((k, "")) is not None for k in "amu")
    clock.now = 10.0
    assert kept.get(("u", "")) is None and kept.get(("m", "")) is not None
    clock.now = 30.0
    assert kept.get(("m", "")) is None and kept.get(("a", "")) is not None
    clock.now = 300.0
    assert kept.get(("a", "")) is None
    assert len(kept) == 0


def test_the_cache_is_bounded_and_drops_the_least_recently_used() -> None:
    kept = cache.AnswerCache(cache.Policy(max_entries=2), clock=Clock())
    for name in ("a", "b"):
        kept.put((name, ""), answers.Answer(image=name, outcome=answers.Outcome.MISSING))
    assert kept.get(("a", "")) is not None  # "b" is now the least recently used
    kept.put(("c", ""), answers.Answer(image="c", outcome=answers.Outcome.MISSING))
    assert kept.get(("b", "")) is None and kept.get(("a", "")) is not None and len(kept) == 2
    kept.forget("a")
    assert kept.get(("a", "")) is None


def test_answers_are_kept_per_credential() -> None:
    kept = cache.AnswerCache(cache.Policy(), clock=Clock())
    kept.put(("i", ""), answers.Answer(image="i", outcome=answers.Outcome.UNAUTHORIZED))
    assert kept.get(("i", "fingerprint")) is None


PROXY = values.ProxySettings(
    http="http://p:3128", https="http://ps:3128", no_proxy="internal.example, .corp,10.0.0.0/8,q.io:5000"
)


@pytest.mark.parametrize(
    ("url", "proxy"),
    [
        ("https://quay.io/v2/", "http://ps:3128"),
        ("http://quay.io/v2/", "http://p:3128"),
        ("https://internal.example/v2/", None),
        ("https://reg.internal.example/v2/", None),
        ("https://notinternal.example/v2/", "http://ps:3128"),
        ("https://a.corp/v2/", None),
        ("https://10.1.2.3/v2/", None),
        ("https://11.1.2.3/v2/", "http://ps:3128"),
        ("https://q.io:5000/v2/", None),
        ("https://q.io/v2/", "http://ps:3128"),
        ("http://127.0.0.1:5000/v2/", None),
        ("http://localhost:5000/v2/", None),
    ],
)
def test_the_proxy_is_chosen_as_go_chooses_it(url: str, proxy: str | None) -> None:
    assert proxies.for_url(url, PROXY) == proxy


def test_a_star_or_no_setting_means_direct() -> None:
    assert proxies.for_url("https://q.io/", values.ProxySettings(https="http://p", no_proxy="*")) is None
    assert proxies.for_url("https://q.io/", values.ProxySettings()) is None


def test_the_operator_asks_registries_through_its_own_proxy_flags() -> None:
    operator = settings.OperatorSettings(http_proxy="http://p", https_proxy="http://ps", no_proxy=".corp")
    chosen = client.Settings.for_operator(operator).proxy
    assert proxies.for_url("https://q.io/v2/", chosen) == "http://ps"
    assert proxies.for_url("https://r.corp/v2/", chosen) is None
