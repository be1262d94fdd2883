"""Scope bags: what makes two deposits share a bag."""

from __future__ import annotations

from deposits.domain.bags import bag_id
from deposits.domain.types import Scope

BASE = {"model": "gpt-5", "dataset": "evals", "env": "prod", "version": "1.2", "n": 100, "seed": 7}


def test_it_puts_equal_facets_with_different_notes_in_one_bag():
    assert bag_id("alice", Scope(**BASE, note="first run")) == bag_id("alice", Scope(**BASE, note="rerun"))
    assert bag_id("alice", Scope(**BASE)) == bag_id("alice", Scope(**BASE, note="a note"))


def test_it_puts_a_different_env_in_a_different_bag():
    assert bag_id("alice", Scope(**BASE)) != bag_id("alice", Scope(**{**BASE, "env": "staging"}))


def test_it_tells_a_missing_facet_from_a_set_one():
    assert bag_id("alice", Scope(model="gpt-5")) != bag_id("alice", Scope(model="gpt-5", env="prod"))
    assert bag_id("alice", Scope(n=0)) != bag_id("alice", Scope())
    assert bag_id("alice", Scope()) == bag_id("alice", Scope(note="only a note"))


def test_it_does_not_confuse_a_facet_value_with_the_same_value_in_another_facet():
    assert bag_id("alice", Scope(model="x")) != bag_id("alice", Scope(dataset="x"))
    assert bag_id("alice", Scope(n=1)) != bag_id("alice", Scope(seed=1))


def test_it_keeps_each_owner_in_their_own_bags():
    assert bag_id("alice", Scope(**BASE)) != bag_id("bob", Scope(**BASE))


def test_it_is_stable_across_calls():
    assert bag_id("alice", Scope(**BASE)) == bag_id("alice", Scope(**BASE))
    assert bag_id("alice", Scope(**BASE)).startswith("bag_")
