"""What registries and pull secrets send sro is untrusted: its readers answer anything with
their own refusal, never another exception, and what they accept reads back the same.

Covered: image references (arbitrary text, and generated valid ones that must round-trip
through their canonical form), ``WWW-Authenticate`` values, pull secrets' ``data``, and a
registry's status and body. The time each takes is bounded by the suite's 30 s per test.
"""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sro.images import answers, challenge, credentials, reference

pytestmark = pytest.mark.unit

COMPONENT = st.from_regex(r"[a-z0-9]{1,6}([._-][a-z0-9]{1,6}){0,2}", fullmatch=True)
HOST = st.one_of(
    st.just("docker.io"),
    st.just("localhost"),
    st.from_regex(r"[a-z0-9]{1,8}(\.[a-z0-9]{1,8}){1,2}(:[0-9]{1,4})?", fullmatch=True),
    st.from_regex(r"127\.0\.0\.1:[0-9]{2,4}", fullmatch=True),
)
TAG = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}", fullmatch=True)
DIGEST = st.from_regex(r"sha256:[0-9a-f]{64}", fullmatch=True)
HOSTILE = st.text(
    alphabet=st.sampled_from(list("aA0:/@._-+ \"'\\,=\t\n\x00é[]*")) | st.characters(), max_size=400
)


@settings(max_examples=300, deadline=None)
@given(HOSTILE)
def test_any_text_is_a_reference_or_refused(text: str) -> None:
    try:
        ref = reference.parse(text)
    except reference.InvalidReference:
        return
    again = reference.parse(str(ref))
    assert (again.registry, again.repository, again.manifest) == (ref.registry, ref.repository, ref.manifest)


@settings(max_examples=300, deadline=None)
@given(HOST, st.lists(COMPONENT, min_size=1, max_size=3), st.none() | TAG, st.none() | DIGEST)
def test_valid_references_read_back_from_their_canonical_form(
    host: str, path: list[str], tag: str | None, digest: str | None
) -> None:
    text = f"{host}/{'/'.join(path)}" + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")
    ref = reference.parse(text)
    assert ref.tag == (tag or "") and ref.digest == (digest or "")
    assert reference.parse(str(ref)) == reference.Reference(
        registry=ref.registry,
        repository=ref.repository,
        tag=ref.tag or ("" if ref.digest else "latest"),  # a digest alone is what is pulled
        digest=ref.digest,
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(HOSTILE, st.builds(lambda t: "Bearer " + t, HOSTILE)), max_size=3))
def test_any_www_authenticate_is_a_challenge_or_refused(headers: list[str]) -> None:
    try:
        asked = challenge.pick(headers)
    except challenge.InvalidChallenge:
        return
    if asked.scheme is challenge.Scheme.BEARER:
        assert challenge.token_url(asked, repository="a/b").startswith(("http://", "https://"))


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(JSONISH, st.dictionaries(st.text(max_size=20), JSONISH, max_size=3).map(lambda d: {"auths": d}))
)
def test_any_pull_secret_is_read_or_said_unreadable(document: object) -> None:
    encoded = base64.b64encode(json.dumps(document).encode()).decode()
    secret = credentials.PullSecret(name="s", data={credentials.DOCKERCONFIGJSON: encoded})
    found, problems = credentials.entries(secret)
    assert all(isinstance(line, str) for line in problems)
    credentials.pick([secret], reference.parse("reg.example/a"))
    assert all(e.credential.secret == "s" for e in found)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=100, max_value=599), st.text(max_size=100), st.binary(max_size=2000))
def test_any_registry_answer_is_classified_with_bounded_words(status: int, digest: str, body: bytes) -> None:
    got = answers.classify(image="i", status=status, digest=digest, body=body)
    assert len(got.detail) <= answers.DETAIL_LIMIT and "\n" not in got.detail
    assert got.exists == (status == 200 and answers.is_digest(digest))
    if status >= 500:
        assert got.outcome is answers.Outcome.UNREACHABLE
