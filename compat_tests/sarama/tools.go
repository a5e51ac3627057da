//go:build tools

// Package sarama pins, through go.mod and go.sum, the two modules the sarama suite builds from the Go module proxy:
// IBM/sarama (its functional tests) and Shopify/toxiproxy (the proxy server those tests put in front of each broker).
package sarama

import (
	_ "github.com/IBM/sarama"
	_ "github.com/Shopify/toxiproxy/v2"
)
