# ruff: noqa: E501  (kernel names are as long as the profiler writes them)
"""Kernel names and unit-template helpers shared by the workloads."""

from __future__ import annotations

import math
import zlib

from .hardware import Hardware
from .model import C_ANN, C_KERN, C_MEMCPY, C_MEMSET, C_OP, COMPUTE, NCCL, Interner

_BF = "c10::BFloat16"
LN_FWD = f"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<{_BF}, float>(int, float, {_BF} const*, {_BF} const*, {_BF} const*, float*, float*, {_BF}*)"
LN_BWD = f"void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<{_BF}, float>({_BF} const*, {_BF} const*, float const*, float const*, {_BF} const*, {_BF}*, int)"
LN_GB = f"void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<{_BF}, float>(long, long, {_BF} const*, {_BF} const*, float const*, float const*, {_BF}*, {_BF}*)"
ADD = f"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<{_BF}>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<{_BF}>, at::detail::Array<char*, 3>)"
GELU = f"void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{{lambda()#2}}::operator()() const::{{lambda()#4}}::operator()() const::{{lambda({_BF})#1}}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{{lambda()#2}}::operator()() const::{{lambda()#4}}::operator()() const::{{lambda({_BF})#1}}, at::detail::Array<char*, 2>)"
GELU_BWD = f"void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{{lambda()#2}}::operator()() const::{{lambda()#4}}::operator()() const::{{lambda({_BF}, {_BF})#1}}, at::detail::Array<char*, 3> >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{{lambda()#2}}::operator()() const::{{lambda()#4}}::operator()() const::{{lambda({_BF}, {_BF})#1}}, at::detail::Array<char*, 3>)"
SOFTMAX = f"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, {_BF}, float, {_BF}, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>({_BF}*, {_BF} const*, int)"
SOFTMAX_BWD = f"void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, {_BF}, float, {_BF}, at::native::(anonymous namespace)::SoftMaxBackwardEpilogue>({_BF}*, {_BF} const*, {_BF} const*, long)"
LOGSOFTMAX = f"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, {_BF}, float, float, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, {_BF} const*, int)"
NLL = "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)"
MASKED_FILL = f"void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{{lambda()#1}}::operator()() const::{{lambda()#10}}::operator()() const::{{lambda({_BF}, bool)#1}}, at::detail::Array<char*, 3> >(int, at::native::(anonymous namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{{lambda()#1}}::operator()() const::{{lambda()#10}}::operator()() const::{{lambda({_BF}, bool)#1}}, at::detail::Array<char*, 3>)"
DROPOUT = f"void at::native::(anonymous namespace)::fused_dropout_kernel_vec<{_BF}, float, unsigned int, 1, 4, bool>(at::cuda::detail::TensorInfo<{_BF} const, unsigned int>, at::cuda::detail::TensorInfo<{_BF}, unsigned int>, at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, at::PhiloxCudaState)"
MUL = f"void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<{_BF}, {_BF}, {_BF}, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 2> >(int, at::native::AUnaryFunctor<{_BF}, {_BF}, {_BF}, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 2>)"
MASKED_SCALE = f"void at::native::(anonymous namespace)::masked_scale_kernel<bool, {_BF}, float>(at::Tensor&, at::Tensor const&, at::Tensor const&, float)::{{lambda({_BF}, bool)#1}}"


def as_fp32(name: str) -> str:
    """The same kernel instantiated for fp32 tensors: an attention score chain upcast to fp32
    runs the float instantiation of each elementwise and softmax kernel (its `Input type` is
    `float`), not the bf16 one."""
    return name.replace(_BF, "float")


