from __future__ import annotations

from django.core.management.base import BaseCommand

from scenarios import perfetto_ui


class Command(BaseCommand):
    help = (
        "Compress the served Perfetto UI (brotli and gzip) once into PERFETTO_UI_CACHE, so no "
        "request compresses anything, cut its icon font to the one design the UI draws, and "
        "patch its engine worker to compile its WebAssembly streaming (code-cached by the "
        "browser). "
        "Files already done are skipped."
    )

    def handle(self, *args, **options):
        if not perfetto_ui.available():
            self.stdout.write(f"No Perfetto UI to compress ({perfetto_ui.INSTALL_HINT}).")
            return
        verbose = options["verbosity"] > 1

        def progress(rel: str, raw: int, best: int) -> None:
            if verbose:
                self.stdout.write(f"  {rel}: {raw / 1e6:.2f} MB -> {best / 1e6:.2f} MB")

        raw, best = perfetto_ui.precompress_all(progress)
        self.stdout.write(
            f"Perfetto UI in {perfetto_ui.cache_dir()}: {raw / 1e6:.1f} MB of compressible files, "
            f"{best / 1e6:.1f} MB on the wire ({', '.join(perfetto_ui.available_encodings())})."
        )
        for rel, patched in perfetto_ui.site_engines().items():
            if patched is None:
                self.stdout.write(
                    f"WARNING: {rel} is not the Perfetto engine bundle this site knows how to "
                    f"patch; {rel} is served unchanged (its WebAssembly is compiled anew on every "
                    "open)."
                )
            else:
                self.stdout.write(f"Engine worker: {rel} compiles its WebAssembly streaming.")
        raw, slim = perfetto_ui.slim_fonts(progress)
        if raw:
            self.stdout.write(f"Icon font: {raw / 1e6:.1f} MB -> {slim / 1e6:.1f} MB.")
