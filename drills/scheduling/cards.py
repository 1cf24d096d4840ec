"""The one card-update path: a graded attempt applied to a learner's cards.

``apply_attempt`` is what the live write paths (a submitted diagnosis, a math answer) and the
replay in ``rebuild_cards`` all call, so a rebuild can only reproduce the live cards: review the
attempt's card at the moment it was graded; when the answer was the true scenario's lookalike,
pull that twin's card due at the same moment; and when the answer named another scenario, pull the
card of that confused pair due then too (a contrast trial reviews it). It works on ``Card`` rows
in memory; the caller loads them (locked, on the live path) and saves the ones it returns.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from drills import scheduling, summaries
from drills.models import Attempt, Card


def load_cards(user, kind: str = Card.Kind.SCENARIO) -> dict[str, Card]:
    return {c.item: c for c in Card.objects.filter(user=user, kind=kind)}


def _card(cards: MutableMapping[str, Card], user, kind: str, item: str, when: datetime) -> Card:
    card = cards.get(item)
    if card is None:
        state = scheduling.new_card_state(when)
        card = cards[item] = Card(user=user, kind=kind, item=item, state=state, due=when)
    return card


def apply_attempt(
    cards: MutableMapping[str, Card],
    grade: scheduling.GradeLike,
    *,
    user,
    item: str,
    when: datetime,
    answered: str | None = None,
    kind: str = Card.Kind.SCENARIO,
    desired_retention: float | None = None,
    pairs: MutableMapping[str, Card] | None = None,
) -> list[Card]:
    """Apply one graded attempt on ``item`` at ``when`` to ``cards`` (by item; missing cards are
    created unsaved). Returns the cards it changed, the reviewed one first; none for an attempt
    that does not count (practice, a sprint answer after the bell). ``pairs`` (the learner's
    pair cards, by pair key) receives the confused pair's pull on a scenario card."""
    if not scheduling.counts_for_schedule(grade):
        return []
    if desired_retention is None:
        desired_retention = settings.TRACETRACK["DESIRED_RETENTION"]
    card = _card(cards, user, kind, item, when)
    rating = scheduling.rating_for(grade)
    card.state = scheduling.review(card.state, rating, when, desired_retention=desired_retention)
    card.due = scheduling.due(card.state)
    card.reviews += 1
    card.last_review = when
    changed = [card]
    target = scheduling.twin_pull_target(item, answered) if kind == Card.Kind.SCENARIO else None
    if target is not None:
        pulled = _card(cards, user, kind, target, when)
        pulled.state = scheduling.pull_due_now(pulled.state, when)
        pulled.due = scheduling.due(pulled.state)
        changed.append(pulled)
    pair = scheduling.confusion_pair(item, answered) if kind == Card.Kind.SCENARIO else None
    if pair is not None and pairs is not None:
        pulled = _card(pairs, user, Card.Kind.PAIR, pair, when)
        pulled.state = scheduling.pull_due_now(pulled.state, when)
        pulled.due = scheduling.due(pulled.state)
        changed.append(pulled)
    return changed


def apply_live(
    user,
    grade: scheduling.GradeLike,
    *,
    item: str,
    when: datetime,
    answered: str | None = None,
    kind: str = Card.Kind.SCENARIO,
) -> list[Card]:
    """The live path: lock the cards the attempt can touch, apply it, save what changed.

    Call inside the transaction that stores the graded attempt."""
    items = {item, answered or item}
    pair = scheduling.confusion_pair(item, answered) if kind == Card.Kind.SCENARIO else None
    touched = Q(kind=kind, item__in=items)
    if pair is not None:
        touched |= Q(kind=Card.Kind.PAIR, item=pair)
    locked = list(Card.objects.select_for_update().filter(touched, user=user).order_by("pk"))
    cards = {c.item: c for c in locked if c.kind == kind}
    pairs = {c.item: c for c in locked if c.kind == Card.Kind.PAIR}
    changed = apply_attempt(
        cards, grade, user=user, item=item, when=when, answered=answered, kind=kind, pairs=pairs
    )
    for card in changed:
        card.save()
    return changed


def card_for(kind: str, scenario: str, item: str) -> tuple[str, str]:
    """(card kind, card item) a graded trace attempt reviews: its scenario's card, except a
    re-narration, which reviews its walkthrough's re-narration card (the learner has seen that
    trace narrated, so it is no evidence on the scenario), and a contrast trial, which reviews
    its pair's card."""
    if kind == Attempt.Kind.RENARRATION:
        return Card.Kind.RENARRATION, item
    if kind == Attempt.Kind.CONTRAST:
        return Card.Kind.PAIR, item
    return Card.Kind.SCENARIO, scenario


