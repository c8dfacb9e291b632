"""Demangled and short kernel names."""

from __future__ import annotations

import pytest

from graphscope.names import demangle, short_name


@pytest.mark.parametrize(
    ("mangled", "short"),
    [
        (
            "_ZN2at6native53_GLOBAL__N__21739cd4_20_layer_norm_kernel_cu_9c5ada8a28vectorized_layer_"
            "norm_kernelIN3c104HalfEfLb0EEEviT0_PKT_S8_S8_PS5_S9_PS6_",
            "vectorized_layer_norm_kernel<Half, float>",
        ),
        (
            "_ZN2at6native27unrolled_elementwise_kernelIZZZNS0_23direct_copy_kernel_cudaERNS_18Tensor"
            "IteratorBaseEENKUlvE1_clEvENKUlvE5_clEvEUlfE_St5arrayIPcLm2EELi4E23TrivialOffsetCalcul"
            "atorILi1EjESB_NS0_6memory12LoadWithCastILi1EEENSC_13StoreWithCastILi1EEEEEviT_T0_T2_T3_"
            "T4_T5_",
            "unrolled_elementwise_kernel<direct_copy_kernel_cuda>",
        ),
        (
            "_ZN2at6native29vectorized_elementwise_kernelILi8ENS0_15CUDAFunctor_addIN3c104HalfEEESt5"
            "arrayIPcLm3EEEEviT0_T1_",
            "vectorized_elementwise_kernel<CUDAFunctor_add<Half>>",
        ),
        ("_Z16graphscope_scaleIfEvPT_S0_i", "graphscope_scale<float>"),
        ("nvjet_sm90_hsh_64x8_64x16_2x4_h_bz_NNT", "nvjet_sm90_hsh_64x8_64x16_2x4_h_bz_NNT"),
        ("triton_poi_fused_add_0", "triton_poi_fused_add_0"),
    ],
)
def test_short_names(mangled: str, short: str) -> None:
    assert short_name(mangled) == short


def test_demangle_keeps_what_is_not_mangled() -> None:
    assert (
        demangle("_Z16graphscope_scaleIfEvPT_S0_i")
        == "void graphscope_scale<float>(float*, float, int)"
    )
    assert demangle("not_mangled") == "not_mangled"
    assert demangle("_Zgarbage!") == "_Zgarbage!"


def test_a_kernel_label_says_what_the_kernel_computes() -> None:
    from graphscope.names import kernel_label

    assert kernel_label("anything", "aten::_scaled_dot_product_cudnn_attention") == (
        "scaled_dot_product_cudnn_attention"
    )
    assert (
        kernel_label(
            "elementwise_kernel<gpu_kernel_impl_nocast<BinaryFunctor<Half, Half, Half, "
            "MulFunctor<float>>>>"
        )
        == "Mul"
    )
    assert kernel_label("vectorized_elementwise_kernel<CUDAFunctor_add<Half>>") == "add"
    assert kernel_label("reduce_kernel<ReduceOp<Half, MeanOps<Half, float>, unsigned int>>") == (
        "Mean"
    )
    assert kernel_label("index_elementwise_kernel<index_copy_kernel_impl<OpaqueType>>") == (
        "index_copy"
    )
    assert kernel_label("elementwise_kernel<gpu_kernel_impl>") == "elementwise_kernel"
    assert (
        kernel_label("triton_per_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_10")
        == "add_mean_mul_pow_rsqrt"
    )
    assert kernel_label("nvjet_sm90_hsh_8x64_64x16_4x1_v_bz_TNN") == "gemm (nvjet)"
    assert kernel_label("indexSelectSmallIndex<Half, long, unsigned int>") == (
        "indexSelectSmallIndex"
    )
