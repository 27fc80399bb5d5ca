from brain.textfix import repair_mojibake


def test_repairs_utf8_read_as_cp1252():
    assert repair_mojibake("45.65Î¼s â†’ 49.36Î¼s") == "45.65μs → 49.36μs"
    assert repair_mojibake("# ðŸš€ Blackwell") == "# 🚀 Blackwell"


def test_repairs_sequence_whose_middle_byte_was_dropped():
    # ❌ is E2 9D 8C; cp1252 has no 0x9D, so the bad decode lost it
    assert repair_mojibake("### âŒ Attempt 1") == "### ❌ Attempt 1"


def test_leaves_clean_text_alone():
    for clean in ["plain ascii", "café naïve", "µs and ← arrows", "7.5% slower", "Ünïcödé"]:
        assert repair_mojibake(clean) == clean
