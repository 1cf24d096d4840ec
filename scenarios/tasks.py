from __future__ import annotations

from celery import shared_task

from scenarios import engine, pool


@shared_task(name=pool.REFILL_TASK, acks_late=True, reject_on_worker_lost=True)
def refill_pool(scenario: str) -> int:
    return pool.refill(scenario)


@shared_task(name="scenarios.tasks.refill_all", acks_late=True, reject_on_worker_lost=True)
def refill_all() -> dict[str, int]:
    return {slug: pool.refill(slug) for slug in engine.SCENARIOS}


@shared_task(name="scenarios.tasks.process_upload", acks_late=True)
def process_upload(upload_id: str) -> str:
    from scenarios import uploads

    return uploads.process(upload_id)


@shared_task(name="scenarios.tasks.delete_expired_uploads")
def delete_expired_uploads() -> int:
    from scenarios import uploads

    return uploads.delete_expired()
