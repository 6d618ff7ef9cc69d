"""NLI judges: SUPPORTS / REFUTES / NEUTRAL for (premise, hypothesis) pairs.

* :class:`LLMStanceJudge` (offline default): the local LLM as a judge, built to overcome the small model's
  bias on scientific abstracts (see docs/evaluation/stance-quality.md). ``mode="hybrid"`` (default):
  1. relevance gate — the premise's best sentence must be close enough to the claim (embedding cosine),
     otherwise the pair is NEUTRAL without asking the LLM;
  2. two yes/no questions — "is the claim TRUE by this passage?" and "... FALSE?", each answered with the
     probability of "yes" read from the first token's log-probabilities (plain-text few-shot continuation);
  3. cues read from the best-matching sentences (null findings, claim polarity, direction of the effect),
     see :mod:`lyra.ml.stance_features`;
  4. a fitted multinomial logistic combiner turns them into the three label probabilities.
  Kept for comparison in ``lyra eval nli``: ``mode="two_question"`` (the two answers combined by a product of
  experts, optionally with contextual calibration against content-free inputs and sentence-level premises)
  and ``mode="three_way"`` (one three-way few-shot question: the naive judge).
* :class:`CrossEncoderJudge`: any MNLI-style sequence-classification checkpoint (Hugging Face id or folder),
  label order read from the model config — what users with internet use.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from lyra.core.errors import ConfigError
from lyra.core.text import split_sentences
from lyra.ml.cache import AnswerCache
from lyra.ml.learned_rules import STANCE_LLM, LearnedRules, RuleSource, no_rules
from lyra.ml.protocols import LABELS, LLM, Embedder, NLIResult
from lyra.ml.stance_features import StanceCombiner, features
from lyra.sources.injection import DEFAULT_DELIMITER_PREFIX, Fence

log = logging.getLogger(__name__)


VERDICT_OPTIONS = ("agrees", "disagrees", "neither")  # first tokens differ: "ag", "dis", "ne"
PROMPT_FILES = ("stance_question.j2", "stance_three_way.j2", "stance_examples.yaml")


def short_fence() -> Fence:
    """A per-pair fence with 32 random bits instead of 64 (e.g. ``LYRA-UNTRUSTED-9f2c4e1a``): about half the
    tokens of :meth:`Fence.new` around every judged passage, still fresh and unguessable for the one prompt it
    wraps (the passage is also checked for the delimiter prefix, as always)."""
    return Fence(f"{DEFAULT_DELIMITER_PREFIX}-{secrets.token_hex(4)}")


def prompt_environment(prompts_dir: Path) -> Environment:
    return Environment(
        loader=FileSystemLoader(str(prompts_dir)),
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
    )


@dataclass
class StanceJudgeConfig:
    mode: str = "hybrid"  # hybrid | two_question | three_way
    relevance_gate: float | None = 0.35  # cosine below which a pair is NEUTRAL without the LLM
    premise_sentences: int | None = 3  # best-matching sentences shown to the LLM (None: whole premise)
    calibrate: bool = True  # contextual calibration of the yes/no probabilities
    examples: int = 6  # few-shot examples used
    neutral_floor: float = 0.10  # neutral probability mass kept when one question says yes
    combiner: str | None = None  # path of the fitted StanceCombiner weights (hybrid mode)
    # the yes/no prompt's layout: the claim before the passage (the claim joins the cached prefix of the pairs of one
    # claim) and short per-pair fences (fewer tokens evaluated per pair); False: the earlier passage-first layout
    claim_first: bool = False  # opt-in until the LLM combiner is refitted for it (docs/evaluation/stance-variants.md)

    def fingerprint(self) -> str:
        return hashlib.sha256(repr(sorted(self.__dict__.items())).encode()).hexdigest()[:12]


@dataclass
class _Calibration:
    support_yes: float = 0.5
    contradict_yes: float = 0.5
    done: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


def _calibrated(p: float, prior: float) -> float:
    """Contextual calibration for a binary answer: divide by the content-free prior and renormalise."""
    p = min(max(p, 1e-6), 1 - 1e-6)
    prior = min(max(prior, 1e-3), 1 - 1e-3)
    yes, no = p / prior, (1 - p) / (1 - prior)
    return yes / (yes + no)


def combine_yes_no(support: float, contradict: float, neutral_floor: float = 0.1) -> dict[str, float]:
    """Three-label probabilities from two independent yes/no answers (product of experts).

    both "no" → neutral; one "yes" → that label; both "yes" (a muddled passage) → split between the two
    by their strength, with a floor of neutral mass kept for the uncertain middle.
    """
    e = support * (1 - contradict)
    c = contradict * (1 - support)
    n = (1 - support) * (1 - contradict)
    both = support * contradict
    e += both * support / (support + contradict)
    c += both * contradict / (support + contradict)
    n = max(n, neutral_floor * (1 - abs(e - c)))
    total = e + c + n
    return {"entailment": e / total, "contradiction": c / total, "neutral": n / total}


class LLMStanceJudge:
    """The offline default judge. Thread-safe (the LLM serialises its own calls)."""

    def __init__(
        self,
        llm: LLM,
        embedder: Embedder,
        prompts_dir: Path,
        config: StanceJudgeConfig | None = None,
        answers: AnswerCache | None = None,
        rules: RuleSource | None = None,
    ) -> None:
        """``rules``: the active learned rules of the ``stance_llm`` component, read at every judgement (their
        guidelines go into the prompts' "learned rules" section, their examples after the built-in ones)."""
        self.llm = llm
        self.rules = rules or no_rules(STANCE_LLM)
        self.answers = answers
        self.embedder = embedder
        self.config = config or StanceJudgeConfig()
        fingerprint = self.config.fingerprint()
        # the prompts are part of the judge: an edited template must not reuse cached verdicts
        prompts = b"".join((prompts_dir / f).read_bytes() for f in PROMPT_FILES)
        fingerprint += "-" + hashlib.sha256(prompts).hexdigest()[:8]
        # what a yes/no answer depends on: the model, the prompts and how many examples they show
        layout = ":claim-first" if self.config.claim_first else ""
        self._base_answers_id = (
            f"{llm.model_id}:{hashlib.sha256(prompts).hexdigest()[:16]}:{self.config.examples}{layout}"
        )
        if self.config.mode == "hybrid" and self.config.combiner and Path(self.config.combiner).exists():
            # refitted weights are a different judge: cached verdicts of the old one must not be reused
            weights = Path(self.config.combiner).read_bytes()
            fingerprint += "-" + hashlib.sha256(weights).hexdigest()[:8]
        self._base_model_id = f"llm-stance:{llm.model_id}:{fingerprint}"
        env = prompt_environment(prompts_dir)
        self._question = env.get_template("stance_question.j2")
        self._three_way = env.get_template("stance_three_way.j2")
        raw = yaml.safe_load((prompts_dir / "stance_examples.yaml").read_text(encoding="utf-8"))
        self._examples: list[dict[str, str]] = raw[: self.config.examples]
        self._calibrations: dict[str, _Calibration] = {}
        self._calibrations_lock = threading.Lock()
        # Our own examples are trusted; their fence stays fixed so the prompt up to the judged passage is the same
        # for every pair (the model's prompt cache reuses it). Each judged passage gets a fresh fence.
        self._examples_fence = Fence.new()
        self._combiner: StanceCombiner | None = None
        if self.config.mode == "hybrid":
            if not self.config.combiner or not Path(self.config.combiner).exists():
                raise ConfigError(
                    "the hybrid stance judge needs fitted weights (config/stance_combiner.json)",
                    hint="run `lyra eval fit-stance`, or use the trained judge (LYRA_NLI_BACKEND=trained)",
                )
            self._combiner = StanceCombiner.load(Path(self.config.combiner))

    # ------------------------------------------------------------------ rules
    @property
    def model_id(self) -> str:
        """The judge's id: its model, configuration, prompt files and, when any are active, the learned rules'
        version and content (a verdict cached under another rule set is never reused)."""
        tag = self.rules().tag()
        return f"{self._base_model_id}+{tag}" if tag else self._base_model_id

    @property
    def rules_version(self) -> int:
        return self.rules().version

    def _answers_id(self, rules: LearnedRules) -> str:
        """Keyed by the rules' content, not their version: the same prompt gives the same answer (a rule measured
        before its approval, or a rule set restored by a rollback, asks the LLM nothing again)."""
        return self._base_answers_id if rules.empty else f"{self._base_answers_id}:rules-{rules.fingerprint()}"

    # ----------------------------------------------------------------- prompts
    def _messages(
        self,
        template: str,
        passage: str,
        claim: str,
        fence: Fence,
        question: str = "",
        rules: LearnedRules | None = None,
    ) -> list[dict[str, str]]:
        """The prompt for one pair; the passage (untrusted) goes inside ``fence``, fresh for each pair. The
        active learned rules (read now unless given) add their guidelines and examples."""
        rules = rules if rules is not None else self.rules()
        examples = [*self._examples, *rules.examples]
        if template == "three_way":
            text = self._three_way.render(
                examples=[{**ex, "answer": ex["three_way"]} for ex in examples],
                learned_rules=list(rules.guidelines),
                passage=passage,
                claim=claim,
                fence=fence,
                examples_fence=self._examples_fence,
            )
        else:
            text = self._question.render(
                question=question,
                claim_first=self.config.claim_first,
                examples=examples,
                learned_rules=list(rules.guidelines),
                passage=passage,
                claim=claim,
                fence=fence,
                examples_fence=self._examples_fence,
            )
        return [{"role": "user", "content": text}]

    def yes_no(self, passage: str, claim: str) -> tuple[float, float]:
        """P(yes) to "is the claim TRUE by this passage?" and to "... FALSE?"."""
        support, contradict = self.questions(passage, claim, verdict=False)
        return support, contradict

    def questions(self, passage: str, claim: str, verdict: bool = True) -> tuple[float, ...]:
        """The yes/no answers (support, contradict) and, with ``verdict``, P(agrees), P(disagrees), P(neither) of
        the one-word verdict, under the learned rules in force. All questions of a pair share one fence, so each
        after the first reuses the prompt cache up to its last line. Answers are kept in ``answers`` when given,
        keyed by the model, the prompt files and the learned rules."""
        rules = self.rules()
        answers_id = self._answers_id(rules)
        fence = short_fence() if self.config.claim_first else Fence.new()
        answer = self._cached(
            "yes-no",
            answers_id,
            passage,
            claim,
            lambda: (
                self._yes(passage, claim, "support", fence, rules),
                self._yes(passage, claim, "contradict", fence, rules),
            ),
        )
        if not verdict:
            return answer
        verdict_answer = self._cached(
            "verdict", answers_id, passage, claim, lambda: self._verdict(passage, claim, fence, rules)
        )
        return answer + verdict_answer

    def _cached(
        self, kind: str, answers_id: str, passage: str, claim: str, ask: Callable[[], tuple[float, ...]]
    ) -> tuple[float, ...]:
        key = AnswerCache.key(kind, answers_id, passage, claim)
        cached = self.answers.get(key) if self.answers is not None else None
        width = 3 if kind == "verdict" else 2
        if cached is not None and len(cached) == width:
            return tuple(cached)
        answer = ask()
        if self.answers is not None:
            self.answers.put(key, answer)
        return answer

    def _verdict(self, passage: str, claim: str, fence: Fence, rules: LearnedRules) -> tuple[float, float, float]:
        prompt = self._messages("question", passage, claim, fence, "verdict", rules)[0]["content"]
        probs = self.llm.choose_raw(prompt, list(VERDICT_OPTIONS)).probs
        return probs["agrees"], probs["disagrees"], probs["neither"]

    def _yes(self, passage: str, claim: str, question: str, fence: Fence, rules: LearnedRules) -> float:
        # The few-shot pattern is continued as plain text (no chat turn), so the next token is the answer.
        prompt = self._messages("question", passage, claim, fence, question, rules)[0]["content"]
        return self.llm.choose_raw(prompt, ["yes", "no"]).probs["yes"]

    @property
    def _calibration(self) -> _Calibration:
        """The content-free priors of the prompts in force (they change with the learned rules)."""
        with self._calibrations_lock:
            return self._calibrations.setdefault(self.rules().tag(), _Calibration())

    def _ensure_calibration(self) -> None:
        cal = self._calibration
        with cal.lock:
            if cal.done or not self.config.calibrate:
                return
            content_free = [("N/A", "N/A"), ("", ""), ("[PASSAGE]", "[CLAIM]")]
            answers = [self.yes_no(p, c) for p, c in content_free]
            cal.support_yes = float(np.mean([s for s, _ in answers]))
            cal.contradict_yes = float(np.mean([c for _, c in answers]))
            cal.done = True
            log.info(
                "stance judge calibration: prior P(yes) support=%.3f contradict=%.3f",
                cal.support_yes,
                cal.contradict_yes,
            )

    # ------------------------------------------------------------------- judge
    def _sentence_similarities(self, premise: str, claim: str) -> tuple[list[str], np.ndarray]:
        """The premise's sentences and the cosine of each to the claim."""
        sentences = split_sentences(premise) or [premise]
        vectors = self.embedder.embed([claim, *sentences])
        return sentences, vectors[1:] @ vectors[0]

    def _select(self, premise: str, claim: str) -> tuple[str, float]:
        """The premise sentences that best match the claim (in their original order) and the best cosine."""
        sentences, sims = self._sentence_similarities(premise, claim)
        relevance = float(sims.max())
        k = self.config.premise_sentences
        if k is None or len(sentences) <= k:
            return premise, relevance
        keep = sorted(np.argsort(-sims)[:k].tolist())
        return " ".join(sentences[i] for i in keep), relevance

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIResult]:
        return [self.judge_one(p, h) for p, h in pairs]

    def _gated(self, relevance: float) -> NLIResult:
        """NEUTRAL without asking the LLM: the passage is too far from the claim. The further below the
        gate, the surer (0.6 at the gate, capped at 0.95)."""
        gate = self.config.relevance_gate or 0.0
        neutral = min(0.95, 0.6 + (gate - relevance))
        rest = (1 - neutral) / 2
        return NLIResult("neutral", {"entailment": rest, "contradiction": rest, "neutral": neutral}, "relevance_gate")

    def judge_one(self, premise: str, hypothesis: str) -> NLIResult:
        if self._combiner is not None:
            return self._judge_hybrid(premise, hypothesis)
        passage, relevance = self._select(premise, hypothesis)
        gate = self.config.relevance_gate
        if gate is not None and relevance < gate:
            return self._gated(relevance)
        if self.config.mode == "three_way":
            choice = self.llm.choose(self._messages("three_way", passage, hypothesis, Fence.new()), list(LABELS))
            probs = dict(choice.probs)
            label = max(probs, key=lambda k: probs[k])
            return NLIResult(label, probs, "llm_three_way")  # type: ignore[arg-type]
        self._ensure_calibration()
        support, contradict = self.yes_no(passage, hypothesis)
        if self.config.calibrate:
            support = _calibrated(support, self._calibration.support_yes)
            contradict = _calibrated(contradict, self._calibration.contradict_yes)
        probs = combine_yes_no(support, contradict, self.config.neutral_floor)
        label = max(probs, key=lambda k: probs[k])
        return NLIResult(label, probs, "llm_two_question")  # type: ignore[arg-type]

    def hybrid_features(self, premise: str, hypothesis: str) -> tuple[np.ndarray, float]:
        """The feature vector of the hybrid judge, and the best sentence similarity (for the gate)."""
        sentences, similarities = self._sentence_similarities(premise, hypothesis)
        sims = similarities.tolist()
        relevance = max(sims)
        gate = self.config.relevance_gate
        if gate is not None and relevance < gate:
            return np.zeros(0), relevance
        support, contradict = self.yes_no(premise, hypothesis)
        return features(support, contradict, sims, sentences, hypothesis), relevance

    def _judge_hybrid(self, premise: str, hypothesis: str) -> NLIResult:
        assert self._combiner is not None
        x, relevance = self.hybrid_features(premise, hypothesis)
        if len(x) == 0:
            return self._gated(relevance)
        probs = self._combiner.probabilities(x)
        label = max(probs, key=lambda k: probs[k])
        return NLIResult(label, probs, "llm_hybrid")  # type: ignore[arg-type]


