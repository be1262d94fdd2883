"""Every term the dashboard uses, in plain words: what `/help/` lists and what `{% term %}` links to.

Each entry has a lower-case anchor (`/help/#bag`), the word as pages show it, and a sentence or
three a new reviewer can act on. Grouped as the help page shows them. The rules themselves live
in the domains (deposits.domain, beliefs.domain, diagnostics.domain); this only says them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Term:
    anchor: str
    word: str
    text: str
    # Other spellings pages use for it (κ for ceiling), shown beside the word.
    also: str = ""


GROUPS: tuple[tuple[str, tuple[Term, ...]], ...] = (
    (
        "Memory",
        (
            Term(
                "owner",
                "owner (user_id)",
                "The person or system a memory is about. Every deposit, bag and belief belongs to exactly one owner; an API key may be confined to owners whose id starts with a prefix.",
            ),
            Term(
                "deposit",
                "deposit",
                "One claim an agent wrote down, such as “threshold 0.7 over-flags in production”. Deposits are never edited: a wrong one is retracted or superseded, and the record stays for audit.",
            ),
            Term(
                "polarity",
                "polarity",
                "Which way a deposit points: positive (it holds), negative (it does not), cautionary (it holds with a warning) or open (a question or note that takes no side).",
            ),
            Term(
                "directional",
                "directional",
                "Positive, negative and cautionary deposits take a side; open ones do not, and never count toward conflicts or agreement.",
            ),
            Term(
                "evidence-grade",
                "evidence grade",
                "How the claim is backed: anecdotal, observed, replicated or verified. The write gate refuses weak claims, for example a negative without an artifact to check it against.",
            ),
            Term(
                "scope",
                "scope (facets)",
                "Where a claim applies: model, dataset, env, version, n and seed. Deposits with the same six facets belong to one bag.",
            ),
            Term(
                "bag",
                "bag",
                "All of an owner's deposits with the same scope. A bag is where claims about one thing meet, so it is where they can agree or conflict.",
            ),
            Term(
                "live",
                "live",
                "A deposit that counts: neither retracted nor superseded. Bag counts, flags and recall confidence read live deposits only.",
            ),
            Term(
                "superseded",
                "superseded",
                "A deposit that a later correction contradicts. It stops counting but stays readable. If the correction is itself retracted (or a resolution is undone), what it superseded is live again.",
            ),
            Term(
                "retracted",
                "retracted",
                "A deposit taken back with a reason. It stops counting, and anything it had superseded is live again. Unlike erasure, the record is kept.",
            ),
            Term(
                "erased",
                "erased",
                "A deposit deleted for good (operators only), with its edges and index entries. A retried write with the same idempotency key is refused, so it cannot come back.",
            ),
            Term(
                "conflict",
                "conflict",
                "A bag whose live deposits take two or more sides (say one positive, one negative). It waits in the conflict queue until a reviewer resolves it or a deposit is retracted or superseded.",
            ),
            Term(
                "resolved",
                "resolved",
                "A bag that once held two sides and where a correction or a reviewer's resolution superseded one of them, so it is no longer in conflict.",
            ),
            Term(
                "confident",
                "confident",
                "A bag whose live directional deposits all agree and are more than one: what recall marks as safe to act on.",
            ),
            Term(
                "thin",
                "thin",
                "A bag with at most one live directional deposit: nothing contradicts it, but nothing confirms it either.",
            ),
            Term(
                "agreement",
                "agreement",
                "The share of a bag's live directional deposits that take its leading side (100% when all agree).",
            ),
            Term(
                "recall",
                "recall",
                "What an agent asks the memory: a query and optional facets, answered with the best matching live deposits, each flagged conflict, confident or thin, and a count of the conflicts beyond the page.",
            ),
        ),
    ),
    (
        "Reviewing",
        (
            Term(
                "resolution",
                "resolution",
                "A reviewer's decision on a conflict: a deposit on the human_review channel stating what holds (what recall returns from then on), which supersedes the side that did not hold; the reviewer's reason goes on its edges and is never recalled. It can be undone.",
            ),
            Term(
                "claim",
                "claim (“… is on this”)",
                "A reviewer holding a conflict on the review desk, for 10 minutes renewed by each action, so two reviewers never work on the same one. Another reviewer can take it over.",
            ),
            Term(
                "skip",
                "skip",
                "Putting a conflict behind every other one, for you only, with an optional note; it is listed under “Skipped by you” until you go back to it.",
            ),
            Term(
                "undo",
                "undo",
                "Retracting a resolution's deposit: the deposits it superseded are live again and the conflict is back in the queue.",
            ),
            Term(
                "episode",
                "conflict episode",
                "One stretch of time a bag spent in conflict, from the write that split it to the one that settled it; what waiting times and time to resolution are measured from.",
            ),
        ),
    ),
    (
        "Health (FMI)",
        (
            Term(
                "fmi",
                "FMI (Field Maturity Index)",
                "A 0–100 score of how trustworthy a memory is: the geometric mean of its four pillars, so one weak pillar pulls it down. 70 and above is healthy, 40–69 usable, below 40 unreliable.",
            ),
            Term(
                "coverage",
                "coverage",
                "Of the owner's recalls in the last 30 days, the share that returned at least one confident answer.",
            ),
            Term(
                "precision",
                "precision",
                "The average agreement of the bags holding two or more live directional deposits.",
            ),
            Term(
                "resolution-pillar",
                "resolution (pillar)",
                "Of the bags that ever held two sides, the share in which a correction or a resolution settled it.",
            ),
            Term(
                "density",
                "density",
                "The share of bags holding more than one live deposit: how much of the memory is backed more than once.",
            ),
            Term(
                "snapshot",
                "snapshot",
                "The health figures as a periodic job last computed them. Figures marked “as of” come from the latest snapshot and may trail the live counts beside them by up to the job's interval.",
            ),
        ),
    ),
    (
        "Beliefs",
        (
            Term(
                "belief",
                "belief",
                "What the memory currently asserts for one question about an owner (a key such as diet:milk), as a probability over the values it has heard, plus UNKNOWN.",
            ),
            Term(
                "observation",
                "observation",
                "One report of a value for a belief, arriving on a channel. Each one is recorded as a revision, whether it moved the belief or not.",
            ),
            Term(
                "revision",
                "revision",
                "One observation as the belief's log records it: when it was claimed, its channel and tier, its reliability r, whether it counted, and how far it moved the distribution.",
            ),
            Term(
                "channel",
                "channel",
                "Where an observation or deposit came from: an API key's source (an app, a scraper, an agent) or human_review for people on this dashboard. Trust comes from the channel, never from the wording.",
            ),
            Term(
                "tier",
                "provenance tier",
                "The trust class a channel belongs to (user_direct, agent_own, web_fetch, …). Its ceiling caps how reliable anything from that channel can be.",
            ),
            Term(
                "ceiling",
                "ceiling",
                "The highest reliability a tier allows, between 0 and 1. Changing it rebuilds every belief its channels touched.",
                also="κ",
            ),
            Term(
                "reliability",
                "reliability",
                "How much one observation is trusted: its tier's ceiling, lowered by any taint and by the observation's own stated confidence, never raised by its wording.",
                also="r",
            ),
            Term(
                "pivot",
                "pivot",
                "The fixed line at 0.5: an observation whose reliability is at or below it changes nothing (an exact no-op); above it, it moves the belief. This is what keeps low-trust sources from poisoning beliefs.",
            ),
            Term(
                "inert",
                "inert",
                "A value heard only from channels at or below the pivot: kept and shown for audit, never part of the distribution. If a trusted channel later reports it, it joins with no head start.",
            ),
            Term(
                "lifted",
                "lifted",
                "A trusted observation of a value whose odds were below the floor φ (even odds; with the volatility setting ρ, less while another value holds mass) first raises that value to the floor, then applies its weight; the revision says when that happened.",
                also="odds floor φ",
            ),
            Term(
                "mass",
                "mass",
                "The share of a belief a value holds, its probability: the masses of every named value and of UNKNOWN add up to 100%. A revision shows the observed value's mass before → after it.",
            ),
            Term(
                "shift",
                "shift",
                "How far one revision moved the whole distribution (total-variation distance): half the sum of every mass's change, from 0 (nothing moved, as for an observation set aside) to 1 (everything moved).",
            ),
            Term(
                "unknown",
                "UNKNOWN",
                "The share of belief held back for “none of the values heard so far”. A new belief starts fully UNKNOWN; each trusted observation takes some of it.",
            ),
            Term(
                "entropy",
                "entropy",
                "How spread the belief is, in bits, over its named values and UNKNOWN: 0 when one value holds everything, 1 bit when two share it evenly, more when several do.",
            ),
            Term(
                "uncertain",
                "uncertain",
                "A belief whose leading value is below 60% (or where UNKNOWN leads): shown, but not to be acted on without a check.",
            ),
            Term(
                "superseded-value",
                "superseded value",
                "A value that once led a belief and lost the lead, listed in the order it lost it.",
            ),
            Term(
                "calibration",
                "calibration",
                "How well the stated probabilities matched reviewers' confirmations: Brier score and expected calibration error (ECE), lower is better, and the reliability diagram per bin.",
            ),
        ),
    ),
    (
        "Jobs",
        (
            Term(
                "job",
                "job run",
                "Background work (recomputing health, rebuilding beliefs, expiring idempotency keys) with its trigger, progress and outcome: queued, running, succeeded, failed, skipped, lost (its worker died) or stalled (no progress for a while).",
            ),
            Term(
                "idempotency-key",
                "idempotency key",
                "A key a client sends with a write so a retry is recognised: the same key within 24 hours returns the first answer instead of writing twice.",
            ),
        ),
    ),
)

TERMS: dict[str, Term] = {term.anchor: term for _, terms in GROUPS for term in terms}
