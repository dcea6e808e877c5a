"""Triton sampling kernels and their PyTorch fallbacks.

Kernels take fp32/bf16/fp16 logits with any row stride (column stride 1), upcast to
fp32 at load, and never make an fp32 copy of the logits. Import `samplecheck.kernels.runtime` and
call `use_device()` before importing a kernel module on a machine without a GPU.
"""
