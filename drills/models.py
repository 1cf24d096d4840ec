from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from scenarios.engine.catalog import title_of
from scenarios.models import Trace

# The one definition of a fully correct diagnosis: the right scenario, measurement, fix and
# expected win (and, on five-sentence attempts, no wrong number), inside the clock.
# ``FULLY_CORRECT`` is it as a filter, ``Attempt.fully_correct``
# on one row.
_RIGHT = ("scenario_correct", "measurement_correct", "fix_correct", "win_correct")
# The five-sentence numbers are graded only on five-sentence attempts (NULL before): not False.
_NOT_WRONG = ("step_correct", "gap_correct", "value_correct")
FULLY_CORRECT = models.Q(over_time=False, **dict.fromkeys(_RIGHT, True))
for _f in _NOT_WRONG:
    FULLY_CORRECT &= ~models.Q(**{_f: False})
# How an attempt closed without a diagnosis reads where its answer would (``Attempt.closed``).
CLOSED_WORDS = {"abandoned": "gave up", "expired": "no answer before the clock ran out"}
# Attempts on the clock (timed or Perfetto-only): practice runs untimed.
TIMED = ~models.Q(mode="practice")
# Graded attempt kinds that are no evidence on their scenario (``AttemptQuerySet.evidence``).
NOT_EVIDENCE = ("renarration", "contrast")


class AttemptQuerySet(models.QuerySet["Attempt"]):
    def visible_to(self, user) -> AttemptQuerySet:
        return self.filter(user=user)

    def of_learners(self, user_ids) -> AttemptQuerySet:
        return self.filter(user_id__in=user_ids)

    def graded(self) -> AttemptQuerySet:
        return self.filter(submitted_at__isnull=False)

    def revealed(self) -> AttemptQuerySet:
        """Graded attempts whose reveal may be shown: not the traces of a mock interview still
        under way (an interview shows no reveal, nor what a trace was, before its report)."""
        return self.graded().exclude(kind="interview", interview__finished_at__isnull=True)

    def counted(self) -> AttemptQuerySet:
        """Graded attempts whose grade counts outside its attempt (summary counters, cards): not
        the traces of a mock interview still under way, whose grades wait for its end
        (``drills.interview.services``)."""
        return self.graded().exclude(
            kind="interview", interview__finished_at__isnull=True, interview__grades_held=True
        )

    def evidence(self) -> AttemptQuerySet:
        """Counted answers that are evidence on the scenario: not re-narrations (a walkthrough's
        trace answered after reading its narration) nor contrast trials (a choice between two
        named scenarios, not a diagnosis)."""
        return self.counted().exclude(kind__in=NOT_EVIDENCE)

    def timed(self) -> AttemptQuerySet:
        return self.filter(TIMED)

    def fully_correct(self) -> AttemptQuerySet:
        return self.filter(FULLY_CORRECT)


