from django.apps import AppConfig


class CohortsConfig(AppConfig):
    name = "content.cohorts"
    label = "cohorts"
    verbose_name = "Cohorts and assignments"
    default_auto_field = "django.db.models.BigAutoField"
