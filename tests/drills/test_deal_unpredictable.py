"""What a learner sees of their own schedule must not name the scenario of the next drill.

The scheduler's pick alone is predictable from the pages: the twin of the scenario whose reveal
was just read, else the first of Today's "due now" list, else the weakest card. A learner who
knows that can name the scenario without reading the trace. The deal draws from the scheduler's
first three choices, so no scenario comes with a chance above one in three.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from drills import scheduling
from drills.models import Card
from drills.trainer import services
from scenarios import engine

pytestmark = pytest.mark.django_db

DRAWS = 600
# One in three, with room for the draw's noise (600 draws: 3 standard deviations is about 6 %).
MOST_LIKELY = 0.40


def _reviewed_cards(learner, now):
    """Every scenario drilled twice, well, a day ago: nothing due."""
    for slug in engine.SCENARIOS:
        state = scheduling.review(scheduling.new_card_state(), 3, now - timedelta(days=1))
        state = scheduling.review(state, 3, now - timedelta(days=1) + timedelta(minutes=10))
        Card.objects.create(user=learner, item=slug, state=state, due=scheduling.due(state))


def _shares(learner, now, recent):
    deals = Counter(services.next_scenario(learner, now, recent=recent) for _ in range(DRAWS))
    return {slug: n / DRAWS for slug, n in deals.items()}


def test_the_one_scenario_due_on_today_is_not_surely_the_next_drill(learner_client, learner):
    now = timezone.now()
    _reviewed_cards(learner, now)
    weak = "sync-stalls"
    card = Card.objects.get(user=learner, item=weak)
    card.state = scheduling.pull_due_now(card.state, now - timedelta(minutes=1))
    card.due = scheduling.due(card.state)
    card.save()
    today = learner_client.get("/").content.decode()
    section = today[today.find("<h1>Today") :][:1500]
    due_now = r"<strong>1</strong> scenario due now:\s*<span class=\"pill\">Host–device sync"
    assert re.search(due_now, today), section

    shares = _shares(learner, now, recent=["healthy"])
    assert shares.get(weak, 0) <= MOST_LIKELY, shares
    assert shares.get(weak, 0) >= 0.25, shares  # still dealt often: it is due
    assert max(shares.values()) <= MOST_LIKELY, shares


def test_the_twin_of_the_reveal_just_read_is_not_surely_the_next_drill(learner):
    now = timezone.now()
    _reviewed_cards(learner, now)
    twin = scheduling.twin_of("straggler")
    assert twin is not None
    shares = _shares(learner, now, recent=["straggler"])
    assert shares.get(twin, 0) <= MOST_LIKELY, shares
    assert max(shares.values()) <= MOST_LIKELY, shares
    assert "straggler" not in shares  # the scenario just read does not come straight back


def test_the_deal_draws_from_the_schedulers_first_three_choices():
    now = timezone.now()
    cards: dict[str, dict | None] = dict.fromkeys(engine.SCENARIOS)
    for slug in ("straggler", "recompilation", "launch-bound"):
        cards[slug] = scheduling.pull_due_now(None, now)
    rng = random.Random(7)
    shortlist = scheduling.deal_shortlist(cards, now, rng=rng)
    assert sorted(shortlist) == ["launch-bound", "recompilation", "straggler"]
    deals = Counter(scheduling.pick_deal(cards, now, rng=rng) for _ in range(DRAWS))
    assert set(deals) == set(shortlist)
    assert max(deals.values()) / DRAWS <= MOST_LIKELY
