"""Store each trace's Perfetto export (gzip) beside its timeline.

On PostgreSQL the three byte columns are already compressed (zlib/gzip), so TOAST is told not to
compress them again (STORAGE EXTERNAL): stored and read back as they are.
"""

from django.db import migrations, models

BLOBS = ("payload", "timeline_gz", "perfetto_gz")


def storage(mode: str):
    def apply(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        table = schema_editor.quote_name(apps.get_model("scenarios", "Trace")._meta.db_table)
        for column in BLOBS:
            schema_editor.execute(
                f"ALTER TABLE {table} ALTER COLUMN {schema_editor.quote_name(column)} "
                f"SET STORAGE {mode}"
            )

    return apply


class Migration(migrations.Migration):
    dependencies = [("scenarios", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="trace",
            name="perfetto_gz",
            field=models.BinaryField(
                editable=False,
                help_text="gzip of the Perfetto (Chrome-trace) JSON export, built with the trace; "
                "null on rows from before it was stored (built and stored on first download)",
                null=True,
            ),
        ),
        migrations.RunPython(storage("EXTERNAL"), storage("EXTENDED")),
    ]
