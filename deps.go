//go:build tools

// This file pins the chosen dependencies while the packages that use them
// are being written; it is removed once they are all imported.
package tools

import (
	_ "github.com/evanphx/json-patch/v5"
	_ "github.com/google/uuid"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/spf13/cobra"
	_ "go.etcd.io/etcd/client/v3/concurrency"
	_ "k8s.io/apimachinery/pkg/labels"
	_ "k8s.io/apimachinery/pkg/util/validation"
	_ "k8s.io/client-go/util/workqueue"
	_ "sigs.k8s.io/yaml"
)
