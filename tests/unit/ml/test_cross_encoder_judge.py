"""The cross-encoder NLI backend, on a tiny *randomly initialised* BERT that this test builds and saves.

No MNLI weights can be downloaded here, so the verdicts themselves mean nothing; what is tested is the real
loading path (from_pretrained on a folder), the label mapping read from the model config (a label order
different from Lyra's), batching and truncation. Users with internet point LYRA_NLI_MODEL at e.g.
cross-encoder/nli-deberta-v3-small.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lyra.ml.nli import CrossEncoderJudge

transformers = pytest.importorskip("transformers")
WORDS = "the a drug trial reduced did not blood pressure risk of adults cats dogs in was no effect".split()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch

    folder = tmp_path_factory.mktemp("tiny-nli")
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    tokenizer = transformers.BertTokenizerFast(vocab_file=str(vocab))
    config = transformers.BertConfig(
        vocab_size=5 + len(WORDS),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=3,
        id2label={0: "CONTRADICTION", 1: "ENTAILMENT", 2: "NEUTRAL"},
        label2id={"CONTRADICTION": 0, "ENTAILMENT": 1, "NEUTRAL": 2},
    )
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_label_mapping_comes_from_the_model_config() -> None:
    assert CrossEncoderJudge.map_labels({0: "CONTRADICTION", 1: "ENTAILMENT", 2: "NEUTRAL"}) == {
        0: "contradiction",
        1: "entailment",
        2: "neutral",
    }
    assert CrossEncoderJudge.map_labels({0: "entailment", 1: "neutral", 2: "contradiction"})[2] == "contradiction"
    with pytest.raises(ValueError, match="not an entailment"):
        CrossEncoderJudge.map_labels({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})


def test_loads_a_local_checkpoint_and_returns_three_probabilities(tiny_model: Path) -> None:
    judge = CrossEncoderJudge(str(tiny_model), batch_size=2, max_length=32)
    results = judge.judge([("the drug reduced blood pressure", "the drug reduced risk")])
    (result,) = results
    assert set(result.probs) == {"entailment", "contradiction", "neutral"}
    assert sum(result.probs.values()) == pytest.approx(1.0, abs=1e-5)
    assert result.label == max(result.probs, key=lambda k: result.probs[k])
    # the model's own argmax, read through its config's id2label, is what the judge reports
    import torch

    model = transformers.AutoModelForSequenceClassification.from_pretrained(tiny_model)
    tok = transformers.AutoTokenizer.from_pretrained(tiny_model)
    with torch.no_grad():
        logits = model(
            **tok(["the drug reduced blood pressure"], ["the drug reduced risk"], return_tensors="pt")
        ).logits
    expected = model.config.id2label[int(logits.argmax())].lower()
    assert result.label == expected


def test_batching_does_not_change_results(tiny_model: Path) -> None:
    pairs = [(f"the drug {w} blood pressure", f"adults {w} risk") for w in WORDS[:7]]
    one_by_one = CrossEncoderJudge(str(tiny_model), batch_size=1).judge(pairs)
    batched = CrossEncoderJudge(str(tiny_model), batch_size=4).judge(pairs)
    assert len(batched) == len(pairs)
    for a, b in zip(one_by_one, batched, strict=True):
        assert a.label == b.label
        for label in a.probs:
            assert a.probs[label] == pytest.approx(b.probs[label], abs=1e-4)


def test_long_premises_are_truncated_not_rejected(tiny_model: Path) -> None:
    judge = CrossEncoderJudge(str(tiny_model), batch_size=2, max_length=24)
    long_premise = " ".join(WORDS * 50)  # far beyond max_position_embeddings=64
    longer = long_premise + " cats dogs cats dogs"
    a, b = judge.judge([(long_premise, "the drug reduced risk"), (longer, "the drug reduced risk")])
    # only the premise is cut (truncation="only_first"), so the extra tail cannot change the verdict
    assert a.probs == pytest.approx(b.probs)
