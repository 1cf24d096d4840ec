"""Cohorts, memberships, assignments, per-learner extensions and reminder bookkeeping.

Visibility rules live in the querysets (``taught_by``, ``joined_by``): views fetch through them
with ``get_object_or_404`` so anything outside the requesting user's scope answers 404.
"""

from __future__ import annotations

import secrets
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.db.models import F, Q

from content.models import WalkthroughSet

# No 0/O, 1/I/L, 5/S, 2/Z, 8/B: codes are read aloud and typed from slides.
JOIN_ALPHABET = "ACDEFGHJKMNPQRTUVWXY34679"
JOIN_CODE_LENGTH = 8


def new_join_code() -> str:
    return "".join(secrets.choice(JOIN_ALPHABET) for _ in range(JOIN_CODE_LENGTH))


def normalise_code(raw: str) -> str:
    """What the learner typed, as stored: upper case, spaces and dashes dropped."""
    return "".join(ch for ch in (raw or "").upper() if ch not in " -\t")


class CohortQuerySet(models.QuerySet["Cohort"]):
    def taught_by(self, user) -> CohortQuerySet:
        if not user.is_authenticated:
            return self.none()
        return self.filter(instructors=user)

    def joined_by(self, user) -> CohortQuerySet:
        if not user.is_authenticated:
            return self.none()
        return self.filter(members=user)

    def active(self) -> CohortQuerySet:
        """Cohorts not archived: the ones learners see, join and get work in."""
        return self.filter(archived_at__isnull=True)

    def archived(self) -> CohortQuerySet:
        return self.filter(archived_at__isnull=False)


class Cohort(models.Model):
    name = models.CharField(max_length=120)
    join_code = models.CharField(max_length=16, unique=True, default=new_join_code)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    archived_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Set when an instructor archives the cohort: out of the active lists, closed "
        "to joining and to new assignments; its data stays readable by its instructors.",
    )
    instructors = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="taught_cohorts")
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="cohorts"
    )

    objects = CohortQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "name"]

    def __str__(self) -> str:
        return self.name

    @property
    def archived(self) -> bool:
        return self.archived_at is not None

    def instructor_removal_refused(self, actor, target, teaching=None) -> str | None:
        """Why ``actor`` may not take ``target`` off this cohort's instructors, or None when
        they may. Anyone may leave but the last instructor; only the instructor who created the
        cohort, while they teach it, takes others off (a co-instructor added by mistake sees
        every learner's answers, so the mistake must be undoable, but not by any co-instructor
        against the rest). ``teaching``: the instructors' ids, when the caller has them."""
        if teaching is None:
            teaching = set(self.instructors.values_list("pk", flat=True))
        if target.pk not in teaching:
            return f"{target.username} does not teach {self.name}."
        if teaching == {target.pk}:
            return (
                f"{target.username} is the only instructor of {self.name}: add another "
                "instructor before leaving."
            )
        if actor.pk != target.pk and not (actor.pk == self.created_by_id and actor.pk in teaching):
            return (
                f"Only the instructor who created {self.name} takes other instructors off it; "
                "you can leave it yourself."
            )
        return None

    def regenerate_code(self) -> str:
        """A fresh unique join code; the old one stops working at once."""
        for _ in range(20):
            code = new_join_code()
            try:
                with transaction.atomic():
                    Cohort.objects.filter(pk=self.pk).update(join_code=code)
            except IntegrityError:
                continue
            self.join_code = code
            return code
        raise RuntimeError("could not find a free join code")


class Membership(models.Model):
    cohort = models.ForeignKey(Cohort, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="cohort_memberships"
    )
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cohort", "user"], name="membership_unique")]
        ordering = ["joined_at"]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.cohort_id}"


class AssignmentQuerySet(models.QuerySet["Assignment"]):
    def open_at(self, when: datetime) -> AssignmentQuerySet:
        """Assignments not yet due at ``when``."""
        return self.filter(due_at__gt=when)


class Assignment(models.Model):
    class Goal(models.TextChoices):
        NONE = "", "No drill goal"
        RETENTION = "retention", "Every scenario at retrievability ≥ X by the due date"
        PAIRS = "pairs", "Each lookalike pair drilled ≥ k times by the due date"

    cohort = models.ForeignKey(Cohort, on_delete=models.CASCADE, related_name="assignments")
    walkthrough_set = models.ForeignKey(WalkthroughSet, on_delete=models.PROTECT, related_name="+")
    due_at = models.DateTimeField()
    cutoff_at = models.DateTimeField(
        null=True, blank=True, help_text="After this, unread walkthroughs stay missing."
    )
    goal = models.CharField(max_length=12, choices=Goal.choices, blank=True, default="")
    goal_retention = models.FloatField(null=True, blank=True)
    goal_pair_drills = models.PositiveSmallIntegerField(null=True, blank=True)
    renarration = models.BooleanField(
        default=False,
        help_text="A walkthrough counts only once it is read and then re-narrated (graded).",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["due_at", "pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(cutoff_at__isnull=True) | Q(cutoff_at__gte=F("due_at")),
                name="assignment_cutoff_after_due",
            ),
            models.CheckConstraint(
                condition=Q(goal="")
                | Q(goal="retention", goal_retention__gt=0, goal_retention__lte=1)
                | Q(goal="pairs", goal_pair_drills__gte=1),
                name="assignment_goal_complete",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.walkthrough_set} for {self.cohort} due {self.due_at:%Y-%m-%d %H:%M}"

    def renarration_text(self) -> str:
        return "each walkthrough re-narrated the day after reading" if self.renarration else ""

    def goal_text(self) -> str:
        if self.goal == self.Goal.RETENTION:
            return f"every scenario at retrievability ≥ {self.goal_retention:.2f} by the due date"
        if self.goal == self.Goal.PAIRS:
            n = self.goal_pair_drills
            times = "time" if n == 1 else "times"
            return f"each lookalike pair drilled ≥ {n} {times} by the due date"
        return ""


def open_assignment(
    cohort: Cohort, walkthrough_set: WalkthroughSet, now: datetime
) -> Assignment | None:
    """The cohort's assignment of ``walkthrough_set`` not yet due at ``now``, if any. While one is
    open the set is not assigned to the cohort again: learners would get two cards with different
    due dates and rules, and the progress grid two columns. No unique constraint can say "not yet
    due" (a constraint cannot read the clock): writers take the cohort's row lock instead."""
    return (
        Assignment.objects.filter(cohort=cohort, walkthrough_set=walkthrough_set)
        .open_at(now)
        .select_related("walkthrough_set")
        .first()
    )


class Extension(models.Model):
    """A per-learner due date (and cut-off) that replaces the assignment's."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="extensions")
    learner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    due_at = models.DateTimeField()
    cutoff_at = models.DateTimeField(null=True, blank=True)
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    granted_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["assignment", "learner"], name="extension_unique"),
            models.CheckConstraint(
                condition=Q(cutoff_at__isnull=True) | Q(cutoff_at__gte=F("due_at")),
                name="extension_cutoff_after_due",
            ),
        ]

    def __str__(self) -> str:
        return f"extension for {self.learner_id} on {self.assignment_id}"


class ReminderSent(models.Model):
    """One row per (assignment, learner) reminder: the unique constraint makes it send once."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="+")
    learner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    due_at = models.DateTimeField(help_text="The effective due date the reminder was about.")
    sent_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["assignment", "learner"], name="reminder_once")
        ]

    def __str__(self) -> str:
        return f"reminder {self.assignment_id}/{self.learner_id}"
