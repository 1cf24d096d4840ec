"""Mock interviews hold their traces' grades until they end.

Interviews already stored had their traces counted as they were graded (summary counters,
cards): they get ``grades_held = False`` (the column's first default), so ending one of them
later records nothing again; every interview started from now on holds its grades (the
default becomes True)."""

from django.db import migrations, models

HELP = (
    "Its traces' grades count (counters, cards) only when it ends; false for interviews "
    "started before grades waited, whose traces counted as they were graded."
)


class Migration(migrations.Migration):
    dependencies = [
        ("drills", "0012_dashboard_snapshot"),
    ]

    operations = [
        migrations.AddField(
            model_name="mockinterview",
            name="grades_held",
            field=models.BooleanField(default=False, help_text=HELP),
        ),
        migrations.AlterField(
            model_name="mockinterview",
            name="grades_held",
            field=models.BooleanField(default=True, help_text=HELP),
        ),
    ]
