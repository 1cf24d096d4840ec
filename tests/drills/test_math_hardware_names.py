"""Math problems speak the hardware's own vocabulary: HIP and RCCL on MI300X, CUDA and NCCL
elsewhere."""

from __future__ import annotations

import re

import pytest

from drills.mentalmath.families import FAMILIES, make_problem

NVIDIA_ONLY = re.compile(r"\bcuda[A-Z]\w*|\bNCCL\b|nccl-tests")
AMD_ONLY = re.compile(r"\bhip[A-Z]\w*|\bRCCL\b|rccl-tests")


def _texts(hardware: str) -> list[str]:
    texts = []
    for family in FAMILIES.values():
        for framing in family.framings:
            for seed in range(6):
                p = make_problem(family.key, seed, hardware=hardware, framing=framing)
                texts.append(" ".join([p.prompt, *p.steps]))
    return texts


def test_mi300x_problems_name_hip_and_rccl_never_cuda_or_nccl():
    texts = _texts("mi300x")
    assert not [t for t in texts if NVIDIA_ONLY.search(t)]
    assert any("hipLaunchKernel" in t for t in texts)
    assert any("RCCL" in t for t in texts)


@pytest.mark.parametrize("hardware", ["a100", "h100", "h200"])
def test_nvidia_problems_never_name_hip_or_rccl(hardware):
    texts = _texts(hardware)
    assert not [t for t in texts if AMD_ONLY.search(t)]
    assert any("cudaLaunchKernel" in t for t in texts)
