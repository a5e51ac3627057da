"""The produce-socket bench counts a Produce request's interpreter steps from socket to socket, every request
answered without error and appended."""

from bench import produce_socket_bench
from wire import CompressionType


def test_counts_the_steps_of_requests_read_from_a_socket_and_all_appended():
    # run() raises unless every answer has no error and the log holds every produced record
    figures = produce_socket_bench.run(-1, True, CompressionType.NONE, 8, 1024, blocks=1)
    assert figures["bytecodes"] > 1000 and figures["calls"] > 50
    assert figures["reads"] >= 1  # the connection's reads were counted: the socket path ran
    assert figures["per_function"] and figures["cpu_us"] > 0
