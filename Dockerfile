FROM python:3.12-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY tracetrack ./tracetrack
COPY scenarios ./scenarios
COPY drills ./drills
COPY content ./content
RUN pip install .
COPY . .
RUN SECRET_KEY=build-only-collectstatic-key-0123456789-abcdefghijklmnopqrstuvwxyz \
    DEBUG=false ALLOWED_HOSTS=localhost python manage.py collectstatic --no-input \
 && SECRET_KEY=build-only-collectstatic-key-0123456789-abcdefghijklmnopqrstuvwxyz \
    DEBUG=false ALLOWED_HOSTS=localhost python manage.py compress_perfetto_ui \
 && useradd --system --uid 1000 tracetrack && mkdir -p /app/var && chown -R tracetrack /app/var
USER tracetrack
EXPOSE 8000
CMD ["gunicorn", "tracetrack.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]
