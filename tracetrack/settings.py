"""TraceTrack settings: one module, driven by validated environment variables.

Embedded mode (no DATABASE_URL, no REDIS_URL): a SQLite file under var/, Celery tasks run
in-process, DEBUG on unless told otherwise. Production mode (DEBUG false): a real SECRET_KEY is
required and the security settings pass ``manage.py check --deploy``.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any, TypedDict

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from tracetrack.env import env_bool, env_float, env_int, env_list, env_str, env_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("TRACETRACK_VAR_DIR", str(BASE_DIR / "var")) or BASE_DIR / "var")

DATABASE_URL = env_url("DATABASE_URL", ("postgres", "postgresql", "sqlite"))
REDIS_URL = env_url("REDIS_URL", ("redis", "rediss"))
EMBEDDED = DATABASE_URL is None

DEBUG = env_bool("DEBUG", default=EMBEDDED)

_DEV_SECRET = "tracetrack-embedded-development-key-never-use-in-production-0123456789"
SECRET_KEY = env_str("SECRET_KEY") or ""
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. With DEBUG off TraceTrack refuses to start without a real "
            "secret: generate one with "
            'python -c "import secrets; print(secrets.token_urlsafe(50))"'
        )
    SECRET_KEY = _DEV_SECRET
elif not DEBUG and (
    SECRET_KEY == _DEV_SECRET or len(SECRET_KEY) < 50 or SECRET_KEY.startswith("django-insecure")
):
    raise ImproperlyConfigured("SECRET_KEY is too weak for DEBUG off: use 50+ random characters.")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
if not DEBUG and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must name the host(s) served when DEBUG is off.")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "tracetrack",
    "accounts",
    "scenarios",
    "drills",
    "content",
    "cohorts",
]

MIDDLEWARE = [
    # A learner's own spooled Perfetto export, before any other middleware (one query; it adds
    # the security, clickjacking and CSP headers itself; everything else falls through).
    "scenarios.download_middleware.SpooledExportMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "tracetrack.middleware.RejectNulMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "tracetrack.middleware.HtmxLoginRequiredMiddleware",  # LoginRequiredMiddleware, htmx-aware
    "django.contrib.messages.middleware.MessageMiddleware",
    "tracetrack.middleware.MethodNotAllowedPageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "tracetrack.urls"
WSGI_APPLICATION = "tracetrack.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(VAR_DIR / "tracetrack.sqlite3"),
            # Opened per request: a connection kept open across requests holds SQLite's table
            # locks against the in-process refill threads ("database table is locked").
            # A transaction takes the write lock when it begins (BEGIN IMMEDIATE) and waits up to
            # `timeout` seconds for it. In SQLite's default (deferred) mode a transaction that has
            # read and then writes while another connection wrote meanwhile fails at once with
            # "database is locked", the busy timeout not applying: a request that reads then
            # saves inside atomic() beside an in-process refill got a 500.
            "OPTIONS": {
                "init_command": "PRAGMA journal_mode=WAL;",
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
            },
            # The test database is a file too, not Django's shared-cache in-memory default: in
            # shared-cache mode a read that meets another thread's write (a request beside an
            # in-process refill) fails at once with "database table is locked" instead of
            # waiting, a failure a SQLite install never has.
            "TEST": {"NAME": str(VAR_DIR / "tracetrack-test.sqlite3")},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

if REDIS_URL:
    CACHES = {
        "default": {
            # Redis down → a logged warning and a miss, never an error (tracetrack/cache.py).
            "BACKEND": "tracetrack.cache.ResilientRedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "tracetrack",
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 1.0},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Argon2id first (accounts/hashers.py); PBKDF2 kept so older hashes still verify (and upgrade).
PASSWORD_HASHERS = [
    "accounts.hashers.TraceTrackArgon2Hasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
]
AUTHENTICATION_BACKENDS = ["accounts.login_throttle.ThrottledModelBackend"]
# Reverse proxies whose X-Forwarded-For is believed (addresses or CIDR networks, comma-separated).
TRUSTED_PROXIES = env_list("TRUSTED_PROXIES", [])
try:
    for _net in TRUSTED_PROXIES:
        ipaddress.ip_network(_net, strict=False)
except ValueError as _exc:
    raise ImproperlyConfigured(f"TRUSTED_PROXIES: {_exc}") from None
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
SESSION_COOKIE_AGE = env_int("SESSION_COOKIE_AGE", 12 * 3600, lo=300, hi=30 * 24 * 3600)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

# The served Perfetto UI's precompressed copies (scenarios/perfetto_ui.py), built once.
PERFETTO_UI_CACHE = Path(
    env_str("PERFETTO_UI_CACHE", str(VAR_DIR / "perfetto-ui")) or VAR_DIR / "perfetto-ui"
)

# Stored Perfetto exports kept as files on this host, sent like static files (scenarios/exports.py).
EXPORT_SPOOL = Path(env_str("EXPORT_SPOOL", str(VAR_DIR / "exports")) or VAR_DIR / "exports")
EXPORT_SPOOL_MAX_FILES = env_int("EXPORT_SPOOL_MAX_FILES", 2000, lo=1, hi=1_000_000)

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")) or "staticfiles")
WHITENOISE_USE_FINDERS = DEBUG
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if env_bool("STATIC_MANIFEST", not DEBUG)
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}

# Email: the console in development; SMTP in production (EMAIL_HOST, default localhost).
# EMAIL_CONSOLE=true keeps the console backend, e.g. for a local `docker compose up` trial.
_EMAIL_HOST = env_str("EMAIL_HOST")
MAILERS: dict[str, dict[str, Any]]
if env_bool("EMAIL_CONSOLE", DEBUG and not _EMAIL_HOST):
    MAILERS = {"default": {"BACKEND": "django.core.mail.backends.console.EmailBackend"}}
else:
    MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {
                "host": _EMAIL_HOST or "localhost",
                "port": env_int("EMAIL_PORT", 587 if _EMAIL_HOST else 25, lo=1, hi=65535),
                "username": env_str("EMAIL_HOST_USER", "") or "",
                "password": env_str("EMAIL_HOST_PASSWORD", "") or "",
                "use_tls": env_bool("EMAIL_USE_TLS", bool(_EMAIL_HOST)),
            },
        }
    }
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "TraceTrack <noreply@localhost>")

# Content Security Policy: strict for the site; the served Perfetto UI overrides it on its path.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
    "base-uri": [CSP.SELF],
    "object-src": [CSP.NONE],
}

SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"  # only the served Perfetto UI may be framed (by this site)
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000, lo=0, hi=63072000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]

# Celery: Redis broker when REDIS_URL is set, otherwise tasks run in-process (embedded mode).
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = REDIS_URL is None
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A task taken by a worker that dies (even SIGKILL of the whole worker) stays in Redis's unacked
# set; after the visibility timeout a live worker puts it back on the queue. Refills are
# idempotent (fixed seed sequence + unique (scenario, seed)), so a redelivery is harmless.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT_S", 300, lo=2, hi=43_200),
    "unacked_restore_interval": 5,
}
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "tracetrack") or "tracetrack"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
POOL_REFILL_INTERVAL_S = env_float("POOL_REFILL_INTERVAL_S", 60.0, lo=1.0, hi=3600.0)
CELERY_BEAT_SCHEDULE = {
    "top-up-trace-pool": {
        "task": "scenarios.tasks.refill_pool",  # no scenario: every one under its target
        "schedule": POOL_REFILL_INTERVAL_S,
    },
    "delete-expired-uploads": {
        "task": "scenarios.tasks.delete_expired_uploads",
        "schedule": 3600.0,
    },
    "assignment-reminders": {
        "task": "cohorts.tasks.send_due_reminders",
        "schedule": 3600.0,
    },
    # A mock interview left open past its hour ends unattended (else on the learner's return).
    "end-interviews-past-their-hour": {
        "task": "drills.tasks.end_interviews_past_their_hour",
        "schedule": 300.0,
    },
}


class Knobs(TypedDict):
    """The type of TRACETRACK below, so that each reader gets the knob's own type."""

    SITE_URL: str
    DESIRED_RETENTION: float
    DRILL_TIME_LIMIT_S: int
    PERFETTO_LOAD_ALLOWANCE_S: int
    DRILL_CLAIMS_PER_HOUR: int
    POOL_TARGET: int
    POOL_LOW_WATER: int
    POOL_DEGRADED_AFTER_S: float
    LOGIN_FAILURE_LIMIT: int
    LOGIN_DELAY_S: float
    LOGIN_LOCKOUT_S: int
    UPLOAD_MAX_BYTES: int
    UPLOAD_MAX_UNPACKED_BYTES: int
    UPLOAD_MAX_RATIO: int
    UPLOAD_MAX_RANKS: int
    UPLOAD_MAX_EVENTS: int
    UPLOAD_EXPIRY_DAYS: int
    UPLOAD_MAX_PENDING: int


