"""The worker's consumer: Celery's, without gossip and mingle, whatever the command line says.

The app uses neither (they share revoked task ids and logical clocks between workers), and gossip's restart after a
broker outage is what crashed a worker's main process (kombu: ``'NoneType' object has no attribute 'hostname'``,
celery/kombu#582). Named by ``CELERY_WORKER_CONSUMER``; only a worker imports it.
"""

from __future__ import annotations

from typing import Any

from celery.worker.consumer import Consumer as CeleryConsumer


class Consumer(CeleryConsumer):
    """Celery's consumer, started as with ``--without-gossip --without-mingle``."""

    def __init__(self, *args: Any, worker_options: dict[str, Any] | None = None, **kwargs: Any) -> None:
        options = {**(worker_options or {}), "without_gossip": True, "without_mingle": True}
        super().__init__(*args, worker_options=options, **kwargs)
