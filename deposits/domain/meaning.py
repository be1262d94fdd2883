"""Recall by meaning's rules: storing and comparing vectors, the similarity floor, rank fusion.

The fusion merges the two rankings, by words and by meaning, into one; recall-by-meaning.md
describes the whole.

A vector is kept twice over: as int8 (its direction, which is all cosine reads, to within a
fraction of a percent) and as a binary code, one bit per dimension, set where the vector lies
above the model's centre. Codes compared by Hamming distance pick the candidates cheaply; the
int8 vectors then rank the candidates exactly. Centring matters: a text model's vectors share a
large common component (any two e5 passages have cosine ≈ 0.7), so the sign of a raw dimension
says almost nothing about a text, while its sign about the centre splits the texts in two.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from deposits.domain.recall import Candidate

# Reciprocal rank fusion's constant: a hit ranked r-th (from 1) in a ranking adds 1 / (k + r).
RRF_K = 60
# Recall's modes, each with what it finds (the client and the MCP tool say the same: pinned).
MODE_MEANINGS = {
    "words": "full text: the claims that share a word with the query",
    "meaning": "embeddings: the claims that say what the query asks, in any words",
    "hybrid": "both rankings, fused by reciprocal rank",
}
MODES = tuple(MODE_MEANINGS)
MATCHED_BY = ("words", "meaning", "both")


def unit(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (a zero row stays zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


def quantized(vector: np.ndarray) -> bytes:
    """The vector as int8, scaled so its largest component is ±127: its direction, in a byte a dimension."""
    vector = np.asarray(vector, dtype=np.float32)
    peak = float(np.max(np.abs(vector))) or 1.0
    return np.clip(np.rint(vector * (127.0 / peak)), -127, 127).astype(np.int8).tobytes()


def dequantized(blobs: Sequence[bytes], dims: int) -> np.ndarray:
    """Unit float32 rows back from `quantized` blobs."""
    if not blobs:
        return np.zeros((0, dims), dtype=np.float32)
    raw = np.frombuffer(b"".join(bytes(blob) for blob in blobs), dtype=np.int8).reshape(len(blobs), dims)
    return unit(raw.astype(np.float32))


def code_bytes(dims: int) -> int:
    """Bytes of a binary code: one bit per dimension, padded to whole 64-bit words."""
    return -(-dims // 64) * 8


def binary_code(vector: np.ndarray, centre: np.ndarray) -> bytes:
    """One bit per dimension, set where the vector lies above the model's centre."""
    bits = np.packbits(np.asarray(vector, dtype=np.float32) > centre)
    return bits.tobytes().ljust(code_bytes(len(centre)), b"\0")


def code_columns(codes: Sequence[bytes], dims: int) -> np.ndarray:
    """Binary codes as uint64 columns, one row per 64 dimensions: `hamming` reads each row whole."""
    words = code_bytes(dims) // 8
    if not codes:
        return np.zeros((words, 0), dtype=np.uint64)
    return np.frombuffer(b"".join(codes), dtype=np.uint64).reshape(len(codes), words).T.copy()


def hamming(columns: np.ndarray, code: bytes) -> np.ndarray:
    """Bits in which each code (a column of `columns`) differs from `code`."""
    probe = np.frombuffer(code, dtype=np.uint64)
    distances = np.bitwise_count(columns[0] ^ probe[0]).astype(np.int32)
    for word in range(1, len(probe)):
        distances += np.bitwise_count(columns[word] ^ probe[word])
    return distances


def nearest(distances: np.ndarray, count: int) -> np.ndarray:
    """Positions of `count` smallest distances (small whole numbers), nearest first by distance.

    A histogram finds the distance the `count`-th lies at, so no sort of every distance is needed."""
    if count >= len(distances):
        return np.argsort(distances, kind="stable")
    cumulative = np.cumsum(np.bincount(distances))
    edge = int(np.searchsorted(cumulative, count))
    closer = np.flatnonzero(distances < edge)
    at_edge = np.flatnonzero(distances == edge)[: count - len(closer)]
    return np.concatenate([closer, at_edge])


