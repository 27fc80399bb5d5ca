from brain.taxonomy import classify_kind, detect_tags, resolve_kind, resolve_tag


def test_aliases_resolve_to_canonical_tags():
    assert resolve_tag("UMMA") == "tcgen05"
    assert resolve_tag("smem") == "shared-memory"
    assert resolve_tag("splitk") == "split-k"
    assert resolve_tag("Hopper") == "sm90"
    assert resolve_tag("my-own-tag") == "my-own-tag"
    assert resolve_kind("pitfall") == "constraint" and resolve_kind("failed") == "failed-attempt"


def test_tags_detected_as_whole_words():
    tags = detect_tags("S2T copies via tcgen05.cp into TMEM; UMMA reads SFA")
    assert {"s2t", "tmem", "tcgen05", "scale-factors"} <= set(tags)
    assert "tma" not in detect_tags("automatic stamps")  # no substring matches


def test_kind_rules():
    assert classify_kind("Doc › ❌ Attempt 2: Rebalanced SMEM", "7.5% slower") == "failed-attempt"
    assert classify_kind("Doc › CuTe DSL Constraints › Scoping", "**ERROR:** NameError ...") == "constraint"
    assert classify_kind("Doc › Benchmark Results", "| 45.6 µs | 49.3 µs |") == "result"
    assert classify_kind("Doc › Running Comparisons", "```bash\npython run.py\n```") == "how-to"
    assert classify_kind("Doc › Key Takeaways", "The lesson: measure first") == "lesson"
    assert classify_kind("Doc › Hardware", "B200 has 148 SMs") == "reference"


def test_own_heading_outweighs_the_document_title():
    title = "ROUND 2: THE MEA CULPA - Pipeline Stages Ate Humble Pie"
    assert classify_kind(f"{title} › Why 3 Stages Made Things Worse", "it got slower") == "failed-attempt"
    assert classify_kind(f"{title} › Step 1: Microbenchmark", "```bash\nncu --set full\n```") == "how-to"
    assert classify_kind(f"{title} › REFERENCES", "1. a link") == "reference"
    assert classify_kind(title, "intro text") == "failed-attempt"  # the title alone still colours the intro
