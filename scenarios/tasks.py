from __future__ import annotations

from celery import shared_task

from scenarios import engine, pool


@shared_task(name="scenarios.tasks.refill_pool", acks_late=True, reject_on_worker_lost=True)
def refill_pool(scenario: str) -> int:
    return pool.refill(scenario)


@shared_task(name="scenarios.tasks.refill_all", acks_late=True, reject_on_worker_lost=True)
def refill_all() -> dict[str, int]:
    return {slug: pool.refill(slug) for slug in engine.SCENARIOS}
