"""The Ollama provider against a real HTTP server on 127.0.0.1 that answers Ollama's /api/chat and /api/generate
(streamed NDJSON when the request asks for a stream, one JSON document otherwise), so the official client, its
timeouts and every way the server can fail run for real. No Ollama and no model are needed."""

from __future__ import annotations

import json
import math
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from lyra.core.errors import LLMError
from lyra.core.settings import load_settings
from lyra.ml.factory import Models
from lyra.ml.llm import OllamaLLM

MODEL = "qwen2.5:3b"
TOP = [{"token": "yes", "logprob": -0.1}, {"token": " No", "logprob": -2.4}, {"token": "maybe", "logprob": -3.0}]


@dataclass
class Behaviour:
    """What the fake server does with the next requests; ``requests`` records what it received."""

    mode: str = "ok"  # ok | no_logprobs | status_500 | missing_model | malformed | error_mid_stream | slow
    content: str = "yes"
    delay: float = 0.0
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


class FakeOllama(BaseHTTPRequestHandler):
    behaviour: Behaviour

    def log_message(self, *_args: object) -> None:  # keep the test output clean
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        behaviour = self.behaviour
        behaviour.requests.append((self.path, request))
        if behaviour.mode == "slow":
            time.sleep(behaviour.delay)
        if behaviour.mode == "status_500":
            return self._send(500, b'{"error": "llama runner process has terminated"}')
        if behaviour.mode == "missing_model":
            return self._send(404, json.dumps({"error": f"model '{MODEL}' not found"}).encode())
        if behaviour.mode == "malformed":
            return self._send(200, b"<html>a proxy login page</html>", "text/html")
        chat = self.path == "/api/chat"
        if request.get("stream", True):  # Ollama streams unless asked not to
            return self._stream(chat)
        answer: dict[str, Any] = {"model": request["model"], "created_at": "2026-01-01T00:00:00Z", "done": True}
        if chat:
            answer["message"] = {"role": "assistant", "content": behaviour.content}
        else:
            answer["response"] = behaviour.content
        if request.get("logprobs") and behaviour.mode != "no_logprobs":
            answer["logprobs"] = [{"token": behaviour.content, "logprob": -0.1, "top_logprobs": TOP}]
        return self._send(200, json.dumps(answer).encode())

    def _stream(self, chat: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()
        content = self.behaviour.content
        pieces = [content[i : i + 3] for i in range(0, len(content), 3)]
        for index, piece in enumerate(pieces):
            if self.behaviour.mode == "error_mid_stream" and index == 1:
                self.wfile.write(b'{"error": "out of memory while generating"}\n')
                return
            part: dict[str, Any] = {"model": MODEL, "done": False}
            part |= {"message": {"role": "assistant", "content": piece}} if chat else {"response": piece}
            self.wfile.write(json.dumps(part).encode() + b"\n")
            self.wfile.flush()
        last: dict[str, Any] = {"model": MODEL, "done": True, "done_reason": "stop"}
        last |= {"message": {"role": "assistant", "content": ""}} if chat else {"response": ""}
        self.wfile.write(json.dumps(last).encode() + b"\n")


@pytest.fixture
def ollama() -> Iterator[tuple[str, Behaviour]]:
    behaviour = Behaviour()
    handler = type("Handler", (FakeOllama,), {"behaviour": behaviour})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.block_on_close = False  # a handler still sleeping for the timeout test is not waited for
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", behaviour
    server.shutdown()
    server.server_close()


def softmax_share(logprob: float, others: list[float]) -> float:
    return math.exp(logprob) / sum(math.exp(x) for x in [logprob, *others])


def test_choose_reads_the_options_probabilities_from_the_first_tokens_logprobs(ollama: tuple[str, Behaviour]) -> None:
    host, behaviour = ollama
    choice = OllamaLLM(host, MODEL).choose([{"role": "user", "content": "Is it?"}], ["yes", "no"])
    assert choice.text == "yes"
    assert choice.probs["yes"] == pytest.approx(softmax_share(-0.1, [-2.4]))
    path, request = behaviour.requests[0]
    assert path == "/api/chat" and request["model"] == MODEL and request["stream"] is False
    assert request["logprobs"] is True and request["top_logprobs"] == 20
    assert request["options"] == {"temperature": 0, "num_predict": 1}


def test_choose_raw_continues_a_plain_prompt_through_generate(ollama: tuple[str, Behaviour]) -> None:
    host, behaviour = ollama
    choice = OllamaLLM(host, MODEL).choose_raw("Answer: ", ["yes", "no", "maybe"])
    assert choice.probs["maybe"] == pytest.approx(softmax_share(-3.0, [-0.1, -2.4]))
    path, request = behaviour.requests[0]
    assert path == "/api/generate" and request["raw"] is True and request["prompt"] == "Answer: "


def test_without_logprobs_the_answer_counts_alone(ollama: tuple[str, Behaviour]) -> None:
    host, behaviour = ollama
    behaviour.mode, behaviour.content = "no_logprobs", "no"
    assert OllamaLLM(host, MODEL).choose([{"role": "user", "content": "?"}], ["yes", "no"]).probs == {
        "yes": 0.0,
        "no": 1.0,
    }


def test_generate_json_streams_ndjson_with_the_schema_and_joins_the_pieces(ollama: tuple[str, Behaviour]) -> None:
    host, behaviour = ollama
    behaviour.content = json.dumps({"claims": ["Tea lowers blood pressure.", "Coffee does not."]})
    schema = {"type": "object", "properties": {"claims": {"type": "array", "items": {"type": "string"}}}}
    out = OllamaLLM(host, MODEL).generate_json([{"role": "user", "content": "Extract."}], schema, max_tokens=64)
    assert out == {"claims": ["Tea lowers blood pressure.", "Coffee does not."]}
    path, request = behaviour.requests[0]
    assert path == "/api/chat" and request["stream"] is True and request["format"] == schema
    assert request["options"]["num_predict"] == 64


def test_a_refused_connection_is_an_llm_error_saying_ollama_cannot_be_reached() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = OllamaLLM(f"http://127.0.0.1:{port}", MODEL)
    with pytest.raises(LLMError, match=rf"Ollama at http://127.0.0.1:{port} cannot be reached") as info:
        llm.choose([{"role": "user", "content": "?"}], ["yes", "no"])
    assert info.value.hint and "ollama serve" in info.value.hint
    with pytest.raises(LLMError, match="cannot be reached"):
        llm.generate_json([{"role": "user", "content": "?"}], {"type": "object"})


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("status_500", "answered a chat request with HTTP 500: llama runner process has terminated"),
        ("missing_model", "answered a chat request with HTTP 404: model 'qwen2.5:3b' not found"),
        ("malformed", "answered a chat request with something that is not Ollama's API"),
    ],
)
def test_an_http_error_or_a_malformed_answer_is_an_llm_error_with_the_cause(
    ollama: tuple[str, Behaviour], mode: str, message: str
) -> None:
    host, behaviour = ollama
    behaviour.mode = mode
    with pytest.raises(LLMError, match=re.escape(message)) as info:
        OllamaLLM(host, MODEL).choose([{"role": "user", "content": "?"}], ["yes", "no"])
    if mode == "missing_model":
        assert info.value.hint == f"ollama pull {MODEL}"