class Attempt(models.Model):
    """One trace served to one learner, and (once submitted) their graded diagnosis.

    Every raw answer is kept, so the rating map can change and cards be rebuilt from history.
    """

    class Mode(models.TextChoices):
        TIMED = "timed", "Timed (2:00)"
        PRACTICE = "practice", "Untimed practice"
        PERFETTO = "perfetto", "Perfetto only"

    class Kind(models.TextChoices):
        DRILL = "drill", "drill"
        # A walkthrough's own trace, answered the day after reading it with the narration hidden.
        # Not evidence on the scenario (the learner has seen this trace narrated): it schedules
        # the walkthrough's re-narration card only and stays out of per-scenario accuracy.
        RENARRATION = "renarration", "re-narration"
        # One of a mock interview's five traces: a timed drill in every other respect.
        INTERVIEW = "interview", "mock interview"
        # Two traces of one workload side by side after a confusion: "which one is <scenario>?"
        # and "which measurement tells them apart?". ``trace`` is the left one, ``partner`` the
        # right one, ``scenario`` the one asked for, ``item`` the pair (``drills.scheduling.
        # pair_key``); ``answer_scenario`` is the scenario of the trace picked. It schedules the
        # pair's card only and stays out of per-scenario accuracy.
        CONTRAST = "contrast", "contrast trial"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    trace = models.OneToOneField(Trace, on_delete=models.PROTECT, related_name="attempt")
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.DRILL)
    item = models.CharField(
        max_length=120,
        blank=True,
        help_text="A re-narration's walkthrough slug; a contrast trial's pair.",
    )
    partner = models.OneToOneField(
        Trace,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="partner_attempt",
        help_text="A contrast trial's right-hand trace (``trace`` is the left one).",
    )
    fixed_trace = models.OneToOneField(
        Trace,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="fixed_of",
        help_text="The trace regenerated with the fix applied, shown on the reveal (made by the "
        "worker once the attempt is graded; on request for attempts that queued none).",
    )
    fixed_queued_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the fixed twin was queued for the worker (stored with the grade); null "
        "when none was queued.",
    )
    interview = models.ForeignKey(
        "MockInterview",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="attempts",
    )
    scenario = models.CharField(max_length=40, help_text="The true scenario (never served early).")
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.TIMED)
    served_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    answer_scenario = models.CharField(max_length=40, blank=True)
    answer_measurement = models.CharField(max_length=60, blank=True)
    answer_fix = models.CharField(max_length=60, blank=True)
    answer_expected_ms = models.FloatField(null=True, blank=True)
    answer_step_ms = models.FloatField(null=True, blank=True)
    answer_gap_ms = models.FloatField(null=True, blank=True)
    answer_measurement_value = models.FloatField(null=True, blank=True)
    answer_arithmetic = models.TextField(blank=True)
    elapsed_s = models.FloatField(null=True, blank=True)
    scenario_correct = models.BooleanField(null=True)
    measurement_correct = models.BooleanField(null=True)
    fix_correct = models.BooleanField(null=True)
    win_correct = models.BooleanField(null=True)
    win_error = models.FloatField(null=True, blank=True)
    # The five sentences (null: not graded — an older three-part attempt, or a trace without
    # the value). ``expected_correct`` is the expected step time within ±10 %.
    step_correct = models.BooleanField(null=True)
    gap_correct = models.BooleanField(null=True)
    value_correct = models.BooleanField(null=True)
    expected_correct = models.BooleanField(null=True)
    five_sentence = models.BooleanField(
        default=True,
        help_text="Graded as the five-sentence diagnosis (older attempts: three-part answer).",
    )
    over_time = models.BooleanField(null=True)
    rating = models.PositiveSmallIntegerField(null=True, blank=True)
    counted = models.BooleanField(default=False, help_text="Updated the scheduling card.")
    closed = models.CharField(
        max_length=10,
        choices=[("", "diagnosed"), ("abandoned", "abandoned"), ("expired", "expired")],
        default="",
        blank=True,
        help_text="How an attempt without a diagnosis was closed (graded as a miss).",
    )

    objects = AttemptQuerySet.as_manager()

    class Meta:
        constraints = [
            # A learner has at most one open attempt: concurrent starts cannot both insert one.
            models.UniqueConstraint(
                fields=["user"],
                condition=models.Q(submitted_at__isnull=True),
                name="attempt_one_open_per_user",
            )
        ]
        indexes = [
            models.Index(fields=["user", "submitted_at"], name="attempt_user_submitted_idx"),
            models.Index(fields=["user", "scenario"], name="attempt_user_scenario_idx"),
            # Covers the cohort pages' one GROUP BY (user, scenario, answer) over graded
            # attempts, including the submitted_at <= due-date windows of drill goals.
            # Re-narrations are outside it, as they are outside every per-scenario number.
            models.Index(
                fields=["user", "scenario", "answer_scenario", "scenario_correct", "submitted_at"],
                condition=models.Q(submitted_at__isnull=False) & ~models.Q(kind="renarration"),
                name="attempt_graded_cover_idx",
            ),
            # A scenario's latest graded attempts (the dashboard's last-10 accuracy).
            models.Index(
                fields=["user", "scenario", "submitted_at"],
                condition=models.Q(submitted_at__isnull=False),
                name="attempt_graded_recent_idx",
            ),
            # The dashboard's re-narration count reads these few rows only.
            models.Index(
                fields=["user"],
                condition=models.Q(submitted_at__isnull=False, kind="renarration"),
                name="attempt_renarrated_idx",
            ),
            # A scenario's timed times in order (the dashboard's median reads two of them).
            models.Index(
                fields=["user", "scenario", "elapsed_s"],
                condition=models.Q(submitted_at__isnull=False) & TIMED,
                name="attempt_timed_elapsed_idx",
            ),
            # The dashboard's pair discrimination reads the learner's graded contrast trials
            # only (not a scan of their whole history).
            models.Index(
                fields=["user", "item", "submitted_at"],
                condition=models.Q(submitted_at__isnull=False, kind="contrast"),
                name="attempt_contrast_trials_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"attempt {self.id}"

    @property
    def is_submitted(self) -> bool:
        return self.submitted_at is not None

    @property
    def fully_correct(self) -> bool:
        return (
            self.is_submitted
            and not self.over_time
            and all(getattr(self, f) is True for f in _RIGHT)
            and all(getattr(self, f) is not False for f in _NOT_WRONG)
        )

    @property
    def scenario_title(self) -> str:
        """The true scenario's title: only for graded attempts (it is the answer)."""
        return title_of(self.scenario)

    @property
    def answer_title(self) -> str:
        """What the learner answered, in words: a closed attempt without a diagnosis says how it
        was closed, not "(blank)"."""
        if not self.answer_scenario and self.closed:
            return CLOSED_WORDS.get(self.closed, "no answer")
        return title_of(self.answer_scenario)


class PreparedTrial(models.Model):
    """A contrast trial's pair of traces drawn ahead by the worker for one learner and one
    confused pair, waiting for the trial to be dealt (``drills.contrast.services``).

    The traces stay unclaimed (no learner can read them) until the deal claims them and deletes
    this row; sides and the asked-for scenario are drawn at the deal. One per (learner, pair).
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    item = models.CharField(max_length=90, help_text="The pair (``drills.scheduling.pair_key``).")
    first = models.OneToOneField(Trace, on_delete=models.CASCADE, related_name="+")
    second = models.OneToOneField(Trace, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "item"], name="prepared_trial_one_per_pair")
        ]

    def __str__(self) -> str:
        return f"prepared trial {self.item} for user {self.user_id}"


class Card(models.Model):
    """The FSRS memory state of one learner for one scenario (or mental-math family)."""

    class Kind(models.TextChoices):
        SCENARIO = "scenario", "trace scenario"
        MATH = "math", "mental-math family"
        RENARRATION = "renarrate", "walkthrough re-narration"
        # Telling two scenarios apart (item: ``drills.scheduling.pair_key``): made by a confusion,
        # reviewed by contrast trials.
        PAIR = "pair", "confused pair"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.SCENARIO)
    item = models.CharField(max_length=90)
    state = models.JSONField()
    due = models.DateTimeField()
    reviews = models.PositiveIntegerField(default=0)
    last_review = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "kind", "item"], name="card_unique_user_item")
        ]
        indexes = [models.Index(fields=["user", "kind", "due"], name="card_user_due_idx")]

    def __str__(self) -> str:
        return f"{self.user_id}:{self.kind}:{self.item}"


class MockInterviewQuerySet(models.QuerySet["MockInterview"]):
    def unfinished_for(self, user) -> MockInterview | None:
        """The learner's interview under way (the newest, were there two), or None."""
        return self.filter(user=user, finished_at__isnull=True).order_by("-started_at").first()


class MockInterview(models.Model):
    """Five traces in a row under the clock, five sentences each, then a report.

    The report can be shared with the instructors of the learner's cohorts (read-only)."""

    SIZE = 5

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    shared_at = models.DateTimeField(
        null=True, blank=True, help_text="Shared with the instructors of the learner's cohorts."
    )
    grades_held = models.BooleanField(
        default=True,
        help_text="Its traces' grades count (counters, cards) only when it ends; false for "
        "interviews started before grades waited, whose traces counted as they were graded.",
    )

    objects = MockInterviewQuerySet.as_manager()

    def __str__(self) -> str:
        return f"interview {self.id}"

    @property
    def is_finished(self) -> bool:
        return self.finished_at is not None


class LearnerProfile(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="learner_profile"
    )
    streak_opt_in = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"profile {self.user_id}"


class MathSprint(models.Model):
    """A 120-second run of mental-math problems; the score is the number answered right."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    started_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    score = models.PositiveIntegerField(default=0)
    attempted = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"sprint {self.id}"


class MathAttemptQuerySet(models.QuerySet["MathAttempt"]):
    def graded(self) -> MathAttemptQuerySet:
        return self.filter(submitted_at__isnull=False)


class MathAttempt(models.Model):
    """One mental-math problem served to a learner, and their graded answer."""

    class Mode(models.TextChoices):
        SINGLE = "single", "Single drill (2:00)"
        SPRINT = "sprint", "Sprint"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    family = models.CharField(max_length=40)
    seed = models.BigIntegerField()
    problem = models.JSONField()
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.SINGLE)
    sprint = models.ForeignKey(
        MathSprint, null=True, blank=True, on_delete=models.CASCADE, related_name="attempts"
    )
    served_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    answer_text = models.CharField(max_length=100, blank=True)
    value = models.FloatField(null=True, blank=True)
    correct = models.BooleanField(null=True)
    error = models.FloatField(null=True, blank=True)
    elapsed_s = models.FloatField(null=True, blank=True)
    over_time = models.BooleanField(null=True)
    rating = models.PositiveSmallIntegerField(null=True, blank=True)
    counted = models.BooleanField(default=False)

    objects = MathAttemptQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["user", "family"], name="mathattempt_user_family_idx")]

    def __str__(self) -> str:
        return f"math attempt {self.id}"


# --------------------------------------------------------------------------- summaries
#
# What the dashboard and the cohort pages show, kept up to date in the transaction that stores a
# grade (``drills.summaries.record_attempt`` / ``record_math_attempt``) and rebuildable from
# the raw attempts (``manage.py rebuild_stats``). Each row is a set of counters; a graded attempt
# adds to exactly one row of each table.

# The five sentences' grade fields on Attempt, by the key the summaries' counters use
# (``<key>_graded``: graded on it, ``<key>_right``: right on it).
SENTENCE_FIELDS = {
    "step": "step_correct",
    "gap": "gap_correct",
    "signature": "scenario_correct",
    "measurement": "measurement_correct",
    "value": "value_correct",
    "fix": "fix_correct",
    "expected": "expected_correct",
}


class ScenarioTally(models.Model):
    """Graded attempts of one learner whose true scenario is ``scenario`` and whose answer was
    ``answer_scenario``: one confusion cell, with the sums the per-scenario table needs."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    scenario = models.CharField(max_length=40)
    answer_scenario = models.CharField(max_length=40, blank=True)
    n = models.PositiveIntegerField(default=0)
    ok = models.PositiveIntegerField(default=0, help_text="scenario_correct")
    practice = models.PositiveIntegerField(default=0)
    measurement = models.PositiveIntegerField(default=0, help_text="measurement_correct")
    fix = models.PositiveIntegerField(default=0, help_text="fix_correct")
    win = models.PositiveIntegerField(default=0, help_text="win_correct")
    step_graded = models.PositiveIntegerField(default=0)
    step_right = models.PositiveIntegerField(default=0)
    gap_graded = models.PositiveIntegerField(default=0)
    gap_right = models.PositiveIntegerField(default=0)
    value_graded = models.PositiveIntegerField(default=0)
    value_right = models.PositiveIntegerField(default=0)
    expected_graded = models.PositiveIntegerField(default=0)
    expected_right = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "scenario", "answer_scenario"], name="scenariotally_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user_id}:{self.scenario}->{self.answer_scenario}: {self.n}"


class ElapsedTally(models.Model):
    """Graded timed attempts of one learner on one scenario whose time to diagnosis rounds up
    to ``second`` (``second - 1 < elapsed_s <= second``): the share under the limit for any
    whole-second limit, and where the median lies."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    scenario = models.CharField(max_length=40)
    second = models.IntegerField()
    n = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "scenario", "second"], name="elapsedtally_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user_id}:{self.scenario}@{self.second}s: {self.n}"


class WeekTally(models.Model):
    """Graded attempts of one learner on one true scenario submitted in one UTC week (Monday):
    accuracy, fully correct, lookalike confusions and the five sentences over time."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    week = models.DateField()
    scenario = models.CharField(max_length=40)
    n = models.PositiveIntegerField(default=0)
    ok = models.PositiveIntegerField(default=0)
    fully = models.PositiveIntegerField(default=0)
    confused = models.PositiveIntegerField(default=0, help_text="answered the lookalike twin")
    step_graded = models.PositiveIntegerField(default=0)
    step_right = models.PositiveIntegerField(default=0)
    gap_graded = models.PositiveIntegerField(default=0)
    gap_right = models.PositiveIntegerField(default=0)
    signature_graded = models.PositiveIntegerField(default=0)
    signature_right = models.PositiveIntegerField(default=0)
    measurement_graded = models.PositiveIntegerField(default=0)
    measurement_right = models.PositiveIntegerField(default=0)
    value_graded = models.PositiveIntegerField(default=0)
    value_right = models.PositiveIntegerField(default=0)
    fix_graded = models.PositiveIntegerField(default=0)
    fix_right = models.PositiveIntegerField(default=0)
    expected_graded = models.PositiveIntegerField(default=0)
    expected_right = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "week", "scenario"], name="weektally_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user_id}:{self.week}:{self.scenario}: {self.n}"


