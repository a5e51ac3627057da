module github.com/pykbroker/compat_tests/kafkago

go 1.26.0

require github.com/segmentio/kafka-go v0.4.51
