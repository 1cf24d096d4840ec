from django.apps import AppConfig


class DrillsConfig(AppConfig):
    name = "drills"
    verbose_name = "Drills"

    def ready(self) -> None:
        from drills import summaries
        from drills.stats import snapshot, warm

        # A grade patches the learner's stored dashboard numbers in its own transaction.
        summaries.graded.connect(snapshot.on_graded, dispatch_uid="drills.stats.snapshot")
        # A grade draws the learner's next dashboard once it commits (drills.stats.warm).
        summaries.graded.connect(warm.on_graded, dispatch_uid="drills.stats.warm")
