"""Settings for labelstudio-lite, read from environment variables.

The defaults give the embedded mode: a SQLite file under ``var/``, Celery tasks run in-process,
no broker. Production sets ``DATABASE_URL``, ``CELERY_BROKER_URL``, ``SECRET_KEY``,
``ALLOWED_HOSTS`` and ``DEBUG=0``. See the README for every variable.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import tempfile
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

from .env import envbool, envchoice, envfloat, envint, envlist, envstr, proxy_ssl_header

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(envstr("VAR_DIR", str(BASE_DIR / "var")))

DEBUG = envbool("DEBUG", False)


def _secret_key() -> str:
    """Return SECRET_KEY from the environment, or a random key kept in var/ (embedded mode)."""
    key = envstr("SECRET_KEY", "")
    if key:
        return key
    path = VAR_DIR / "secret_key"
    if path.exists():
        return path.read_text().strip()
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    path.write_text(key)
    path.chmod(0o600)
    return key


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "csp",
    "django_prometheus",
    "labelstudio_lite.accounts",
    "evalcore",
    "labelstudio_lite.labelling",
]

MIDDLEWARE = [
    "django_prometheus.middleware.PrometheusBeforeMiddleware",  # request latency for /metrics (with the After one, last)
    "labelstudio_lite.middleware.ServerTimingMiddleware",  # its figure covers everything below
    "labelstudio_lite.middleware.UploadCleanupMiddleware",  # upload temporary files deleted however a request ends
    "django.middleware.security.SecurityMiddleware",
    "django_permissions_policy.PermissionsPolicyMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "labelstudio_lite.accounts.middleware.LoginRequiredMiddleware",
    "axes.middleware.AxesMiddleware",  # last: it answers a locked-out login
]

ROOT_URLCONF = "labelstudio_lite.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "labelstudio_lite.accounts.context_processors.roles",
            ],
        },
    },
]

WSGI_APPLICATION = "labelstudio_lite.wsgi.application"

# Database: DATABASE_URL (postgres://user@host:5432/name), default a SQLite file in var/.
_default_db = f"sqlite:///{VAR_DIR / 'db.sqlite3'}"
DATABASE_URL = envstr("DATABASE_URL", _default_db)
try:
    # Persistent connections (checked before reuse): opening a PostgreSQL connection per request
    # costs more than the labelling endpoints' own work.
    DATABASES = {
        "default": dj_database_url.parse(
            DATABASE_URL, conn_max_age=envint("DB_CONN_MAX_AGE", 60, minimum=0), conn_health_checks=True
        )
    }
except ValueError as error:
    raise ImproperlyConfigured(f"DATABASE_URL={DATABASE_URL!r} cannot be parsed: {error}") from None
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    # IMMEDIATE transactions take the write lock up front, so two writers queue instead of one
    # failing with "database is locked" on lock upgrade; WAL lets readers run beside a writer.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": envint("SQLITE_TIMEOUT", 20, minimum=1),
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
    }
    # Tests use a file (not shared-cache memory) so that threads in concurrency tests get real
    # SQLite locking; one file per process, so parallel test runs never share it.
    DATABASES["default"]["TEST"] = {
        "NAME": envstr("SQLITE_TEST_NAME", "")
        or str(Path(tempfile.gettempdir()) / f"labelstudio-lite-test-{os.getpid()}.sqlite3")
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "accounts.User"
# django-axes first: it refuses a login locked out for too many failures before the password is checked.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = envint("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=envint("LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]  # one address guessing one account's password
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "labelstudio_lite.accounts.lockout.lockout_response"
# The address a login comes from: REMOTE_ADDR, or behind a proxy the header it sets (e.g. HTTP_X_FORWARDED_FOR).
AXES_IPWARE_META_PRECEDENCE_ORDER = tuple(envlist("CLIENT_IP_HEADERS", ["REMOTE_ADDR"]))
AXES_IPWARE_PROXY_COUNT = envint("TRUSTED_PROXY_COUNT", 0, minimum=0) or None

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

# A one-time link (an invitation, or a password reset by an eval owner) works this many hours.
ACCESS_LINK_HOURS = envint("ACCESS_LINK_HOURS", 72, minimum=1)

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = envstr("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
MEDIA_ROOT = Path(envstr("MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_URL = "media/"
# Uploads (the only files the app stores) go where every host reaches them: a folder under MEDIA_ROOT
# (shared, e.g. over NFS, when web and workers are on several hosts) or S3-compatible object storage.
STORAGE_S3_BUCKET = envstr("STORAGE_S3_BUCKET", "")
_default_storage: dict = {"BACKEND": "django.core.files.storage.FileSystemStorage"}
if STORAGE_S3_BUCKET:
    if importlib.util.find_spec("boto3") is None:
        raise ImproperlyConfigured(
            "STORAGE_S3_BUCKET is set but boto3 is not installed: pip install 'labelstudio-lite[s3]' (or boto3)"
        )
    _default_storage = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": STORAGE_S3_BUCKET,
            "endpoint_url": envstr("STORAGE_S3_ENDPOINT_URL", "") or None,  # MinIO, Ceph, R2...; empty: AWS
            "region_name": envstr("STORAGE_S3_REGION", "") or None,
            # empty: boto3's own chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, ~/.aws, an instance role)
            "access_key": envstr("STORAGE_S3_ACCESS_KEY_ID", "") or None,
            "secret_key": envstr("STORAGE_S3_SECRET_ACCESS_KEY", "") or None,
            "location": envstr("STORAGE_S3_PREFIX", ""),
            "addressing_style": envchoice("STORAGE_S3_ADDRESSING_STYLE", "path", ("path", "virtual", "auto")),
            "default_acl": None,
            "file_overwrite": False,
            "querystring_auth": True,
        },
    }
STORAGES = {
    "default": _default_storage,
    "staticfiles": {
        "BACKEND": envstr("STATICFILES_BACKEND", "django.contrib.staticfiles.storage.StaticFilesStorage"),
    },
}
# Serve static files straight from the source folders unless collectstatic was run for production.
WHITENOISE_USE_FINDERS = envbool("WHITENOISE_USE_FINDERS", True)

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False
SESSION_COOKIE_SECURE = envbool("SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_AGE = envint("SESSION_COOKIE_AGE", 12 * 3600, minimum=60)  # a working day, then log in again
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = envstr("REFERRER_POLICY", "same-origin")

# HTTPS, for production behind TLS: redirect plain HTTP, tell browsers to use HTTPS only (HSTS), and
# trust the header a TLS-terminating proxy sets (only behind such a proxy: anyone can send it).
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", False)
SECURE_PROXY_SSL_HEADER = proxy_ssl_header("SECURE_PROXY_SSL_HEADER")

# Content-Security-Policy: scripts, styles, images and requests from this site only; no inline
# script (htmx and our scripts are files); style attributes (progress bars' widths) are allowed,
# <style> elements are not. The API docs page (Swagger UI) passes the same policy: its start-up script is a file.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "style-src-attr": [UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
        **({"report-uri": envstr("CSP_REPORT_URI", "")} if envstr("CSP_REPORT_URI", "") else {}),
    }
}
# Permissions-Policy: the app uses no camera, microphone, location, payment or other device feature.
PERMISSIONS_POLICY = {
    feature: []
    for feature in (
        "accelerometer",
        "autoplay",
        "camera",
        "display-capture",
        "geolocation",
        "gyroscope",
        "magnetometer",
        "microphone",
        "midi",
        "payment",
        "usb",
        "xr-spatial-tracking",
    )
}

# Celery: with no broker configured, tasks run in-process (embedded mode).
CELERY_BROKER_URL = envstr("CELERY_BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = envbool("CELERY_TASK_ALWAYS_EAGER", not CELERY_BROKER_URL)
if not CELERY_BROKER_URL:
    if not CELERY_TASK_ALWAYS_EAGER:
        raise ImproperlyConfigured(
            "CELERY_TASK_ALWAYS_EAGER=0 needs CELERY_BROKER_URL (for example redis://127.0.0.1:6379/0)"
        )
    CELERY_BROKER_URL = "memory://"
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = envstr("CELERY_RESULT_BACKEND", "") or None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# The job task (registered as "evalcore.run_job", the name messages in flight carry) and the worker's
# start-up handler live in evalcore/jobs/, not in an app's tasks.py: a worker imports them by name.
CELERY_IMPORTS = ("evalcore.jobs.task", "evalcore.jobs.worker")
# A task is acknowledged when it ends, and given back to the broker when its worker process dies
# (a pool child killed by the OOM killer): the task delivered again finds its job's process gone and
# fails it with the reason (or resumes a judge run); it never runs a job twice (see evalcore/jobs/).
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Outages of the broker (and of the database, see evalcore/jobs/): a worker waits for the broker however long it
# is away, at start-up and later, and carries on when it returns (docs/deploy.md, "Outages"). A job running when
# the broker goes away is not cancelled: it needs only the database, finishes, and its task's acknowledgement is
# lost with the connection; if the broker delivers the task again, the job is finished and the task skips it.
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# Gossip and mingle (worker-to-worker chatter, unused here) crash a worker's restart after a broker outage
# (kombu's "'NoneType' object has no attribute 'hostname'"): this consumer leaves them out.
CELERY_WORKER_CONSUMER = "labelstudio_lite.celery_consumer:Consumer"
#: Seconds a connection to Redis (broker, result backend, cache) may take to open, and to answer.
REDIS_CONNECT_TIMEOUT = envint("REDIS_CONNECT_TIMEOUT", 5, minimum=1)
REDIS_SOCKET_TIMEOUT = envint("REDIS_SOCKET_TIMEOUT", 30, minimum=2)
REDIS_HEALTH_CHECK_INTERVAL = 25
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = REDIS_CONNECT_TIMEOUT
CELERY_REDIS_SOCKET_TIMEOUT = REDIS_SOCKET_TIMEOUT
CELERY_REDIS_BACKEND_HEALTH_CHECK_INTERVAL = REDIS_HEALTH_CHECK_INTERVAL
CELERY_REDIS_RETRY_ON_TIMEOUT = True
# Time limits of one job: at the soft limit the job stops and is failed with the reason; at the hard
# limit its process is killed (and the job failed by the reaper).
CELERY_TASK_TIME_LIMIT = envint("JOB_TIME_LIMIT", 6 * 3600, minimum=60)
CELERY_TASK_SOFT_TIME_LIMIT = envint("JOB_SOFT_TIME_LIMIT", CELERY_TASK_TIME_LIMIT - 60, minimum=30)
if CELERY_TASK_SOFT_TIME_LIMIT >= CELERY_TASK_TIME_LIMIT:
    raise ImproperlyConfigured(
        f"JOB_SOFT_TIME_LIMIT={CELERY_TASK_SOFT_TIME_LIMIT} must be below JOB_TIME_LIMIT={CELERY_TASK_TIME_LIMIT}"
    )
# Redis (and SQS) give an unacknowledged task to another worker after this many seconds: it must be
# above the longest job, or a job still running would be delivered again (Redis's default is one hour).
CELERY_VISIBILITY_TIMEOUT = envint("CELERY_VISIBILITY_TIMEOUT", CELERY_TASK_TIME_LIMIT + 3600, minimum=60)
if CELERY_VISIBILITY_TIMEOUT <= CELERY_TASK_TIME_LIMIT:
    raise ImproperlyConfigured(
        f"CELERY_VISIBILITY_TIMEOUT={CELERY_VISIBILITY_TIMEOUT} must be above JOB_TIME_LIMIT={CELERY_TASK_TIME_LIMIT} "
        "(the longest a job may run), or a running job's task is delivered again"
    )
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}
if CELERY_BROKER_URL.startswith(("redis", "rediss")):
    CELERY_BROKER_TRANSPORT_OPTIONS |= {
        "socket_connect_timeout": REDIS_CONNECT_TIMEOUT,
        "socket_timeout": REDIS_SOCKET_TIMEOUT,
        "socket_keepalive": True,
        "health_check_interval": REDIS_HEALTH_CHECK_INTERVAL,
        "retry_on_timeout": True,
    }
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT}
# A process running a job refreshes a key in the shared cache this often; 3 missed beats and any host
# may call the job's process gone.
JOB_HEARTBEAT_SECONDS = envint("JOB_HEARTBEAT_SECONDS", 5, minimum=1)
# In embedded mode, long tasks started from a web request run in a background thread of the
# server process so the request returns at once; tests turn this off to run them inline.
EMBEDDED_TASKS_IN_THREAD = envbool("EMBEDDED_TASKS_IN_THREAD", True)
# A running job of a resumable kind (the judge jobs) whose worker has not reported for this long
# lost its worker: a worker that starts queues it again, and it resumes from the judge cache.
JOB_STALE_SECONDS = envint("JOB_STALE_SECONDS", 120, minimum=1)
# Every worker sweeps the jobs this often (fails the dead, sends again what never reached a worker): with a worker
# and the database healthy, no job stays queued or running for good (docs/deploy.md, "Outages").
JOB_SWEEP_SECONDS = envint("JOB_SWEEP_SECONDS", 60, minimum=1)
# A queued job whose task the broker took this long ago and no worker claimed is sent again (the broker lost it
# in an outage, or a worker took it while the database was away); a task delivered twice runs its job once.
JOB_RESEND_SECONDS = envint("JOB_RESEND_SECONDS", 600, minimum=5)
# A job's thread runs at this nice value (Linux: per thread), so imports and scoring yield the CPU to the pages
# people are using on the same machine: the web server's threads stay at 0. 0 turns it off.
JOB_NICENESS = envint("JOB_NICENESS", 10, minimum=0, maximum=19)
# While an import runs, Python's cyclic garbage collector is off and runs every this many seconds instead
# (it scanned the rows being imported again and again: a third of the import's CPU). 0 leaves it alone.
IMPORT_GC_SECONDS = envint("IMPORT_GC_SECONDS", 2, minimum=0, maximum=3600)
# A job whose worker lost the database waits this long for it to come back to record how the job ended.
JOB_OUTAGE_WAIT_SECONDS = envint("JOB_OUTAGE_WAIT_SECONDS", 3600, minimum=10)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "labelstudio_lite.accounts.tokens.TokenAuthentication",  # hashed keys (accounts/tokens.py)
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON bodies are read within the input limits (depth, finite numbers): see labelstudio_lite/rest.py
    "DEFAULT_PARSER_CLASSES": [
        "labelstudio_lite.rest.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "labelstudio_lite.schema.AutoSchema",
    # Every user is throttled (429 with Retry-After, logged); requests without credentials are refused before.
    "DEFAULT_THROTTLE_CLASSES": ["labelstudio_lite.throttles.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"user": envstr("API_THROTTLE_USER", "1200/minute")},
    "DEFAULT_PAGINATION_CLASS": "labelstudio_lite.rest.Pagination",
    # an outage (database, broker, storage) is a JSON 503 with Retry-After, never an HTML 500
    "EXCEPTION_HANDLER": "labelstudio_lite.outage.api_exception_handler",
    "PAGE_SIZE": 100,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "labelstudio-lite API",
    "DESCRIPTION": "Eval sets, runs, per-question rows, gates, labelling and judge validation.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # The docs page's JavaScript and CSS come from our static files, never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Without deep links an operation's summary is one button with no link inside it (axe: nested-interactive).
    "SWAGGER_UI_SETTINGS": {"deepLinking": False, "persistAuthorization": False},
    "PATH_CONVERTER_OVERRIDES": {"id": {"type": "integer", "minimum": 0, "maximum": 999_999_999_999_999_999}},
    "ENUM_NAME_OVERRIDES": {
        "ImportFormatEnum": "evalcore.services.readers.FORMATS",
        "ExportFormatEnum": "labelstudio_lite.labelling.services.exports.DISAGREEMENT_FORMATS",
        "LabelExportFormatEnum": "labelstudio_lite.labelling.services.exports.LABEL_FORMATS",
        "PublishFormatEnum": "labelstudio_lite.labelling.services.published_report.PUBLISH_FORMATS",
    },
}

# Product defaults (each overridable per campaign or per comparison in the app).
GATE_DEFAULT_MARGIN = envfloat("GATE_DEFAULT_MARGIN", 0.02)
# What a judge that people have not validated, or found unfit, does to decisions on judge metrics:
# review (they go to a person), warn (logged beside the decision), off (recorded only).
GATE_JUDGE_POLICY = envchoice("GATE_JUDGE_POLICY", "review", ("review", "warn", "off"))
# Family-wise correction of "block" over every (metric, slice) of one gate: Holm's step-down, or none.
GATE_CORRECTION = envchoice("GATE_CORRECTION", "holm", ("holm", "none"))
GATE_ITERATIONS = envint("GATE_ITERATIONS", 10_000, minimum=100)
GATE_SEED = envint("GATE_SEED", 7, minimum=0)
# Who gets a Server-Timing header (request time, query count and time): staff (and everyone with DEBUG), all, off.
SERVER_TIMING = envchoice("SERVER_TIMING", "staff", ("staff", "all", "off"))
LABEL_LEASE_SECONDS = envint("LABEL_LEASE_SECONDS", 600, minimum=10)
UPLOAD_MAX_BYTES = envint("UPLOAD_MAX_BYTES", 512 * 1024 * 1024, minimum=1024)
# The limits every input is read within (files, forms and API bodies; see evalcore/services/limits.py).
IMPORT_MAX_DEPTH = envint("IMPORT_MAX_DEPTH", 32, minimum=2)
IMPORT_MAX_FIELD_CHARS = envint("IMPORT_MAX_FIELD_CHARS", 1_000_000, minimum=1000)
IMPORT_MAX_CLAIMS = envint("IMPORT_MAX_CLAIMS", 1000, minimum=1)
IMPORT_MAX_ROWS = envint("IMPORT_MAX_ROWS", 2_000_000, minimum=1)
IMPORT_MAX_LINE_BYTES = envint("IMPORT_MAX_LINE_BYTES", 16 * 1024 * 1024, minimum=1024)
IMPORT_MAX_DECOMPRESSED_BYTES = envint("IMPORT_MAX_DECOMPRESSED_BYTES", 4 * 1024 * 1024 * 1024, minimum=1024)
IMPORT_MAX_PROBLEMS = envint("IMPORT_MAX_PROBLEMS", 50, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
# Uploads over 2 MiB are streamed to a temporary file here (never held in memory), then moved or streamed
# to the storage; Django deletes it when the request ends or the client goes away, and cleanup_uploads
# removes what a killed process left.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
FILE_UPLOAD_HANDLERS = [
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "labelstudio_lite.middleware.TemporaryFileUploadHandler",
]
FILE_UPLOAD_TEMP_DIR = envstr("FILE_UPLOAD_TEMP_DIR", str(VAR_DIR / "tmp"))
Path(FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "WARNING")},
}

# Cache: job progress written from inside long transactions goes here, so pages see it at once.
# Redis when configured (shared with a separate Celery worker), else per-process memory (the
# embedded mode runs its tasks in the server process).
CACHE_URL = envstr("CACHE_URL", CELERY_BROKER_URL if CELERY_BROKER_URL.startswith("redis") else "")
CACHES = {
    "default": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": CACHE_URL,
            "KEY_PREFIX": "lsl",
            # a cache that went away answers "unavailable" within seconds instead of hanging a request or a job
            "OPTIONS": {
                "socket_connect_timeout": REDIS_CONNECT_TIMEOUT,
                "socket_timeout": REDIS_SOCKET_TIMEOUT,
                "health_check_interval": REDIS_HEALTH_CHECK_INTERVAL,
            },
        }
        if CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "labelstudio-lite"}
    )
}

# A database busy with another writer (SQLite while an import writes, in the embedded mode): the
# labelling writes try again for this many seconds, then the request is answered 503 with
# Retry-After (DatabaseBusyMiddleware; never a 500) and the labelling page sends it again later.
DB_BUSY_RETRY_SECONDS = envfloat("DB_BUSY_RETRY_SECONDS", 3.0)
MIDDLEWARE.append("labelstudio_lite.middleware.DatabaseBusyMiddleware")
MIDDLEWARE.append("django_prometheus.middleware.PrometheusAfterMiddleware")

# /metrics (Prometheus): staff users, or a scraper sending "Authorization: Bearer <METRICS_TOKEN>".
METRICS_TOKEN = envstr("METRICS_TOKEN", "")
# Latency buckets of the request histogram (seconds): the labelling endpoints answer in tens of ms, uploads in minutes.
PROMETHEUS_LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, float("inf"))