ADAM = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, double*, double*>(at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, double*, double*)"
ACC_GRAD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)"
BIAS_GRAD = f"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<{_BF}, at::native::func_wrapper_t<{_BF}, at::native::sum_functor<{_BF}, float, {_BF}>::operator()(at::TensorIterator&)::{{lambda(float, float)#1}}>, unsigned int, {_BF}, 4> >(at::native::ReduceOp<{_BF}, at::native::func_wrapper_t<{_BF}, at::native::sum_functor<{_BF}, float, {_BF}>::operator()(at::TensorIterator&)::{{lambda(float, float)#1}}>, unsigned int, {_BF}, 4>)"
CAST = "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)"
RMSNORM = "void vllm::rms_norm_kernel<c10::BFloat16, 8, 4>(c10::BFloat16*, c10::BFloat16 const*, long, c10::BFloat16 const*, float, int, int)"
ROTARY = "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)"
SILU_MUL = "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)"
ARGMAX = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, at::native::ArgMaxOps<c10::BFloat16>, unsigned int, long, 4> >(at::native::ReduceOp<c10::BFloat16, at::native::ArgMaxOps<c10::BFloat16>, unsigned int, long, 4>)"
EMBED = "void at::native::(anonymous namespace)::indexSelectSmallIndex<c10::BFloat16, long, unsigned int, 2, 2, -2>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, long)"
TRITON = {
    "ln": "triton_red_fused__to_copy_add_native_layer_norm_0",
    "gelu": "triton_poi_fused_gelu_view_1",
    "add": "triton_poi_fused_add_2",
    "ln_bwd": "triton_red_fused_native_layer_norm_backward_3",
    "gelu_bwd": "triton_poi_fused_gelu_backward_4",
    "add_bwd": "triton_poi_fused_add_native_layer_norm_backward_5",
}


def gemm_name(hw: Hardware, variant: int = 0, shape: tuple[int, int, int] | None = None) -> str:
    """The library kernel for a GEMM: the layout follows `variant` (tn / nn / nt), the tile and
    pipeline configuration follow the problem shape, as cuBLAS / hipBLASLt heuristics pick them
    (so a model's GEMMs use several kernels, as in real traces)."""
    v = variant % 3
    h = hs = 0
    if shape is not None:  # the heuristics' pick: one configuration per problem shape
        x = zlib.crc32(",".join(str(i) for i in shape).encode())
        h, hs = x % 4, (x >> 8) % 4
    if hw.key == "a100":
        tiles = ["256x128", "128x256", "128x128", "256x64"][(v + h) % 4]
        stages = ["64x3", "32x3", "64x4", "32x5"][hs]
        lay = ["tn", "nn", "nt"][v]
        return f"ampere_bf16_s16816gemm_bf16_{tiles}_ldg8_f2f_stages_{stages}_{lay}"
    if hw.vendor == "amd":
        mts = ["MT256x256x64_MI16x16x16x1", "MT256x128x64_MI32x32x8x1",
               "MT128x128x64_MI16x16x16x1", "MT128x256x64_MI32x32x8x1"][(v + h) % 4]  # fmt: skip
        lay = ["Alik_Bljk", "Ailk_Bljk", "Alik_Bjlk"][v]
        tail = ["_SN_LDSB1_AFC1_AFEM1_GRVW8_K1_MIWT4_4_WG64_4_1",
                "_SN_LDSB0_AFC1_AFEM1_GRVW8_K1_MIWT4_2_WG32_8_1"][hs % 2]  # fmt: skip
        return f"Cijk_{lay}_BBS_BH_{mts}{tail}"
    lay = ["tn", "nn", "nt"][v]
    tile = [
        "128x256x64_warpgroupsize2x1x1",
        "256x128x64_warpgroupsize2x1x1",
        "128x128x64_warpgroupsize1x1x1",
        "64x256x64_warpgroupsize1x1x1",
    ][(v + h) % 4]
    seg = ["off", "off", "on", "off"][hs]
    return (
        f"sm90_xmma_gemm_bf16bf16_bf16f32_f32_{lay}_n_tilesize{tile}"
        f"_execute_segment_k_{seg}_kernel__5x_cublas"
    )


def flash_names(hw: Hardware) -> tuple[str, str]:
    if hw.vendor == "amd":
        return ("fmha_fwd_hd128_bf16_causal_kernel", "fmha_bwd_hd128_bf16_causal_dq_dk_dv_kernel")
    return (
        "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)",
        "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >, false, true, false, false, false, true, false>(pytorch_flash::Flash_bwd_params)",
    )