class CrossEncoderJudge:
    """MNLI-style sequence classification (e.g. ``cross-encoder/nli-deberta-v3-small``), batched, truncated."""

    def __init__(self, model: str, batch_size: int = 16, max_length: int = 512) -> None:
        self.model_id = model
        self.batch_size = batch_size
        self.max_length = max_length
        self._tokenizer: Any = None
        self._model: Any = None
        self._label_of_index: dict[int, str] = {}
        self._lock = threading.Lock()

    @staticmethod
    def map_labels(id2label: dict[int, str]) -> dict[int, str]:
        """Model label names → Lyra's three labels (case-insensitive; 'entail*', 'contra*', 'neutral')."""
        mapping: dict[int, str] = {}
        for index, name in id2label.items():
            lowered = name.lower()
            if lowered.startswith("entail"):
                mapping[int(index)] = "entailment"
            elif lowered.startswith("contra"):
                mapping[int(index)] = "contradiction"
            elif lowered.startswith("neutral"):
                mapping[int(index)] = "neutral"
        if sorted(mapping.values()) != sorted(LABELS):
            raise ValueError(f"the model's labels {id2label} are not an entailment/neutral/contradiction set")
        return mapping

    def _load(self) -> None:
        with self._lock:
            if self._model is not None:
                return
            from transformers import AutoModelForSequenceClassification, AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(self.model_id)
            model = AutoModelForSequenceClassification.from_pretrained(self.model_id)
            model.eval()
            self._label_of_index = self.map_labels(dict(model.config.id2label))
            self._model = model

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIResult]:
        import torch

        self._load()
        results: list[NLIResult] = []
        for start in range(0, len(pairs), self.batch_size):
            batch = pairs[start : start + self.batch_size]
            encoded = self._tokenizer(
                [p for p, _ in batch],
                [h for _, h in batch],
                padding=True,
                truncation="only_first",
                max_length=self.max_length,
                return_tensors="pt",
            )
            with torch.no_grad():
                probs = torch.softmax(self._model(**encoded).logits, dim=-1).cpu().numpy()
            for row in probs:
                by_label = {self._label_of_index[i]: float(p) for i, p in enumerate(row) if i in self._label_of_index}
                label = max(by_label, key=lambda k: by_label[k])
                results.append(NLIResult(label, by_label, "cross_encoder"))  # type: ignore[arg-type]
        return results