# The product's own knobs.
TRACETRACK: Knobs = {
    # Where learners reach the site: e-mails (reminders) carry absolute links built on it.
    "SITE_URL": (env_url("SITE_URL", ("http", "https")) or "http://localhost:8000").rstrip("/"),
    "DESIRED_RETENTION": env_float("DESIRED_RETENTION", 0.95, lo=0.70, hi=0.99),
    "DRILL_TIME_LIMIT_S": env_int("DRILL_TIME_LIMIT_S", 120, lo=30, hi=3600),
    # Loading time of the Perfetto UI that Perfetto-only drills do not count against the clock.
    "PERFETTO_LOAD_ALLOWANCE_S": env_int("PERFETTO_LOAD_ALLOWANCE_S", 15, lo=0, hi=120),
    # New drills one learner may be dealt per hour (resuming an open one does not count).
    "DRILL_CLAIMS_PER_HOUR": env_int("DRILL_CLAIMS_PER_HOUR", 60, lo=1, hi=10_000),
    "POOL_TARGET": env_int("POOL_TARGET", 20, lo=1, hi=10_000),
    "POOL_LOW_WATER": env_int("POOL_LOW_WATER", 5, lo=0, hi=10_000),
    # /healthz says "degraded" once a scenario has been empty or under low water this long.
    "POOL_DEGRADED_AFTER_S": env_float(
        "POOL_DEGRADED_AFTER_S", POOL_REFILL_INTERVAL_S, lo=1.0, hi=86_400.0
    ),
    # Sign-in brake (accounts/login_throttle.py), per (address, username): free failures, then
    # a lock of LOGIN_DELAY_S doubling with each further failure, at most LOGIN_LOCKOUT_S.
    "LOGIN_FAILURE_LIMIT": env_int("LOGIN_FAILURE_LIMIT", 5, lo=0, hi=10_000),
    "LOGIN_DELAY_S": env_float("LOGIN_DELAY_S", 2.0, lo=0.1, hi=3600.0),
    "LOGIN_LOCKOUT_S": env_int("LOGIN_LOCKOUT_S", 900, lo=1, hi=86_400),
    # Uploaded traces (scenarios/uploads.py): limits sized for a 2-core, 24 GiB worker.
    "UPLOAD_MAX_BYTES": env_int("UPLOAD_MAX_MB", 64, lo=1, hi=2048) << 20,
    "UPLOAD_MAX_UNPACKED_BYTES": env_int("UPLOAD_MAX_UNPACKED_MB", 512, lo=1, hi=16384) << 20,
    "UPLOAD_MAX_RATIO": env_int("UPLOAD_MAX_RATIO", 60, lo=2, hi=1000),
    "UPLOAD_MAX_RANKS": env_int("UPLOAD_MAX_RANKS", 64, lo=1, hi=4096),
    "UPLOAD_MAX_EVENTS": env_int("UPLOAD_MAX_EVENTS", 1_500_000, lo=1000, hi=50_000_000),
    "UPLOAD_EXPIRY_DAYS": env_int("UPLOAD_EXPIRY_DAYS", 7, lo=1, hi=3650),
    # Uploads one user may have waiting or being processed at once: uploads share the workers
    # (and their queue) with the trace pool's refills, and the largest takes minutes.
    "UPLOAD_MAX_PENDING": env_int("UPLOAD_MAX_PENDING", 1, lo=1, hi=100),
}
if TRACETRACK["POOL_LOW_WATER"] > TRACETRACK["POOL_TARGET"]:
    raise ImproperlyConfigured("POOL_LOW_WATER must not exceed POOL_TARGET.")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO") or "INFO"},
}