def test_an_error_in_the_middle_of_a_stream_is_an_llm_error(ollama: tuple[str, Behaviour]) -> None:
    host, behaviour = ollama
    behaviour.mode, behaviour.content = "error_mid_stream", '{"claims": []}'
    with pytest.raises(LLMError, match="out of memory while generating"):
        OllamaLLM(host, MODEL).generate_json([{"role": "user", "content": "?"}], {"type": "object"})


def test_an_answer_that_is_not_json_is_an_llm_error(ollama: tuple[str, Behaviour]) -> None:
    host, behaviour = ollama
    behaviour.content = "Sure! Here are the claims: tea"
    with pytest.raises(LLMError, match="not valid JSON"):
        OllamaLLM(host, MODEL).generate_json([{"role": "user", "content": "?"}], {"type": "object"})


def test_a_server_slower_than_the_timeout_is_an_llm_error_in_about_the_timeout(ollama: tuple[str, Behaviour]) -> None:
    host, behaviour = ollama
    behaviour.mode, behaviour.delay = "slow", 1.5
    start = time.monotonic()
    with pytest.raises(LLMError, match=r"did not answer a generate request within 0\.3 s"):
        OllamaLLM(host, MODEL, timeout=0.3).choose_raw("?", ["yes", "no"])
    assert time.monotonic() - start < 1.2


def test_the_ollama_provider_is_chosen_by_settings(ollama: tuple[str, Behaviour]) -> None:
    host, _ = ollama
    settings = load_settings(llm_provider="ollama", ollama_host=host)
    llm = Models(settings).llm
    assert isinstance(llm, OllamaLLM) and llm.model_id == f"ollama:{MODEL}"
    assert llm.choose([{"role": "user", "content": "?"}], ["yes", "no"]).text == "yes"
