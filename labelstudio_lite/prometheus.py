"""The job metrics exported at /metrics beside django-prometheus's request metrics.

They are read from the database (and the broker) when Prometheus scrapes, not counted in memory:
jobs run in Celery workers, often on other hosts, whose counters no web process could see.

* ``lsl_jobs{kind, status}``: jobs by kind and status (queued and running ones are the live load);
* ``lsl_job_duration_seconds{kind, status}``: a histogram of how long the last finished jobs ran;
* ``lsl_queue_depth{queue}``: tasks waiting in the broker; ``lsl_broker_up``: whether it answered.
* ``lsl_database_up``: whether the database answered this scrape; ``lsl_metric_stale{metric}``: 1 for
  each gauge served from this process's last good scrape (the database away), with
  ``lsl_metric_refreshed_timestamp_seconds{metric}`` saying when that was. A scrape never fails for
  an outage: the request metrics and the broker's are served as ever.
"""

from __future__ import annotations

import logging
import os
import time
from collections import defaultdict
from collections.abc import Iterator

from django.conf import settings
from django.db import DatabaseError
from django.db.models import Count
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import REGISTRY, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from evalcore.models import Job

from .celery import app

logger = logging.getLogger(__name__)

BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0)
RECENT_JOBS = 10_000  # the histogram covers at most this many of the latest finished jobs


#: The database's gauges as the last good scrape of this process read them, and when.
_last_good: dict[str, tuple[float, Metric]] = {}


class JobCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        try:
            fresh = list(_database_metrics())
        except DatabaseError as error:  # the database away: serve what is known, and say which gauges are stale
            logger.warning("metrics: the database could not be read: %s", error)
            fresh = []
        now = time.time()
        for metric in fresh:
            _last_good[metric.name] = (now, metric)
        up = GaugeMetricFamily("lsl_database_up", "Whether the database answered this scrape.")
        up.add_metric([], 1 if fresh else 0)
        yield up
        stale = GaugeMetricFamily(
            "lsl_metric_stale",
            "1 for a gauge served from an earlier scrape: the database did not answer.",
            labels=["metric"],
        )
        refreshed = GaugeMetricFamily(
            "lsl_metric_refreshed_timestamp_seconds", "When each database gauge was last read.", labels=["metric"]
        )
        for name in DATABASE_METRICS:
            when, metric = _last_good.get(name, (None, None))
            stale.add_metric([name], 0 if fresh else 1)
            if when is not None:
                refreshed.add_metric([name], when)
                yield metric
        yield stale
        yield refreshed
        yield from _broker_metrics()


#: The gauges read from the database (served stale while it is away).
DATABASE_METRICS = ("lsl_jobs", "lsl_job_duration_seconds")


def _database_metrics() -> Iterator[Metric]:
    counts = GaugeMetricFamily("lsl_jobs", "Jobs by kind and status.", labels=["kind", "status"])
    for row in Job.objects.order_by().values("kind", "status").annotate(n=Count("id")):
        counts.add_metric([row["kind"], row["status"]], row["n"])
    yield counts

    durations: dict[tuple[str, str], list[float]] = defaultdict(list)
    finished = (
        Job.objects.filter(finished_at__isnull=False, started_at__isnull=False)
        .order_by("-finished_at")
        .values_list("kind", "status", "started_at", "finished_at")[:RECENT_JOBS]
    )
    for kind, status, started, ended in finished:
        durations[(kind, status)].append(max(0.0, (ended - started).total_seconds()))
    histogram = HistogramMetricFamily(
        "lsl_job_duration_seconds", "How long finished jobs ran (the latest ones).", labels=["kind", "status"]
    )
    for (kind, status), values in sorted(durations.items()):
        buckets = [(str(bound), sum(v <= bound for v in values)) for bound in BUCKETS]
        histogram.add_metric([kind, status], buckets + [("+Inf", len(values))], sum_value=sum(values))
    yield histogram


def _broker_metrics() -> Iterator[Metric]:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return
    up = GaugeMetricFamily("lsl_broker_up", "Whether the broker answered this scrape.")
    depth = GaugeMetricFamily("lsl_queue_depth", "Tasks waiting in the broker's queue.", labels=["queue"])
    queue = app.conf.task_default_queue
    try:
        with app.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1, timeout=2)
            try:
                waiting = connection.default_channel.queue_declare(queue=queue, passive=True).message_count
            except connection.channel_errors:  # Redis drops an empty queue's list: "no queue" is an empty one
                waiting = 0
            depth.add_metric([queue], waiting)
        up.add_metric([], 1)
    except Exception as error:  # the broker away: say it, do not fail the scrape
        logger.warning("metrics: the broker's queue %r could not be read: %s", queue, error)
        up.add_metric([], 0)
    yield up
    yield depth


_registered = False


def export() -> bytes:
    """The metrics text: this process's (or, with PROMETHEUS_MULTIPROC_DIR, every gunicorn worker's) and the jobs'."""
    global _registered
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        registry.register(JobCollector())
        return generate_latest(registry)
    if not _registered:
        REGISTRY.register(JobCollector())
        _registered = True
    return generate_latest(REGISTRY)
