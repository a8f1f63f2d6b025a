// Package target is the target controller: for every Target of type
// kubernetes-cluster it reads the kubeconfig from the Secret the Target
// names, connects to the cluster, reads its version and records in the
// Target's status whether it is Reachable. It keeps one client per Target
// (Clients), which deployers that deploy to the cluster take.
//
// The decisions are plain functions (this file); the Reconciler reads the
// shared informers, calls them, probes the cluster and writes the status.
// A kubeconfig's contents never reach a status, a log, an error or a
// trace: messages name the Secret and its key, never what it holds.
package target

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/controller"
)

// Reasons of the Reachable condition.
const (
	// ReasonConnected: the cluster answered with its version.
	ReasonConnected = "Connected"
	// ReasonInvalidConfig: the Target's spec.config does not decode.
	ReasonInvalidConfig = "InvalidConfig"
	// ReasonSecretNotFound: the Secret the Target names does not exist.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonKeyNotFound: the Secret lacks the key the Target names.
	ReasonKeyNotFound = "KeyNotFound"
	// ReasonInvalidKubeconfig: the value is not a usable kubeconfig.
	ReasonInvalidKubeconfig = "InvalidKubeconfig"
	// ReasonKubeconfigRefused: the kubeconfig would run a command or read
	// a file on cairn's host (exec, auth-provider, file paths).
	ReasonKubeconfigRefused = "KubeconfigRefused"
	// ReasonForbidden: the Target's creator may not read the Secret.
	ReasonForbidden = "Forbidden"
	// ReasonUnauthorized: the cluster refused the kubeconfig's
	// credentials.
	ReasonUnauthorized = "Unauthorized"
	// ReasonUnreachable: the cluster did not answer.
	ReasonUnreachable = "Unreachable"
)

// Secret is what the decisions need of the kubeconfig Secret.
type Secret struct {
	// Found is false when the Secret does not exist.
	Found bool
	// UID and ResourceVersion identify the Secret's version: a client is
	// reused while they stay the same.
	UID, ResourceVersion string
	// Data are the Secret's values by key.
	Data map[string][]byte
}

// Probe is the outcome of a check of a Target: reachable with a version,
// or not with a reason.
type Probe struct {
	Reachable bool
	// Version is the cluster's version when Reachable.
	Version string
	// Reason is one of the Reason* constants; Message says it to people
	// (names only, never secret values).
	Reason, Message string
}

// Step is what a reconcile does for a kubernetes-cluster Target once its
// config and Secret are read: connect with the kubeconfig (Connect true)
// or record Fail.
type Step struct {
	Connect bool
	// Source is what to connect with, when Connect.
	Source Source
	// Fail is the Reachable False outcome, when not Connect.
	Fail Probe
}

// SecretRef decodes a kubernetes-cluster Target's config into the
// Secret reference of its kubeconfig, with the key defaulted. The error
// says why the config does not decode (admission refuses such configs, so
// it only happens for objects stored before).
func SecretRef(config json.RawMessage) (api.SecretKeyRef, error) {
	var cfg api.KubernetesClusterConfig
	if len(bytes.TrimSpace(config)) == 0 {
		return api.SecretKeyRef{}, fmt.Errorf("spec.config is missing: it names the kubeconfig's Secret")
	}
	if err := json.Unmarshal(config, &cfg); err != nil {
		return api.SecretKeyRef{}, fmt.Errorf("spec.config does not decode: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	ref := cfg.Kubeconfig.SecretRef
	if ref.Name == "" {
		return api.SecretKeyRef{}, fmt.Errorf("spec.config.kubeconfig.secretRef.name is missing")
	}
	if ref.Key == "" {
		ref.Key = api.DefaultKubeconfigKey
	}
	return ref, nil
}

// Plan decides what to do with the kubeconfig Secret s that ref names:
// connect, or fail naming the missing Secret or key (and the keys the
// Secret has, which are names, not values).
func Plan(ref api.SecretKeyRef, s Secret) Step {
	if !s.Found {
		return Step{Fail: Probe{Reason: ReasonSecretNotFound,
			Message: fmt.Sprintf("Secret %s (spec.config.kubeconfig.secretRef.name) does not exist", ref.Name)}}
	}
	v, ok := s.Data[ref.Key]
	if !ok || len(v) == 0 {
		keys := slices.Sorted(maps.Keys(s.Data))
		return Step{Fail: Probe{Reason: ReasonKeyNotFound,
			Message: fmt.Sprintf("Secret %s has no key %s (spec.config.kubeconfig.secretRef.key); its keys: %s",
				ref.Name, ref.Key, orNone(keys))}}
	}
	return Step{Connect: true, Source: Source{SecretUID: s.UID, SecretResourceVersion: s.ResourceVersion, Kubeconfig: v}}
}

// Next returns the status that records probe p for a Target of generation
// gen whose status is old, and whether it differs from old. The Reachable
// condition's lastTransitionTime moves to now only when its status
// changes; serverVersion is the version of a reachable cluster, empty
// otherwise.
func Next(old api.TargetStatus, gen int64, p Probe, now time.Time) (api.TargetStatus, bool) {
	st := api.TargetStatus{ObservedGeneration: gen}
	c := api.Condition{Type: api.ConditionReachable, Status: api.ConditionFalse, Reason: p.Reason, Message: p.Message,
		LastTransitionTime: now.UTC().Truncate(time.Second)}
	if p.Reachable {
		c.Status, st.ServerVersion = api.ConditionTrue, p.Version
	}
	prev := api.FindCondition(old.Conditions, api.ConditionReachable)
	if prev != nil && prev.Status == c.Status && !prev.LastTransitionTime.IsZero() {
		c.LastTransitionTime = prev.LastTransitionTime
	}
	for _, oc := range old.Conditions {
		if oc.Type != api.ConditionReachable {
			st.Conditions = append(st.Conditions, oc)
		}
	}
	st.Conditions = append(st.Conditions, c)
	return st, controller.StatusChanged(old, st)
}

func orNone(keys []string) string {
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}
