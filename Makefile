# pykbroker — two commands matter: `make run` starts a broker, `make test` runs every test.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
ARGS ?=

.PHONY: run cluster test test-fast lint gen gen-check bench bench-tiered bench-scale chaos chaos-kill-loop clean deps fuzz fuzz-live log-dirs differential-cluster-ops differential-cluster test-share-slow test-cluster-slow test-tiered-slow test-iceberg-slow test-console-slow test-streams-slow test-slow test-telemetry-slow test-franz-slow test-cluster-bench-slow test-rdkafka-suite-slow test-franz-suite-slow test-connect-slow test-python-suites-slow test-spark-slow test-kafkago-suite-slow test-confluent-suites-slow test-kafkajs-slow test-sarama-suite-slow test-mirror-slow test-flink-slow test-spring-slow test-rdkafka-suite-full-slow test-confluent-js-suite-slow test-setup-slow test-chaos-slow

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

## run: start a single-node broker on localhost:9092 with data under ./data, the console at http://127.0.0.1:8080/
run: $(STAMP)
	$(VENV)/bin/pykbroker --override log.dirs=./data --override console.listener=127.0.0.1:8080 $(ARGS)

## cluster: ZooKeeper and three brokers on localhost:9092-9094 (data under ./data/cluster), their consoles on
##          http://127.0.0.1:8080-8082/; type `kill 2`, `start 2`, `status` to watch a failover; Ctrl-C stops them
cluster: $(STAMP)
	@command -v java >/dev/null || { echo "make cluster needs java (ZooKeeper runs on it)"; exit 1; }
	bash tools/zookeeper/fetch_jars.sh >/dev/null
	$(VENV)/bin/pykbroker local-cluster $(ARGS)

## deps: everything the tests need on a fresh machine (Python deps, kcat, the S3 server, Apache ZooKeeper's, Kafka's,
##       Spark's Kafka, Kafka Streams' and Flink's jars, the franz-go program of compat_tests/franz, KafkaJS's npm packages)
deps: $(STAMP)
	bash tools/install_system_deps.sh
	bash tools/s3/install.sh
	@if command -v java >/dev/null; then \
		echo "fetching Apache ZooKeeper, Kafka, Spark-Kafka and Spark-Iceberg jars and Nessie from Maven Central (once; cached in .cache folders)"; \
		bash tools/zookeeper/fetch_jars.sh >/dev/null; \
		bash compat_tests/jvm/fetch_jars.sh >/dev/null; \
		bash compat_tests/jvm/fetch_jars.sh 4.2.0 >/dev/null; \
		PY=$(PY) bash compat_tests/jvm/spark/fetch_jars.sh >/dev/null; \
		bash compat_tests/jvm/tiered/fetch_jars.sh >/dev/null; \
		bash tools/nessie/fetch_jar.sh >/dev/null; \
		bash compat_tests/jvm/streams/fetch_jars.sh >/dev/null; \
		bash compat_tests/jvm/connect/fetch_jars.sh >/dev/null; \
		bash compat_tests/jvm/mirror/fetch_jars.sh >/dev/null; \
		bash compat_tests/jvm/flink/fetch_jars.sh >/dev/null; \
		bash compat_tests/jvm/spring/fetch_jars.sh >/dev/null; \
	else echo "java not found: the JVM tests will be skipped"; fi
	bash compat_tests/franz/build.sh >/dev/null
	bash compat_tests/kafkajs/install.sh >/dev/null

## test: install what is missing, lint and type-check (ruff, mypy), run all tests
test: deps
	$(VENV)/bin/ruff check .
	$(PY) -m mypy
	$(PY) -m pytest $(ARGS)

