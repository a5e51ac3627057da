"""pykbroker's image under testcontainers, where Docker runs: ``PykbrokerContainer`` has the API of
testcontainers' ``KafkaContainer`` (``start``, ``stop``, the context manager, ``get_bootstrap_server``,
``with_env``) and runs the image the repository's Dockerfile builds (``docker build -t pykbroker .``).

Clients outside the container must be told the address Docker maps, so the host port is chosen before
the start and the broker advertises it. Without Docker, ``pykbroker.testcontainers.KafkaContainer`` gives
the same API over a local process.
"""

from __future__ import annotations

from typing import Self

from testcontainers.core.container import DockerContainer
from testcontainers.core.waiting_utils import wait_for_logs

from pykbroker.testing import free_port

__all__ = ["PykbrokerContainer"]

READY_LOG = "pykbroker started"


class PykbrokerContainer(DockerContainer):
    """The pykbroker image with its listener mapped to a free host port and advertised there."""

    def __init__(self, image: str = "pykbroker:latest", port: int = 9093, **kwargs) -> None:
        super().__init__(image, **kwargs)
        self.port = port
        self.host_port = free_port()
        self.with_bind_ports(port, self.host_port)

    def start(self, timeout: float = 60) -> Self:
        self.with_env("KAFKA_LISTENERS", f"PLAINTEXT://0.0.0.0:{self.port}")
        self.with_env("KAFKA_ADVERTISED_LISTENERS", f"PLAINTEXT://{self.get_container_host_ip()}:{self.host_port}")
        super().start()
        wait_for_logs(self, READY_LOG, timeout=timeout)
        return self

    def get_bootstrap_server(self) -> str:
        return f"{self.get_container_host_ip()}:{self.host_port}"