def apply_trace_attempt(attempt: Attempt, grade: scheduling.GradeLike, *, when: datetime) -> None:
    """The live path for a graded trace attempt of any kind (call inside its transaction)."""
    card_kind, item = card_for(attempt.kind, attempt.scenario, attempt.item)
    if card_kind != Card.Kind.SCENARIO:
        apply_live(attempt.user, grade, item=item, when=when, kind=card_kind)
    else:
        apply_live(attempt.user, grade, item=item, when=when, answered=attempt.answer_scenario)


# --------------------------------------------------------------------------- replay

# The card kinds trace attempts review or pull (``rebuild_user`` rebuilds these).
TRACE_CARD_KINDS = (Card.Kind.SCENARIO, Card.Kind.RENARRATION, Card.Kind.PAIR)

REPLAY_FIELDS = (
    "scenario",
    "kind",
    "item",
    "answer_scenario",
    "mode",
    "submitted_at",
    "elapsed_s",
    "scenario_correct",
    "measurement_correct",
    "fix_correct",
    "win_correct",
    "over_time",
    "five_sentence",
    "step_correct",
    "gap_correct",
    "value_correct",
    "expected_correct",
)


def stored_grade(row: dict[str, Any]) -> scheduling.Grade:
    """The grade an Attempt's stored fields record."""
    return scheduling.Grade(
        scenario_correct=bool(row["scenario_correct"]),
        measurement_correct=bool(row["measurement_correct"]),
        fix_correct=bool(row["fix_correct"]),
        win_correct=bool(row["win_correct"]),
        elapsed_s=float(row["elapsed_s"] or 0.0),
        over_time=bool(row["over_time"]),
        practice=row["mode"] == Attempt.Mode.PRACTICE,
        five_sentence=bool(row["five_sentence"]),
        step_correct=row["step_correct"],
        gap_correct=row["gap_correct"],
        value_correct=row["value_correct"],
        expected_correct=row["expected_correct"],
        trial=row.get("kind") == Attempt.Kind.CONTRAST,
    )


def replay(
    user, rows: Iterable[dict[str, Any]], desired_retention: float
) -> dict[tuple[str, str], Card]:
    """Trace cards (unsaved, by (kind, item)) from a learner's graded attempts in submission
    order: scenario cards, walkthrough re-narration cards and confused-pair cards."""
    by_kind: dict[str, dict[str, Card]] = {k: {} for k in TRACE_CARD_KINDS}
    for row in rows:
        card_kind, item = card_for(
            row.get("kind") or Attempt.Kind.DRILL, row["scenario"], row.get("item") or ""
        )
        scenario_card = card_kind == Card.Kind.SCENARIO
        apply_attempt(
            by_kind[card_kind],
            stored_grade(row),
            user=user,
            item=item,
            when=row["submitted_at"],
            answered=(row["answer_scenario"] or None) if scenario_card else None,
            kind=card_kind,
            desired_retention=desired_retention,
            pairs=by_kind[Card.Kind.PAIR],
        )
    return {(kind, item): card for kind, cards in by_kind.items() for item, card in cards.items()}


def _fields(card: Card) -> tuple[Any, ...]:
    return (card.state, card.due, card.reviews, card.last_review)


def rebuild_user(user, *, dry_run: bool = False) -> tuple[int, int]:
    """Rebuild one learner's trace cards (scenarios, walkthrough re-narrations, confused pairs)
    from raw attempts. Returns (cards, cards changed).

    Cards with no counted attempt behind them are left alone (nothing is deleted); running it
    twice changes nothing."""
    retention = settings.TRACETRACK["DESIRED_RETENTION"]
    with transaction.atomic():
        existing = {
            (c.kind, c.item): c
            for c in Card.objects.select_for_update().filter(user=user, kind__in=TRACE_CARD_KINDS)
        }
        rows = (
            Attempt.objects.filter(user=user)
            .counted()  # not the grades a mock interview under way holds
            .order_by("submitted_at", "served_at", "pk")
            .values(*REPLAY_FIELDS)
            .iterator(chunk_size=2000)
        )
        cards = replay(user, rows, retention)
        changed = 0
        for key, rebuilt in cards.items():
            card = existing.get(key)
            if card is not None and _fields(card) == _fields(rebuilt):
                continue
            changed += 1
            if dry_run:
                continue
            if card is None:
                rebuilt.save()
            else:
                card.state, card.due, card.reviews, card.last_review = _fields(rebuilt)
                card.save()
        if changed and not dry_run:  # caches of what the cards show (cohort pages) move on
            summaries.bump_version(user.pk)
    return len(cards), changed
