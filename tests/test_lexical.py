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


def test_a_cached_index_whose_scores_miss_its_ids_is_rebuilt_not_searched(tmp_path):
    """A cache folder pairing one generation's ids with another's scores would break every filtered search
    (mask and scores of different lengths): loading it is refused, so the snapshot rebuilds from its chunks."""
    from brain.config import Settings
    from brain.search.cache import LexicalCache

    cache = LexicalCache(Settings(home=tmp_path / "home"))
    cache.save(LexicalIndex.build(["a", "b", "c"], ["tma loads", "tensor memory", "swizzle"]), 4)
    assert len(cache.load(4).ids) == 3
    (cache.path / "ids.json").write_text('["a", "b"]')
    assert cache.load(4) is None


def test_a_cached_index_loads_whole_while_another_generation_is_saved(tmp_path):
    """A served write saves generation N+1's cache while a reader loads generation N's: the reader gets N's ids
    and scores together, or nothing."""
    import threading

    from brain.config import Settings
    from brain.search.cache import LexicalCache

    cache = LexicalCache(Settings(home=tmp_path / "home"))
    small = LexicalIndex.build([f"s{i}" for i in range(9)], [f"tma loads {i}" for i in range(9)])
    large = LexicalIndex.build([f"l{i}" for i in range(12)], [f"tensor memory {i}" for i in range(12)])
    stop, torn = threading.Event(), []

    def writer():
        while not stop.is_set():
            cache.save(small, 1)
            cache.save(large, 2)

    t = threading.Thread(target=writer)
    t.start()
    try:
        loads = 0
        while loads < 150:
            for generation, size in ((1, 9), (2, 12)):
                lex = cache.load(generation)
                if lex is not None:
                    loads += 1
                    if len(lex.ids) != size or lex.retriever.scores["num_docs"] != size:
                        torn.append((generation, len(lex.ids), lex.retriever.scores["num_docs"]))
    finally:
        stop.set()
        t.join()
    assert not torn, torn[:3]
