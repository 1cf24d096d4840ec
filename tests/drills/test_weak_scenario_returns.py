"""A learner who reads traces well but always confuses one lookalike pair: the scheduler brings
that pair back more often than its share, and every graded attempt lands in the confusion matrix."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from drills.models import Attempt
from scenarios import engine
from tests.conftest import right_answer

pytestmark = pytest.mark.django_db

PAIR = {"straggler": "bandwidth-bound-collective", "bandwidth-bound-collective": "straggler"}


def test_the_confused_pair_comes_back_more_often_than_its_share(learner_client, no_refill):
    served: Counter[str] = Counter()
    drills, trials = 36, 0
    while sum(served.values()) < drills:
        response = learner_client.post("/drill/next/", {"mode": "timed"})
        trial = re.search(r"/drill/trials/([0-9a-f-]{36})/", response["Location"])
        if trial:  # the confusion's contrast trial, failed the same way (the left trace, blindly)
            trials += 1
            learner_client.post(
                f"/drill/trials/{trial.group(1)}/answer/",
                {"side": "left", "measurement": "busbw"},
            )
            continue
        attempt_id = re.search(r"/drill/attempts/([0-9a-f-]{36})/", response["Location"]).group(1)
        attempt = Attempt.objects.select_related("trace").get(pk=attempt_id)
        key = attempt.trace.key
        served[attempt.scenario] += 1
        answer = PAIR.get(key["scenario"], key["scenario"])
        learner_client.post(
            f"/drill/attempts/{attempt.pk}/diagnosis/",
            {**right_answer(attempt), "scenario": answer},
        )
    weights = {slug: s.weight for slug, s in engine.SCENARIOS.items()}
    pair_share = sum(weights[s] for s in PAIR) / sum(weights.values())
    pair_served = sum(served[s] for s in PAIR) / drills
    assert pair_served > 1.5 * pair_share, (served, pair_served, pair_share)
    assert trials >= 1  # and the confused pair got its side-by-side trial

    stats = learner_client.get("/dashboard/stats.json").json()
    matrix = stats["confusion"]["matrix"]
    assert sum(map(sum, matrix)) == stats["totals"]["graded"] == drills
    labels = stats["confusion"]["labels"]
    s, b = labels.index("straggler"), labels.index("bandwidth-bound-collective")
    assert matrix[s][s] == 0 and matrix[b][b] == 0  # always confused...
    assert matrix[s][b] == served["straggler"] and matrix[b][s] == served[PAIR["straggler"]]