_FB = "Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >"
# kernels a library call launches before / after its main kernel: flash attention's backward
# computes rowsum(dO·O) first and converts the fp32 dQ accumulator to bf16 last
# fmt: off
COMPANIONS: dict[str, tuple[tuple[tuple[str, float], ...], tuple[tuple[str, float], ...]]] = {
    "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >, false, true, false, false, false, true, false>(pytorch_flash::Flash_bwd_params)": (
        (
            (
                f"void pytorch_flash::flash_bwd_dot_do_o_kernel<true, {_FB}>(pytorch_flash::Flash_bwd_params)",
                6.0,
            ),
        ),
        (
            (
                f"void pytorch_flash::flash_bwd_convert_dq_kernel<{_FB}>(pytorch_flash::Flash_bwd_params, int)",
                4.5,
            ),
        ),
    ),
    "fmha_bwd_hd128_bf16_causal_dq_dk_dv_kernel": (
        (("fmha_bwd_dot_do_o_hd128_bf16_kernel", 6.0),),
        (("fmha_bwd_convert_dq_hd128_bf16_kernel", 4.5),),
    ),
}
# fmt: on


def nccl_name(coll: str, dtype: str) -> str:
    # pre-2.19 NCCL kernel names (what HTA's straggler analysis matches: prefix "ncclKernel")
    dt = {"BFloat16": "bfloat16", "Float": "float"}[dtype]
    sig = "(ncclDevComm*, unsigned long, ncclWork*)"
    if coll == "allreduce":
        return f"ncclKernel_AllReduce_RING_LL_Sum_{dt}{sig}"
    if coll == "broadcast":  # NCCL broadcasts bytes, whatever the tensor's dtype
        return f"ncclKernel_Broadcast_RING_LL_Sum_int8_t{sig}"
    return f"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t{sig}"


def comm_args(
    coll: str,
    nelems: int,
    group: int,
    dtype: str,
    pg: tuple[str, str] = ("0", "default_pg"),
    ranks: list[int] | None = None,
) -> dict:
    """The args `record_param_comms` and its NCCL kernel carry: the collective, its elements,
    the group's size and dtype, the process group's name and description, and its ranks where
    the job's profiler records them."""
    args: dict = {
        "Collective name": coll,
        "In msg nelems": int(nelems),
        "Out msg nelems": int(nelems),
        "Group size": int(group),
        "dtype": dtype,
        "Process Group Name": pg[0],
        "Process Group Description": pg[1],
    }
    if ranks is not None:
        args["Process Group Ranks"] = "[" + ", ".join(str(r) for r in ranks) + "]"
    return args


def rt(hw: Hardware, call: str) -> str:
    """Runtime API name for the vendor: cudaLaunchKernel / hipLaunchKernel ..."""
    return ("hip" + call) if hw.vendor == "amd" else ("cuda" + call)


# what a kernel's compiler gave it, by the kind of kernel: library GEMMs and attention hold many
# registers and a large shared-memory tile; elementwise kernels few registers and none; reductions
# (norms, softmax, losses) a few kilobytes for their partial sums
_TILED = ("gemm", "Cijk", "cutlass", "nvjet", "sm90_", "sm80_", "flash", "fmha", "gemv", "wvSplitK")
_REDUCE = ("norm", "SoftMax", "softmax", "nll_loss", "reduce", "Reduce", "multi_tensor", "nonzero")
_TILED_REGS = (96, 122, 128, 154, 168, 184, 232, 255)
_PLAIN_REGS = (16, 20, 24, 26, 28, 30, 32, 37, 40, 48, 56, 64)
_REDUCE_REGS = (28, 32, 36, 40, 48, 56, 72, 80, 96)


