"""gunicorn settings for labelstudio-lite: ``gunicorn -c gunicorn.conf.py`` (see docs/deploy.md).

Every value can be set from the environment (GUNICORN_*), so hosts differ by environment only.

Why these values:

* ``gthread`` workers: a request waiting on a slow client (an upload over a slow link) holds a thread, not
  the whole worker, and the worker keeps telling the master it is alive: a 20-minute upload is not killed.
* ``timeout``: how long a worker may be silent before the master kills it. With threads, a slow request
  does not silence the worker; it only catches a worker that hangs. Uploads are bounded by UPLOAD_MAX_BYTES
  instead (512 MiB: at 1 MB/s about 9 minutes).
* ``graceful_timeout``: on a restart (deploy), requests in flight (an upload) get this long to finish.
* ``forwarded_allow_ips``: only the proxy in front may set X-Forwarded-* (scheme and client address).
* Connection budget: each thread may hold one PostgreSQL connection (DB_CONN_MAX_AGE keeps it), so a host
  uses up to ``workers × threads`` connections; add the Celery workers' (one per pool process).
"""

import multiprocessing
import os


def _int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    try:
        return int(value) if value else default
    except ValueError:
        raise SystemExit(f"{name}={value!r} is not a whole number") from None


bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = _int("GUNICORN_WORKERS", min(2 * multiprocessing.cpu_count() + 1, 8))
worker_class = "gthread"
threads = _int("GUNICORN_THREADS", 4)
timeout = _int("GUNICORN_TIMEOUT", 120)
graceful_timeout = _int("GUNICORN_GRACEFUL_TIMEOUT", 120)
keepalive = _int("GUNICORN_KEEPALIVE", 5)
# A worker is replaced after this many requests (and a random few more, so they do not all restart together):
# memory a request left behind (a large comparison) is given back.
max_requests = _int("GUNICORN_MAX_REQUESTS", 2000)
max_requests_jitter = _int("GUNICORN_MAX_REQUESTS_JITTER", 200)
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
# The app reads SECURE_PROXY_SSL_HEADER itself; gunicorn only passes the headers on.
limit_request_line = 8190
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-")
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
wsgi_app = "labelstudio_lite.wsgi:application"
# Upload temporary files go to FILE_UPLOAD_TEMP_DIR (settings); gunicorn's own heartbeat files to memory.
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None


def on_starting(server):  # noqa: ARG001  (gunicorn's hook signature)
    """With PROMETHEUS_MULTIPROC_DIR, make the folder and empty it: counts from an earlier start would be summed in."""
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if folder:
        os.makedirs(folder, exist_ok=True)
        for name in os.listdir(folder):
            if name.endswith(".db"):
                os.remove(os.path.join(folder, name))


def child_exit(server, worker):  # noqa: ARG001  (gunicorn's hook signature)
    """With PROMETHEUS_MULTIPROC_DIR (one metrics view over every worker), forget a dead worker's gauges."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
