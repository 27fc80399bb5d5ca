from brain.lexical import LexicalIndex, tokenize


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


def test_bm25_finds_exact_identifier():
    lex = LexicalIndex.build(["a", "b", "c"], ["acc_empty defined outside control flow", "tma loads", "nothing"])
    assert lex.search("NameError: name 'acc_empty' is not defined", 3)[0][0] == "a"
    assert lex.search("unrelated words", 3) == []


def test_unicode_digits_are_words_not_numbers():
    assert tokenize("x² ① ²") is not None  # must not crash on characters str.isdigit() accepts
