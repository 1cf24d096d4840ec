"""Work sent to the Celery worker once the current transaction commits.

With a broker (``REDIS_URL``) the task is sent by name to the worker's queue. In embedded mode
(no broker: ``CELERY_TASK_ALWAYS_EAGER``) there is no worker, so the same function runs in a
daemon thread of this process: still off the request that committed, and still only once the
rows it reads are committed. A broker that is down never fails the request: the failure is
logged and the page's fallback (generate on request) covers it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import connection, transaction

log = logging.getLogger(__name__)


def send_on_commit(task_name: str, args: list[Any], run: Callable[..., Any]) -> None:
    """Queue ``task_name(*args)`` after the commit; ``run`` is the task's body, used in-process
    in embedded mode (it must be safe to run twice: a redelivery does)."""
    transaction.on_commit(lambda: dispatch(task_name, args, run))


def dispatch(task_name: str, args: list[Any], run: Callable[..., Any]) -> None:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        threading.Thread(target=_run_quietly, args=(task_name, args, run), daemon=True).start()
        return
    try:
        current_app.send_task(task_name, args=args)
    except Exception:  # the broker being down must not fail the learner's request
        log.exception("could not enqueue %s%r", task_name, tuple(args))


def _run_quietly(task_name: str, args: list[Any], run: Callable[..., Any]) -> None:
    try:
        run(*args)
    except Exception:
        log.exception("in-process %s%r failed", task_name, tuple(args))
    finally:
        connection.close()
