from __future__ import annotations

from django.contrib.auth.models import Group

INSTRUCTORS = "instructors"


def make_instructor(user) -> None:
    group, _ = Group.objects.get_or_create(name=INSTRUCTORS)
    user.groups.add(group)


def is_instructor(user) -> bool:
    return user.is_authenticated and user.groups.filter(name=INSTRUCTORS).exists()


def instructors():
    """Every instructor's account, as a queryset."""
    from django.contrib.auth import get_user_model

    return get_user_model().objects.filter(groups__name=INSTRUCTORS)