def kernel_resources(kname: str, hw: Hardware) -> tuple[int, int]:
    """Registers per thread and static shared memory (bytes) of a kernel: one fixed pair per
    kernel name, as one compiled binary has (the name's hash picks among what kernels of its
    kind hold)."""
    h = zlib.crc32(kname.encode())
    if any(t in kname for t in _TILED):
        # AMD's LDS is 64 KiB a CU; Hopper's shared memory goes to 227 KiB a block
        tiles = (
            (16384, 32768, 65536)
            if hw.vendor == "amd"
            else (
                (32768, 49152, 65536, 98304, 131072, 166912, 200704)
                if hw.num_sms >= 132
                else (32768, 49152, 65536, 98304, 131072, 163840)
            )
        )
        return _TILED_REGS[h % len(_TILED_REGS)], tiles[(h >> 8) % len(tiles)]
    if any(t in kname for t in _REDUCE):
        return _REDUCE_REGS[h % len(_REDUCE_REGS)], (0, 16, 128, 1024, 4096)[(h >> 8) % 5]
    return _PLAIN_REGS[h % len(_PLAIN_REGS)], 0


def block_threads(block) -> int:
    """Threads in a launch's block (x × y × z; missing dimensions are 1)."""
    return max(1, math.prod(int(b) for b in block))


