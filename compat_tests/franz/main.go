// Command franz-compat drives franz-go (github.com/twmb/franz-go) against a broker as an application would:
// it produces -records records to -topic, consumes them in the group -group with the classic protocol or,
// with -protocol consumer, KIP-848's (kgo.ServerSideBalancer: franz-go offers ConsumerGroupHeartbeat only to a
// broker that advertises its v1), commits, and prints one JSON report line on stdout.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type report struct {
	Produced  int             `json:"produced"`
	Consumed  int             `json:"consumed"`
	Distinct  int             `json:"distinct"`
	Committed map[int32]int64 `json:"committed"`
	Error     string          `json:"error,omitempty"`
}

func main() {
	brokers := flag.String("brokers", "localhost:9092", "bootstrap servers, comma separated")
	topic := flag.String("topic", "franz", "topic to produce to and consume from (must exist)")
	group := flag.String("group", "franz-group", "consumer group")
	protocol := flag.String("protocol", "classic", "group protocol: classic or consumer (KIP-848)")
	records := flag.Int("records", 1000, "records to produce and consume")
	timeout := flag.Duration("timeout", 60*time.Second, "give up after this long")
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rep, err := run(ctx, strings.Split(*brokers, ","), *topic, *group, *protocol, *records)
	if err != nil {
		rep.Error = err.Error()
	}
	out, _ := json.Marshal(rep)
	fmt.Println(string(out))
	if err != nil {
		os.Exit(1)
	}
}

func run(ctx context.Context, brokers []string, topic, group, protocol string, records int) (report, error) {
	rep := report{Committed: map[int32]int64{}}
	producer, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID("franz-producer"))
	if err != nil {
		return rep, err
	}
	defer producer.Close()
	batch := make([]*kgo.Record, 0, records)
	for i := 0; i < records; i++ {
		batch = append(batch, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	if err := producer.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		return rep, fmt.Errorf("produce: %w", err)
	}
	rep.Produced = records

	opts := []kgo.Opt{
		kgo.SeedBrokers(brokers...), kgo.ClientID("franz-consumer"), kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
	}
	switch protocol {
	case "classic":
	case "consumer":
		opts = append(opts, kgo.ServerSideBalancer())
	default:
		return rep, fmt.Errorf("unknown -protocol %q", protocol)
	}
	consumer, err := kgo.NewClient(opts...)
	if err != nil {
		return rep, err
	}
	defer consumer.Close()
	seen := map[string]bool{}
	for rep.Consumed < records {
		fetches := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("consumed %d of %d: %w", rep.Consumed, records, err)
		}
		var fetchErr error
		fetches.EachError(func(t string, p int32, err error) { fetchErr = fmt.Errorf("fetch %s-%d: %w", t, p, err) })
		if fetchErr != nil {
			return rep, fetchErr
		}
		fetches.EachRecord(func(r *kgo.Record) {
			rep.Consumed++
			seen[string(r.Key)] = true
		})
	}
	rep.Distinct = len(seen)
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		return rep, fmt.Errorf("commit: %w", err)
	}
	for t, partitions := range consumer.CommittedOffsets() {
		if t != topic {
			continue
		}
		for p, o := range partitions {
			rep.Committed[p] = o.Offset
		}
	}
	return rep, nil
}
