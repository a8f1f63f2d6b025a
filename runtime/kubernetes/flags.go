package kubernetes

import (
	"fmt"
	"log/slog"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
)

// Flags are the flags of `cairn server` and `cairn controller-manager`
// that choose where units run: --runtime (local, the default, or
// kubernetes), --runtime-kubeconfig, --runtime-namespace and
// --runtime-default-image.
type Flags struct {
	runtime      string
	kubeconfig   string
	namespace    string
	defaultImage string
}

// AddFlags defines the flags on fs.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.runtime, "runtime", "local",
		"where workers, jobs and container deploy items run: local (processes on this machine) or kubernetes (pods, see --runtime-kubeconfig)")
	fs.StringVar(&f.kubeconfig, "runtime-kubeconfig", "",
		"with --runtime kubernetes: the kubeconfig of the cluster units run in (its user needs the Role of "+DefaultRole+")")
	fs.StringVar(&f.namespace, "runtime-namespace", "",
		"with --runtime kubernetes: the namespace units' pods and secrets go to")
	fs.StringVar(&f.defaultImage, "runtime-default-image", "",
		"with --runtime kubernetes: the image of workers, jobs and container deploy items that name none (it needs /bin/sh and what their commands call, e.g. curl)")
}

// Kubernetes reports whether the flags choose the kubernetes runtime.
// Errors: an unknown --runtime; --runtime-kubeconfig or
// --runtime-namespace missing for kubernetes; those or
// --runtime-default-image given for local.
func (f *Flags) Kubernetes() (bool, error) {
	switch f.runtime {
	case "", "local":
		if f.kubeconfig != "" || f.namespace != "" || f.defaultImage != "" {
			return false, fmt.Errorf("--runtime-kubeconfig, --runtime-namespace and --runtime-default-image need --runtime kubernetes")
		}
		return false, nil
	case "kubernetes":
	default:
		return false, fmt.Errorf("--runtime %q: use local or kubernetes", f.runtime)
	}
	switch {
	case f.kubeconfig == "":
		return false, fmt.Errorf("--runtime kubernetes needs --runtime-kubeconfig: the kubeconfig of the cluster units run in")
	case f.namespace == "":
		return false, fmt.Errorf("--runtime kubernetes needs --runtime-namespace: the namespace units run in")
	}
	return true, nil
}

// Open returns the kubernetes runtime the flags ask for, or nil for the
// local runtime. It does not wait for the cluster (see New). Errors: those
// of Kubernetes, and a kubeconfig that cannot be read, naming the flag.
func (f *Flags) Open(log *slog.Logger) (*Runtime, error) {
	k, err := f.Kubernetes()
	if err != nil || !k {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--runtime-kubeconfig %s: %v", f.kubeconfig, err)
	}
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	return New(Options{Config: cfg, Namespace: f.namespace, Logger: log, DefaultImage: f.defaultImage})
}