# The calibration set, embedded once per model: thirty-two claims an agent might keep and
# thirty-two questions about things none of them mentions. The highest similarity between any
# question and any claim is the model's floor: a deposit found by meaning alone must come
# closer to the query than that, so a query about something the memory never held finds few or
# no deposits by meaning. The claims also give the model's centre.
CALIBRATION_PASSAGES = (
    "The invoice for March was paid two weeks late because the card on file had expired.",
    "Our cat knocks glasses off the kitchen table every morning around six.",
    "The deployment to the eu-west region was rolled back after error rates doubled.",
    "She practices the cello for an hour before work most days.",
    "The soup needs more salt and a squeeze of lemon before serving.",
    "Heavy rain flooded the basement of the old library last night.",
    "The quarterly report shows revenue up eight percent on last year.",
    "He switched from running to swimming after injuring his knee.",
    "The model over-flags fraud on transactions from new accounts.",
    "Tickets for the opera go on sale on the first of the month.",
    "The garden's tomatoes ripened early thanks to the warm spring.",
    "My grandmother taught me to knit scarves when I was seven.",
    "The train to the airport was cancelled because of a signal failure.",
    "We replaced the office printer; the new one jams less often.",
    "The patient reported mild headaches after the dose was increased.",
    "The bridge will be closed for repairs until the end of September.",
    "The kids built a sandcastle with a moat on the beach.",
    "A new bakery opened on the corner and sells sourdough on Saturdays.",
    "The contract renewal requires approval from the legal team.",
    "He prefers dark roast coffee with oat milk and no sugar.",
    "The museum's dinosaur exhibit drew record crowds this summer.",
    "Our team moved the weekly meeting from Monday to Wednesday.",
    "The laptop battery drains fast when the video editor is open.",
    "The referee sent off two players in the second half.",
    "She is allergic to peanuts and carries an epinephrine pen.",
    "The database migration added an index on the orders table.",
    "They adopted a rescue dog named Biscuit last winter.",
    "The hiking trail to the waterfall is steep but well marked.",
    "Interest rates were left unchanged at the central bank's meeting.",
    "The novel's ending surprised every reader in the book club.",
    "The thermostat is set to nineteen degrees at night.",
    "He's learning Japanese with flashcards on his commute.",
)
CALIBRATION_QUERIES = (
    "how do volcanoes form underground magma chambers",
    "rules of cricket leg before wicket",
    "what is the capital city of Mongolia",
    "proof of the Pythagorean theorem",
    "best practices for pruning apple trees in winter",
    "symptoms of altitude sickness when climbing",
    "history of the Ottoman empire's navy",
    "how does a jet engine produce thrust",
    "chess opening for beginners with black pieces",
    "photosynthesis light dependent reactions explained",
    "which planets have rings in the solar system",
    "how to tune a ukulele by ear",
    "tax rules for selling a house abroad",
    "migration patterns of arctic terns",
    "difference between baroque and renaissance architecture",
    "how to change a flat bicycle tyre",
    "origin of the word algorithm",
    "what do pandas eat in the wild",
    "how submarines control their depth",
    "lyrics of a famous sea shanty",
    "quantum entanglement simple explanation",
    "how glaciers carve valleys",
    "recipe for Moroccan tagine with apricots",
    "who painted the ceiling of the Sistine Chapel",
    "how to train for a triathlon",
    "why is the sky blue at noon",
    "how are diamonds formed in the earth",
    "the rules of sumo wrestling",
    "how bees communicate with a waggle dance",
    "what is the population of Iceland",
    "how to write a haiku",
    "how coral reefs are bleached",
)


@dataclass(frozen=True, slots=True)
class Calibration:
    """What recall by meaning needs to know of a model: its dimensions, centre and floor."""

    dims: int
    centre: np.ndarray
    floor: float


def calibrated(passages: np.ndarray, queries: np.ndarray) -> Calibration:
    """The model's calibration from its vectors of CALIBRATION_PASSAGES and CALIBRATION_QUERIES."""
    passages, queries = unit(passages), unit(queries)
    similarities = queries @ passages.T
    return Calibration(
        dims=passages.shape[1],
        centre=passages.mean(axis=0).astype(np.float32),
        floor=float(similarities.max()),
    )


def rrf_scores(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """Reciprocal rank fusion: each id's sum over the rankings of 1 / (k + its rank from 1)."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for place, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + place)
    return fused


def ranked(candidates: Sequence[Candidate]) -> list[str]:
    """Candidates' ids by score, best first (ties by id, as recall breaks them)."""
    return [c.id for c in sorted(candidates, key=lambda c: (-c.score, c.id))]


def fused(words: Sequence[Candidate], meaning: Sequence[Candidate]) -> tuple[list[Candidate], dict[str, str]]:
    """The hybrid ranking: the candidates of either ranking, scored by reciprocal rank fusion.

    Returns, with the candidates, which rankings found each (`matched_by`: words, meaning or both).
    """
    scores = rrf_scores([ranked(words), ranked(meaning)])
    by_id = {c.id: c for c in meaning} | {c.id: c for c in words}
    in_words, in_meaning = {c.id for c in words}, {c.id for c in meaning}
    found = {
        item: "both"
        if item in in_words and item in in_meaning
        else "words"
        if item in in_words
        else "meaning"
        for item in by_id
    }
    candidates = [
        Candidate(item, c.bag_id, c.polarity, scores[item], c.in_conflict) for item, c in by_id.items()
    ]
    return candidates, found


def explain_modes(modes: Sequence[str], unavailable: str | None) -> str:
    """What `explain()` adds about the modes that ran: nothing for words alone as asked."""
    if unavailable is not None:
        return f"by words only: {unavailable}"
    if "meaning" not in modes:
        return ""
    return "by words and meaning" if "words" in modes else "by meaning"
