from collections import Counter

import pytest

from ragproof_core.generate.corpus import load_corpus
from ragproof_core.generate.sampling import ChunkSampler, SamplingError, spread
from tests.conftest import FIXTURES

CHUNKS = load_corpus(FIXTURES / "generation" / "corpus.jsonl")
DOCUMENT = {c.id: c.document_id for c in CHUNKS}


def picks(sampler, slots, attempt=0):
    return [tuple(c.id for c in sampler.pick(s, attempt)) for s in range(slots)]


def test_slots_visit_every_document_before_any_twice():
    sampler = ChunkSampler(CHUNKS, seed=0, stream="qa", size=1)
    first = picks(sampler, 8)
    documents = [DOCUMENT[ids[0]] for ids in first]
    assert sorted(documents[:4]) == ["bikes", "kettle", "leave", "tram"]
    assert Counter(documents) == {"bikes": 2, "kettle": 2, "leave": 2, "tram": 2}
    # The second visit to a document takes another of its chunks when it has one.
    for doc in ("kettle", "leave", "tram"):
        assert len({ids for ids in first if DOCUMENT[ids[0]] == doc}) == 2


def test_the_same_seed_picks_the_same_chunks_and_another_seed_others():
    def chosen(seed):
        return picks(ChunkSampler(CHUNKS, seed=seed, stream="qa", size=1), 8)

    assert chosen(7) == chosen(7)
    assert len({tuple(chosen(seed)) for seed in range(6)}) > 1


def test_attempts_move_to_other_chunks_of_the_same_document():
    sampler = ChunkSampler(CHUNKS, seed=0, stream="qa", size=1)
    slot = next(s for s in range(4) if DOCUMENT[sampler.pick(s, 0)[0].id] == "kettle")
    attempts = [sampler.pick(slot, a)[0].id for a in range(3)]
    assert sorted(attempts) == ["kettle-1", "kettle-2", "kettle-3"]


def test_two_chunk_slots_take_two_chunks_of_one_document():
    sampler = ChunkSampler(CHUNKS, seed=0, stream="qa-multi", size=2)
    assert sampler.document_count == 3  # bikes has one chunk: never used for pairs
    for ids in picks(sampler, 6):
        assert len(set(ids)) == 2 and DOCUMENT[ids[0]] == DOCUMENT[ids[1]] != "bikes"


def test_a_corpus_without_two_chunk_documents_cannot_pair():
    single = [c for c in CHUNKS if c.document_id == "bikes"]
    with pytest.raises(SamplingError, match="no document in the corpus has 2 chunks"):
        ChunkSampler(single, seed=0, stream="qa-multi", size=2)


def test_spread_spaces_the_chosen_slots_evenly():
    assert spread(6, 2) == [False, False, True, False, False, True]
    assert spread(4, 0) == [False] * 4
    assert spread(3, 3) == [True] * 3
