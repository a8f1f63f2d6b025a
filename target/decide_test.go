package target_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/target"
)

func TestSecretRef_DefaultsTheKeyAndNamesWhatIsMissing(t *testing.T) {
	tests := []struct {
		name, config string
		want         api.SecretKeyRef
		wantErr      string
	}{
		{"key given", `{"kubeconfig":{"secretRef":{"name":"prod","key":"cfg"}}}`, api.SecretKeyRef{Name: "prod", Key: "cfg"}, ""},
		{"key defaults", `{"kubeconfig":{"secretRef":{"name":"prod"}}}`, api.SecretKeyRef{Name: "prod", Key: "kubeconfig"}, ""},
		{"no config", ``, api.SecretKeyRef{}, "spec.config is missing"},
		{"no name", `{"kubeconfig":{"secretRef":{}}}`, api.SecretKeyRef{}, "secretRef.name"},
		{"not an object", `"prod"`, api.SecretKeyRef{}, "does not decode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := target.SecretRef(json.RawMessage(tt.config))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("SecretRef = %v, want an error naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("SecretRef = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestPlan_ConnectsOrNamesTheMissingSecretOrKey(t *testing.T) {
	ref := api.SecretKeyRef{Name: "prod", Key: "kubeconfig"}
	tests := []struct {
		name       string
		secret     target.Secret
		connect    bool
		wantReason string
		wantMsg    []string
	}{
		{"connects", target.Secret{Found: true, UID: "u", ResourceVersion: "7", Data: map[string][]byte{"kubeconfig": []byte("x")}}, true, "", nil},
		{"no secret", target.Secret{}, false, target.ReasonSecretNotFound, []string{"Secret prod", "does not exist"}},
		{"no key", target.Secret{Found: true, Data: map[string][]byte{"other": []byte("x"), "b": nil}}, false, target.ReasonKeyNotFound,
			[]string{"Secret prod has no key kubeconfig", "its keys: b, other"}},
		{"empty key", target.Secret{Found: true, Data: map[string][]byte{"kubeconfig": {}}}, false, target.ReasonKeyNotFound, []string{"no key kubeconfig"}},
		{"empty secret", target.Secret{Found: true}, false, target.ReasonKeyNotFound, []string{"its keys: none"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := target.Plan(ref, tt.secret)
			if s.Connect != tt.connect {
				t.Fatalf("Connect = %v, want %v (%+v)", s.Connect, tt.connect, s.Fail)
			}
			if tt.connect {
				if s.Source.SecretUID != "u" || s.Source.SecretResourceVersion != "7" || string(s.Source.Kubeconfig) != "x" {
					t.Errorf("Source = %+v", s.Source)
				}
				return
			}
			if s.Fail.Reachable || s.Fail.Reason != tt.wantReason {
				t.Errorf("Fail = %+v, want reason %s", s.Fail, tt.wantReason)
			}
			for _, m := range tt.wantMsg {
				if !strings.Contains(s.Fail.Message, m) {
					t.Errorf("message %q does not say %q", s.Fail.Message, m)
				}
			}
		})
	}
}

func TestNext_MovesTheTransitionTimeOnlyWhenTheStatusChanges(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	up := target.Probe{Reachable: true, Version: "v1.37.2", Reason: target.ReasonConnected, Message: "ok"}
	down := target.Probe{Reason: target.ReasonUnreachable, Message: "refused"}
	first, changed := target.Next(api.TargetStatus{}, 1, up, t0)
	if !changed || first.ServerVersion != "v1.37.2" || first.ObservedGeneration != 1 {
		t.Fatalf("first = %+v, %v", first, changed)
	}
	tests := []struct {
		name        string
		gen         int64
		p           target.Probe
		changed     bool
		status      api.ConditionStatus
		transition  time.Time
		wantVersion string
	}{
		{"same probe: no write", 1, up, false, api.ConditionTrue, t0, "v1.37.2"},
		{"new generation", 2, up, true, api.ConditionTrue, t0, "v1.37.2"},
		{"unreachable", 1, down, true, api.ConditionFalse, t1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, changed := target.Next(first, tt.gen, tt.p, t1)
			c := api.FindCondition(st.Conditions, api.ConditionReachable)
			if changed != tt.changed || c == nil || c.Status != tt.status || !c.LastTransitionTime.Equal(tt.transition) || st.ServerVersion != tt.wantVersion {
				t.Fatalf("Next = %+v (changed %v), want status %s since %s, version %q, changed %v",
					st, changed, tt.status, tt.transition, tt.wantVersion, tt.changed)
			}
			if len(st.Conditions) != 1 {
				t.Errorf("conditions = %+v, want one", st.Conditions)
			}
		})
	}
	// A changed message with the same status is written, keeping the time.
	down2 := down
	down2.Message = "timeout"
	st, _ := target.Next(first, 1, down, t1)
	st2, changed := target.Next(st, 1, down2, t1.Add(time.Minute))
	if c := api.FindCondition(st2.Conditions, api.ConditionReachable); !changed || !c.LastTransitionTime.Equal(t1) || c.Message != "timeout" {
		t.Errorf("Next with a new message = %+v, changed %v", st2, changed)
	}
}

func TestRESTConfig_RefusesWhatActsOnCairnsHostAndNamesFieldsNotValues(t *testing.T) {
	const secret = "TOKEN-do-not-print-4711"
	kc := func(user string) []byte {
		return []byte(`apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: ` + user + `}]
`)
	}
	tests := []struct {
		name    string
		config  []byte
		wantErr error
		want    string
	}{
		{"token", kc(`{token: ` + secret + `}`), nil, ""},
		{"exec", kc(`{exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: ["-c", "echo ` + secret + `"]}}`),
			target.ErrKubeconfigRefused, "users[u].exec"},
		{"token file", kc(`{tokenFile: /etc/` + secret + `}`), target.ErrKubeconfigRefused, "users[u].tokenFile"},
		{"client key file", kc(`{client-key: /etc/` + secret + `}`), target.ErrKubeconfigRefused, "users[u].client-key"},
		{"not yaml", []byte("users: [{name: u, user: {token: " + secret + "}}\n  bad: [indent"), target.ErrInvalidKubeconfig, "does not parse"},
		{"wrong type", []byte("clusters: " + secret), target.ErrInvalidKubeconfig, "does not parse"},
		{"no current context", []byte("apiVersion: v1\nkind: Config\nusers: [{name: u, user: {token: " + secret + "}}]"), target.ErrInvalidKubeconfig, "current-context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := target.RESTConfig(tt.config)
			if tt.wantErr == nil {
				if err != nil || cfg.BearerToken != secret {
					t.Fatalf("RESTConfig = %v", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("RESTConfig error = %v, want %v naming %s", err, tt.wantErr, tt.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error quotes the kubeconfig: %v", err)
			}
		})
	}
}
