"""Watch lines as sro splits them: every line whole, a line past the bound skipped and counted."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sro.kube import watchlines

pytestmark = pytest.mark.unit


class _Protocol:
    """What a rest touches of a connection: its reading, paused and resumed."""

    def __init__(self, *, connected: bool) -> None:
        self.connected = connected
        self.calls: list[str] = []

    def pause_reading(self) -> None:
        self.calls.append("pause")

    def resume_reading(self) -> None:
        self.calls.append("resume")


class _Connection:
    def __init__(self, protocol: _Protocol) -> None:
        self.protocol = protocol


class _Body:
    """What ``_lines`` reads of a response: its content, in the chunks a socket gave."""

    def __init__(self, chunks: Sequence[bytes], connection: _Connection | None = None) -> None:
        self.content = self
        self.connection = connection
        self._chunks = chunks

    async def iter_any(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


async def _split(chunks: Sequence[bytes]) -> tuple[list[bytes], int]:
    skipped = 0

    def count() -> None:
        nonlocal skipped
        skipped += 1

    lines = [
        line async for line in watchlines.lines(cast(Any, _Body(chunks)), "/api/v1/configmaps", skipped=count)
    ]
    return lines, skipped


async def test_lines_split_across_chunks_come_out_whole() -> None:
    lines, skipped = await _split([b'{"a":', b'1}\n{"b"', b":2}\n", b'{"c":3}'])
    assert lines == [b'{"a":1}', b'{"b":2}', b'{"c":3}']
    assert skipped == 0


@given(
    st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=12),
    st.booleans(),
    st.lists(st.integers(0, 60), max_size=20),
)
async def test_any_reads_give_the_lines_their_bytes_hold(
    lines: list[bytes], end: bool, cuts: list[int]
) -> None:
    # Lines whole in one read, begun in one and ended in another, empty, and the last one
    # without its newline: each comes out as it went in.
    data = b"\n".join(lines) + (b"\n" if end else b"")
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    chunks = [data[a:b] for a, b in itertools.pairwise(bounds)]
    got, skipped = await _split(chunks)
    expected = data.split(b"\n")
    if expected[-1] == b"":
        expected.pop()
    assert got == expected and skipped == 0
    assert all(type(line) is bytes for line in got)


async def test_a_line_past_the_bound_is_skipped_whole_and_counted_and_the_next_one_kept() -> None:
    piece = b"x" * (1024 * 1024)
    too_long = [piece] * (watchlines.MAX_LINE_BYTES // len(piece) + 2)
    lines, skipped = await _split([b'{"before":1}\n', *too_long, b'tail\n{"after":2}\n'])
    assert lines == [b'{"before":1}', b'{"after":2}']
    assert skipped == 1


async def test_a_reader_that_rests_is_asked_after_each_read_with_its_size() -> None:
    asked: list[int] = []

    def rest(read: int) -> float:
        asked.append(read)
        return 0.001 if read < 10 else 0.0  # rest after a small read

    chunks = [b'{"a":1}\n', b'{"b":2}\n', b'{"c":3}\n{"d":4}\n', b'{"e":5}']
    lines = [
        line
        async for line in watchlines.lines(
            cast(Any, _Body(chunks)), "/api/v1/nodes", skipped=lambda: None, rest=rest
        )
    ]
    assert lines == [b'{"a":1}', b'{"b":2}', b'{"c":3}', b'{"d":4}', b'{"e":5}']
    assert asked == [8, 8, 16, 7]


@pytest.mark.parametrize("connected", [True, False])
async def test_a_rest_pauses_a_live_connection_and_resumes_it_and_leaves_a_lost_one_alone(
    connected: bool,
) -> None:
    protocol = _Protocol(connected=connected)
    body = _Body([b'{"a":1}\n', b'{"b":2}\n'], connection=_Connection(protocol))
    lines = [
        line
        async for line in watchlines.lines(
            cast(Any, body), "/api/v1/nodes", skipped=lambda: None, rest=lambda read: 0.001
        )
    ]
    assert lines == [b'{"a":1}', b'{"b":2}']
    assert protocol.calls == (["pause", "resume"] * 2 if connected else [])
