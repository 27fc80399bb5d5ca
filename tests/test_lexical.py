from brain.lexical import LexicalIndex, tokenize
from brain.thesaurus import THESAURUS, expand, weighted_query


def test_identifiers_whole_and_split():
    toks = tokenize("tcgen05.make_s2t_copy acquire_and_advance num_ab_stage PipelineTmaUmma")
    for t in ["tcgen05.make_s2t_copy", "tcgen05", "make_s2t_copy", "s2t", "copi", "acquire_and_advance",
              "acquir", "advanc", "num_ab_stage", "stage", "pipelinetmaumma", "tma", "umma"]:
        assert t in toks, t


def test_numbers_keep_units():
    toks = tokenize("7.5% slower, 466µs vs 45.65μs (12 us)")
    assert {"7.5%", "7.5", "466µs", "466", "45.65µs", "12µs"} <= set(toks)


def test_prose_and_identifier_parts_meet():
    # "stages" in prose must match the "stage" part of num_ab_stage
    assert set(tokenize("pipeline stages")) & set(tokenize("num_ab_stage"))


def test_architecture_spellings_meet():
    # sm_90a (nvcc's target), SM90 and sm90 (paths, prose) are one architecture; smem stays smem
    for spelling, arch in [("sm_90a", "sm90"), ("SM90", "sm90"), ("sm_100a", "sm100"), ("sm100f", "sm100")]:
        assert arch in tokenize(f"compile for {spelling}"), spelling
    assert not {"sm90", "sm100"} & set(tokenize("smem small sm_ sm_1000"))
    lex = LexicalIndex.build(["a", "b"], ["\ncubin for sm_100a loads on 10.0 only", "\nthe sm90 path decodes in registers"])
    assert lex.search("which sm100 devices load the cubin", 2)[0][0] == "a"
    assert "hopper" in expand(tokenize("sm90 gemm")) and "sm100" in expand(tokenize("Blackwell gemm"))


def test_bm25_finds_exact_identifier():
    lex = LexicalIndex.build(["a", "b", "c"], ["acc_empty defined outside control flow", "tma loads", "nothing"])
    assert lex.search("NameError: name 'acc_empty' is not defined", 3)[0][0] == "a"
    assert lex.search("unrelated words", 3) == []


def test_unicode_digits_are_words_not_numbers():
    assert tokenize("x² ① ²") is not None  # must not crash on characters str.isdigit() accepts


def test_context_line_is_a_weighted_field():
    texts = ["scale factor copy\nbody text about something else", "other heading\nscale factor copy in the body"]
    heavy = LexicalIndex.build(["h", "b"], texts, context_weight=3)
    assert heavy.search("scale factor copy", 2)[0][0] == "h"
    assert heavy.doc_freq("copi") == 2 and heavy.doc_freq("zzz") == 0


def test_thesaurus_expands_down_weighted_both_ways():
    q = weighted_query("how many columns of tensor memory does the accumulator take")
    assert q["tmem"] < 1.0 and q["tensor"] == 1.0
    assert "tensor" in expand(tokenize("TMEM alloc")) and "memori" in expand(tokenize("TMEM alloc"))
    assert "tma" in expand(tokenize("bulk tensor copy of A"))
    assert expand(tokenize("nothing related here")) == {}
    assert all(len(row) >= 2 for row in THESAURUS)


def test_expansion_never_outranks_an_exact_match():
    lex = LexicalIndex.build(["exact", "synonym"], ["\nthe tensor memory holds the accumulator",
                                                    "\nTMEM holds the accumulator"])
    hits = lex.search(weighted_query("tensor memory accumulator"), 2)
    assert [i for i, _ in hits] == ["exact", "synonym"]


def test_lexical_cache_saves_race_without_error(tmp_path):
    """Readers and a writer of one home may save the bm25 cache at the same moment (a served upload raced a
    search's rebuild): no save raises, and what is left loads, stands for one of the generations saved."""
    import threading

    from brain.config import Settings
    from brain.search.cache import LexicalCache

    cache = LexicalCache(Settings(home=tmp_path / "home"))
    lex = LexicalIndex.build(["a", "b"], ["tma loads", "tensor memory"])
    errors = []

    def save(generation):
        try:
            for _ in range(15):
                cache.save(lex, generation)
        except Exception as e:  # noqa: BLE001 - any escape is the failure under test
            errors.append(repr(e))

    threads = [threading.Thread(target=save, args=(g,)) for g in range(1, 7)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert any(cache.load(g) for g in range(1, 7))
    assert [p.name for p in cache.path.parent.iterdir() if p.name.startswith("lexical.")] == \
        ["lexical.lock"]  # no temporary or old folder left behind
