"""factory-boy factories over real engine output.

``TraceFactory`` stores what the engine really wrote: the answer key, prompt, payload and timeline
of ``pool.build_trace`` for the scenario (generated once per scenario and test run, then reused:
generating costs ~0.3 s). The ``seed`` column only keeps rows unique, since every attempt needs a
trace of its own.
"""

from __future__ import annotations

import copy
import functools
import itertools
from datetime import timedelta

import factory
from django.contrib.auth import get_user_model
from django.utils import timezone

from drills import summaries
from drills.models import Attempt, MathAttempt
from scenarios import pool
from scenarios.models import Trace
from scenarios.uploads import Upload

BASE_SEED = 1
_seeds = itertools.count(10_000)


@functools.cache
def engine_trace(scenario: str) -> Trace:
    """The unsaved pool row the engine builds for ``scenario`` at ``BASE_SEED``."""
    return pool.build_trace(scenario, BASE_SEED)


def _from_engine(field: str):
    return factory.LazyAttribute(lambda o: copy.deepcopy(getattr(engine_trace(o.scenario), field)))


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"learner{n}")
    password = factory.django.Password("pw-for-tests-only")


class TraceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Trace

    scenario = "straggler"
    seed = factory.LazyFunction(lambda: next(_seeds))
    hardware = _from_engine("hardware")
    generator_version = _from_engine("generator_version")
    prompt = _from_engine("prompt")
    key = _from_engine("key")
    n_events = _from_engine("n_events")
    payload = _from_engine("payload")
    timeline_gz = _from_engine("timeline_gz")


class AttemptFactory(factory.django.DjangoModelFactory):
    """A served, unsubmitted attempt on a real trace of ``scenario``."""

    class Meta:
        model = Attempt

    user = factory.SubFactory(UserFactory)
    scenario = "straggler"
    trace = factory.SubFactory(TraceFactory, scenario=factory.SelfAttribute("..scenario"))
    mode = Attempt.Mode.TIMED
    served_at = factory.LazyFunction(timezone.now)


def graded_math_answer(user, *, correct: bool = True, family: str = "busbw", when=None):
    """A mental-math answer graded now (or at ``when``) and counted in the learner's summaries,
    as the math view records one."""
    when = when or timezone.now()
    answer = MathAttempt.objects.create(
        user=user,
        family=family,
        seed=1,
        problem={},
        served_at=when,
        submitted_at=when,
        correct=correct,
    )
    summaries.record_math_attempt(answer)
    return answer


def ready_upload(owner, **fields):
    """A processed upload row of ``owner``'s (READY, a day before it expires, no raw bytes kept),
    with ``fields`` set over those defaults."""
    defaults = {
        "filename": "trace.json",
        "size_bytes": 2,
        "status": Upload.Status.READY,
        "expires_at": timezone.now() + timedelta(days=1),
        "raw": b"",
    }
    return Upload.objects.create(owner=owner, **{**defaults, **fields})
