"""LLM providers: in-process llama.cpp (xllamacpp) on the bundled Qwen2.5-Coder-1.5B GGUF, or Ollama.

Both offer the two operations Lyra needs: ``choose`` (one of a few options, with the model's
probability for each, read from the first token's log-probabilities) and ``generate_json``
(grammar / JSON-schema constrained output).
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from lyra.core.errors import ConfigError, LLMError, LyraError
from lyra.ml.protocols import TokenChoice

log = logging.getLogger(__name__)
T = TypeVar("T")


def chatml(messages: Sequence[dict[str, str]]) -> str:
    """Qwen's ChatML prompt, ending where the assistant starts to answer."""
    parts = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
    return "".join(parts) + "<|im_start|>assistant\n"


def option_probabilities(top: Sequence[tuple[str, float]], options: Sequence[str]) -> dict[str, float]:
    """Spread the first token's top log-probabilities over the options whose text the token starts.

    A token counts for an option when, stripped and lower-cased, it is a non-empty prefix of the option
    (so "Yes", " yes" and "Y" all count for "yes"). The result is renormalised over the options; when no
    option appears among the top tokens, each gets an equal share.
    """
    mass = dict.fromkeys(options, 0.0)
    lowered = {o: o.lower() for o in options}
    for token, logprob in top:
        piece = token.strip().lower()
        if not piece:
            continue
        matches = [o for o in options if lowered[o].startswith(piece)]
        for option in matches:
            mass[option] += math.exp(logprob) / len(matches)
    total = sum(mass.values())
    if total <= 0.0:
        return {o: 1.0 / len(options) for o in options}
    return {o: v / total for o, v in mass.items()}


@dataclass
class LLMUsage:
    """What the LLM was asked since it was made (or since :meth:`reset`): calls, prompt tokens it evaluated and
    prompt tokens it reused from its prefix cache (as llama.cpp's ``timings`` report them), and generated tokens."""

    calls: int = 0
    prompt_tokens_evaluated: int = 0
    prompt_tokens_cached: int = 0
    tokens_generated: int = 0

    def add(self, timings: dict[str, Any]) -> None:
        self.calls += 1
        self.prompt_tokens_evaluated += int(timings.get("prompt_n", 0) or 0)
        self.prompt_tokens_cached += int(timings.get("cache_n", 0) or 0)
        self.tokens_generated += int(timings.get("predicted_n", 0) or 0)

    def snapshot(self) -> LLMUsage:
        return replace(self)

    def since(self, before: LLMUsage) -> LLMUsage:
        return LLMUsage(
            self.calls - before.calls,
            self.prompt_tokens_evaluated - before.prompt_tokens_evaluated,
            self.prompt_tokens_cached - before.prompt_tokens_cached,
            self.tokens_generated - before.tokens_generated,
        )