class DayTally(models.Model):
    """Graded attempts of one learner submitted on one UTC day (activity and streak)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    day = models.DateField()
    n = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "day"], name="daytally_unique")]

    def __str__(self) -> str:
        return f"{self.user_id}:{self.day}: {self.n}"


class MathTally(models.Model):
    """Graded mental-math answers of one learner in one family."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    family = models.CharField(max_length=40)
    n = models.PositiveIntegerField(default=0)
    correct = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "family"], name="mathtally_unique")]

    def __str__(self) -> str:
        return f"{self.user_id}:{self.family}: {self.n}"


class StatsVersion(models.Model):
    """Which state one learner's numbers are in, for caches of what is drawn from them (the
    dashboard, the cohort pages). ``n`` goes up by one in the transaction of every change to the
    learner's counters or re-narration grades (``drills.summaries``); ``token`` is drawn when the
    row is made, so a database restored or recreated under a long-lived cache never meets an old
    entry. Read it before the numbers it stands for: a cache entry is then never older than its
    key."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    token = models.UUIDField(default=uuid.uuid4)
    n = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.user_id}: {self.n}"


class DashboardSnapshot(models.Model):
    """One learner's dashboard numbers as stored inputs (``drills.stats.dashboard.
    learner_inputs``, JSON-encoded by ``drills.stats.snapshot``), for one UTC ``day`` and one
    ``fmt`` (what the inputs' shape depends on: catalogue, windows, time limit, code). ``n`` is
    the learner's ``StatsVersion.n`` the numbers stand for: a grade patches the row in its own
    transaction when it holds the state just before it (``n`` one less than the grade's);
    anything else (a rebuild, a new day, a deploy) leaves it stale, and the next view
    reads it again from the summary counters."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    n = models.PositiveBigIntegerField()
    day = models.DateField()
    fmt = models.CharField(max_length=32)
    data = models.JSONField()

    def __str__(self) -> str:
        return f"{self.user_id}: {self.n} on {self.day}"
