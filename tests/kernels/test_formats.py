import pytest
import torch

from kernels import formats
from slow_impl import e2m1_value, e4m3_value, permuted_offset


def test_e2m1_decodes_every_byte_low_nibble_first():
    packed = torch.arange(256, dtype=torch.uint8).view(-1, 1)
    got = formats.decode_e2m1(packed)
    for byte in range(256):
        assert got[byte].tolist() == [e2m1_value(byte & 0xF), e2m1_value(byte >> 4)]


def test_e2m1_accepts_the_torch_shell_dtype():
    raw = torch.tensor([[0x21, 0xF8]], dtype=torch.uint8)
    assert torch.equal(formats.decode_e2m1(raw.view(torch.float4_e2m1fn_x2)), formats.decode_e2m1(raw))
    assert formats.decode_e2m1(raw).tolist() == [[0.5, 1.0, -0.0, -6.0]]


def test_pack_unpack_and_encode_round_trip():
    codes = torch.randint(0, 16, (7, 64), generator=torch.Generator().manual_seed(3), dtype=torch.uint8)
    packed = formats.pack_e2m1_codes(codes)
    assert packed.shape == (7, 32)
    assert torch.equal(formats.unpack_e2m1_codes(packed), codes)
    values = formats.decode_e2m1(packed)
    assert torch.equal(formats.encode_e2m1(values), packed)  # -0.0 keeps its code 8


def test_encode_rejects_unrepresentable_values():
    with pytest.raises(ValueError, match="not representable"):
        formats.encode_e2m1(torch.tensor([[0.5, 2.5]]))


def test_e4m3_decode_matches_bit_formula():
    raw = torch.arange(256, dtype=torch.uint8)
    got = formats.decode_e4m3(raw).tolist()
    for byte in range(256):
        want = e4m3_value(byte)
        if want != want:
            assert got[byte] != got[byte]
        else:
            assert got[byte] == want, byte


def _plain_scales(mn, sf_k, l, seed=0):
    g = torch.Generator().manual_seed(seed)
    # byte values 1..120 so zero padding is distinguishable from data
    raw = torch.randint(1, 120, (l, mn, sf_k), generator=g, dtype=torch.uint8)
    return raw.view(torch.float8_e4m3fn).permute(1, 2, 0)


@pytest.mark.parametrize("mn,sf_k,l", [(128, 4, 1), (200, 12, 2), (1, 3, 3), (300, 9, 1)])
def test_permuted_layout_matches_offset_formula(mn, sf_k, l):
    sf = _plain_scales(mn, sf_k, l)
    perm = formats.to_permuted(sf)
    rest_mn, rest_k = -(-mn // 128), -(-sf_k // 4)
    assert tuple(perm.shape) == (32, 4, rest_mn, 4, rest_k, l)
    storage = formats.permuted_storage(perm).contiguous().view(torch.uint8).flatten().tolist()
    assert len(storage) == l * rest_mn * rest_k * 512
    plain = sf.view(torch.uint8)
    expected = [0] * len(storage)  # padding must be zero
    for b in range(l):
        for i in range(mn):
            for j in range(sf_k):
                expected[permuted_offset(i, j, b, rest_mn, rest_k)] = int(plain[i, j, b])
    assert storage == expected
    # The logical (32, 4, rest_mn, 4, rest_k, L) indexing of the problem files.
    pv = perm.view(torch.uint8)
    for (i, j, b) in [(0, 0, 0), (mn - 1, sf_k - 1, l - 1), (mn // 2, sf_k // 2, 0)]:
        assert pv[i % 32, (i % 128) // 32, i // 128, j % 4, j // 4, b] == plain[i, j, b]


def test_permuted_strides_are_the_physical_order():
    perm = formats.to_permuted(_plain_scales(256, 8, 2))
    # physical (L, rest_mn, rest_k, 32, 4, 4) contiguous -> logical strides
    assert perm.stride() == (16, 4, 2 * 512, 1, 512, 2 * 2 * 512)


@pytest.mark.parametrize("mn,sf_k,l", [(200, 12, 2), (128, 8, 1), (5, 1, 2)])
def test_from_permuted_round_trip(mn, sf_k, l):
    sf = _plain_scales(mn, sf_k, l, seed=1)
    back = formats.from_permuted(formats.to_permuted(sf), mn, sf_k)
    assert back.shape == sf.shape and back.stride() == (sf_k, 1, mn * sf_k)
    assert torch.equal(back.view(torch.uint8), sf.view(torch.uint8))


def test_to_blocked_is_one_batch_of_the_permuted_storage():
    sf = _plain_scales(300, 9, 2, seed=2)
    storage = formats.permuted_storage(formats.to_permuted(sf)).contiguous()
    for b in range(2):
        assert torch.equal(formats.to_blocked(sf[:, :, b]).view(torch.uint8), storage[b].flatten().view(torch.uint8))


def test_dequantize_applies_one_scale_per_16_elements():
    packed = torch.full((1, 16), 0x22, dtype=torch.uint8)  # 32 elements of value 1.0
    scales = torch.tensor([[2.0, 0.5]]).to(torch.float8_e4m3fn)
    out = formats.dequantize(packed, scales)
    assert out.tolist() == [[2.0] * 16 + [0.5] * 16]
    with pytest.raises(ValueError, match="do not match"):
        formats.dequantize(packed, scales[:, :1])
