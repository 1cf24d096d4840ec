from django.apps import AppConfig


class DrillsConfig(AppConfig):
    name = "drills"
    verbose_name = "Drills"

    def ready(self) -> None:
        from drills import summaries
        from drills.stats import warm

        # A grade draws the learner's next dashboard once it commits (drills.stats.warm).
        summaries.graded.connect(warm.on_graded, dispatch_uid="drills.stats.warm")
