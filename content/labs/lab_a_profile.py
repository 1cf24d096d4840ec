"""Lab A: capture a real torch.profiler trace on a laptop CPU and open it in Perfetto.

Usage (anywhere; the script stands alone):

    python3 -m venv lab-a && . lab-a/bin/activate
    pip install torch --index-url https://download.pytorch.org/whl/cpu    # PyTorch's CPU build
    python lab_a_profile.py --out traces/lab_a.json
    python lab_a_profile.py --slow-data-ms 40 --out traces/lab_a_starved.json

Then open the JSON file in Perfetto: the app serves a copy at /perfetto/, or use
https://ui.perfetto.dev ("Open trace file", or drag the file in).

The script trains a small MLP on synthetic data for a few steps. The profiler's schedule skips
one step, warms up for one, and records three. Each phase of the step is wrapped in a
``record_function`` annotation so that it appears as a named slice on the CPU thread. It runs on
the CPU, so the trace has no GPU rows. What you practise here is the navigation, the step
boundaries, the annotations, and the shape of a data wait.

Exit status: 0 on success, 2 if torch is not installed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

CPU_TORCH_INSTALL = "pip install torch --index-url https://download.pytorch.org/whl/cpu"


class SyntheticDataset:
    """A map-style dataset of random feature vectors and class labels.

    It is defined at module level (not inside ``main``) so that DataLoader worker processes
    can pickle it on platforms that start workers with ``spawn`` (macOS, Windows).
    """

    def __init__(self, n_samples: int, n_features: int, n_classes: int, delay_ms: float) -> None:
        self.n_samples = n_samples
        self.n_features = n_features
        self.n_classes = n_classes
        self.delay_s = delay_ms / 1000.0

    def __len__(self) -> int:
        return self.n_samples

    def __getitem__(self, index: int):
        import torch

        if self.delay_s > 0:
            # Simulate slow decoding or storage: this is the input-starvation knob.
            time.sleep(self.delay_s)
        gen = torch.Generator().manual_seed(index)
        x = torch.randn(self.n_features, generator=gen)
        y = int(torch.randint(0, self.n_classes, (1,), generator=gen))
        return x, y


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="TraceTrack Lab A: profile a small CPU training loop with torch.profiler."
    )
    p.add_argument("--out", default="lab_a_trace.json", help="Chrome-trace JSON file to write")
    p.add_argument("--steps", type=int, default=8, help="training steps to run (at least 5)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--hidden", type=int, default=1024, help="hidden width of the MLP")
    p.add_argument("--num-workers", type=int, default=0, help="DataLoader worker processes")
    p.add_argument(
        "--slow-data-ms",
        type=float,
        default=0.0,
        help="sleep per sample in the dataset, to make the data wait visible",
    )
    p.add_argument(
        "--item-every-step",
        action="store_true",
        help="call loss.item() every step (on a GPU this would be a host-device sync)",
    )
    p.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0 = default)")
    p.add_argument("--with-stack", action="store_true", help="record Python stacks (bigger file)")
    args = p.parse_args(argv)
    if args.steps < 5:
        p.error("--steps must be at least 5 (wait 1 + warmup 1 + active 3)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import torch
        from torch import nn
        from torch.profiler import ProfilerActivity, profile, record_function, schedule
        from torch.utils.data import DataLoader
    except ImportError:
        print(
            "Lab A needs PyTorch, which is not installed in this environment.\n"
            "Install its CPU build, then run this script again:\n"
            f"    {CPU_TORCH_INSTALL}",
            file=sys.stderr,
        )
        return 2

    torch.manual_seed(0)
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    n_features, n_classes = 512, 10
    dataset = SyntheticDataset(
        n_samples=args.batch_size * (args.steps + 1),
        n_features=n_features,
        n_classes=n_classes,
        delay_ms=args.slow_data_ms,
    )
    loader = DataLoader(
        dataset,
        batch_size=args.batch_size,
        shuffle=False,
        num_workers=args.num_workers,
        persistent_workers=args.num_workers > 0,
    )
    model = nn.Sequential(
        nn.Linear(n_features, args.hidden),
        nn.LayerNorm(args.hidden),
        nn.GELU(),
        nn.Linear(args.hidden, args.hidden),
        nn.GELU(),
        nn.Linear(args.hidden, n_classes),
    )
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def write_trace(prof: profile) -> None:
        prof.export_chrome_trace(str(out))

    # wait=1: skip the first step (one-off allocations, lazy init); warmup=1: the profiler runs
    # but throws the data away; active=3: three recorded steps, so you can compare neighbours.
    sched = schedule(wait=1, warmup=1, active=3, repeat=1)
    step_times: list[float] = []
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=sched,
        on_trace_ready=write_trace,
        record_shapes=True,
        profile_memory=True,
        with_stack=args.with_stack,
    ) as prof:
        batches = iter(loader)
        for _ in range(args.steps):
            t0 = time.perf_counter()
            with record_function("data"):
                x, y = next(batches)
            with record_function("forward"):
                logits = model(x)
            with record_function("loss"):
                loss = loss_fn(logits, y)
            optimizer.zero_grad(set_to_none=True)
            with record_function("backward"):
                loss.backward()
            with record_function("optimizer"):
                optimizer.step()
            if args.item_every_step:
                with record_function("log_loss"):
                    print(f"loss {loss.item():.4f}")
            step_times.append((time.perf_counter() - t0) * 1000.0)
            prof.step()  # closes this ProfilerStep#N and advances the schedule

    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=12))
    times = ", ".join(f"{t:.1f}" for t in step_times)
    print(f"step wall times (ms): {times}")
    print(f"\nwrote {out.resolve()}")
    print(
        "Open it in Perfetto: the TraceTrack app serves one at /perfetto/, or use "
        "https://ui.perfetto.dev -> 'Open trace file'.\n"
        "Read it in the fixed order: ProfilerStep boundaries -> gaps -> the longest slices."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
