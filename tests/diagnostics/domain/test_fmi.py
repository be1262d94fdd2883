"""The FMI's sentence: its band, then one sentence about the weakest pillar that never contradicts it."""

from __future__ import annotations

from diagnostics.domain.fmi import Pillars, explain


def test_a_healthy_memory_with_one_weak_pillar_names_it_as_the_exception():
    pillars = Pillars(coverage=0.57, precision=0.83, resolution=0.67, density=0.83)
    assert pillars.fmi == 72
    assert explain(pillars, deposit_count=25) == (
        "Memory is healthy (FMI 72/100). Its weakest pillar, coverage, lags: few searches return a "
        "confident answer; corroborate what agents ask about."
    )


def test_a_usable_memory_states_its_weakest_pillar_plainly():
    pillars = Pillars(coverage=0.9, precision=0.9, resolution=0.2, density=0.9)
    assert explain(pillars, deposit_count=4) == (
        "Memory is usable (FMI 62/100). Most conflicts are unresolved; resolve them with contradicting deposits."
    )


def test_a_healthy_memory_whose_pillars_are_all_good_says_so():
    pillars = Pillars(coverage=0.8, precision=1.0, resolution=1.0, density=0.9)
    assert explain(pillars, deposit_count=4) == (
        "Memory is healthy (FMI 92/100). Searches are returning confident answers."
    )
