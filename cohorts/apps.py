from django.apps import AppConfig


class CohortsConfig(AppConfig):
    name = "cohorts"
    label = "cohorts"
    verbose_name = "Cohorts and assignments"
    default_auto_field = "django.db.models.BigAutoField"
