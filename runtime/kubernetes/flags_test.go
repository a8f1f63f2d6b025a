package kubernetes

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestFlags_NameTheFlagToFix(t *testing.T) {
	cases := []struct {
		args    []string
		want    bool
		wantErr string
	}{
		{nil, false, ""},
		{[]string{"--runtime", "local"}, false, ""},
		{[]string{"--runtime", "kubernetes", "--runtime-kubeconfig", "k", "--runtime-namespace", "n"}, true, ""},
		{[]string{"--runtime", "pods"}, false, `--runtime "pods": use local or kubernetes`},
		{[]string{"--runtime", "kubernetes", "--runtime-namespace", "n"}, false, "needs --runtime-kubeconfig"},
		{[]string{"--runtime", "kubernetes", "--runtime-kubeconfig", "k"}, false, "needs --runtime-namespace"},
		{[]string{"--runtime-namespace", "n"}, false, "need --runtime kubernetes"},
		{[]string{"--runtime", "kubernetes", "--runtime-kubeconfig", "k", "--runtime-namespace", "n", "--runtime-default-image", "i"}, true, ""},
		{[]string{"--runtime-default-image", "example.com/worker:1"}, false, "--runtime-default-image need --runtime kubernetes"},
	}
	for _, c := range cases {
		var f Flags
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f.AddFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		got, err := f.Kubernetes()
		if got != c.want || (c.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%v: Kubernetes() = %v, %v; want %v, %q", c.args, got, err, c.want, c.wantErr)
		}
	}
}

func TestFlags_OpenNamesAnUnreadableKubeconfig(t *testing.T) {
	f := Flags{runtime: "kubernetes", kubeconfig: t.TempDir() + "/missing", namespace: "n"}
	if _, err := f.Open(nil); err == nil || !strings.Contains(err.Error(), "--runtime-kubeconfig") {
		t.Errorf("Open = %v", err)
	}
}
