# pykbroker as an image: `docker build -t pykbroker .` then `docker run -p 9092:9092 pykbroker`.
# Properties come from KAFKA_* variables as in the Confluent and Apache images (KAFKA_LOG_RETENTION_MS=...);
# under testcontainers use pykbroker.docker.PykbrokerContainer, which sets the advertised address.
FROM python:3.11-slim
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY pykbroker pykbroker
COPY wire wire
COPY storage storage
COPY replication replication
COPY coordinator coordinator
COPY chaos chaos
RUN pip install --no-cache-dir . && rm -rf /src
WORKDIR /
VOLUME /var/lib/pykbroker
EXPOSE 9092
ENTRYPOINT ["python", "-m", "pykbroker.container_entrypoint"]