def occupancy_pct(regs: int, smem: int, block, hw: Hardware) -> int:
    """The occupancy the register file, shared memory and thread limits allow (64 warps and
    65 536 registers an SM; 228 KiB of shared memory on Hopper, 164 KiB on A100, 64 KiB an AMD
    CU with 32 wavefronts of 64), as Kineto's estimate computes it, in percent."""
    threads = block_threads(block)
    warp = 64 if hw.vendor == "amd" else 32
    max_warps = 32 if hw.vendor == "amd" else 64
    per_block = -(-threads // warp)
    smem_sm = 65536 if hw.vendor == "amd" else (233472 if hw.num_sms >= 132 else 167936)
    by_regs = 65536 // max(1, regs * per_block * warp)
    by_smem = smem_sm // smem if smem else 32
    by_threads = max_warps // per_block
    blocks = max(0, min(by_regs, by_smem, by_threads, 32))
    return int(min(100, round(100 * blocks * per_block / max_warps)))


class UnitBuilder:
    """Collects rows for `Units.build` with readable helpers."""

    def __init__(self, it: Interner, hw: Hardware):
        self.it, self.hw = it, hw
        self.rows: list[tuple] = []
        self._launch = it.n(rt(hw, "LaunchKernel"))
        self._memcpy = it.n(rt(hw, "MemcpyAsync"))
        self._memset = it.n(rt(hw, "MemsetAsync"))
        # hipBLASLt / Tensile GEMMs go through the extended module launch on ROCm
        self._gemm_launch = it.n("hipExtModuleLaunchKernel") if hw.vendor == "amd" else self._launch
        self._kaid: dict[tuple, int] = {}

    def _kargs(self, kname: str, grid, block) -> int:
        key = (kname, tuple(grid), tuple(block))
        if key not in self._kaid:
            regs, smem = kernel_resources(kname, self.hw)
            # a kernel built for blocks this large holds no more registers than lets one fit
            regs = min(regs, max(16, 65536 // block_threads(block) // 8 * 8))
            self._kaid[key] = self.it.a(
                {
                    "grid": list(grid),
                    "block": list(block),
                    "registers per thread": regs,
                    "shared memory": smem,
                    "est. achieved occupancy %": occupancy_pct(regs, smem, block, self.hw),
                }
            )
        return self._kaid[key]

    def k(
        self,
        outer: str,
        inner: str | None,
        kname: str,
        gpu_us: float,
        cpu_us: float = 14.0,
        dims=None,
        grid=(1024, 1, 1),
        block=(256, 1, 1),
        itype: str = "c10::BFloat16",
        launch: int | None = None,
    ) -> None:
        it = self.it
        oaid = it.a({"Input Dims": dims, "Input type": [itype] * len(dims)}) if dims else -1
        before, after = COMPANIONS.get(kname, ((), ()))
        for kn, us in before:  # the small kernels a library call launches around its main one
            self.k(outer, inner, kn, us, cpu_us * 0.5, dims, grid, (128, 1, 1), itype)
        self.rows.append(
            (
                it.n(outer),
                C_OP,
                oaid,
                it.n(inner) if inner else -1,
                -1,
                self._launch if launch is None else launch,
                it.n(kname),
                C_KERN,
                self._kargs(kname, grid, block),
                COMPUTE,
                cpu_us,
                gpu_us,
            )
        )
        for kn, us in after:
            self.k(outer, inner, kn, us, cpu_us * 0.5, dims, grid, (128, 1, 1), itype)

    def gemm(
        self,
        outer: str,
        inner: str,
        m: int,
        n: int,
        kk: int,
        tflops: float,
        variant=0,
        cpu_us: float = 16.0,
    ) -> None:
        us = 2.0 * m * n * kk / (tflops * 1e12) * 1e6 + 4.0
        self.k(
            outer,
            inner,
            gemm_name(self.hw, variant, (m, n, kk)),
            us,
            cpu_us,
            dims=[[m, kk], [kk, n]],
            grid=(max(1, m // 128), max(1, n // 128), 1),
            block=(384, 1, 1),
            launch=self._gemm_launch,
        )
        if outer.startswith(BWD) and variant == 2 and self.hw.vendor != "amd" and m * n <= 1 << 24:
            # a weight gradient with a long reduction (the tokens) over a small output uses
            # split-K: cuBLASLt's reduction kernel follows the GEMM
            self.k(outer, inner, SPLITK_REDUCE, 2.0 + m * n * 8 / 3.0e12 * 1e6, cpu_us * 0.4,
                   grid=(max(1, m * n // 4096), 1, 1), block=(128, 1, 1))  # fmt: skip

    def memcpy(self, outer: str, inner: str, name: str, nbytes: int, gbps: float, dims=None):
        it = self.it
        us = nbytes / (gbps * 1e9) * 1e6 + 2.0
        oaid = it.a({"Input Dims": dims, "Input type": ["long int"]}) if dims else -1
        aid = it.a({"bytes": int(nbytes), "memory bandwidth (GB/s)": round(gbps, 3)})
        self.rows.append(
            (
                it.n(outer),
                C_OP,
                oaid,
                it.n(inner),
                -1,
                self._memcpy,
                it.n(name),
                C_MEMCPY,
                aid,
                COMPUTE,
                12.0,
                us,
            )
        )

    def memset(self, outer: str, nbytes: int):
        it = self.it
        aid = it.a({"bytes": int(nbytes), "memory bandwidth (GB/s)": 400.0})
        self.rows.append(
            (
                it.n(outer),
                C_OP,
                -1,
                it.n("aten::fill_"),
                -1,
                self._memset,
                it.n("Memset (Device)"),
                C_MEMSET,
                aid,
                COMPUTE,
                8.0,
                2.0,
            )
        )

    def nccl(
        self,
        coll: str,
        nelems: int,
        dtype: str,
        group: int,
        us: float,
        ranks: list[int],
        ann: str = "nccl:all_reduce",
    ) -> None:
        it = self.it
        aid = it.a(comm_args(coll, nelems, group, dtype, ranks=ranks))
        self.rows.append(
            (
                it.n(ann),
                C_ANN,
                -1,
                it.n("record_param_comms"),
                aid,
                self._launch,
                it.n(nccl_name(coll, dtype)),
                C_KERN,
                aid,
                NCCL,
                22.0,
                us,
            )
        )

    # ---- the small work around a model that real traces are full of ---------------------------
    def vector_grads(self, sizes: list[int], hbm_bps: float, world: int) -> None:
        """Backward of a layer's vector parameters (biases, norm weights): the gradient
        accumulation per parameter and, in a data-parallel job, DDP's division of each gradient
        by the world size as it is copied into its bucket (`reducer::mul_out`). Tiny kernels."""
        for n in sizes:
            us = n * 12 / hbm_bps * 1e6
            self.k(BWD + "torch::autograd::AccumulateGrad", "aten::add_", ACC_GRAD, 1.2 + us, 6,
                   dims=[[n], [n]], itype="float")  # fmt: skip
            if world > 1:
                self.k("torch::distributed::reducer::mul_out", "aten::mul", MUL_F32, 1.3 + us, 5,
                       dims=[[n], []], itype="float")  # fmt: skip

    def embedding_fwd(self, tokens: int, d: int, cpu_us: float = 14.0) -> None:
        self.k("aten::embedding", "aten::index_select", EMBED_FWD, 2.0 + tokens * d * 4e-6 / 2.4,
               cpu_us, dims=[[32000, d], [tokens]], itype="c10::BFloat16")  # fmt: skip

    def embedding_bwd(self, tokens: int, d: int) -> None:
        """The sort-based embedding backward: a radix sort of the token ids, segment offsets,
        per-segment partial sums and the scatter into the weight gradient."""
        ev = BWD + "EmbeddingBackward0"
        for kn, us in EMBED_BWD:
            self.k(ev, "aten::embedding_dense_backward", kn, us + tokens * 1e-4, 9,
                   dims=[[tokens, d], [tokens]])  # fmt: skip

    def loss_bwd(self, tokens: int, vocab_us: float) -> None:
        """The loss's gradient: ones for the scalar loss, then NLL and log-softmax backward."""
        self.k("aten::ones_like", "aten::fill_", FILL_F32, 1.4, 8, dims=[[]], itype="float")
        self.k(BWD + "NllLossBackward0", "aten::nll_loss_backward", NLL_BWD, 2.2 + tokens * 2e-4,
               12, dims=[[], [tokens, 32000], [tokens]], itype="float")  # fmt: skip
        self.k(BWD + "LogSoftmaxBackward0", "aten::_log_softmax_backward_data", LOGSOFTMAX_BWD,
               vocab_us * 0.08, 12, dims=[[tokens, 32000], [tokens, 32000]],
               itype="float")  # fmt: skip

    def clip_grad_norm(self, n_params: int) -> None:
        """`torch.nn.utils.clip_grad_norm_`: per-tensor norms through the foreach kernels, their
        norm, the clip coefficient, and the in-place scaling of every gradient."""
        chunks = max(1, n_params // 48)
        for _ in range(chunks):
            self.k("aten::_foreach_norm", None, FOREACH_NORM, 9.0, 14, itype="float")
        self.k("aten::_foreach_norm", None, LPNORM_CLEANUP, 2.1, 8, itype="float")
        self.k("aten::stack", "aten::cat", CAT_BATCHED, 2.4, 10, dims=[[n_params]], itype="float")
        self.k("aten::linalg_vector_norm", None, NORM_REDUCE, 3.1, 10, dims=[[n_params]],
               itype="float")  # fmt: skip
        self.k("aten::add", None, ADD_SCALAR_F32, 1.5, 7, dims=[[], []], itype="float")
        self.k("aten::reciprocal", None, RECIPROCAL_F32, 1.4, 6, dims=[[]], itype="float")
        self.k("aten::mul", None, MUL_F32, 1.4, 6, dims=[[], []], itype="float")
        self.k("aten::clamp", None, CLAMP_F32, 1.5, 7, dims=[[]], itype="float")
        for _ in range(chunks):
            self.k("aten::_foreach_mul_", None, FOREACH_MUL, 12.0, 14, itype="float")
        # then the optimizer's step counters (`_foreach_add_(state_steps, 1)`)
        self.k("aten::_foreach_add_", None, FOREACH_ADD_SCALAR, 4.5, 12, itype="float")


BWD = "autograd::engine::evaluate_function: "
FOREACH_ADD_SCALAR = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, std::plus<float>, double>(at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, std::plus<float>, double)"
SPLITK_REDUCE = "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, true, false, false>(cublasLt::cublasSplitKParams<float>, float const*, __nv_bfloat16 const*, __nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, float const*, __nv_bfloat16*, void*, long, float*, int*)"
_F = "float"
MUL_F32 = "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 2> >(int, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 2>)"
FILL_F32 = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"
ADD_SCALAR_F32 = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<float>, at::detail::Array<char*, 2> >(int, at::native::CUDAFunctorOnSelf_add<float>, at::detail::Array<char*, 2>)"
RECIPROCAL_F32 = "void at::native::vectorized_elementwise_kernel<4, at::native::reciprocal_kernel_cuda(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::reciprocal_kernel_cuda(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)"
CLAMP_F32 = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::clamp_scalar_kernel_impl(at::TensorIteratorBase&, at::native::detail::ClampLimits, c10::Scalar const&, c10::Scalar const&)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::(anonymous namespace)::clamp_scalar_kernel_impl(at::TensorIteratorBase&, at::native::detail::ClampLimits, c10::Scalar const&, c10::Scalar const&)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)"
FOREACH_NORM = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::LpNormFunctor<float, (at::native::(anonymous namespace)::NormType)1, float, float>, float*, int>(at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::LpNormFunctor<float, (at::native::(anonymous namespace)::NormType)1, float, float>, float*, int)"
LPNORM_CLEANUP = "void at::native::(anonymous namespace)::lpnorm_cleanup<float, (at::native::(anonymous namespace)::NormType)1, float, float>(float const*, at::native::(anonymous namespace)::TensorListAddresses, int)"
FOREACH_MUL = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::BinaryOpScalarTensorFunctor<float, 1, 1, 0>, std::multiplies<float>, float const*>(at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::BinaryOpScalarTensorFunctor<float, 1, 1, 0>, std::multiplies<float>, float const*)"
CAT_BATCHED = "void at::native::(anonymous namespace)::CatArrayBatchedCopy_aligned16_contig<at::native::(anonymous namespace)::OpaqueType<4u>, unsigned int, 1, 128, 1>(at::native::(anonymous namespace)::OpaqueType<4u>*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<4u>, unsigned int, 128, 1>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)"
NORM_REDUCE = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::NormTwoOps<float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::NormTwoOps<float, float, float>, unsigned int, float, 4>)"
NLL_BWD = "void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>(float*, float const*, long const*, float const*, float const*, bool, int, int, long, long)"
LOGSOFTMAX_BWD = "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*, float const*, float const*, long)"
EMBED_FWD = "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)"
_CUB = "at_cuda_detail::cub::DeviceRadixSortPolicy<long, long, unsigned long long>::Policy900"
# fmt: off
EMBED_BWD: list[tuple[str, float]] = [
    (
        f"void at_cuda_detail::cub::DeviceRadixSortHistogramKernel<{_CUB}, false, long, unsigned long long, at_cuda_detail::cub::detail::identity_decomposer_t>(unsigned long long*, long const*, unsigned long long, int, int, at_cuda_detail::cub::detail::identity_decomposer_t)",
        3.1,
    ),
    (
        f"void at_cuda_detail::cub::DeviceRadixSortExclusiveSumKernel<{_CUB}, unsigned long long>(unsigned long long*)",
        1.6,
    ),
    (
        f"void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<{_CUB}, false, long, long, unsigned long long, int, int, at_cuda_detail::cub::detail::identity_decomposer_t>(int*, int*, unsigned long long*, unsigned long long const*, long*, long const*, long*, long const*, int, int, int, at_cuda_detail::cub::detail::identity_decomposer_t)",
        3.4,
    ),
    (
        "void at::native::(anonymous namespace)::krn_partials_per_segment<long>(long*, long const*, long, long)",
        1.9,
    ),
    (
        "void at::native::(anonymous namespace)::krn_partial_segment_offset<long>(long*, long const*, long const*, long const*, long)",
        1.9,
    ),
    (
        "void at::native::(anonymous namespace)::compute_grad_weight<c10::BFloat16, long>(long const*, c10::BFloat16 const*, long const*, long, long, long const*, long const*, at::AcccumulateType<c10::BFloat16, true>::type*, long)",
        6.5,
    ),
    (
        "void at::native::(anonymous namespace)::sum_and_scatter<c10::BFloat16, long>(long const*, c10::BFloat16*, long, long const*, long const*, at::AcccumulateType<c10::BFloat16, true>::type const*, long const*, long, long, long)",
        4.2,
    ),
]


# bytes an element, by the dtype name the profiler writes in a collective's args; the engine
# writes the first three, the key reader also sizes the other two
DTYPE_BYTES = {"BFloat16": 2, "Float": 4, "Half": 2, "Double": 8, "Float8_e4m3fn": 1}
