import pytest

from ragproof_core.generate.dedupe import QuestionIndex, jaccard, ngrams, normalise


def test_normalise_folds_case_punctuation_and_spaces():
    assert normalise("  What is  the KT-2's\tcapacity?? ") == "what is the kt 2 s capacity"
    assert normalise("Ｗhat is X?") == "what is x"  # fullwidth W folds (NFKC)


def test_ngrams_and_jaccard():
    assert ngrams("Abcd!") == frozenset({"abc", "bcd"})
    assert ngrams("ab") == frozenset({"ab"})
    assert jaccard(frozenset({"a", "b"}), frozenset({"b", "c"})) == 1 / 3


@pytest.mark.parametrize(
    ("kept", "new", "duplicate"),
    [
        ("What is the capacity of the KT-2 kettle?", "what is the capacity of the KT-2 kettle",
         True),
        ("Which attribute holds the exception given in the from clause of a raise statement?",
         "In a raise statement, which attribute holds the exception given in the from clause?",
         True),  # 3-gram Jaccard 0.90
        ("How can automatic exception chaining be suppressed?",
         "How is automatic exception chaining suppressed?", False),  # 0.74: a kept paraphrase
        ("What does the pass statement do?", "What does the del statement do?", False),
        ("How long does the KT-2 take to boil a litre?", "How many days of annual leave accrue?",
         False),
    ],
)  # fmt: skip
def test_duplicate_of(kept, new, duplicate):
    index = QuestionIndex()
    index.add(kept)
    assert index.duplicate_of(new) == (kept if duplicate else None)
    assert len(index) == 1
