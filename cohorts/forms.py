from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from accounts.roles import instructors
from content.models import WalkthroughSet
from content.renarration import FIRST_DELAY

from .models import (
    JOIN_ALPHABET,
    Assignment,
    Cohort,
    Extension,
    normalise_code,
    open_assignment,
)

DT_WIDGET = forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")
DT_FORMATS = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S"]


def _dt_field(label: str, required: bool = True, help_text: str = "") -> forms.DateTimeField:
    return forms.DateTimeField(
        label=label,
        required=required,
        widget=DT_WIDGET,
        input_formats=DT_FORMATS,
        help_text=help_text,
        error_messages={"invalid": "Enter a date and time like 2026-03-01 17:00."},
    )


def utc_text(when: datetime) -> str:
    """A moment as the assignment forms take it: "2026-03-01 17:00 UTC"."""
    return f"{when.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def span_text(span: timedelta) -> str:
    """A span as product text says it: "a day", "2 days", "an hour", "12 hours"."""
    day, hour = timedelta(days=1), timedelta(hours=1)
    if span % day:
        n = -(-span // hour)
        return "an hour" if n == 1 else f"{n} hours"
    n = span // day
    return "a day" if n == 1 else f"{n} days"


# A walkthrough's re-narration comes back this long after it is read (content.renarration), so an
# assignment that asks for re-narration is due at least this long from when it is made.
RENARRATION_LEAD = FIRST_DELAY


def earliest_renarration_due(now: datetime) -> datetime:
    """The earliest due date an assignment with re-narration takes when made at ``now``: now plus
    RENARRATION_LEAD, rounded up to the minute (the form's precision, so it can be typed)."""
    earliest = now + RENARRATION_LEAD
    minute = earliest.replace(second=0, microsecond=0)
    return minute if minute == earliest else minute + timedelta(minutes=1)


def already_assigned_text(existing: Assignment) -> str:
    return (
        f"{existing.walkthrough_set.title} is already assigned to this cohort, due "
        f"{utc_text(existing.due_at)}. To give learners more time, give them an extension "
        "(“Give a learner an extension” under that assignment on this page). The set can be "
        "assigned again once that due date has passed."
    )


# A cohort of the name asked for, made by the same instructor this recently, is taken for the
# one that request meant: the form was sent twice (a double click, a resubmit after Back).
RESUBMIT_WINDOW = timedelta(minutes=10)


def is_resubmission(existing: Cohort, user: User, now: datetime) -> bool:
    """True when ``existing`` (a cohort of the name ``user`` asked for) is the one their earlier
    submission of the same form made: they created it within RESUBMIT_WINDOW."""
    return existing.created_by_id == user.pk and now - existing.created_at <= RESUBMIT_WINDOW


class CohortForm(forms.ModelForm):
    class Meta:
        model = Cohort
        fields = ["name"]

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user  # the instructor creating it: their cohorts' names must differ
        self.existing: Cohort | None = None  # the cohort taught under that name, if refused

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("Give the cohort a name.")
        taught = Cohort.objects.taught_by(self.user) if self.user is not None else None
        self.existing = taught.filter(name__iexact=name).first() if taught is not None else None
        if self.existing is not None:
            raise forms.ValidationError(
                f"You already teach a cohort called “{name}”: pick a name that tells them "
                "apart (a term, a year), for you and for learners in both."
            )
        return name

    def save_for(self, user: User) -> Cohort | None:
        """Create the cohort, taught by ``user``; None, with the error on the form, when the form
        is invalid, or when a cohort of that name was made meanwhile (a double click: the
        second submission waits on the instructor's row for the first, then sees its cohort,
        which ``resubmitted`` then returns)."""
        with transaction.atomic():
            get_user_model().objects.select_for_update().filter(pk=user.pk).exists()
            if not self.is_valid():
                return None
            cohort = self.save(commit=False)
            cohort.created_by = user
            cohort.save()
            cohort.instructors.add(user)
        return cohort

    def resubmitted(self, user: User) -> Cohort | None:
        """After ``save_for`` refused the name: the cohort an earlier sending of this same form
        made (``is_resubmission``), else None."""
        existing = self.existing
        if existing is None or not is_resubmission(existing, user, timezone.now()):
            return None
        return existing


class JoinForm(forms.Form):
    code = forms.CharField(
        label="Join code",
        max_length=40,
        help_text="The code your instructor gave you (letters and digits; case does not matter).",
    )

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        self.cohort: Cohort | None = None

    def clean_code(self) -> str:
        code = normalise_code(self.cleaned_data["code"])
        cohort = Cohort.objects.filter(join_code=code).first() if code else None
        if cohort is None:
            hint = ""
            bad = sorted({ch for ch in code if ch not in JOIN_ALPHABET})
            if bad:
                hint = f" Codes never contain {', '.join(bad)}."
            raise forms.ValidationError(
                f"No cohort has the join code “{code or self.cleaned_data['code']}”. "
                f"Check it with your instructor; it may have been regenerated.{hint}"
            )
        if cohort.archived:
            raise forms.ValidationError(archived_join_text(cohort))
        self.cohort = cohort
        return code


def archived_join_text(cohort: Cohort) -> str:
    """Why a code of an archived cohort does not join (whoever has the code sees the name on the
    invite page already)."""
    return (
        f"{cohort.name} is archived: its instructors have closed it, and nobody joins it any "
        "more. If you expected to join it, ask your instructor for the code of a current cohort."
    )


def archived_assign_text(cohort: Cohort) -> str:
    return (
        f"{cohort.name} is archived, so it gets no new assignments. Unarchive it on its page "
        "to assign work again."
    )


class _DatesForm(forms.ModelForm):
    """An assignment's due date and cut-off, and their rules (``clean_dates``): shared by the
    form that assigns a set and the one that changes an assignment's dates."""

    due_at = _dt_field("Due (UTC)")
    cutoff_at = _dt_field(
        "Cut-off (UTC, optional)",
        required=False,
        help_text="Late work counts until the cut-off; after it, unread walkthroughs stay missing.",
    )

    def clean_dates(self, now: datetime, *, check_due: bool, renarration: bool, why: str) -> None:
        """A due date after now (``check_due``: one given or moved; a due date left as it was may
        have passed) and, with re-narration, at least its lead away; a cut-off not before the
        due date. ``why`` opens the re-narration refusal."""
        due, cutoff = self.cleaned_data.get("due_at"), self.cleaned_data.get("cutoff_at")
        if due is not None and check_due:
            earliest = earliest_renarration_due(now)
            if due <= now:
                self.add_error("due_at", "The due date is in the past: pick a time after now.")
            elif renarration and due < earliest:
                lead = span_text(RENARRATION_LEAD)
                self.add_error(
                    "due_at",
                    f"{why}each walkthrough comes back {lead} after it is read: pick a due date "
                    f"at least {lead} away, {utc_text(earliest)} or later.",
                )
        if due is not None and cutoff is not None and cutoff < due:
            self.add_error("cutoff_at", "The cut-off must be on or after the due date.")


class AssignmentForm(_DatesForm):
    walkthrough_set = forms.ModelChoiceField(
        queryset=WalkthroughSet.objects.all(),
        label="Walkthrough set",
        empty_label="Choose a set…",
        error_messages={"invalid_choice": "Choose one of the listed walkthrough sets."},
    )
    goal = forms.ChoiceField(
        choices=Assignment.Goal.choices,
        required=False,
        label="Drill goal",
        # Django's own message repeats the value posted, however long: name the list instead.
        error_messages={"invalid_choice": "Choose one of the listed drill goals."},
    )
    goal_retention = forms.FloatField(
        required=False, min_value=0.5, max_value=0.99, label="Retrievability X (0.50–0.99)"
    )
    goal_pair_drills = forms.IntegerField(
        required=False, min_value=1, max_value=100, label="Drills per lookalike pair k"
    )
    renarration = forms.BooleanField(
        required=False,
        label="Ask for re-narration",
        help_text=f"A walkthrough counts once read and re-narrated: its trace comes back "
        f"{span_text(RENARRATION_LEAD)} after reading, narration hidden, for the five sentences. "
        f"The due date must be at least {span_text(RENARRATION_LEAD)} away.",
    )

    class Meta:
        model = Assignment
        fields = [
            "walkthrough_set",
            "due_at",
            "cutoff_at",
            "goal",
            "goal_retention",
            "goal_pair_drills",
            "renarration",
        ]

    def __init__(self, *args, cohort: Cohort, **kwargs):
        super().__init__(*args, **kwargs)
        self.cohort = cohort
        self.existing: Assignment | None = None  # the open assignment that refused the set

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        now = timezone.now()
        renarration = bool(data.get("renarration"))
        self.clean_dates(now, check_due=True, renarration=renarration, why="With re-narration, ")
        goal = data.get("goal") or ""
        if goal == Assignment.Goal.RETENTION and self._left_blank("goal_retention"):
            self.add_error("goal_retention", "Give the retrievability target X for this goal.")
        if goal == Assignment.Goal.PAIRS and self._left_blank("goal_pair_drills"):
            self.add_error("goal_pair_drills", "Give the number of drills k per lookalike pair.")
        for field, needs in (
            ("goal_retention", Assignment.Goal.RETENTION),
            ("goal_pair_drills", Assignment.Goal.PAIRS),
        ):
            if goal != needs:
                self._refuse_number_without_its_goal(field, needs)
                data[field] = None
        self._refuse_while_assigned(now)
        self._refuse_archived()
        return data

    def _refuse_archived(self) -> bool:
        """True, with the error on the form, when the cohort is archived (``Cohort.archived``)."""
        if not self.cohort.archived:
            return False
        self.add_error(None, archived_assign_text(self.cohort))
        return True

    def _refuse_number_without_its_goal(self, name: str, goal: Assignment.Goal) -> None:
        """A number typed for a goal that is not the one chosen would be dropped without a word
        (an assignment saved with no goal): say so on the field instead."""
        if name in self.errors or self.cleaned_data.get(name) is None:
            return
        self.add_error(
            name,
            f"This number is for the drill goal “{goal.label}”: choose that goal above, "
            "or clear the number.",
        )

    def _left_blank(self, name: str) -> bool:
        """The field was left empty (a value given but refused has its own error already)."""
        return name not in self.errors and self.cleaned_data.get(name) is None

    def _refuse_while_assigned(self, now: datetime) -> bool:
        """True, with the error on the form, when the chosen set already has an assignment in
        this cohort that is not yet due (``open_assignment``)."""
        wset = self.cleaned_data.get("walkthrough_set")
        existing = open_assignment(self.cohort, wset, now) if wset is not None else None
        if existing is None:
            return False
        self.existing = existing
        self.add_error("walkthrough_set", already_assigned_text(existing))
        return True

    # The fields that must match for a refused submission to be the same form sent again.
    SAME_FIELDS = ("due_at", "cutoff_at", "goal", "goal_retention", "goal_pair_drills")

    def resubmitted(self, user: User) -> Assignment | None:
        """After the set was refused as already assigned: the open assignment when it is this
        very form sent again (a double click, a resubmit after Back): made by ``user`` within
        RESUBMIT_WINDOW, with the same dates, goal and re-narration, and nothing else wrong with
        the form. Else None (a real clash: the refusal stands)."""
        existing = self.existing
        if existing is None or set(self.errors) != {"walkthrough_set"}:
            return None
        if existing.created_by_id != user.pk:
            return None
        if timezone.now() - existing.created_at > RESUBMIT_WINDOW:
            return None
        data = self.cleaned_data
        same = all(
            (data.get(f) or None) == (getattr(existing, f) or None) for f in self.SAME_FIELDS
        )
        return existing if same and bool(data.get("renarration")) == existing.renarration else None

    def save_for(self, user: User) -> Assignment | None:
        """Save the valid form as ``user``'s assignment to the cohort; None, with the error on
        the form, when the set was assigned to the cohort meanwhile (another instructor's
        submission). The cohort's row lock makes the check and the insert one step: of two
        submissions at once the second waits for the first, then sees its assignment."""
        with transaction.atomic():
            locked = Cohort.objects.select_for_update().only("pk", "name", "archived_at")
            self.cohort = locked.get(pk=self.cohort.pk)  # archived meanwhile: refused below
            if self._refuse_while_assigned(timezone.now()) or self._refuse_archived():
                return None
            assignment = self.save(commit=False)
            assignment.cohort = self.cohort
            assignment.created_by = user
            assignment.save()
        return assignment


class AssignmentDatesForm(_DatesForm):
    """A new due date and cut-off for an assignment already made, under the rules of
    ``AssignmentForm``: a due date moved must be after now (and, with re-narration, far enough
    away), the cut-off not before the due date, and the set not open twice in the cohort. A due
    date left as it was is kept even when it has passed (to move only the cut-off)."""

    class Meta:
        model = Assignment
        fields = ["due_at", "cutoff_at"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.was_due = self.instance.due_at
        self.dropped: list[Extension] = []  # extensions the new due date overtook, once saved

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        now = timezone.now()
        due = data.get("due_at")
        moved = due is not None and due != self.was_due
        self.clean_dates(
            now,
            check_due=moved,
            renarration=self.instance.renarration,
            why="This assignment asks for re-narration, so ",
        )
        if moved and "due_at" not in self.errors:
            self._refuse_second_open(now)
        return data

    def _refuse_second_open(self, now: datetime) -> bool:
        """True, with the error on the form, when the new due date would make this assignment
        open beside another open assignment of its set in the cohort (``open_assignment``)."""
        due = self.cleaned_data.get("due_at")
        if due is None or due <= now:
            return False
        mine = self.instance
        other = (
            Assignment.objects.filter(
                cohort_id=mine.cohort_id, walkthrough_set_id=mine.walkthrough_set_id
            )
            .exclude(pk=mine.pk)
            .open_at(now)
            .first()
        )
        if other is None:
            return False
        self.add_error(
            "due_at",
            f"{self.instance.walkthrough_set.title} is assigned to this cohort again, due "
            f"{utc_text(other.due_at)}: this one cannot be open at the same time. Change the "
            "dates of that assignment instead.",
        )
        return True

    def save_dates(self) -> Assignment | None:
        """Save the valid form; None, with the error on the form, when the set was assigned
        again meanwhile (the cohort's row lock, as ``AssignmentForm.save_for``). Extensions
        whose due date is not after the new one would now shorten the learner's time: they go
        (``dropped``), and those learners have the assignment's dates."""
        with transaction.atomic():
            Cohort.objects.select_for_update().only("pk").get(pk=self.instance.cohort_id)
            if self.cleaned_data["due_at"] != self.was_due and self._refuse_second_open(
                timezone.now()
            ):
                return None
            assignment = self.save()
            overtaken = assignment.extensions.filter(due_at__lte=assignment.due_at)
            self.dropped = list(overtaken.select_related("learner").order_by("learner__username"))
            overtaken.delete()
        return assignment


class LearnerChoiceField(forms.ModelChoiceField):
    """A cohort member, listed by username."""

    def label_from_instance(self, obj: User) -> str:
        return obj.username


class ExtensionForm(forms.ModelForm):
    learner = LearnerChoiceField(
        queryset=get_user_model().objects.none(),
        label="Learner",
        empty_label="Choose a learner…",
        error_messages={"invalid_choice": "Choose a learner in this cohort."},
    )
    due_at = _dt_field("New due (UTC)")
    cutoff_at = _dt_field("New cut-off (UTC, optional)", required=False)

    class Meta:
        model = Extension
        fields = ["learner", "due_at", "cutoff_at"]

    def __init__(self, *args, assignment: Assignment, **kwargs):
        super().__init__(*args, **kwargs)
        self.assignment = assignment
        learner = self.fields["learner"]
        assert isinstance(learner, LearnerChoiceField)  # declared above; a deep copy of it
        learner.queryset = assignment.cohort.members.order_by("username")

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        due, cutoff = data.get("due_at"), data.get("cutoff_at")
        if due is not None and due < self.assignment.due_at:
            self.add_error(
                "due_at",
                "An extension moves the due date later: pick a time after "
                f"{self.assignment.due_at:%Y-%m-%d %H:%M} UTC.",
            )
        if due is not None and cutoff is not None and cutoff < due:
            self.add_error("cutoff_at", "The cut-off must be on or after the new due date.")
        return data


def no_instructor_text(name: str) -> str:
    """The refusal of a co-instructor's name that is no instructor's, whether or not someone
    has it as a learner."""
    return (
        f"No instructor is called “{name}”. Check the spelling with them (case counts). "
        "Someone becomes an instructor when an operator runs "
        "“manage.py make_instructor USERNAME” for their account."
    )


class CoInstructorForm(forms.Form):
    username = forms.CharField(
        label="Co-instructor's username",
        max_length=150,
        error_messages={
            "required": "Give the username of the instructor to add.",
            "max_length": "Usernames have at most %(limit_value)d characters; "
            "this one has %(show_value)d.",
        },
    )
    # A refused name is shown again for correcting, cut to this many characters (a longer one is
    # refused for its length, and the message says how long it was).
    TYPED_KEPT = 300

    def __init__(self, *args, cohort: Cohort, **kwargs):
        super().__init__(*args, **kwargs)
        self.cohort = cohort
        self.user: User | None = None  # the co-instructor, once clean_username found them

    def clean_username(self) -> str:
        """The instructor of that username. A name nobody has and a learner's name get one
        answer, from one query: the form must not tell an instructor which accounts exist."""
        name = self.cleaned_data["username"].strip()
        user = instructors().filter(username=name).first()
        if user is None:
            raise forms.ValidationError(no_instructor_text(name))
        if self.cohort.instructors.filter(pk=user.pk).exists():
            raise forms.ValidationError(f"{name} already teaches this cohort.")
        self.user = user
        return name

    def typed_username(self) -> str:
        """What was typed, as far as ``TYPED_KEPT`` characters."""
        return str(self.data.get("username", ""))[: self.TYPED_KEPT]