## test-fast: unit tests only (no stock clients)
test-fast: $(STAMP)
	$(PY) -m pytest tests $(ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m mypy

## gen: regenerate wire/messages from the JSON message definitions
gen: $(STAMP)
	$(PY) -m tools.generate_messages

## fuzz: coverage-guided fuzzing of the codecs (atheris), FUZZ_SECONDS per target (FUZZ_TARGET=all or one)
FUZZ_SECONDS ?= 300
FUZZ_TARGET ?= all
fuzz: $(STAMP)
	$(PY) -m fuzz $(FUZZ_TARGET) --seconds $(FUZZ_SECONDS)

## fuzz-live: mutated real client sessions against a running broker beside a normal producer and consumer
fuzz-live: $(STAMP)
	$(PY) -m fuzz.live --seconds $(FUZZ_SECONDS)

## bench: benchmarks (never part of `make test`)
bench: deps
	$(PY) -m bench $(ARGS)

## bench-tiered: tiered storage's measurement (TIERED_BENCH_MB, default 256; TIERED_BENCH_LOCAL_MB, default 1/16) on pykbroker and Kafka 4.4
bench-tiered: deps
	$(PY) -m bench tiered $(ARGS)

## bench-scale: the scale section alone (partitions, connections, groups, cores; SCALE_PARTITIONS=10000 etc.,
##              see bench/scale_bench.py)
bench-scale: deps
	$(PY) -m bench scale

## chaos: the fault campaign on a 3-broker cluster (not part of `make test`); ARGS: --duration S (600)
##        --seed N (repeatable) --faults kill-leader,... --rate R; writes chaos-runs/seed-N-*/{history.json,timeline.html}
chaos: $(STAMP)
	@command -v java >/dev/null || { echo "make chaos needs java (ZooKeeper runs on it)"; exit 1; }
	bash tools/zookeeper/fetch_jars.sh >/dev/null
	bash compat_tests/jvm/fetch_jars.sh >/dev/null
	$(PY) -m chaos $(ARGS)

## chaos-kill-loop: single node, kill -9 cycles under acks=all load, then every acknowledged record checked;
##        ARGS: --cycles N (1000) --seed N --rate R
chaos-kill-loop: $(STAMP)
	$(PY) -m chaos.kill_loop $(ARGS)

## differential-cluster-ops: reassignment, preferred elections and controlled shutdown judged by three Kafka 3.9.1
##        brokers in ZooKeeper mode (several minutes: not part of `make test`)
differential-cluster-ops: deps
	PYKBROKER_SLOW_DIFFERENTIAL=1 $(PY) -m pytest compat_tests/test_differential_cluster_ops.py $(ARGS)

## differential-cluster: the differential scenarios' cluster mode (not part of `make test`, a few minutes):
##        3 pykbroker brokers against a 3-node Kafka 4.4 KRaft cluster, the same scenarios as one node
##        (test_differential, test_differential_kafka44, test_differential_cluster, test_differential_tuned),
##        and the share-group scenarios against a 3-node Kafka 4.2 cluster (test_share_groups, ~4 min); the
##        scenario client's split of partition requests by leader (test_leader_split); Kafka 4.4's tools swept
##        over both clusters (test_cluster_kafka_tools: quorum, features, configs, log dirs, offsets, ~4 min);
##        share groups at share.version 2 (test_differential_kafka44's share_groups_v2, 30 s) and share-partition
##        initialization (share_initialization, 25 s) on one Kafka 4.4 node and on the 3-node clusters, and the
##        share scenarios of refused acknowledgements, lag over transactions, compacted gaps (a minute: the log
##        cleaner), the group's delivery count limit and renew switch (about 2 min together)
##        and the single-node scenarios of half a minute each: the stalled share consumer, a share consumer's topic
##        deleted and recreated, kafka-share-groups and the tuned retention scenario
##        and the Streams-group scenarios (test_differential_streams_groups) on the 3-node clusters
##        and a single node's restarts, clean and kill -9, each leading its partitions two epochs on
##        (test_differential_restart, a minute)
##        and the client telemetry scenarios (test_differential_telemetry, ~2 min) on 3 pykbroker brokers receiving
##        client metrics against a 3-node Kafka 4.4 with a telemetry plugin on every node, ApiVersions v0-v5 with
##        that receiver byte for byte among them
##        and the authorization and SASL scenarios (test_differential_authorization, test_differential_security) on
##        3 pykbroker brokers and a 3-node Kafka 4.4 cluster with SASL, TLS and ACLs on every node (~2.5 min)
##        and every broker's metrics against every Kafka node's MBeans (test_differential_metrics, ~2 min)
##        and two log dirs per node, moves and an offline dir on broker 1 (test_differential_log_dirs, ~3 min)
##        and tiered storage shared by each cluster's brokers, its leader stopped (test_differential_tiered_storage, ~2 min)
##        and a full log dir on broker 1, its partition's leadership moved away (test_differential_disk_faults, ~1 min)
##        and broker 1's only log dir turned read-only: it halts, the others lead on (test_differential_read_only_dir)
##        and a topic deleted while every node is asked about it, then deleted and created again at once, one node and
##        three, with the other lifecycle windows (test_cluster_topic_deletion, the Kafka 4.4 side, ~2 min)
differential-cluster: deps
	PYKBROKER_SLOW_DIFFERENTIAL=1 $(PY) -m pytest compat_tests/test_differential.py compat_tests/test_differential_kafka44.py compat_tests/test_differential_cluster.py compat_tests/test_differential_tuned.py compat_tests/test_share_groups.py compat_tests/test_cluster_kafka_tools.py -k "cluster- or classic_first_generation or share_groups_v2 or share_initialization or share_state_epochs or share_acknowledge_unknown_partitions or share_offsets_lag or share_renew_and_request_errors or share_acknowledge_refusals or share_compacted_gaps or share_delivery_count_limit or share_renew_disabled or stalled or recreated or (share_scenario and (three or reject)) or (share_groups and tool) or (tuned and retention)" $(ARGS)
	PYKBROKER_SLOW_DIFFERENTIAL=1 $(PY) -m pytest compat_tests/test_leader_split.py $(ARGS)
	PYKBROKER_SLOW_DIFFERENTIAL=1 PYKBROKER_STREAMS_SLOW=1 $(PY) -m pytest compat_tests/test_differential_streams_groups.py -k cluster- $(ARGS)
	PYKBROKER_SLOW_DIFFERENTIAL=1 $(PY) -m pytest compat_tests/test_differential_restart.py $(ARGS)
	PYKBROKER_SLOW_DIFFERENTIAL=1 $(PY) -m pytest compat_tests/test_differential_telemetry.py -k cluster- $(ARGS)
	PYKBROKER_SLOW_DIFFERENTIAL=1 $(PY) -m pytest compat_tests/test_differential_authorization.py compat_tests/test_differential_security.py -k cluster- $(ARGS)
	PYKBROKER_SLOW_DIFFERENTIAL=1 $(PY) -m pytest compat_tests/test_differential_metrics.py -k cluster $(ARGS)
	PYKBROKER_SLOW_DIFFERENTIAL=1 PYKBROKER_LOG_DIRS_TESTS=1 $(PY) -m pytest compat_tests/test_differential_log_dirs.py -k cluster $(ARGS)
	PYKBROKER_SLOW_DIFFERENTIAL=1 PYKBROKER_TIERED_SLOW=1 $(PY) -m pytest compat_tests/test_differential_tiered_storage.py -k cluster $(ARGS)
	PYKBROKER_SLOW_DIFFERENTIAL=1 $(PY) -m pytest compat_tests/test_differential_disk_faults.py -k cluster $(ARGS)
	PYKBROKER_SLOW_DIFFERENTIAL=1 $(PY) -m pytest compat_tests/test_differential_read_only_dir.py -k cluster $(ARGS)
	PYKBROKER_SLOW_DIFFERENTIAL=1 $(PY) -m pytest compat_tests/test_cluster_topic_deletion.py -k kafka_4_4 -s $(ARGS)

## test-cluster-slow: cluster tests of a minute or more each (not part of `make test`): a reassignment
##        throttled to 1 MB/s copies 75 MB within 20 % of the throttle; Kafka 4.4's kafka-features and
##        kafka-configs (features, GROUP and broker configs) on 3 brokers, through every broker and restarts;
##        a Spark streaming query through a killed leader; transaction markers between two brokers (WriteTxnMarkers v2);
##        an unclean election, a transactional copier through broker kills, a cancelled move and a controller kill;
##        a commit through kill -9 of its coordinator between PrepareCommit and CompleteCommit; a KIP-848 group
##        consuming everything on 3 brokers; leaders killed with -9 under acks=all load, no acknowledged record lost
##        (make test's chaos campaign kills leaders too); a topic deleted and created again around kill -9s of its leader, and inside its
##        log-work window (stray by topic id: never the old topic's records);
##        the first transactional producer after a broker's kill -9 (__transaction_state placed on the dead broker too);
##        a topic deleted while every broker is asked about it (never leader-less, Kafka 4.4's deleted-topic codes), then
##        deleted and created again at once on one broker and three (starts empty, new id), ten topics created and deleted
##        in one request (listed all or none);
##        pipelined offset commits of 8 groups of one partition through kill -9 of their coordinator (no acknowledged
##        commit lost, on Kafka 4.4 too)
test-cluster-slow: deps
	PYKBROKER_SLOW_CLUSTER=1 $(PY) -m pytest compat_tests/test_cluster_throttle.py compat_tests/test_cluster_surface.py \
		compat_tests/test_cluster_spark.py tests/pykbroker/test_coordinators.py tests/pykbroker/test_internal_topics.py \
		compat_tests/test_cluster_transaction_markers.py tests/replication/controller/test_hand_over_cluster.py \
		compat_tests/test_cluster_coordinator_pipeline.py -s $(ARGS)
	PYKBROKER_SLOW_CLUSTER=1 $(PY) -m pytest compat_tests/test_cluster_faults.py compat_tests/test_cluster_reassignment.py \
		-k "unclean or transactional_copier or cancelled_move or killed_leaders or created_again" $(ARGS)
	PYKBROKER_SLOW_CLUSTER=1 $(PY) -m pytest compat_tests/test_cluster_topic_deletion.py -s $(ARGS)

## log-dirs: several log dirs per broker (not part of `make test`, minutes): Kafka 4.4's kafka-log-dirs and
##        kafka-reassign-partitions with log_dirs on a cluster under load, a failed dir, and the differential
##        against Kafka 4.4 with two log dirs
log-dirs: deps
	PYKBROKER_LOG_DIRS_TESTS=1 $(PY) -m pytest compat_tests/test_cluster_log_dirs.py compat_tests/test_differential_log_dirs.py $(ARGS)

## test-share-slow: share groups judged by Kafka 4.2 beyond `make test` (~5 min): membership in __consumer_offsets
##                  (Kafka's dump-log decodes our records; kill -9 of the coordinator, single node and a 3-broker
##                  cluster), offsets reset / lag / topic deletion across the brokers of a cluster; on one node
##                  the release and delivery-limit scenarios, Kafka 4.2's Java share consumers and a kill -9 under
##                  the Java share consumer (~75 s)
test-share-slow: deps
	PYKBROKER_SHARE_SLOW=1 $(PY) -m pytest compat_tests/test_share_group_membership.py compat_tests/test_share_groups_cluster_admin.py $(ARGS)
	PYKBROKER_SHARE_SLOW=1 $(PY) -m pytest compat_tests/test_share_groups.py compat_tests/test_share_groups_cluster.py \
		-k "not cluster- and ((share_scenario and (release or delivery)) or java_share_consumer_as or single_node_during_java)" $(ARGS)

## test-tiered-slow: tiered storage beyond `make test` (~3 min) on a 3-broker cluster: the leader killed while
##                   copying (its successor goes on, it rejoins: the aux-state meters), a tiered partition reassigned,
##                   an unclean election (the old leader's diverged copies neither read nor counted, then deleted),
##                   a replica added with follower.fetch.last.tiered.offset.enable (KIP-1023), ListOffsets -4/-5/-6
##                   after a restart judged by Kafka 4.4 (its restart starts a new leader epoch), a log whose epochs
##                   below its local segments were lost (written before they were kept) gets them back
test-tiered-slow: deps
	PYKBROKER_TIERED_SLOW=1 $(PY) -m pytest tests/replication/test_tiered_storage.py \
		compat_tests/test_differential_tiered_storage.py -k slow_ $(ARGS)

## test-streams-slow: Kafka Streams 4.4 applications beyond `make test` (JVM processes, one at a time): the same
##                    exactly_once_v2 counting application judged on Kafka 4.4, and on 3 brokers (RF=3,
##                    min.insync.replicas=2) with one killed mid-run, pykbroker's and Kafka 4.4's, and with
##                    group.protocol=streams on one node of each, the Streams-group differential scenarios, and
##                    two static instances with standbys restarted without a rebalance, a streams group through
##                    its coordinator's death on 3 brokers, kafka-streams-groups.sh on both brokers, and issue 33's failover
##                    measured: the transaction coordinator or the busiest leader killed, on both; at_least_once
##                    through the group coordinator's kill -9 on 3 brokers (classic and streams protocols, the output
##                    stall printed for both brokers), interactive-query metadata across two instances and a
##                    topology change across a restart judged by Kafka 4.4, a smoke run of
##                    `python -m bench streams-assignment`, Kafka's own StickyTaskAssignor against ours, and
##                    kafka-streams-groups.sh --describe/--reset-offsets/--delete under ACLs, denied then allowed, and topology
##                    descriptions (KIP-1331): pushed by the application to Kafka 4.4's in-memory plugin and to
##                    pykbroker's built-in store, kept through a restart (~50 min)
test-streams-slow: deps
	PYKBROKER_STREAMS_SLOW=1 $(PY) -m pytest compat_tests/test_kafka_streams.py compat_tests/test_differential_streams_groups.py compat_tests/test_kafka_streams_groups.py compat_tests/test_streams_groups_cluster.py compat_tests/test_kafka_streams_groups_tool.py compat_tests/test_streams_failover.py compat_tests/test_streams_assignor_placement.py tests/bench/test_streams_assignment_bench.py -s $(ARGS)
	PYKBROKER_STREAMS_SLOW=1 $(PY) -m pytest compat_tests/test_differential_authorization.py -k streams_groups_tool $(ARGS)
	PYKBROKER_STREAMS_SLOW=1 $(PY) -m pytest compat_tests/test_kafka_streams_topology_description.py tests/pykbroker/handlers/test_streams_topology_description.py -s $(ARGS)

## test-iceberg-slow: Iceberg tables beyond `make test` (~6 min): read by Spark with value_schema, dead letters and
##                    schema evolution, four kill -9s of the broker in a produce run; a kill -9 and a restart read
##                    back by pyiceberg; a 3-broker cluster sharing one catalog through a killed leader and a
##                    killed committer (one per topic, through the coordinator runtime); the
##                    warehouse on an S3 server (versitygw) read by pyiceberg and Spark; Nessie's REST catalog
##                    (Java 21+) over that S3 warehouse with aborted transactions, read by pyiceberg and Spark; the
##                    schema registry on a 3-broker cluster through a killed _schemas leader, and across a restart;
##                    Spark reading value_schema_latest tables of unprefixed Avro and JSON values
test-iceberg-slow: deps
	PYKBROKER_ICEBERG_SLOW=1 $(PY) -m pytest tests/pykbroker/iceberg/test_writer.py compat_tests/test_iceberg_spark.py \
		compat_tests/test_iceberg_cluster.py compat_tests/test_iceberg_s3.py compat_tests/test_iceberg_rest.py \
		tests/pykbroker/schema_registry $(ARGS)

## test-console-slow: the console beyond `make test` (~2 min): one broker's console reads and writes partitions
##                    and groups the other broker of a ZooKeeper cluster leads and coordinates; SCRAM users set
##                    through the console log in to it; a real Kafka Streams group's processes, tasks and topology;
##                    values decoded through console.schema.registry.url; share and streams groups' lag history
test-console-slow: deps
	PYKBROKER_CONSOLE_SLOW=1 $(PY) -m pytest tests/pykbroker/console/test_cluster_console.py \
		tests/pykbroker/console/test_streams_console.py tests/pykbroker/console/test_schemas_console.py \
		"tests/pykbroker/console/test_api.py::test_scram_users_set_through_the_console_log_in_to_it" \
		tests/pykbroker/console/test_lag_history.py $(ARGS)

## test-slow: every suite too slow for `make test`, one after another (log dirs, cluster operations judged by
##            Kafka 3.9.1, the differential scenarios on a cluster judged by Kafka 4.4, share groups judged by
##            Kafka 4.2, throttle precision, tiered storage, Iceberg tables, the console on a cluster, Kafka Streams
##            applications; about 40 minutes)
test-slow: log-dirs differential-cluster-ops differential-cluster test-share-slow test-cluster-slow test-tiered-slow test-iceberg-slow test-console-slow test-streams-slow test-telemetry-slow test-franz-slow test-cluster-bench-slow test-rdkafka-suite-slow test-franz-suite-slow test-connect-slow test-python-suites-slow test-spark-slow test-kafkago-suite-slow test-confluent-suites-slow test-kafkajs-slow test-sarama-suite-slow test-mirror-slow test-flink-slow test-spring-slow test-rdkafka-suite-full-slow test-confluent-js-suite-slow test-setup-slow test-chaos-slow

clean:
	rm -rf data build *.egg-info .pytest_cache

## test-telemetry-slow: client telemetry (KIP-714) beyond `make test` (~1 min): kafka-client-metrics.sh makes a
##                      subscription, a Java 4.4 producer and consumer push, the Prometheus scrape shows their metrics;
##                      ApiVersions with a receiver judged by a Kafka 4.4 with a telemetry plugin
test-telemetry-slow: deps
	PYKBROKER_TELEMETRY_SLOW=1 $(PY) -m pytest compat_tests/test_client_telemetry.py \
		compat_tests/test_differential_telemetry.py $(ARGS)

## test-franz-slow: franz-go on a 3-broker cluster with the classic protocol too (~20 s; KIP-848's is in make test)
test-franz-slow: deps
	PYKBROKER_SLOW_CLUSTER=1 $(PY) -m pytest compat_tests/test_cluster.py -k franz $(ARGS)

## test-cluster-bench-slow: a tiny run of bench/cluster_bench.py on a 3-broker pykbroker cluster (~2 min): KIP-848
##                          group join, kill -9 stalls, rolling restart under a KIP-848 group
test-cluster-bench-slow: deps
	PYKBROKER_CLUSTER_BENCH_SLOW=1 $(PY) -m pytest tests/bench/test_cluster_bench.py $(ARGS)

## test-rdkafka-suite-slow: librdkafka's own integration tests (the sets of compat_tests/rdkafka_suite that pass on
##                          Kafka 4.4) in the runner's quick mode on one pykbroker node, on 3 brokers, its consumer
##                          group tests with KIP-848's protocol, the noautocreate scenario's and the ACL tests on brokers
##                          of their own, Kafka's scripts from a KAFKA_PATH of Kafka 4.4's jars (about 45 minutes);
##                          builds the test runner once (minutes, cached); skipped without a C compiler. A run against
##                          Kafka 4.4 itself: `python -m compat_tests.rdkafka_suite --target kafka` (or kafka-cluster;
##                          --scenario noautocreate|acl, --full)
test-rdkafka-suite-slow: deps
	PYKBROKER_RDKAFKA_SUITE_SLOW=1 $(PY) -m pytest compat_tests/test_rdkafka_suite.py $(ARGS)

## test-franz-suite-slow: franz-go's own kgo integration tests (the pinned franz-go's pkg/kgo, built once into
##                        compat_tests/franz/.cache) against pykbroker on one node and on 3 brokers with RF 3 and SCRAM
##                        (~15 min; skipped without Go). Kafka 4.4 as the judge: python -m compat_tests.franz.kgo_suite
test-franz-suite-slow: deps
	PYKBROKER_FRANZ_SUITE_SLOW=1 $(PY) -m pytest compat_tests/test_franz_kgo_suite.py $(ARGS)

## test-connect-slow: Kafka Connect 4.4 in distributed mode (two workers, a kill -9, a rebalance; at_least_once and
##                    exactly-once source support) on pykbroker judged by Kafka 4.4, one node and 3 brokers (~10 min)
test-connect-slow: deps
	PYKBROKER_CONNECT_SLOW=1 $(PY) -m pytest compat_tests/test_kafka_connect.py $(ARGS)

## test-python-suites-slow: kafka-python's own integration suite (its sdist's test/integration, pinned, cached in
##                          compat_tests/python_suites/.cache) on one pykbroker node and on 3 brokers (minutes);
##                          skipped offline without the cached sdist. Against Kafka 4.4 itself:
##                          `python -m compat_tests.python_suites --target kafka` (or kafka-cluster)
test-python-suites-slow: deps
	PYKBROKER_PYTHON_SUITES_SLOW=1 $(PY) -m pytest compat_tests/test_python_suites.py $(ARGS)

## test-spark-slow: Spark's kafka sink loading through kill -9s of the broker mid-batch, neither duplicating nor
##                  dropping a record (~40 s; the rest of compat_tests/test_spark.py is in make test)
test-spark-slow: deps
	PYKBROKER_SPARK_SLOW=1 $(PY) -m pytest compat_tests/test_spark.py -k killed_mid_batch $(ARGS)

## test-kafkago-suite-slow: segmentio/kafka-go's own tests (the pinned kafka-go's kafka, compress, sasl and topics
##                          packages, built once into compat_tests/kafkago/.cache) on one pykbroker node and on 3
##                          brokers, each run in a network namespace of its own (its tests want localhost:9092);
##                          the tests failing on Kafka 4.4 too are skipped (minutes; skipped without Go). Against
##                          Kafka 4.4 itself: `python -m compat_tests.kafkago --target kafka` (or kafka-cluster)
test-kafkago-suite-slow: deps
	PYKBROKER_KAFKAGO_SUITE_SLOW=1 $(PY) -m pytest compat_tests/test_kafkago_suite.py $(ARGS)

## test-confluent-suites-slow: confluent-kafka-go's own integration tests (its kafka package, pinned, built once into
##                             compat_tests/confluent_suites/.cache) on one pykbroker node and on 3 brokers, with the
##                             classic and the consumer (KIP-848) group protocol (~15 min; skipped without Go).
##                             Kafka 4.4 as the judge: python -m compat_tests.confluent_suites.go_suite single --kafka
test-confluent-suites-slow: deps
	PYKBROKER_CONFLUENT_SUITES_SLOW=1 $(PY) -m pytest compat_tests/test_confluent_suites.py $(ARGS)

## test-kafkajs-slow: KafkaJS 2.2.4 (compat_tests/kafkajs/scenario.js: producer with every codec, consumer groups of
##                    1-3 members, transactions, admin calls and their errors) on one pykbroker node judged by Kafka 4.4,
##                    and on 3 brokers judged by a 3-node Kafka 4.4 cluster and ACLs on brokers with an authorizer (~10 min; the quick round is in make test)
test-kafkajs-slow: deps
	PYKBROKER_KAFKAJS_SLOW=1 $(PY) -m pytest compat_tests/test_kafkajs.py $(ARGS)

## test-sarama-suite-slow: IBM/sarama's own functional tests (the pinned sarama's functional_*_test.go, built once into
##                         compat_tests/sarama/.cache with the toxiproxy server they use) against 5 pykbroker brokers
##                         behind toxiproxy on 127.0.0.1:29091-29095, as sarama's docker-compose.yml sets up Kafka
##                         (~6 min; skipped without Go). Kafka 4.4 as the judge: python -m compat_tests.sarama --kafka
test-sarama-suite-slow: deps
	PYKBROKER_SARAMA_SUITE_SLOW=1 $(PY) -m pytest compat_tests/test_sarama_suite.py $(ARGS)

## test-mirror-slow: MirrorMaker 2 (4.3.1) from one pykbroker to another, one node and two 3-broker clusters, judged by
##                   Kafka 4.4 -> Kafka 4.4 one side at a time: records, added partitions, synced configs, checkpoints
##                   and translated group offsets, a fail-over, heartbeats, the ACL sync with and without an
##                   authorizer (~8 min)
test-mirror-slow: deps
	PYKBROKER_MIRROR_SLOW=1 $(PY) -m pytest compat_tests/test_mirror_maker.py $(ARGS)

## test-flink-slow: Apache Flink 2.2's Kafka connector (5.0.0-2.2) as a real job on one node and on 3 brokers, judged by
##                  Kafka 4.4 running the same job: KafkaSource with partition discovery, KafkaSink EXACTLY_ONCE (default
##                  and POOLING transaction naming) and AT_LEAST_ONCE through a kill -9 of the job and a restart from its
##                  checkpoint, each through a broker's kill -9 on 3 brokers too, and a bounded KafkaSource read past an
##                  open transaction (~15 min)
test-flink-slow: deps
	PYKBROKER_FLINK_SLOW=1 $(PY) -m pytest compat_tests/test_flink.py $(ARGS)

## test-spring-slow: a Spring for Apache Kafka 4.1 application (plain Spring, Java clients 4.4: KafkaAdmin, KafkaTemplate,
##                   transactions, @KafkaListener containers, error handlers and DLTs, @RetryableTopic, request/reply)
##                   on one node and on 3 brokers through a kill -9, classic and KIP-848 groups, judged by Kafka 4.4
##                   running the same application (~15 min)
test-spring-slow: deps
	PYKBROKER_SPRING_SLOW=1 $(PY) -m pytest compat_tests/test_spring_kafka.py $(ARGS)

## test-rdkafka-suite-full-slow: test-rdkafka-suite-slow in the runner's full mode (more messages, the sub-tests and
##                               tests quick mode skips, e.g. 0082), PYKBROKER_RDKAFKA_SUITE_FULL=1 (two hours or more:
##                               one node's default set alone took 30 min up to 0170, and 0170 took 5 min of it)
test-rdkafka-suite-full-slow: deps
	PYKBROKER_RDKAFKA_SUITE_SLOW=1 PYKBROKER_RDKAFKA_SUITE_FULL=1 $(PY) -m pytest compat_tests/test_rdkafka_suite.py $(ARGS)

## test-confluent-js-suite-slow: @confluentinc/kafka-javascript's own broker tests (its KafkaJS-style API's
##                               test/promisified under jest, its e2e under mocha; librdkafka 2.15 underneath) on one
##                               pykbroker node and on 3 brokers, judged by Kafka 4.4 (~25 min). Builds the suite once
##                               (compat_tests/confluent_js/install.sh: its tests from a checkout, CKJS_SOURCE=<dir>, or
##                               GitHub; librdkafka from npm); skipped when it cannot. Against Kafka 4.4 itself:
##                               python -m compat_tests.confluent_js --target kafka (or kafka-cluster)
test-confluent-js-suite-slow: deps
	PYKBROKER_CONFLUENT_JS_SLOW=1 $(PY) -m pytest compat_tests/test_confluent_js_suite.py $(ARGS)

## test-setup-slow: the wheel installed by pip in a fresh venv with its dependencies from the package index, a broker
##                  run from it (~40 s; make test installs it over the runtime dependencies of the test venv)
test-setup-slow: deps
	PYKBROKER_SETUP_SLOW=1 $(PY) -m pytest tests/test_setup.py -k fresh_venv $(ARGS)

## test-chaos-slow: the fixed-seed fault campaign of tests/chaos/test_campaign.py with a minute of faults (~1.5 min;
##                  make test runs 20 s of them)
test-chaos-slow: deps
	PYKBROKER_CHAOS_SLOW=1 $(PY) -m pytest tests/chaos/test_campaign.py -k 60s $(ARGS)