class LlamaCppLLM:
    """llama.cpp running in this process through xllamacpp. Calls are serialised by a lock.

    ``prompt_cache`` (default on): llama.cpp keeps the last prompt's evaluated state and reuses its longest common
    prefix with the next prompt, so only the new tail is evaluated; off, every prompt is evaluated whole (the
    answers are the same, only slower: tests/unit/test_llm_prefix_cache.py checks that on the real model).
    ``usage`` counts calls and tokens."""

    def __init__(
        self,
        gguf: Callable[[], Path],
        model_id: str,
        n_ctx: int = 4096,
        threads: int = 2,
        seed: int = 7,
        prompt_cache: bool = True,
    ) -> None:
        self.model_id = model_id
        self.prompt_cache = prompt_cache
        self.usage = LLMUsage()
        self._gguf = gguf  # resolved on first use (the bundled GGUF is assembled then)
        self._n_ctx = n_ctx
        self._threads = threads
        self._seed = seed
        self._server: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._server is None:
            try:
                import xllamacpp
            except ImportError:
                raise ConfigError("xllamacpp is not installed", hint="`scripts/setup.sh --ml`") from None
            params = xllamacpp.CommonParams()
            gguf = self._gguf()
            params.model.path = str(gguf)
            params.n_ctx = self._n_ctx
            params.n_parallel = 1
            params.cpuparams.n_threads = self._threads
            params.cpuparams_batch.n_threads = self._threads
            params.sampling.seed = self._seed
            params.warmup = False
            params.verbosity = -1  # llama.cpp is chatty on stderr; failures come back as error responses
            log.info("loading %s into llama.cpp (%d threads)", gguf.name, self._threads)
            self._server = xllamacpp.Server(params)
        return self._server

    def _complete(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            server = self._load()
            response = server.handle_completions({"cache_prompt": self.prompt_cache, "temperature": 0.0, **request})
            if isinstance(response, dict) and isinstance(response.get("timings"), dict):
                self.usage.add(response["timings"])
        if not isinstance(response, dict) or "error" in response:
            raise LLMError(f"llama.cpp refused the request: {response!r:.300}")
        return response

    def choose(self, messages: Sequence[dict[str, str]], options: Sequence[str]) -> TokenChoice:
        return self.choose_raw(chatml(messages), options)

    def choose_raw(self, prompt: str, options: Sequence[str]) -> TokenChoice:
        """Continue ``prompt`` as plain text by one token and read the options' probabilities."""
        response = self._complete({"prompt": prompt, "n_predict": 1, "n_probs": 20})
        choice = response["choices"][0]
        content = (choice.get("logprobs") or {}).get("content") or []
        top = [(t["token"], float(t["logprob"])) for t in (content[0]["top_logprobs"] if content else [])]
        return TokenChoice(text=str(choice.get("text", "")), probs=option_probabilities(top, options))

    def generate_json(self, messages: Sequence[dict[str, str]], schema: dict[str, Any], max_tokens: int = 512) -> Any:
        response = self._complete({"prompt": chatml(messages), "n_predict": max_tokens, "json_schema": schema})
        text = str(response["choices"][0].get("text", ""))
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise LLMError(f"the model's output is not valid JSON ({exc.msg}): {text[:200]!r}") from None


class OllamaLLM:
    """An Ollama server (``OLLAMA_HOST``), e.g. ``qwen2.5:3b`` (the design's model, decision record 0010), through the
    official ``ollama`` client (the ``ollama`` extra: ``pip install 'lyra[ollama]'``).

    ``choose`` / ``choose_raw`` ask for one token with its top log-probabilities (``/api/chat``, ``/api/generate``
    with ``raw``); ``generate_json`` streams ``/api/chat`` with the JSON schema as ``format`` and joins the pieces,
    so ``timeout`` bounds the wait for each piece rather than the whole answer. Every failure is an
    :class:`LLMError` that says what happened: the server cannot be reached, did not answer in time, answered an
    HTTP error (a missing model: ``ollama pull``), or answered something that is not Ollama's API.
    """

    def __init__(self, host: str, model: str, timeout: float = 120.0) -> None:
        self.model_id = f"ollama:{model}"
        self._model = model
        self._host = host
        self._timeout = timeout
        self._client: Any = None

    def _get(self) -> Any:
        if self._client is None:
            try:
                import httpx
                import ollama
            except ImportError:
                raise ConfigError(
                    "the `ollama` client is not installed", hint="pip install 'lyra[ollama]' (or: pip install ollama)"
                ) from None
            self._client = ollama.Client(host=self._host, timeout=httpx.Timeout(self._timeout, connect=10.0))
        return self._client

    def _call(self, what: str, request: Callable[[Any], T]) -> T:
        """Run one request against the client; map every way it can fail to an LLMError naming the cause."""
        import httpx
        import ollama

        where = f"Ollama at {self._host}"
        try:
            return request(self._get())
        except LyraError:
            raise
        except (ConnectionError, httpx.ConnectError):  # the client raises the first; a stream the second
            raise LLMError(
                f"{where} cannot be reached ({what})", hint="start it (`ollama serve`), or set OLLAMA_HOST"
            ) from None
        except httpx.TimeoutException:
            raise LLMError(
                f"{where} did not answer {what} within {self._timeout:g} s", hint="raise LYRA_OLLAMA_TIMEOUT"
            ) from None
        except ollama.ResponseError as exc:
            status = f"HTTP {exc.status_code}" if exc.status_code > 0 else "an error"
            hint = f"ollama pull {self._model}" if exc.status_code == 404 else None
            raise LLMError(f"{where} answered {what} with {status}: {str(exc.error)[:300]}", hint=hint) from None
        except httpx.HTTPError as exc:
            raise LLMError(f"{where} failed during {what}: {type(exc).__name__}: {exc}") from None
        except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:  # JSON, pydantic, shape
            raise LLMError(
                f"{where} answered {what} with something that is not Ollama's API: {type(exc).__name__}: "
                f"{str(exc)[:200]}"
            ) from None

    @staticmethod
    def _choice(text: str, logprobs: Any, options: Sequence[str]) -> TokenChoice:
        first = logprobs[0] if logprobs else None
        top = first.get("top_logprobs") if first is not None else None
        if top:
            pairs = [(str(t["token"]), float(t["logprob"])) for t in top]
            return TokenChoice(text=text, probs=option_probabilities(pairs, options))
        # An Ollama without log-probabilities: the answer alone counts (all of the mass on the option it names;
        # uniform when it names none).
        return TokenChoice(text=text, probs=option_probabilities([(text, 0.0)], options))

    def choose(self, messages: Sequence[dict[str, str]], options: Sequence[str]) -> TokenChoice:
        def request(client: Any) -> TokenChoice:
            response = client.chat(
                model=self._model,
                messages=list(messages),
                options={"temperature": 0, "num_predict": 1},
                logprobs=True,
                top_logprobs=20,
            )
            return self._choice(str(response["message"]["content"] or ""), response.get("logprobs"), options)

        return self._call("a chat request", request)

    def choose_raw(self, prompt: str, options: Sequence[str]) -> TokenChoice:
        def request(client: Any) -> TokenChoice:
            response = client.generate(
                model=self._model,
                prompt=prompt,
                raw=True,
                options={"temperature": 0, "num_predict": 1},
                logprobs=True,
                top_logprobs=20,
            )
            return self._choice(str(response["response"] or ""), response.get("logprobs"), options)

        return self._call("a generate request", request)

    def generate_json(self, messages: Sequence[dict[str, str]], schema: dict[str, Any], max_tokens: int = 512) -> Any:
        def request(client: Any) -> str:
            pieces: list[str] = []
            for part in client.chat(
                model=self._model,
                messages=list(messages),
                format=schema,
                options={"temperature": 0, "num_predict": max_tokens},
                stream=True,
            ):
                pieces.append(str(part["message"]["content"] or ""))
            return "".join(pieces)

        text = self._call("a JSON chat request", request)
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise LLMError(f"Ollama's output is not valid JSON ({exc.msg}): {text[:200]!r}") from None
