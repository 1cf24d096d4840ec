"""The one cast of test users, shared by every test that needs more than one person.

Learners ada and bob take part in cohorts; eve is a learner outside them. teacher runs cohorts,
coteacher is added to them, stranger is an instructor of none (the one who must get 404s).
Everyone has an e-mail address (reminders go to it).
"""

from __future__ import annotations

from accounts.roles import make_instructor

LEARNERS = ("ada", "bob", "eve")
INSTRUCTORS = ("teacher", "coteacher", "stranger")


def cast(make_user) -> dict:
    people = {name: make_user(name, email=f"{name}@example.com") for name in LEARNERS}
    for name in INSTRUCTORS:
        people[name] = make_user(name, email=f"{name}@example.com")
        make_instructor(people[name])
    return people
