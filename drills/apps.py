from django.apps import AppConfig


class DrillsConfig(AppConfig):
    name = "drills"
    verbose_name = "Drills"

    def ready(self) -> None:
        from drills import summaries
        from drills.stats import snapshot, warm
        from drills.trainer.upload_hold import open_drill_hold
        from scenarios import uploads

        # An upload of the trace of a drill the learner has open shows no analysis until the
        # drill is answered (drills.trainer.upload_hold).
        uploads.register_hold(open_drill_hold)

        # A grade patches the learner's stored dashboard numbers in its own transaction.
        summaries.graded.connect(snapshot.on_graded, dispatch_uid="drills.stats.snapshot")
        # A grade draws the learner's next dashboard once it commits (drills.stats.warm).
        summaries.graded.connect(warm.on_graded, dispatch_uid="drills.stats.warm")
