"""The produce-path bench counts a Produce request's interpreter steps and checks every request was appended."""

from bench import produce_path_bench


def test_counts_the_steps_of_requests_that_were_all_appended():
    # run() raises unless the log holds every produced record (the requests were answered as appends)
    figures = produce_path_bench.run(2 * produce_path_bench.TRACED + produce_path_bench.BLOCK, acks=1,
                                     idempotent=False)
    assert figures["bytecodes"] > 1000 and figures["calls"] > 50
    assert figures["cpu_us"] > 0
