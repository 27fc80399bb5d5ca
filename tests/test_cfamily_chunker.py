"""C, C++ and CUDA sources: exact-line chunks along declarations, none over HARD_MAX, found by search."""
from brain.chunking import HARD_MAX, chunk_text
from brain.chunking.cfamily import blank_comments_and_literals, class_name
from tests.conftest import corpus

STEPS = "\n".join(f"    acc[{i}] = fmaf(a[{i}], b[{i}], acc[{i}]);  // step {i} of the unrolled dot product"
                  for i in range(40))
SOURCE = f"""// Copyright (c) 2026 Example. Licensed under the MIT licence.
#include <cuda_fp16.h>
#define CHECK(x) do {{ if (!(x)) {{ printf("}}"); }} }} while (0)

namespace nvfp4 {{

/// Scale-factor layout: 32x4x4 atoms, one e4m3 byte per 16 values. The scale factors of a 128-row tile
/// are stored as 32 rows of 4 x 4 bytes so that one 16-byte load brings the four scales a thread needs for
/// four consecutive rows; the permutation from the plain [rows, K/16] layout is a reshape and a transpose.
/// Tensor memory receives them through the S2T copy before the block-scaled MMA reads them, one atom per
/// warp, and the atom count along K is padded up to a multiple of four.
struct ScaleAtom {{
  const char* name = "{{ not a brace }}";
  char open = '{{';
  int rows = 1'000;
}};

/**
 * Block-scaled GEMM kernel: each CTA multiplies one 128x128 tile,
 * decoding e2m1 pairs with a byte permute before the MMA.
 */
template <int kTileM, class Element>
__global__ void gemm_kernel(const Element* a, const Element* b, float* c, int k) {{
  float acc = 0.f;
  const int lane = threadIdx.x % 32;  // lane within the warp
  const int warp = threadIdx.x / 32;  // warp within the CTA
  for (int i = lane; i < k; i += 32) {{
    acc += static_cast<float>(a[warp * k + i]) * static_cast<float>(b[i]);  // one product per lane
  }}
  for (int offset = 16; offset > 0; offset /= 2) {{
    acc += __shfl_xor_sync(0xffffffff, acc, offset);  // butterfly reduction across the warp
  }}
  if (lane == 0) {{
    c[blockIdx.x * kTileM + warp] = acc;  // one output per warp
  }}
}}

}}  // namespace nvfp4

extern "C" void launch_host(const float* a, const float* b, float* acc) {{
{STEPS}
}}
"""


def _chunks():
    return chunk_text(SOURCE, "kernels/gemm.cu", ".cu")


def test_chunks_are_exact_lines_under_the_cap_and_cover_the_file():
    lines = SOURCE.splitlines()
    chunks = _chunks()
    covered = set()
    for c in chunks:
        assert c.text == "\n".join(lines[c.start_line - 1:c.end_line])
        assert len(c.text) <= HARD_MAX and c.kind == "code" and c.language == "cuda"
        covered |= set(range(c.start_line, c.end_line + 1))
    assert all(n in covered for n, line in enumerate(lines, 1) if line.strip())


def test_a_kernel_keeps_its_comment_and_names_itself():
    kernel = next(c for c in _chunks() if "__global__ void gemm_kernel" in c.text)
    assert "Block-scaled GEMM kernel" in kernel.text  # the comment above a unit belongs to it
    assert kernel.section.endswith("gemm_kernel") and "nvfp4" in kernel.section
    assert "gemm_kernel(const Element* a" in kernel.context and kernel.context.startswith("kernels gemm")
    assert "byte permute" in kernel.embedding_text() and "tile" in kernel.embedding_text()


def test_braces_in_literals_comments_and_macros_do_not_end_a_unit():
    struct = next(c for c in _chunks() if "struct ScaleAtom" in c.text)
    assert "int rows = 1'000;" in struct.text and struct.text.rstrip().endswith("};")
    blank = blank_comments_and_literals(SOURCE)
    assert blank.count("{") == blank.count("}") and len(blank) == len(SOURCE)
    assert blank.count("\n") == SOURCE.count("\n")


def test_a_long_function_is_cut_between_statements():
    pieces = [c for c in _chunks() if "launch_host" in c.section]
    assert len(pieces) >= 2
    lines = SOURCE.splitlines()
    for piece in pieces[1:]:
        code = blank_comments_and_literals(lines[piece.start_line - 2]).rstrip()
        assert code.endswith((";", "{", "}"))  # never mid-statement
        assert "launch_host" in piece.context  # each piece carries the signature it belongs to


def test_namespaces_and_extern_blocks_name_their_members():
    chunks = chunk_text('extern "C" {\nint add(int a, int b) { return a + b; }\n}\n', "x.cu", ".cu")
    assert [c.section for c in chunks] == ['x.cu › extern "C" › add']


def test_class_names_skip_template_parameters():
    assert class_name("template <class T, int N> struct Tile") == "Tile"
    assert class_name("template <class T> __device__ void f(T x)") is None
    assert class_name("struct __align__(16) Pair") == "Pair"


def test_cuda_source_is_ingested_and_found(tmp_path, make_brain):
    docs = tmp_path / "src"
    docs.mkdir()
    (docs / "gemm.cu").write_text(SOURCE)
    brain = make_brain()
    s = brain.ingest([corpus(docs)])
    assert s.files_changed == 1 and s.chunks_added >= 4
    hits = brain.searcher.search("kernel that decodes e2m1 pairs with a byte permute before the MMA")
    assert "__global__ void gemm_kernel" in hits[0].text
    hits = brain.searcher.search("ScaleAtom", mode="bm25")
    assert "struct ScaleAtom" in hits[0].text
