"""Host side shared by the CuTe DSL kernel families (kernels/sm90, kernels/sm100), one concern a module:

- arch: the target arch, fixed before `cutlass` is imported (so a CPU machine cross-compiles), and the GPU's
  compute capability and SM count;
- operands: torch tensors as CuTe pointers, fake pointers and streams for compiling without a GPU, and the
  input checks the backends share;
- launch: the per-call hot path: compile-once cache, per-input launch cache, CUDA-graph launchers.

Build-time SASS tooling (cuobjdump) is kept apart, in kernels/tooling/sass.py. Nothing here imports cutlass at
module import time. kernels/sm90 and kernels/sm100 both call these signatures; keep them stable.
"""
