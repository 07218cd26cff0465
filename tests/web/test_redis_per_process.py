"""Each pytest-xdist process has Redis databases of its own (tests/conftest.py): one test's cache.clear()
must not empty the queues and cache of a test running in another process."""

import os
from urllib.parse import urlsplit

import pytest
import redis
from django.conf import settings
from django.core.cache import cache

from labelstudio_lite.celery import app

pytestmark = pytest.mark.redis


def _database(url: str) -> int:
    return int(urlsplit(url).path.strip("/") or 0)


def test_cache_and_broker_share_this_process_database():
    broker = os.environ["CELERY_BROKER_URL"]
    assert app.conf.broker_url == broker
    assert settings.CACHES["default"]["LOCATION"] == broker
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw"):
        assert _database(broker) >= 1 + int(worker[2:])


def test_clearing_the_cache_leaves_other_databases_alone():
    broker = os.environ["CELERY_BROKER_URL"]
    other = urlsplit(broker)._replace(path=f"/{(_database(broker) + 7) % 16}").geturl()
    neighbour = redis.Redis.from_url(other)
    neighbour.set("lsl-test:neighbour", "queued task")
    try:
        cache.set("mine", 1)
        cache.clear()
        assert cache.get("mine") is None
        assert neighbour.get("lsl-test:neighbour") == b"queued task"
    finally:
        neighbour.delete("lsl-test:neighbour")
        neighbour.close()
