# Lyra for docker-compose.yml (Neo4j runs in its own container; NEO4J_URI points at it).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY lyra ./lyra
COPY cypher ./cypher
COPY config ./config
RUN pip install --no-cache-dir -e .
ENV PYTHONUNBUFFERED=1
ENTRYPOINT []
CMD ["lyra", "--help"]
