from __future__ import annotations

from celery import shared_task

from scenarios import engine, pool


@shared_task(name=pool.REFILL_TASK, acks_late=True, reject_on_worker_lost=True)
def refill_pool(scenario: str | None = None) -> int:
    """Top one scenario up to its target (a claim's low-water trigger), or, without one (beat's
    schedule), every scenario whose unclaimed stock is under it. Returns the traces inserted."""
    if scenario is not None:
        return pool.refill(scenario)
    return pool.refill_many(engine.SCENARIOS)


@shared_task(name="scenarios.tasks.refill_all", acks_late=True, reject_on_worker_lost=True)
def refill_all() -> dict[str, int]:
    """Every scenario topped up; kept by name for beat messages queued before the schedule
    called `refill_pool`."""
    return {slug: pool.refill(slug) for slug in engine.SCENARIOS}


@shared_task(name="scenarios.tasks.process_upload", acks_late=True, bind=True, max_retries=None)
def process_upload(self, upload_id: str) -> str:
    """Process an upload. A copy redelivered while another worker still processes it (the Redis
    visibility timeout) checks back later instead: if that worker dies, this copy takes over."""
    from django.conf import settings

    from scenarios import uploads

    status = uploads.process(upload_id)
    if status == uploads.BUSY:
        timeout = settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]
        raise self.retry(countdown=max(1, min(60, timeout // 2)))
    return status


@shared_task(name="scenarios.tasks.delete_expired_uploads")
def delete_expired_uploads() -> int:
    from scenarios import uploads

    return uploads.delete_expired()
