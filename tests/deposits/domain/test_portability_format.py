"""The atlaso-export reader and mem0's mapping, without a database (deposits.domain.portability)."""

from __future__ import annotations

import gzip
import io
import json
from datetime import UTC, datetime

import pytest

from deposits.domain import portability as fmt

NOW = datetime(2026, 12, 5, tzinfo=UTC)


def lines(body: bytes) -> list[tuple[int, str | None]]:
    return [(line.number, line.error) for line in fmt.read_lines(io.BytesIO(body).read)]


def test_lines_are_numbered_as_in_the_body_blank_ones_skipped_and_a_cut_last_one_named():
    body = b'{"kind": "a"}\n\n{"kind": "b"}\r\n{"kind": "c", "cut'
    assert lines(body) == [(1, None), (3, None), (4, "the line is cut short (the body ends inside it)")]
    assert lines(b'{"kind": "a"}\n{"kind": "b"}') == [(1, None), (2, None)]  # no newline at the end
    assert lines(b'[1, 2]\n"text"\n{"no": "kind"}\n') == [
        (n, 'the line is not a JSON object with a "kind"') for n in (1, 2, 3)
    ]


def test_a_line_past_the_bound_fails_alone_and_the_next_is_read():
    huge = b'{"kind": "deposit", "content": "' + b"x" * (fmt.MAX_LINE_BYTES + 10) + b'"}'
    assert lines(huge + b'\n{"kind": "ok"}\n') == [(1, "the line is longer than 1,048,576 bytes"), (2, None)]
    assert lines(b'{"kind": "ok"}\n' + huge) == [(1, None), (2, "the line is longer than 1,048,576 bytes")]


def test_gzip_is_read_by_its_first_bytes_several_members_too():
    body = b"".join(json.dumps({"kind": "x", "n": n}).encode() + b"\n" for n in range(3000))
    assert len(lines(gzip.compress(body))) == 3000
    assert len(lines(gzip.compress(body[:40_000]) + gzip.compress(body[40_000:]))) == 3000


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"\x1f\x8b\x08 not gzip", "is not gzip"),
        (gzip.compress(b'{"kind": "x"}\n' * 5000)[:-20], "cut short"),
        (gzip.compress(b'{"kind": "x"}\n') + b"trailing junk", "after the end of its gzip stream"),
    ],
)
def test_a_body_that_is_not_the_gzip_it_announces_is_broken_input(body, says):
    with pytest.raises(fmt.BrokenInput, match=says):
        list(fmt.read_lines(io.BytesIO(body).read))


def test_the_body_is_bounded_inflated_too():
    with pytest.raises(fmt.BrokenInput, match="larger than this server reads"):
        list(fmt.read_lines(io.BytesIO(gzip.compress(b'{"kind": "x"}\n' * 100_000)).read, limit=1_000_000))


def test_the_header_must_be_the_first_line_and_version_1():
    assert fmt.parse_header({"kind": "atlaso_export", "version": 1}, None) is None
    assert "version 2" in fmt.parse_header({"kind": "atlaso_export", "version": 2}, None)
    assert "version True" in fmt.parse_header({"kind": "atlaso_export", "version": True}, None)
    assert "kind 'deposit'" in fmt.parse_header({"kind": "deposit"}, None)


def test_times_need_an_offset_and_may_not_lie_ahead_of_the_clock():
    assert fmt.parse_time("2025-01-01T00:00:00+02:00", "t", now=NOW) == datetime(2024, 12, 31, 22, tzinfo=UTC)
    for bad, says in (
        ("2025-01-01T00:00:00", "no offset"),
        ("yesterday", "not an ISO 8601"),
        ("2027-01-01T00:00:00Z", "future"),
    ):
        with pytest.raises(fmt.LineError, match=says):
            fmt.parse_time(bad, "t", now=NOW)


def test_a_mem0_memory_is_an_open_anecdotal_claim_its_metadata_tags_its_id_kept():
    memory = {
        "id": "m-1", "memory": "Likes tea", "created_at": "2025-01-01T10:00:00-08:00",
        "updated_at": "2025-02-01T10:00:00-08:00", "metadata": {"b": 2, "a": "x" * 80, "c": ["p", "q"]},
    }  # fmt: skip
    line = fmt.mem0_line(memory, now=NOW)
    assert (line["kind"], line["polarity"], line["evidence_grade"], line["content"]) == (
        "deposit",
        "open",
        "anecdotal",
        "Likes tea",
    )
    assert line["artifact_refs"] == ["mem0:m-1"]
    assert line["tags"] == ["mem0:a=" + "x" * 56 + "…", "mem0:b=2", 'mem0:c=["p", "q"]']
    assert all(len(tag) <= 64 for tag in line["tags"])
    assert line["created_at"] == "2025-02-01T10:00:00-08:00"  # the latest text's time
    assert fmt.mem0_line(memory, now=NOW)["id"] == line["id"]  # the same memory, the same id
    naive = fmt.mem0_line({**memory, "updated_at": "2025-03-01T10:00:00"}, now=NOW)
    assert naive["created_at"] == "2025-03-01T10:00:00+00:00"
    assert [len(fmt.mem0_memories(doc)) for doc in ({"results": [memory]}, [memory])] == [1, 1]
    with pytest.raises(fmt.LineError, match="get_all"):
        fmt.mem0_memories({"memories": []})


@pytest.mark.parametrize(
    "raw",
    [
        b'{"kind": "deposit", "content": "caf\\u00e9 \xe2\x98\x95", "n": 1.0000000000000002}',
        b'{"kind": "deposit", "a": 1, "a": 2}',
        # What orjson reads otherwise, or not at all: json's reading (or refusal) is the line's.
        b'{"kind": "deposit", "content": "\\ud800"}',
        b'{"kind": "deposit", "n": NaN, "m": 1e400}',
        b'{"kind": "deposit", "n": 123456789012345678901234567890}',
        b'{"kind": "deposit", "n": -9223372036854775809}',
        b'{"kind": "deposit", "n": 18446744073709551615}',
        b'{"kind": "deposit"',
        b"\xff\xfe{}",
    ],
)
def test_a_line_reads_as_pythons_json_reads_it(raw):
    def reading(loads):
        try:
            return repr(loads(raw))
        except ValueError as error:
            return f"{type(error).__name__}: {error}"

    assert reading(fmt.loads) == reading(json.loads)
