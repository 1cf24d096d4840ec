"""Django's Redis cache, made optional: when Redis is down every call logs a warning and behaves
like a miss (reads return the default, writes do nothing), so callers fall back to computing or
to the database. Redis is a cache and a broker here, never a dependency of a page."""

from __future__ import annotations

import logging
import time
from typing import Any

from django.core.cache.backends.redis import RedisCache

log = logging.getLogger(__name__)

_WARN_EVERY_S = 30.0


class ResilientRedisCache(RedisCache):
    _last_warning = 0.0

    def _fallback(self, op: str, exc: Exception, default: Any) -> Any:
        now = time.monotonic()
        if now - ResilientRedisCache._last_warning > _WARN_EVERY_S:
            ResilientRedisCache._last_warning = now
            log.warning("cache unavailable (%s: %s): %s falls back", type(exc).__name__, exc, op)
        return default

    def get(self, key, default=None, version=None):
        try:
            return super().get(key, default, version)
        except Exception as exc:
            return self._fallback("get", exc, default)

    def get_many(self, keys, version=None):
        try:
            return super().get_many(keys, version)
        except Exception as exc:
            return self._fallback("get_many", exc, {})

    def has_key(self, key, version=None):
        try:
            return super().has_key(key, version)
        except Exception as exc:
            return self._fallback("has_key", exc, False)

    def add(self, key, value, timeout=None, version=None):
        try:
            return super().add(key, value, timeout, version)
        except Exception as exc:
            return self._fallback("add", exc, False)

    def set(self, key, value, timeout=None, version=None):
        try:
            super().set(key, value, timeout, version)
        except Exception as exc:
            self._fallback("set", exc, None)

    def set_many(self, data, timeout=None, version=None):
        try:
            return super().set_many(data, timeout, version)
        except Exception as exc:
            return self._fallback("set_many", exc, list(data))

    def touch(self, key, timeout=None, version=None):
        try:
            return super().touch(key, timeout, version)
        except Exception as exc:
            return self._fallback("touch", exc, False)

    def delete(self, key, version=None):
        try:
            return super().delete(key, version)
        except Exception as exc:
            return self._fallback("delete", exc, False)

    def delete_many(self, keys, version=None):
        try:
            return super().delete_many(keys, version)
        except Exception as exc:
            return self._fallback("delete_many", exc, None)

    def incr(self, key, delta=1, version=None):
        try:
            return super().incr(key, delta, version)
        except ValueError:
            raise  # a missing key, as with every backend
        except Exception as exc:
            return self._fallback("incr", exc, delta)

    def clear(self):
        try:
            return super().clear()
        except Exception as exc:
            return self._fallback("clear", exc, False)
