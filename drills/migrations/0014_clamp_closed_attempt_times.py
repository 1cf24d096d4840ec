"""Attempts closed without a diagnosis before the clock fix keep the clock's time.

Since "Drills closed without a diagnosis keep the clock's time" (``drills.trainer.services.
closed_clock_s``), an attempt on the clock closed as expired or abandoned stores its time
stopped where the clock ran out: the limit (a contrast trial's 45 s, else
``DRILL_TIME_LIMIT_S``) plus the network grace. Rows stored before it keep the days the tab
stayed open (an attempt expired a day later reads about 86,400 s), and the dashboard's median
time for their scenario with them. This clamps those rows exactly so, moves their
``ElapsedTally`` counts to the clamped second, and has their dashboards read afresh. Practice
(no clock) is left as it is. Reversing it is a no-op: the clamped time is the one the current
code would have stored."""

import math

from django.conf import settings
from django.db import migrations
from django.db.models import F, Q

GRACE_S = 2.0  # drills.trainer.grading.GRACE_S
TRIAL_LIMIT_S = 45.0  # drills.scheduling.TRIAL_LIMIT_S
NOT_EVIDENCE = ("renarration", "contrast")  # kinds the summary counters leave out


def clamp(apps, schema_editor):
    Attempt = apps.get_model("drills", "Attempt")
    ElapsedTally = apps.get_model("drills", "ElapsedTally")
    DashboardSnapshot = apps.get_model("drills", "DashboardSnapshot")
    StatsVersion = apps.get_model("drills", "StatsVersion")
    drill_stop = float(settings.TRACETRACK["DRILL_TIME_LIMIT_S"]) + GRACE_S
    trial_stop = TRIAL_LIMIT_S + GRACE_S
    closed = Attempt.objects.filter(submitted_at__isnull=False).exclude(closed="")
    closed = closed.exclude(mode="practice")
    long = closed.filter(
        (Q(kind="contrast") & Q(elapsed_s__gt=trial_stop))
        | (~Q(kind="contrast") & Q(elapsed_s__gt=drill_stop))
    )
    users = set()
    for pk, user_id, scenario, kind, elapsed in long.values_list(
        "pk", "user_id", "scenario", "kind", "elapsed_s"
    ).iterator():
        stop = trial_stop if kind == "contrast" else drill_stop
        Attempt.objects.filter(pk=pk).update(elapsed_s=stop)
        users.add(user_id)
        if kind in NOT_EVIDENCE:
            continue
        # the counter of the old second gives this attempt to the clamped one
        old = ElapsedTally.objects.filter(
            user_id=user_id, scenario=scenario, second=math.ceil(elapsed)
        )
        if old.filter(n__gt=0).update(n=F("n") - 1):
            new, _ = ElapsedTally.objects.get_or_create(
                user_id=user_id, scenario=scenario, second=math.ceil(stop)
            )
            ElapsedTally.objects.filter(pk=new.pk).update(n=F("n") + 1)
    if users:
        ElapsedTally.objects.filter(user_id__in=users, n=0).delete()
        DashboardSnapshot.objects.filter(user_id__in=users).delete()
        StatsVersion.objects.filter(user_id__in=users).update(n=F("n") + 1)


class Migration(migrations.Migration):
    dependencies = [
        ("drills", "0013_interview_grades_held"),
    ]

    operations = [migrations.RunPython(clamp, migrations.RunPython.noop)]
